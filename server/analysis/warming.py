"""Warming the analysis instance on a document's imports, before a completion needs them.

The first question about a library costs Jedi its parse of the library's modules
(seconds for pandas), and a steered completion waits for it. So when a Python
document opens (0.3 s after, by when the editor's first completion has the
model), and again when its text settles after a change (its imports may have
changed), the names it imports are asked about in the background: the
document's text with ``name.`` after it, the items without documentation,
thrown away. The first steered completion then finds Jedi's caches warm.

Only while the model worker is idle (the analysis must not slow the decode
loop), one question at a time, each name once per Jedi environment, at most
:data:`MAX_NAMES` per document; never when steering is off. What fails is
logged at debug and forgotten: a real question reports it.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from steerlsp.server.analysis.instance import AnalysisInstance

log = logging.getLogger(__name__)

# Names warmed per document: its first imports.
MAX_NAMES = 8
# How long a document's text must stay unchanged before its imports are read again,
# and how long after it opens: an editor asks for a completion at once, and the model
# worker must have taken it by then (a warming question would delay its questions).
SETTLE_SECONDS = 2.0
OPENED_SECONDS = 0.3
# How often an idle model worker is looked for, and how long one warming question may take.
IDLE_POLL_SECONDS = 0.25
QUESTION_SECONDS = 20.0
# Larger documents are not read for imports (the parse would hold the GIL too long).
MAX_DOCUMENT_CHARS = 512 * 1024


def imported_names(text: str, limit: int = MAX_NAMES) -> list[str]:
    """The names ``text`` binds by importing, as its code spells them (``np``,
    ``os.path``, ``BaseModel``), in order, at most ``limit``. A document being typed in
    rarely parses: then each import statement is read on its own."""
    try:
        statements = [ast.parse(text)]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        statements = [_parsed(m.group(0)) for m in _IMPORT.finditer(text)]
    names: dict[str, None] = {}
    for tree in statements:
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        names.setdefault(alias.asname or alias.name)
    return list(names)[:limit]


# An import statement on its own line (a parenthesized name list may span lines).
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n#;]+)|import[ \t]+[^\n#;]+)",
    re.MULTILINE,
)


def _parsed(statement: str) -> ast.Module | None:
    try:
        return ast.parse(statement.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class ImportWarmer:
    """Warms the instance on the imports of the documents that open and change."""

    def __init__(
        self,
        instance: AnalysisInstance,
        *,
        text: Callable[[str], str | None],
        enabled: Callable[[], bool],
        idle: Callable[[], bool],
        environment: Callable[[], str | None],
        settle: float = SETTLE_SECONDS,
    ) -> None:
        """``text(uri)``: an open Python document's text, or None; ``enabled``: whether
        steering is on; ``idle``: whether the model worker has nothing to do."""
        self.instance = instance
        self._text, self._enabled, self._idle = text, enabled, idle
        self._environment = environment
        self._settle = settle
        self._waiting: dict[str, asyncio.TimerHandle] = {}
        self._due: dict[str, None] = {}  # documents to read, oldest first
        self._task: asyncio.Task[None] | None = None
        self.warmed = instance.warmed  # (environment, name); status counts them

    def synced(self, method: str, uri: str) -> None:
        """A document opened, changed or closed (on the event loop)."""
        handle = self._waiting.pop(uri, None)
        if handle is not None:
            handle.cancel()
        if method == types.TEXT_DOCUMENT_DID_CLOSE or not self._enabled():
            self._due.pop(uri, None)
            return
        opened = method == types.TEXT_DOCUMENT_DID_OPEN
        delay = min(OPENED_SECONDS, self._settle) if opened else self._settle
        loop = asyncio.get_running_loop()
        self._waiting[uri] = loop.call_later(delay, self._settled, uri)

    def _settled(self, uri: str) -> None:
        self._waiting.pop(uri, None)
        self._due[uri] = None
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while self._due:
            uri = next(iter(self._due))
            del self._due[uri]
            try:
                await self._warm(uri)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # never fatal: a real question reports it
                log.debug("warming the analysis on %s failed: %s", uri, exc)

    async def _warm(self, uri: str) -> None:
        await self._until_idle()
        text = self._text(uri)
        if text is None or len(text) > MAX_DOCUMENT_CHARS or not self._enabled():
            return
        names = await asyncio.to_thread(imported_names, text)
        for name in names:
            key = (self._environment(), name)
            if key in self.warmed:
                continue
            await self._until_idle()
            if self._text(uri) != text:  # changed meanwhile: read again once it settles
                return
            asked = f"{text}\n{name}."
            await asyncio.wait_for(self._ask(uri, asked), QUESTION_SECONDS)
            self.warmed.add(key)
            log.debug("analysis warmed on %s", name)

    async def _ask(self, uri: str, text: str) -> Any:
        completion = types.TEXT_DOCUMENT_COMPLETION
        return await self.instance.query(completion, uri, text, len(text), documented=False)

    async def _until_idle(self) -> None:
        while not self._idle():
            await asyncio.sleep(IDLE_POLL_SECONDS)
