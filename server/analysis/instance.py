"""The private analysis instance: a second pylsp that only the decode loop asks.

Speculative text (the editor's document plus what the model has written) must
never reach the editor. So it goes to a pylsp of its own, built from the same
:class:`UpstreamConnection` as the editor's upstream but with a
:class:`Headless` listener: its diagnostics and requests are dropped, its
versions are its own, and it is restarted like the main one. Its linters are
off and Jedi's completion is tuned for speed (:data:`TUNED_SETTINGS`); it gets
the main upstream's Jedi environment and root, so that it sees the project's
packages. It starts on the first question, never before.

Each editor document has one private document here, under the **same uri**:
Jedi derives the module's path, package and ``sys.path`` from it, which a
private scheme would lose (``from .pricing import`` and the project's own
imports would stop resolving). The process is the isolation, not the uri.
Its text is kept in sync with one ranged ``didChange`` per question that
replaces only what differs from the last text sent (the speculative insertion).

The decode thread asks through :meth:`AnalysisInstance.document`, an
:class:`~steerlsp.models.steering.analysis.Analysis` bound to one document version;
each question runs on the event loop (``run_coroutine_threadsafe``) within
its time budget, and answers are cached per (document version, speculative
text up to the offset).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from steerlsp import guard
from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import (
    DEFAULT_TIMEOUT,
    AnalysisError,
    AnalysisTimeout,
    CompletionCandidate,
    DefinitionSource,
    Signature,
)
from steerlsp.server.analysis import items as items
from steerlsp.server.documents.text import utf8_size
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.upstream import environment, isolation
from steerlsp.server.upstream.connection import (
    Headless,
    UpstreamConnection,
    UpstreamError,
    UpstreamOptions,
)
from steerlsp.server.upstream.process import default_command

log = logging.getLogger(__name__)

T = TypeVar("T")

# Every plugin that lints, formats or indexes is off; only Jedi's completion,
# signature help and definition answer. ``resolve_at_most: 0`` skips the
# labels and snippets (a signature computation per item) that
# ``include_params: false`` makes useless. ``eager`` documentation is off: it
# resolves every item, dunders included, and took the median at ``obj.`` in
# the example project from 17.8 ms to 99 ms (p90 321 ms); the public items'
# documentation is resolved instead (36 ms; see RESOLVE_AT_MOST).
TUNED_SETTINGS: dict[str, Any] = {
    "pylsp": {
        "plugins": {
            "jedi_completion": {
                "enabled": True,
                "include_params": False,
                "include_class_objects": False,
                "include_function_objects": False,
                "resolve_at_most": 0,
                "eager": False,
                "fuzzy": False,
            },
            "jedi_signature_help": {"enabled": True},
            "jedi_definition": {"enabled": True, "follow_imports": True},
            **{
                name: {"enabled": False}
                for name in (
                    "autopep8",
                    "black",
                    "flake8",
                    "jedi_highlight",
                    "jedi_hover",
                    "jedi_references",
                    "jedi_symbols",
                    "mccabe",
                    "preload",
                    "pycodestyle",
                    "pydocstyle",
                    "pyflakes",
                    "pylint",
                    "pylsp_mypy",
                    "rope_autoimport",
                    "rope_completion",
                    "ruff",
                    "yapf",
                )
            },
        }
    }
}

# What the instance is told the client can do: plain-text documentation (its
# first line is read as is), no snippets.
CLIENT_CAPABILITIES = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        completion=types.CompletionClientCapabilities(
            completion_item=types.ClientCompletionItemOptions(
                snippet_support=False,
                documentation_format=[types.MarkupKind.PlainText],
                deprecated_support=True,
                tag_support=types.CompletionItemTagOptions(
                    value_set=[types.CompletionItemTag.Deprecated]
                ),
            )
        ),
        signature_help=types.SignatureHelpClientCapabilities(
            signature_information=types.ClientSignatureInformationOptions(
                documentation_format=[types.MarkupKind.PlainText],
                parameter_information=types.ClientSignatureParameterInformationOptions(
                    label_offset_support=True
                ),
            )
        ),
    )
)

# Completion items whose documentation is resolved (completionItem/resolve,
# pipelined): the first ones without a leading underscore, in the server's
# order. The ranker reads their first doc lines; private and dunder names are
# demoted anyway, and ``object``'s 23 dunders are most of a small class's list.
RESOLVE_AT_MOST = 40
# How long a question waits for the items' documentation (resolved in parallel), as a
# share of the decode loop's query budget: a large class's first list (pandas'
# DataFrame) would otherwise take all of it. Documentation that arrives later is
# kept for the next question.
RESOLVE_SHARE = 0.6
# Resolved documentation strings kept (see ``AnalysisInstance._documentation``).
MAX_DOCUMENTATION = 4096
# Private documents kept open; the least recently asked about is closed past it.
MAX_DOCUMENTS = 8
# Answers kept, over all documents and versions.
MAX_CACHED = 512
# A request's own limit on the loop; the caller's budget is usually far shorter.
REQUEST_TIMEOUT = 30.0
# Questions past their budget in a row, with nothing heard from the process for
# STUCK_SECONDS, mean it is stuck (a read that never returns): it is restarted like a
# crashed one. A cold Jedi answers late but keeps answering; a stuck one never does.
STUCK_TIMEOUTS = 3
STUCK_SECONDS = 10.0
# The throwaway question that warms the instance: Jedi's first completion loads
# its stdlib stubs (about a second), which no real question should pay for.
WARM_NAME = ".steerlsp-warm.py"
WARM_TEXT = "import os\nos."


@dataclass
class _Private:
    """A private document: the last text sent and its version (ours, not the editor's)."""

    text: str
    version: int = 1


class AnalysisInstance:
    """The private pylsp and its documents; hands out per-document :class:`DocumentAnalysis`."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        root_uri: Callable[[], str | None] = lambda: None,
        python_environment: Callable[[], str | None] = lambda: None,
        query_budget: Callable[[], float] = lambda: SteeringOptions().query_timeout,
        command: list[str] | None = None,
        max_restarts: int = 5,
        backoff: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0, 4.0),
        stuck_after: float = STUCK_SECONDS,
    ) -> None:
        """``root_uri`` and ``python_environment`` are read when it starts (and at each
        restart, for the environment), so they follow the main upstream's."""
        self.loop = loop
        self.options = UpstreamOptions(
            command or default_command(), max_restarts=max_restarts, backoff=backoff
        )
        self._stuck_after = stuck_after
        self._root_uri = root_uri
        self._environment = python_environment
        self._query_budget = query_budget  # seconds: the decode loop's wait per question
        self.connection: UpstreamConnection[object] | None = None
        self._starting: asyncio.Task[UpstreamConnection[object]] | None = None
        self._warming: concurrent.futures.Future[None] | None = None
        self._docs: OrderedDict[str, _Private] = OrderedDict()
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._cache_lock = threading.Lock()
        # Resolved documentation by (label, detail): Jedi's detail names the defining
        # class or module, so a member's documentation is resolved once per session.
        self._documentation: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self.queries = 0  # answered by the server (cache hits excluded)
        self.cache_hits = 0
        self.timeouts = 0
        self.stuck_restarts = 0
        self._timeouts_in_a_row = 0
        self._total_ms = 0.0
        self.max_document_bytes = guard.DEFAULT_LIMIT  # larger texts are not analysed

    # ---- the decode thread's side ----------------------------------------

    def document(self, uri: str, version: int) -> DocumentAnalysis:
        """The :class:`~steerlsp.models.steering.analysis.Analysis` of one document version."""
        return DocumentAnalysis(self, uri, version)

    def ask(
        self,
        key: tuple[Any, ...],
        make: Callable[[], Coroutine[Any, Any, T]],
        timeout: float,
    ) -> T:
        """Run the coroutine ``make()`` on the loop within ``timeout`` seconds, or answer
        from the cache under ``key``. Raises :class:`AnalysisTimeout` past the budget
        (the coroutine is cancelled) and :class:`AnalysisError` when the server fails."""
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                self.cache_hits += 1
                return self._cache[key]  # type: ignore[no-any-return]
        if _running_loop() is self.loop:
            raise RuntimeError("the analysis is asked on its own event loop: it would deadlock")
        started = time.perf_counter()
        future = asyncio.run_coroutine_threadsafe(make(), self.loop)
        try:
            answer = future.result(timeout)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            self.timeouts += 1
            self._timeouts_in_a_row += 1
            if self._timeouts_in_a_row >= STUCK_TIMEOUTS:
                self.loop.call_soon_threadsafe(self._restart_if_stuck)
            raise AnalysisTimeout(f"{key[0]} took over {timeout * 1000:.0f} ms") from exc
        except concurrent.futures.CancelledError as exc:
            raise AnalysisError(f"{key[0]} was cancelled") from exc
        except UpstreamError as exc:
            raise AnalysisError(f"{key[0]}: {exc}") from exc
        self.queries += 1
        self._timeouts_in_a_row = 0
        self._total_ms += (time.perf_counter() - started) * 1000
        with self._cache_lock:
            self._cache[key] = answer
            if len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
        return answer

    def warm(self) -> None:
        """Start pylsp now and have it answer one throwaway completion, so that the first
        real question does not wait for the start (about 2.4 s) and go unanswered.

        Callable from any thread, at most once; failures are logged at debug, never
        raised (a real question reports them)."""
        if self._warming is None:
            self._warming = asyncio.run_coroutine_threadsafe(self._warm(), self.loop)

    def limit(self, memory_limit_mb: int | None, max_document_bytes: int) -> None:
        """The bounds of ``upstream.*``: its memory, and the largest text it analyses."""
        self.max_document_bytes = max_document_bytes
        self.options.memory_limit_mb = memory_limit_mb
        if self.connection is not None:
            self.loop.call_soon_threadsafe(self.connection.limit_memory, memory_limit_mb)

    # ---- on the event loop -----------------------------------------------

    def _restart_if_stuck(self) -> None:
        """Kill the process if it has said nothing for STUCK_SECONDS while questions
        kept timing out: its exit restarts it, like a crash."""
        connection = self.connection
        process = connection.process if connection is not None else None
        if connection is None or process is None or not process.alive:
            return
        if self._timeouts_in_a_row < STUCK_TIMEOUTS:
            return
        if time.monotonic() - connection.last_heard < self._stuck_after:
            return
        log.warning(
            "the analysis instance answered nothing for %.0f s; restarting it",
            time.monotonic() - connection.last_heard,
        )
        self._timeouts_in_a_row = 0
        self.stuck_restarts += 1
        process.kill()

    async def _warm(self) -> None:
        started = time.perf_counter()
        try:
            connection = await asyncio.shield(self._ensure_started())
            if not connection.ready:
                log.debug("analysis instance not warmed: %s", connection.unavailable)
                return
            uri = self._warm_uri()
            await self.query(types.TEXT_DOCUMENT_COMPLETION, uri, WARM_TEXT, len(WARM_TEXT))
            self._close(connection, uri)
        except Exception as exc:
            log.debug("warming the analysis instance failed: %s", exc)
            return
        log.debug("analysis instance warm in %.0f ms", (time.perf_counter() - started) * 1000)

    def _warm_uri(self) -> str:
        """A file in the workspace root (Jedi then sees the project), never written."""
        root = self._root_uri()
        folder = to_fs_path(root) if root else None
        if not folder or not os.path.isdir(folder):
            folder = tempfile.gettempdir()
        return from_fs_path(os.path.join(folder, WARM_NAME)) or f"file:///{WARM_NAME}"

    async def query(
        self, method: str, uri: str, text: str, offset: int, *, documented: bool = True
    ) -> Any:
        """Sync ``uri``'s private document to ``text`` and send ``method`` at ``offset``;
        completion items get their documentation resolved unless not ``documented``.

        The start is shielded: a question that times out while pylsp starts
        does not stop the start, and the next question finds it running.
        """
        if utf8_size(text) > self.max_document_bytes:
            raise AnalysisError("the document is over upstream.maxDocumentBytes")
        connection = await asyncio.shield(self._ensure_started())
        if not connection.ready:
            raise AnalysisError(connection.unavailable or "the analysis server is restarting")
        self._sync(connection, uri, text)
        params = types.TextDocumentPositionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=items.position_at(text, offset),
        )
        result = await connection.request(method, items.unstructure(params), REQUEST_TIMEOUT)
        if method == types.TEXT_DOCUMENT_COMPLETION and documented:
            result = await self._resolve(connection, result)
        return result

    async def _resolve(self, connection: UpstreamConnection[object], result: Any) -> Any:
        """The completion items, the first public ones with their documentation resolved."""
        found = result.get("items") if isinstance(result, dict) else result
        if not isinstance(found, list):
            return []
        chosen = [
            index
            for index, item in enumerate(found)
            if isinstance(item, dict)
            and "documentation" not in item
            and not str(item.get("label", "_")).startswith("_")
        ][:RESOLVE_AT_MOST]
        unknown = []
        for index in chosen:
            known = self._documentation.get(_doc_key(found[index]))
            if known is None:
                unknown.append(index)
            else:
                found[index] = {**found[index], "documentation": known}
        tasks = {
            asyncio.ensure_future(
                connection.request(types.COMPLETION_ITEM_RESOLVE, found[index], REQUEST_TIMEOUT)
            ): index
            for index in unknown
        }
        for task, index in tasks.items():  # what arrives after the deadline still counts
            key = _doc_key(found[index])  # as asked: a resolved item may differ in detail
            task.add_done_callback(lambda done, key=key: self._learn_documentation(key, done))
        if tasks:
            await asyncio.wait(tasks, timeout=RESOLVE_SHARE * self._query_budget())
        for task, index in tasks.items():
            if task.done() and not task.cancelled() and isinstance(task.result(), dict):
                found[index] = task.result()
        return found

    def _learn_documentation(self, key: tuple[str, str], task: asyncio.Future[Any]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        item = task.result()
        if isinstance(item, dict):
            self._documentation[key] = item.get("documentation") or ""
            while len(self._documentation) > MAX_DOCUMENTATION:
                self._documentation.popitem(last=False)

    def _ensure_started(self) -> asyncio.Task[UpstreamConnection[object]]:
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        return self._starting

    async def _start(self) -> UpstreamConnection[object]:
        connection: UpstreamConnection[object] = UpstreamConnection(
            self.options, Headless(), replay=self._replay, settings=self.settings
        )
        self.connection = connection
        await connection.start()
        params = types.InitializeParams(
            process_id=None,
            root_uri=self._root_uri(),
            capabilities=CLIENT_CAPABILITIES,
            client_info=types.ClientInfo(name="steerlsp-analysis"),
        )
        if await connection.initialize(items.unstructure(params)) is not None:
            connection.send(rpc.notification(types.INITIALIZED, {}))
            connection.send(
                rpc.notification(types.WORKSPACE_DID_CHANGE_CONFIGURATION, self.settings())
            )
        return connection

    def configure(self) -> None:
        """The main settings changed: resend ours with the current Jedi environment (a
        no-op until started; a restart reads them anyway)."""
        connection = self.connection
        if connection is not None and connection.ready:
            connection.send(
                rpc.notification(types.WORKSPACE_DID_CHANGE_CONFIGURATION, self.settings())
            )

    def settings(self) -> dict[str, Any]:
        """The didChangeConfiguration params: the tuned settings and the main Jedi environment."""
        overlay = environment.overlay(self._environment())
        return {"settings": environment.with_overlay(TUNED_SETTINGS, overlay)}

    def _sync(self, connection: UpstreamConnection[object], uri: str, text: str) -> None:
        """Bring the private document to ``text``: didOpen the first time, then one
        ranged didChange of what differs."""
        doc = self._docs.get(uri)
        if doc is None:
            doc = self._docs[uri] = _Private(text)
            connection.send(self._open(uri, doc), replayable=True)
            while len(self._docs) > MAX_DOCUMENTS:
                self._close(connection, next(iter(self._docs)))
            return
        self._docs.move_to_end(uri)
        change = items.ranged_change(doc.text, text)
        if change is None:
            return
        doc.text = text
        doc.version += 1
        params = types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            content_changes=[change],
        )
        connection.send(
            rpc.notification(types.TEXT_DOCUMENT_DID_CHANGE, items.unstructure(params)),
            replayable=True,
        )

    def _close(self, connection: UpstreamConnection[object], uri: str) -> None:
        """Close a private document (the least recently asked, or the warm-up's)."""
        if self._docs.pop(uri, None) is None:
            return
        close = types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        connection.send(
            rpc.notification(types.TEXT_DOCUMENT_DID_CLOSE, items.unstructure(close)),
            replayable=True,
        )

    def _open(self, uri: str, doc: _Private) -> dict[str, Any]:
        params = types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=uri, language_id="python", version=doc.version, text=doc.text
            )
        )
        return rpc.notification(types.TEXT_DOCUMENT_DID_OPEN, items.unstructure(params))

    def _replay(self) -> list[dict[str, Any]]:
        """didOpen of every private document, for a restarted instance."""
        return [self._open(uri, doc) for uri, doc in self._docs.items()]

    async def stop(self) -> None:
        """Stop the process, if it was ever started."""
        if self._warming is not None:
            self._warming.cancel()
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        if self.connection is not None:
            await self.connection.stop()

    # ---- status ----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The ``analysis`` section of ``steerlsp/status``: ``idle`` until first asked."""
        connection = self.connection
        if connection is None:
            return {"state": "idle"}
        upstream = connection.status()
        return {
            "state": upstream["state"],
            "pid": upstream["pid"],
            "rss_mb": isolation.rss_mb(upstream["pid"]),
            "restarts": upstream["restarts"],
            "memory_restarts": upstream["memory_restarts"],
            "stuck_restarts": self.stuck_restarts,
            "memory_limit_mb": upstream["memory_limit_mb"],
            "documents": len(self._docs),
            "queries": self.queries,
            "cache_hits": self.cache_hits,
            "timeouts": self.timeouts,
            "timeouts_in_a_row": self._timeouts_in_a_row,
            "mean_ms": round(self._total_ms / self.queries, 1) if self.queries else None,
        }


class DocumentAnalysis:
    """The :class:`~steerlsp.models.steering.analysis.Analysis` of one editor document version.

    ``text`` is that document's whole speculative text and ``offset`` a code
    point index into it. Answers are cached per (version, ``text[:offset]``):
    what follows the offset is taken not to change them.
    """

    def __init__(self, instance: AnalysisInstance, uri: str, version: int) -> None:
        self.instance = instance
        self.uri = uri
        self.version = version

    def completions_at(
        self,
        text: str,
        offset: int,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        documented: bool = True,
    ) -> list[CompletionCandidate]:
        """The completion items at ``offset`` of ``text``, in the server's order."""
        return self._ask(
            types.TEXT_DOCUMENT_COMPLETION,
            items.candidates_from,
            text,
            offset,
            timeout,
            documented=documented,
        )

    def signature_at(
        self, text: str, offset: int, *, timeout: float = DEFAULT_TIMEOUT
    ) -> Signature | None:
        """The active signature of the call around ``offset``, or None outside a call."""
        return self._ask(
            types.TEXT_DOCUMENT_SIGNATURE_HELP, items.signature_from, text, offset, timeout
        )

    def definition_source(
        self, text: str, offset: int, *, timeout: float = DEFAULT_TIMEOUT
    ) -> DefinitionSource | None:
        """Where the name at ``offset`` is defined, or None when unknown or not in a file."""
        return self._ask(
            types.TEXT_DOCUMENT_DEFINITION, items.definition_from, text, offset, timeout
        )

    def _ask(
        self,
        method: str,
        convert: Callable[[Any], T],
        text: str,
        offset: int,
        timeout: float,
        *,
        documented: bool = True,
    ) -> T:
        if not 0 <= offset <= len(text):
            raise ValueError(f"offset {offset} is outside the text (length {len(text)})")
        instance = self.instance

        async def question() -> T:
            answer = await instance.query(method, self.uri, text, offset, documented=documented)
            return convert(answer)

        key = (method, self.uri, self.version, text[:offset], documented)
        return instance.ask(key, question, timeout)


def _doc_key(item: dict[str, Any]) -> tuple[str, str]:
    return str(item.get("label", "")), str(item.get("detail", ""))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
