"""The private analysis instance: a second pylsp that only the decode loop asks.

Speculative text (the editor's document plus what the model has written) must
never reach the editor, so it goes to a pylsp of its own
(:mod:`~steerlsp.server.analysis.private_server`), with the main upstream's
Jedi environment and root, under the editor documents' own uris
(:mod:`~steerlsp.server.analysis.documents`). It starts on the first question
or :meth:`AnalysisInstance.warm`, never before.

The decode thread asks through :meth:`AnalysisInstance.document`, an
:class:`~steerlsp.models.steering.analysis.Analysis` bound to one document version;
each question runs on the event loop (``run_coroutine_threadsafe``) within
its time budget, and answers are cached per speculative text up to the
offset (definitions per document version too), or, for the members of a module
the document imports (``np.``), per module for every document
(:mod:`~steerlsp.server.analysis.receivers`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from lsprotocol import types
from pygls.uris import to_fs_path

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
from steerlsp.server.analysis.documents import PrivateDocuments
from steerlsp.server.analysis.private_server import STUCK_SECONDS, TUNED_SETTINGS, PrivateServer
from steerlsp.server.analysis.receivers import class_bases, module_receiver
from steerlsp.server.documents.text import utf8_size
from steerlsp.server.upstream import environment, isolation
from steerlsp.server.upstream.connection import UpstreamConnection, UpstreamOptions
from steerlsp.server.upstream.pending import UpstreamError
from steerlsp.server.upstream.process import default_command

log = logging.getLogger(__name__)

_candidate_from = items.candidate_from  # ``items`` is also a parameter's name below

T = TypeVar("T")

_BLANK_LINE = re.compile(r"^[ \t\f]*\r?\n", re.MULTILINE)

# ``completions_at(documented=True)`` (the benchmarks' oracle; the decode loop lists
# items without documentation and asks ``documented`` for its contenders): the items
# whose documentation is resolved (completionItem/resolve, pipelined), the first ones
# without a leading underscore, in the server's order.
RESOLVE_AT_MOST = 40
# How long a question waits for the items' documentation (resolved in parallel), as a
# share of the decode loop's query budget: a large class's first list (pandas'
# DataFrame) would otherwise take all of it. Documentation that arrives later is
# kept for the next question.
RESOLVE_SHARE = 0.6
# Resolved documentation strings kept (see ``AnalysisInstance._documentation``).
MAX_DOCUMENTATION = 4096
# Answers kept, over all documents and versions.
MAX_CACHED = 512
# A request's own limit on the loop; the caller's budget is usually far shorter.
REQUEST_TIMEOUT = 30.0
# The throwaway question that warms the instance: Jedi's first completion loads
# its stdlib stubs (about a second), which no real question should pay for.
WARM_TEXT = "import os\nos."
# An opened or changed document is read by the instance (``warm_document``) once the
# editor has been quiet this long, the model idle and nothing asked: a user reading.
QUIET_SECONDS = 0.5
# Documents whose warmed text is remembered (so the same text is not warmed twice).
MAX_WARMED = 64
# The most class bases of a document whose members are read ahead after it
# (``receivers.class_bases``), each once per environment and process.
MAX_BASES_READ_AHEAD = 4


@dataclass(frozen=True)
class Provisional:
    """An answer that is not cached: some of it (an item's documentation) came too late."""

    answer: Any


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
        background: bool = True,
        busy: Callable[[], bool] = lambda: False,
    ) -> None:
        """``root_uri`` and ``python_environment`` are read when it starts (and at each
        restart, for the environment), so they follow the main upstream's.
        ``background``: the process runs only on a core the decode loop does not
        want; its questions are answered while the loop waits for them. ``busy``
        says whether the model is decoding or has a job queued (no document is
        read ahead then, :meth:`warm_document`)."""
        self.loop = loop
        self.options = UpstreamOptions(
            command or default_command(),
            max_restarts=max_restarts,
            backoff=backoff,
            background=background,
        )
        self._environment = python_environment
        self._query_budget = query_budget  # seconds: the decode loop's wait per question
        self._docs = PrivateDocuments()
        self.server = PrivateServer(
            loop,
            self.options,
            root_uri=root_uri,
            settings=self.settings,
            replay=self._docs.replay,
            stuck_after=stuck_after,
        )
        self._warming: concurrent.futures.Future[None] | None = None
        self._cache: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        # The cache's and the questions under way; reentrant: an answer that came already
        # is cached by its callback at once, on the thread that asked.
        self._cache_lock = threading.RLock()
        self._asking: dict[tuple[Any, ...], concurrent.futures.Future[Any]] = {}
        self._busy = busy
        self._last_asked = 0.0  # when the decode loop or the editor last did something
        # Documents to read ahead (uri -> how to read its text when its turn comes), the
        # task that reads them, and the text each was last read at (a hash).
        self._to_warm: OrderedDict[str, Callable[[], str | None]] = OrderedDict()
        self._warming_documents: asyncio.Task[None] | None = None
        self._warmed: OrderedDict[str, int] = OrderedDict()
        self.warmed_documents = 0
        self._bases_read: OrderedDict[tuple[int | None, str, str], None] = OrderedDict()
        self.warmed_bases = 0
        # Resolved documentation by (label, detail): Jedi's detail names the defining
        # class or module, so a member's documentation is resolved once per session.
        self._documentation: OrderedDict[tuple[str, str], Any] = OrderedDict()
        # Per uri, the text up to the offset of its last completion list: pylsp
        # resolves an item against its document's last list (by label).
        self._listed: dict[str, str] = {}
        # Resolved items by (uri, text up to the offset without blank lines, label): a
        # keystroke that changes the contenders resolves only the new ones.
        self._resolved: OrderedDict[tuple[str, str, str], dict[str, Any]] = OrderedDict()
        self.queries = 0  # answered by the server (cache hits excluded)
        self.cache_hits = 0
        self.timeouts = 0
        self._total_ms = 0.0
        self.max_document_bytes = guard.DEFAULT_LIMIT  # larger texts are not analysed

    @property
    def connection(self) -> UpstreamConnection[object] | None:
        """The private pylsp's connection, once started."""
        return self.server.connection

    @property
    def stuck_restarts(self) -> int:
        """Restarts of a process found stuck (see ``PrivateServer``)."""
        return self.server.stuck_restarts

    # ---- the decode thread's side ----------------------------------------

    def document(self, uri: str, version: int) -> DocumentAnalysis:
        """The :class:`~steerlsp.models.steering.analysis.Analysis` of one document version."""
        return DocumentAnalysis(self, uri, version)

    def ask(
        self,
        key: tuple[Any, ...],
        make: Callable[[], Coroutine[Any, Any, T | Provisional]],
        timeout: float,
    ) -> T:
        """Run the coroutine ``make()`` on the loop within ``timeout`` seconds, or answer
        from the cache under ``key`` (a :class:`Provisional` answer is not kept), or join
        the same question under way. Raises :class:`AnalysisTimeout` past the budget
        (the question goes on, and its answer is cached when it comes) and
        :class:`AnalysisError` when the server fails."""
        self.touch()
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                self.cache_hits += 1
                return self._cache[key]  # type: ignore[no-any-return]
            future = self._asking.get(key)
            if future is None:
                if _running_loop() is self.loop:
                    raise RuntimeError(
                        "the analysis is asked on its own event loop: it would deadlock"
                    )
                future = asyncio.run_coroutine_threadsafe(make(), self.loop)
                self._asking[key] = future
                future.add_done_callback(functools.partial(self._arrived, key))
        started = time.perf_counter()
        try:
            answer = future.result(timeout)
        except concurrent.futures.TimeoutError as exc:
            # Not cancelled: pylsp could not drop the question anyway, and the answer,
            # cached when it comes, serves the next question (the same one joins it).
            self.timeouts += 1
            self.server.timed_out()
            raise AnalysisTimeout(f"{key[0]} took over {timeout * 1000:.0f} ms") from exc
        except concurrent.futures.CancelledError as exc:
            raise AnalysisError(f"{key[0]} was cancelled") from exc
        except UpstreamError as exc:
            raise AnalysisError(f"{key[0]}: {exc}") from exc
        self.queries += 1
        self.server.answered()
        self._total_ms += (time.perf_counter() - started) * 1000
        if isinstance(answer, Provisional):  # the next question may find more
            return answer.answer  # type: ignore[no-any-return]
        return answer  # type: ignore[no-any-return]

    def _arrived(self, key: tuple[Any, ...], future: concurrent.futures.Future[Any]) -> None:
        """A question's answer came, in time or not (any thread): cached unless it
        failed or is :class:`Provisional`."""
        with self._cache_lock:
            self._asking.pop(key, None)
            if future.cancelled() or future.exception() is not None:
                return
            answer = future.result()
            if isinstance(answer, Provisional):
                return
            self._cache[key] = answer
            if len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)

    def shared_module(self, module: str, uri: str) -> bool:
        """Whether ``module``'s members are the same for every document: it is not the
        workspace's own (a file or package in its root, its ``src``, or beside the
        document ``uri``), whose members change as the user edits it."""
        top = module.split(".")[0]
        folders = [os.path.dirname(to_fs_path(uri) or "")]
        root = self.server.root_uri()
        if root:
            folder = to_fs_path(root) or ""
            folders += [folder, os.path.join(folder, "src")]
        return not any(
            os.path.exists(os.path.join(folder, name))
            for folder in folders
            if folder
            for name in (top, f"{top}.py", f"{top}.pyi")
        )

    def warm(self) -> None:
        """Start pylsp now and have it answer one throwaway completion, so that the first
        real question does not wait for the start (about 2.4 s) and go unanswered.

        Callable from any thread, at most once; failures are logged at debug, never
        raised (a real question reports them)."""
        if self._warming is None:
            self._warming = asyncio.run_coroutine_threadsafe(self._warm(), self.loop)

    def touch(self) -> None:
        """The editor or the decode loop did something: no document is read ahead now."""
        self._last_asked = time.monotonic()

    def warm_document(
        self, uri: str, text: Callable[[], str | None], *, opened: bool = True
    ) -> None:
        """On the loop, after ``uri`` was opened or changed: have the instance read it
        (and the modules it imports) in the background, so that the first question
        about it pays only for the inference at its cursor. Jedi's first question on a
        document parses it and its imports: 0.3 to 0.75 s of the first question's 0.4
        to 0.8 s on the third-party sample, against 40 to 150 ms for the next one.

        One throwaway question at its start (the module's names, no documentation),
        when ``uri`` was just ``opened`` or not yet read (a change then: its parse is
        incremental after that), and only while the model is idle and neither the
        editor nor the decode loop has done anything for :data:`QUIET_SECONDS`: a
        user reading, never typing. ``text()`` is read when its turn comes (None:
        closed since). pylsp answers one question at a time, so a question of the
        decode loop's asked while it runs waits for it."""
        self.touch()
        if not opened and uri in self._warmed:
            return
        self._to_warm[uri] = text
        self._to_warm.move_to_end(uri)
        if self._warming_documents is None or self._warming_documents.done():
            self._warming_documents = asyncio.ensure_future(self._warm_documents())

    def limit(self, memory_limit_mb: int | None, max_document_bytes: int) -> None:
        """The bounds of ``upstream.*``: its memory, and the largest text it analyses."""
        self.max_document_bytes = max_document_bytes
        self.server.limit_memory(memory_limit_mb)

    # ---- on the event loop -----------------------------------------------

    async def _warm(self) -> None:
        started = time.perf_counter()
        try:
            connection = await asyncio.shield(self.server.ensure_started())
            if not connection.ready:
                log.debug("analysis instance not warmed: %s", connection.unavailable)
                return
            uri = self.server.warm_uri()
            await self.query(types.TEXT_DOCUMENT_COMPLETION, uri, WARM_TEXT, len(WARM_TEXT))
            self._docs.close(connection, uri)
        except Exception as exc:
            log.debug("warming the analysis instance failed: %s", exc)
            return
        log.debug("analysis instance warm in %.0f ms", (time.perf_counter() - started) * 1000)

    async def _warm_documents(self) -> None:
        while self._to_warm:
            await self._quiet()
            if not self._to_warm:
                return
            uri, read = self._to_warm.popitem(last=False)
            try:
                text = read()
                if text is None or utf8_size(text) > self.max_document_bytes:
                    continue
                if self._warmed.get(uri) == hash(text):
                    continue
                await self.query(types.TEXT_DOCUMENT_COMPLETION, uri, text, 0, documented=False)
                self._warmed[uri] = hash(text)
                self._warmed.move_to_end(uri)
                while len(self._warmed) > MAX_WARMED:
                    self._warmed.popitem(last=False)
                self.warmed_documents += 1
                await self._warm_bases(uri, text, read)
            except (AnalysisError, UpstreamError, OSError) as exc:  # the next one's turn comes
                log.debug("reading %s ahead failed: %s", uri, exc)

    async def _warm_bases(self, uri: str, text: str, read: Callable[[], str | None]) -> None:
        """After ``uri``'s text was read: the members of its classes' bases, one
        question each (``old_build.`` after the text), so that the first ``self.`` in a
        method finds Jedi's inference of them done: 0.3 to 0.6 s less for a library
        base. Each waits for quiet again; a document opened since, or a change to
        this one, comes first. Each base once per environment and pylsp process (a
        restarted one has lost Jedi's inference)."""
        for base in class_bases(text, MAX_BASES_READ_AHEAD):
            if self._base_key(base) in self._bases_read:
                continue
            await self._quiet()
            if self._to_warm or read() != text:
                return
            probe = f"{text}\n\n{base}."
            await self.query(
                types.TEXT_DOCUMENT_COMPLETION, uri, probe, len(probe), documented=False
            )
            self._bases_read[self._base_key(base)] = None
            while len(self._bases_read) > MAX_WARMED:
                self._bases_read.popitem(last=False)
            self.warmed_bases += 1

    def _base_key(self, base: str) -> tuple[int | None, str, str]:
        """What a base read ahead is known by: pylsp's process, the environment, the base."""
        connection = self.connection
        pid = connection.status()["pid"] if connection is not None else None
        return pid, self._environment() or "", base

    async def _quiet(self) -> None:
        """Until the model is idle and nothing happened for :data:`QUIET_SECONDS`."""
        while self._busy() or time.monotonic() - self._last_asked < QUIET_SECONDS:
            await asyncio.sleep(QUIET_SECONDS / 4)

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
        connection = await asyncio.shield(self.server.ensure_started())
        if not connection.ready:
            raise AnalysisError(connection.unavailable or "the analysis server is restarting")
        self._docs.sync(connection, uri, text)
        params = types.TextDocumentPositionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=items.position_at(text, offset),
        )
        if method == types.TEXT_DOCUMENT_COMPLETION:
            self._listed[uri] = text[:offset]
        started = time.perf_counter()
        result = await connection.request(method, items.unstructure(params), REQUEST_TIMEOUT)
        log.debug(
            "%s at %s:%d answered in %.0f ms",
            method,
            uri,
            offset,
            (time.perf_counter() - started) * 1000,
        )
        if method == types.TEXT_DOCUMENT_COMPLETION and documented:
            result = await self._resolve(connection, result)
        return result

    async def resolve_items(
        self, uri: str, text: str, offset: int, labels: list[str], *, module: str | None = None
    ) -> list[dict[str, Any]]:
        """The completion items at ``offset`` named by ``labels``, resolved (their
        documentation and detail) by ``completionItem/resolve``, after listing the
        items again unless the document's last list was asked at this text and offset;
        each kept per document, text up to the offset and label, or per ``module``
        and label where the offset completes the members of that (shared) module:
        the next document and the next keystroke find them.

        Not looked up among the documentation resolved before: a list without it
        names no item's class (Jedi's detail comes with the resolve), and the same
        label in another class is another member."""
        where = ("module", module) if module else (uri, without_blank_lines(text[:offset]))
        found = {
            label: self._resolved[(*where, label)]
            for label in labels
            if (*where, label) in self._resolved
        }
        labels = [label for label in labels if label not in found]
        if not labels:
            return list(found.values())
        listed = self._listed.get(uri) == text[:offset]
        log.debug("resolving %d items at %s:%d (listed: %s)", len(labels), uri, offset, listed)
        if not listed:
            await self.query(types.TEXT_DOCUMENT_COMPLETION, uri, text, offset, documented=False)
        got = await self._resolve_labels(uri, labels)
        if not got and listed:  # pylsp keeps another list: it restarted, or one came between
            await self.query(types.TEXT_DOCUMENT_COMPLETION, uri, text, offset, documented=False)
            got = await self._resolve_labels(uri, labels)
        for label, answer in got.items():
            found[label] = self._resolved[(*where, label)] = answer
        while len(self._resolved) > MAX_DOCUMENTATION:
            self._resolved.popitem(last=False)
        return list(found.values())

    async def _resolve_labels(self, uri: str, labels: list[str]) -> dict[str, dict[str, Any]]:
        """``completionItem/resolve`` of each label against ``uri``'s last list, pipelined:
        the items pylsp found there."""
        connection = self.server.connection
        if connection is None or not connection.ready:
            raise AnalysisError(connection.unavailable if connection else "not started")
        tasks = [
            asyncio.ensure_future(
                connection.request(
                    types.COMPLETION_ITEM_RESOLVE,
                    {"label": label, "data": {"doc_uri": uri}},  # the document it resolves in
                    REQUEST_TIMEOUT,
                )
            )
            for label in labels
        ]
        answers = await asyncio.gather(*tasks)
        # pylsp answers an item it cannot find in its last list as it was asked
        return {
            label: answer
            for label, answer in zip(labels, answers, strict=True)
            if isinstance(answer, dict) and answer.get("label") == label and "detail" in answer
        }

    async def _resolve(self, connection: UpstreamConnection[object], result: Any) -> Any:
        """The completion items, the first public ones with their documentation resolved;
        :class:`Provisional` when some documentation missed its time."""
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
            task.add_done_callback(functools.partial(self._learn_documentation, key))
        if tasks:
            await asyncio.wait(tasks, timeout=RESOLVE_SHARE * self._query_budget())
        late = False
        for task, index in tasks.items():
            if task.done() and not task.cancelled() and isinstance(task.result(), dict):
                found[index] = task.result()
            else:
                late = late or not task.done()
        return Provisional(found) if late else found

    def _learn_documentation(self, key: tuple[str, str], task: asyncio.Future[Any]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        item = task.result()
        if isinstance(item, dict):
            self._documentation[key] = item.get("documentation") or ""
            while len(self._documentation) > MAX_DOCUMENTATION:
                self._documentation.popitem(last=False)

    def configure(self) -> None:
        """The main settings changed: resend ours with the current Jedi environment (a
        no-op until started; a restart reads them anyway), and forget every answer."""
        with self._cache_lock:
            self._cache.clear()
        self._resolved.clear()
        self._bases_read.clear()
        self.server.configure()

    def settings(self) -> dict[str, Any]:
        """The didChangeConfiguration params: the tuned settings and the main Jedi environment."""
        overlay = environment.overlay(self._environment())
        return {"settings": environment.with_overlay(TUNED_SETTINGS, overlay)}

    async def stop(self) -> None:
        """Stop the process, if it was ever started."""
        if self._warming is not None:
            self._warming.cancel()
        if self._warming_documents is not None:
            self._warming_documents.cancel()
        await self.server.stop()

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
            "stuck_restarts": self.server.stuck_restarts,
            "memory_limit_mb": upstream["memory_limit_mb"],
            "documents": len(self._docs),
            "queries": self.queries,
            "cache_hits": self.cache_hits,
            "documents_read_ahead": self.warmed_documents,
            "bases_read_ahead": self.warmed_bases,
            "timeouts": self.timeouts,
            "timeouts_in_a_row": self.server.timeouts_in_a_row,
            "mean_ms": round(self._total_ms / self.queries, 1) if self.queries else None,
        }


class DocumentAnalysis:
    """The :class:`~steerlsp.models.steering.analysis.Analysis` of one editor document version.

    ``text`` is that document's whole speculative text and ``offset`` a code
    point index into it. Answers are cached per ``text[:offset]`` (its blank lines
    left out): what follows the offset is taken not to change them, so a keystroke
    after it (the next version) asks nothing again, nor does a line opened above.
    The members of a module the document imports and uses only as a module
    (``np.`` after ``import numpy as np``), unless the module is the workspace's
    own, are cached per module instead: every document and position shares them.
    Definitions, whose lines may lie after the offset, are cached per version
    too; a change of settings (the Jedi environment) forgets them all.
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

    def documented(
        self,
        text: str,
        offset: int,
        items: Sequence[CompletionCandidate],
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> list[CompletionCandidate]:
        """``items`` of the completion at ``offset``, with their documentation where
        pylsp gives it (each a Jedi inference: asked only for the names that can win)."""
        if not 0 <= offset <= len(text):
            raise ValueError(f"offset {offset} is outside the text (length {len(text)})")
        labels = [c.name for c in items]  # labels are names (``include_params`` is off)
        instance = self.instance
        module = self._shared_module(text, offset)

        async def question() -> list[CompletionCandidate]:
            resolved = await instance.resolve_items(self.uri, text, offset, labels, module=module)
            got = {c.name: c for c in map(_candidate_from, resolved) if c}
            return [
                replace(
                    c,
                    detail=got[c.name].detail or c.detail,
                    documentation=got[c.name].documentation,
                    returns=got[c.name].returns,
                )
                if c.name in got
                else c
                for c in items
            ]

        key: tuple[Any, ...]
        if module is not None:  # every document's answer
            key = ("documentation", "module", module, tuple(labels))
        else:
            key = ("documentation", self.uri, without_blank_lines(text[:offset]), tuple(labels))
        return instance.ask(key, question, timeout)

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

        async def question() -> T | Provisional:
            answer = await instance.query(method, self.uri, text, offset, documented=documented)
            if isinstance(answer, Provisional):
                return Provisional(convert(answer.answer))
            return convert(answer)

        # A definition's line may lie after the offset: its answer is the version's own.
        version = self.version if method == types.TEXT_DOCUMENT_DEFINITION else None
        module = (
            self._shared_module(text, offset) if method == types.TEXT_DOCUMENT_COMPLETION else None
        )
        key: tuple[Any, ...]
        if module is not None:
            key = (method, "module", module, documented)  # every document's answer
        else:
            key = (method, self.uri, version, without_blank_lines(text[:offset]), documented)
        return instance.ask(key, question, timeout)

    def _shared_module(self, text: str, offset: int) -> str | None:
        """The module whose members ``text[:offset]`` completes, when that is certain
        from the text and the module is not the workspace's own: its members, and
        their documentation, are then the same for every document."""
        module = module_receiver(text, offset)
        return (
            module if module is not None and self.instance.shared_module(module, self.uri) else None
        )


def without_blank_lines(text: str) -> str:
    """``text`` without its lines of only whitespace: Python reads the same tokens
    (a blank line in a string literal changes its value, but not what a completion,
    or a signature, finds), so a line opened above the cursor asks nothing again."""
    return _BLANK_LINE.sub("", text)


def _doc_key(item: dict[str, Any]) -> tuple[str, str]:
    return str(item.get("label", "")), str(item.get("detail", ""))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
