"""The AI item in the completion menu, for editors without inline completion.

Helix (and other clients without ``textDocument/inlineCompletion``) asks
``textDocument/completion`` as the user types. pylsp answers the menu; this
adds one AI item to its list and never makes the menu wait for the model:

- the item is what the last suggestion offers at the request's cursor
  (``Suggestions.offered``): the suggestion made there, or the rest of one
  the text typed since begins (typed-ahead);
- otherwise a generation starts in the background as the request arrives (the
  document then is as the editor sent it with the request; by pylsp's answer
  the user may have typed on), and the list says ``isIncomplete`` while it runs
  (and while it carries the item, whose text changes as the user types), so the
  editor asks again and gets the item from a later request.

At most one generation runs per document. A keystroke that continues its text
(the text before the cursor grows, the text after it stays) lets it go on, since
the user may be typing what it will suggest; the decode loop reads what was
typed, and abandons the generation as soon as its text stops agreeing with it.
When it ends, the newest such position is generated next unless the finished
suggestion already covers it. Any other keystroke (a deletion, a jump)
supersedes it: it is cancelled and one starts for the new position.
``completion.fallbackWaitMs`` lets a request wait that long for its item, for
editors that do not ask again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types

from steerlsp.server.completion.host import ModelHost
from steerlsp.server.completion.policy import Completions
from steerlsp.server.completion.replies import completion_item, merged_completions, request_position
from steerlsp.server.config import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _At:
    """A cursor the menu was asked at, as the document was when the request came."""

    uri: str
    position: types.Position
    version: int | None
    prefix: str
    suffix: str


@dataclass
class _Run:
    """The menu's generation for one document, the newest cursor it left behind, and
    what was typed from its cursor to that one (the decoding reads it)."""

    at: _At
    then: _At | None = None
    typed: str = ""
    task: asyncio.Future[tuple[str, ...]] = field(init=False)


def continues(at: _At, prefix: str, suffix: str) -> bool:
    """The user typed on from ``at``: the text before the cursor grew, the text after
    it stayed. A suggestion made at ``at`` may still be what they are typing."""
    return suffix == at.suffix and prefix.startswith(at.prefix)


class CompletionMenu:
    """pylsp's completion lists, with steerlsp's AI item first (a ``ResultRewriter``).

    ``client_capabilities`` and ``settings`` read the session's current ones;
    ``unstructure`` turns the item into the JSON pylsp's list holds.
    """

    def __init__(
        self,
        completions: Completions,
        host: ModelHost,
        *,
        settings: Callable[[], Settings],
        client_capabilities: Callable[[], types.ClientCapabilities],
        unstructure: Callable[[types.CompletionItem], Any],
    ) -> None:
        self.completions = completions
        self.host = host
        self._settings = settings
        self._client_capabilities = client_capabilities
        self._unstructure = unstructure
        self._runs: dict[str, _Run] = {}

    def wanted(self) -> bool:
        """The client has no inline completion, and the menu item is on."""
        caps = self._client_capabilities()
        has_inline = (
            caps.text_document is not None and caps.text_document.inline_completion is not None
        )
        completion = self._settings().completion
        return completion.enabled and completion.fallback and not has_inline

    def rewrites(self, method: str) -> bool:
        """The router asks: do pylsp's results for ``method`` come here?"""
        return method == types.TEXT_DOCUMENT_COMPLETION and self.wanted()

    def prepare(self, method: str, params: Any) -> _At | None:
        """As a completion request arrives: its cursor, and the generation for it
        started (or kept) unless the last suggestion already offers something there.
        None when the menu gets no item (no model yet, a position outside the document)."""
        completions = self.completions
        if method != types.TEXT_DOCUMENT_COMPLETION or not self.host.ready:
            return None
        uri, position = request_position(params)
        around = completions.around(uri, position) if uri is not None and position else None
        if uri is None or position is None or around is None:
            return None
        at = _At(uri, position, completions.documents.version(uri), around.prefix, around.suffix)
        if completions.suggestions.offered(uri, at.prefix, at.suffix) is None:
            self._generate(at)
        return at

    async def rewrite(self, method: str, prepared: Any, result: Any) -> Any:
        """pylsp's completion ``result`` with the AI item first; ``result`` itself when
        there is nothing to add."""
        if not isinstance(prepared, _At):
            return result
        item = await self.item(prepared)
        still_working = prepared.uri in self._runs
        if item is None and not still_working:
            return result
        unstructured = self._unstructure(item) if item is not None else None
        return merged_completions(result, unstructured, still_working or item is not None)

    async def item(self, at: _At) -> types.CompletionItem | None:
        """The AI item at ``at``, if a suggestion offers one, waiting for the running
        generations at most ``completion.fallbackWaitMs``."""
        text = self.completions.suggestions.offered(at.uri, at.prefix, at.suffix)
        if text is None:
            text = await self._wait(at)
        if not text or not text.strip():
            return None
        return completion_item(text, at.position)

    def _generate(self, at: _At) -> None:
        """Keep the running generation if ``at`` continues it (``at`` is generated after
        it, if still needed); otherwise start one at ``at``, superseding it."""
        run = self._runs.get(at.uri)
        if run is not None and continues(run.at, at.prefix, at.suffix):
            run.then, run.typed = at, at.prefix[len(run.at.prefix) :]
            return
        document = self.completions.snapshot(at.uri, at.position, at.position)
        run = self._runs[at.uri] = _Run(at)  # one it replaces is cancelled by cancel-previous
        run.task = asyncio.ensure_future(
            self.completions.in_background(
                at.uri, at.version, at.prefix, at.suffix, document, lambda: run.typed
            )
        )
        task = run.task
        task.add_done_callback(lambda done: self._finished(at.uri, done))

    def _finished(self, uri: str, task: asyncio.Future[tuple[str, ...]]) -> None:
        """A generation ended: generate the newest cursor it left behind, unless the
        document changed since (the next request decides) or its suggestion covers it."""
        if not task.cancelled() and task.exception() is not None:
            log.debug("a completion menu generation ended: %s", task.exception())
        run = self._runs.get(uri)
        if run is None or run.task is not task:
            return  # superseded meanwhile
        del self._runs[uri]
        then = run.then
        completions = self.completions
        if (
            then is None
            or not self.host.ready
            or completions.documents.version(uri) != then.version
        ):
            return
        if completions.suggestions.offered(uri, then.prefix, then.suffix) is None:
            self._generate(then)

    async def _wait(self, at: _At) -> str | None:
        """The suggestion at ``at`` once the document's generations have made it, within
        ``completion.fallbackWaitMs``; None past that."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._settings().completion.fallback_wait_ms / 1000
        while (left := deadline - loop.time()) > 0 and (run := self._runs.get(at.uri)) is not None:
            await asyncio.wait({run.task}, timeout=left)  # however it ends; never cancels it
            await asyncio.sleep(0)  # the run's done callback may start the next one
            text = self.completions.suggestions.offered(at.uri, at.prefix, at.suffix)
            if text is not None:
                return text
        return None
