"""The ChatLSP component: answers the methods for open documents, off the event loop.

One instance per server. It reads the editor's document (never a file from
disk), converts the cursor to code points, and runs the blocking analysis
(Jedi, pyflakes, the pylint worker) on its own threads, under a time budget.
Answers are cached per document version and position, so a client that asks
for several methods at one hole pays for each analysis once.

Jedi and the linter read the project in the environment the user chose (or a
workspace venv, only when the workspace is trusted; see
``server/upstream/environment.py``): the same one the upstream's Jedi uses.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.uris import to_fs_path

from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.server.chatlsp import ExpectedType, Header, Problem, TypeDefinition
from steerlsp.server.chatlsp.replies import headers_text, types_text
from steerlsp.server.config import Settings
from steerlsp.server.documents.encodings import to_code_points
from steerlsp.server.documents.workspace import OpenDocuments

if TYPE_CHECKING:
    from steerlsp.server.chatlsp.errors import Checked, ErrorChecker
    from steerlsp.server.chatlsp.semantics import Semantics

log = logging.getLogger(__name__)

T = TypeVar("T")
# Answers kept, over all documents (a few methods at a few holes each).
CACHE_ENTRIES = 256


class ChatLspError(Exception):
    """A request that cannot be answered: the message says why, for the client."""


@dataclass(frozen=True)
class Hole:
    """The cursor a ChatLSP request is about, in the client's position units."""

    uri: str
    position: types.Position
    completion: str | None = None  # errorReport: text to check as if inserted here


@dataclass(frozen=True)
class Source:
    """An open document's text at one version, and the hole in code points."""

    uri: str
    path: str
    version: int | None
    text: str
    line: int
    column: int  # code points
    variant: str = ""  # "" for the editor's text; else what was changed (a cache key part)

    def location(self, position: types.Position) -> types.Location:
        return types.Location(uri=self.uri, range=types.Range(start=position, end=position))


@dataclass(frozen=True)
class PromptContext:
    """The ChatLSP context of one hole, as it goes into a completion prompt."""

    expected_type: str = ""
    relevant_types: str = ""
    relevant_headers: str = ""
    returns: bool = False  # the expected type is the enclosing function's result


def offset_of(source: Source) -> int:
    """The cursor's index into ``source.text``."""
    lines = source.text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: source.line]) + source.column


def as_return(source: Source) -> Source | None:
    """``source`` with ``return `` typed at the cursor, when the cursor starts a new
    statement (only indentation before it on its line); else None."""
    lines = source.text.splitlines(keepends=True)
    current = lines[source.line] if source.line < len(lines) else ""
    if current[: source.column].strip():
        return None
    offset = offset_of(source)
    text = source.text[:offset] + "return " + source.text[offset:]
    return replace(source, text=text, column=source.column + len("return "), variant="return")


class ChatLsp:
    """The ChatLSP methods over the editor's open ``documents``; ``settings`` reads the
    current settings, ``python_environment`` the environment Jedi resolves imports in."""

    def __init__(
        self,
        documents: OpenDocuments,
        settings: Callable[[], Settings],
        python_environment: Callable[[], str | None],
    ) -> None:
        self.documents = documents
        self._settings = settings
        self._python_environment = python_environment
        # Jedi is not safe to share between threads: one thread for it, one for linting.
        self._semantic_thread = ThreadPoolExecutor(1, thread_name_prefix="chatlsp-jedi")
        self._lint_thread = ThreadPoolExecutor(1, thread_name_prefix="chatlsp-lint")
        self._environment: tuple[str | None, str | None] | None = None
        self._semantics: Semantics | None = None
        self._checker: ErrorChecker | None = None
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    # ---- the methods ----------------------------------------------------------------

    async def expected_type(self, hole: Hole) -> tuple[Source, ExpectedType | None]:
        source = self.source(hole)
        found = await self._semantic("expected", source, lambda s: s.expected_type)
        return source, found

    async def relevant_types(self, hole: Hole) -> tuple[Source, list[TypeDefinition]]:
        source = self.source(hole)
        return source, await self._semantic("types", source, lambda s: s.relevant_types)

    async def relevant_headers(self, hole: Hole) -> tuple[Source, list[Header]]:
        source = self.source(hole)
        return source, await self._semantic("headers", source, lambda s: s.relevant_headers)

    async def tutorial(self, hole: Hole) -> str:
        from steerlsp.server.chatlsp.tutorial import tutorial

        source = self.source(hole)
        root, environment = self._where()
        key = ("tutorial", source.uri, source.version)
        return await self._cached(
            key, self._lint_thread, lambda: tutorial(root, environment, source.text)
        )

    async def error_report(self, hole: Hole) -> tuple[Source, Checked, list[Problem]]:
        from steerlsp.server.chatlsp.errors import with_completion

        source = self.source(hole)
        checked = with_completion(source.text, source.line, source.column, hole.completion or "")
        checker = self._error_checker()
        key = ("errors", source.uri, source.version, source.line, source.column, hole.completion)
        problems = await self._cached(
            key, self._lint_thread, lambda: checker.check(checked, source.path)
        )
        return source, checked, problems

    async def prompt_context(self, hole: Hole, parts: str) -> PromptContext:
        """What a completion prompt gets (``parts``: "types" or "headers"); empty parts
        where nothing is known."""
        if parts == "none":
            return PromptContext()
        source = self.source(hole)
        expected = await self._semantic("expected", source, lambda s: s.expected_type)
        returns = False
        if expected is None and (returned := as_return(source)) is not None:
            # A new statement in a body: what the body must produce is the function's
            # result, so the context is the one a ``return`` here would have.
            source = returned
            expected = await self._semantic("expected", source, lambda s: s.expected_type)
            returns = expected is not None and expected.origin == "return"
        if expected is None or (source.variant and not returns):
            return PromptContext()
        definitions = await self._semantic("types", source, lambda s: s.relevant_types)
        headers: list[Header] = []
        if parts == "headers":
            found = await self._semantic("headers", source, lambda s: s.relevant_headers)
            # The function being written, offered as its own producer, invites recursion.
            writing = intent_at(source.text[: offset_of(source)], typed=False).function
            headers = [h for h in found if h.name.rsplit(".", 1)[-1] != writing]
        return PromptContext(
            expected.annotation, types_text(definitions), headers_text(headers), returns
        )

    # ---- plumbing -------------------------------------------------------------------

    def source(self, hole: Hole) -> Source:
        """The open document at the hole; ChatLspError when it is not open or the
        position lies outside it."""
        doc = self.documents.get(hole.uri)
        if doc is None:
            raise ChatLspError(f"{hole.uri} is not open in the editor")
        limit = self._settings().chatlsp.max_document_bytes
        if doc.content is not None and doc.content.size > limit:
            raise ChatLspError(f"{hole.uri} is larger than chatlsp.maxDocumentBytes ({limit})")
        path = to_fs_path(hole.uri) or hole.uri
        lines = doc.lines
        line, character = hole.position.line, hole.position.character
        if line > len(lines) or (line == len(lines) and character > 0):
            raise ChatLspError(f"line {line} is past the end of {hole.uri}")
        text_line = lines[line] if line < len(lines) else ""
        column = to_code_points(text_line.rstrip("\r\n"), character, self.documents.encoding())
        if column > len(text_line.rstrip("\r\n")):
            raise ChatLspError(f"character {character} is past the end of line {line}")
        return Source(hole.uri, path, doc.version, doc.source, line, column)

    def _where(self) -> tuple[str | None, str | None]:
        return self.documents.root_path(), self._python_environment()

    def _current_semantics(self) -> Semantics:
        self._refresh()
        if self._semantics is None:
            from steerlsp.server.chatlsp.semantics import Semantics

            self._semantics = Semantics(*self._where())
        return self._semantics

    def _error_checker(self) -> ErrorChecker:
        self._refresh()
        if self._checker is None:
            from steerlsp.server.chatlsp.errors import ErrorChecker

            self._checker = ErrorChecker(
                *self._where(), memory_limit_mb=self._settings().upstream.memory_limit()
            )
            # pylint's start (about a second) overlaps the request; the check queues behind it.
            self._lint_thread.submit(self._checker.warm)
        return self._checker

    def _refresh(self) -> None:
        """Drop the analysers when the environment changed (new settings)."""
        where = self._where()
        if where == self._environment:
            return
        self._environment = where
        self._semantics = None
        self._cache.clear()
        if self._checker is not None:
            old, self._checker = self._checker, None
            self._lint_thread.submit(old.close)

    async def _semantic(
        self, method: str, source: Source, pick: Callable[[Semantics], Callable[..., T]]
    ) -> T:
        semantics = self._current_semantics()
        key = (method, source.uri, source.version, source.line, source.column, source.variant)
        run = pick(semantics)
        return await self._cached(
            key,
            self._semantic_thread,
            lambda: run(source.text, source.path, source.line, source.column),
        )

    async def _cached(
        self, key: tuple[Any, ...], pool: ThreadPoolExecutor, job: Callable[[], T]
    ) -> T:
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        timeout = self._settings().chatlsp.timeout_ms / 1000
        future = asyncio.get_running_loop().run_in_executor(pool, job)
        try:
            value = await asyncio.wait_for(future, timeout)
        except TimeoutError as exc:
            raise ChatLspError(f"the analysis took longer than {timeout:g} s") from exc
        if key[2] is not None:  # an unversioned document may change under the same key
            self._cache[key] = value
            while len(self._cache) > CACHE_ENTRIES:
                self._cache.popitem(last=False)
        return value

    def document_changed(self, uri: str) -> None:
        """Forget the answers for ``uri``; its version moved on."""
        for key in [k for k in self._cache if k[1] == uri]:
            del self._cache[key]

    def close(self) -> None:
        if self._checker is not None:
            self._checker.close()
        self._semantic_thread.shutdown(wait=False, cancel_futures=True)
        self._lint_thread.shutdown(wait=False, cancel_futures=True)


def hole_from(params: Any, *, with_completion: bool = False) -> Hole:
    """The hole of untyped request params (TextDocumentPositionParams, plus ``completion``
    for errorReport); ChatLspError naming what is wrong."""
    document = _field(params, "textDocument")
    uri = _field(document, "uri")
    position = _field(params, "position")
    line, character = _field(position, "line"), _field(position, "character")
    if not isinstance(uri, str) or not uri:
        raise ChatLspError('expected params {"textDocument": {"uri": string}, "position": ...}')
    if not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (line, character)
    ):
        raise ChatLspError('expected "position": {"line": uinteger, "character": uinteger}')
    completion = _field(params, "completion") if with_completion else None
    if completion is not None and not isinstance(completion, str):
        raise ChatLspError('"completion" must be a string')
    return Hole(uri, types.Position(line=line, character=character), completion)


def _field(params: Any, name: str) -> Any:
    """A field of untyped params: pygls gives a namedtuple-like object, or a dict."""
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)
