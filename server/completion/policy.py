"""Inline completions over LSP: model lifecycle, request policy, replies.

Policy, per document: a new request cancels the one still running
(cancel-previous); ``didChange`` cancels it too, and a result computed for an
older version is never delivered; text typed that matches the last suggestion
is answered from it without generating (typed-ahead); automatic triggers are
debounced. Every request ends in exactly one reply: a result, or
``RequestCancelled``, or ``RequestFailed`` while no model is ready.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp.models.decoding.worker import (
    CancelToken,
    Job,
    JobCancelled,
    JobFailed,
    ModelWorker,
    WorkerDied,
)
from steerlsp.models.deprecation.runtime import RuntimeDeprecations
from steerlsp.models.options import (
    CompletionOptions,
    CompletionRequest,
    Document,
    ModelOutOfMemory,
    Sampling,
)
from steerlsp.prompts.builder import MAX_CHARS_PER_TOKEN
from steerlsp.prompts.context import ChatContext
from steerlsp.server import config
from steerlsp.server.chatlsp import replies
from steerlsp.server.chatlsp.repair import Checked, Repaired, contextual, repaired
from steerlsp.server.chatlsp.service import ChatLsp, ChatLspError, Hole
from steerlsp.server.completion.loading import LoadProgress, load_configured
from steerlsp.server.completion.replies import (
    Explained,
    document_with,
    inline_list,
    printable,
    relative_path,
    typed_ahead,
)
from steerlsp.server.config import Settings
from steerlsp.server.documents.cursor import Around, text_around
from steerlsp.server.documents.workspace import SteerDocument, client_encoding, open_document
from steerlsp.server.lsp.errors import JsonRpcRequestCancelled, RequestFailed
from steerlsp.server.upstream import environment

if TYPE_CHECKING:
    from steerlsp.models.decoding.completer import Completer
    from steerlsp.models.steering.analysis import Analysis
    from steerlsp.server.analysis.instance import AnalysisInstance
    from steerlsp.server.lsp.handlers import SteerServer

log = logging.getLogger(__name__)

# The most an inline completion waits for its ChatLSP context (Jedi, three questions
# cached per document version) before it goes on without.
INLINE_CONTEXT_BUDGET = 0.5
# Documents whose last completion ``steerlsp/explain`` can still describe.
EXPLAINED_DOCUMENTS = 64


class ModelState(enum.Enum):
    DISABLED = "disabled"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


@dataclass
class _Suggestion:
    uri: str
    prefix: str
    suffix: str
    texts: tuple[str, ...]  # the first completion ("" for nothing), then alternatives
    asked: int  # how many were asked for: a request wanting more generates again


@dataclass
class _Pending:
    serial: int
    version: int | None
    job: Job[Any] | None = None
    # The completion menu's: an edit does not stop it, and its result is kept for
    # typed-ahead whatever the version (see server/completion/menu.py).
    survives_edits: bool = False


class Completions:
    """Owns the model worker and answers completion requests for the server."""

    def __init__(self, ls: SteerServer) -> None:
        self.ls = ls
        self.state = ModelState.LOADING
        self.error: str | None = None
        self.completer: Completer | None = None
        self.accepted = 0
        self.served = 0
        self.steering_failures = 0  # steered jobs that failed and were decoded unsteered
        self._worker = ModelWorker()
        self._pending: dict[str, _Pending] = {}
        self._serial = 0
        self._last: dict[str, _Suggestion] = {}
        self._explained: OrderedDict[str, Explained] = OrderedDict()
        self._loaded_for: tuple[Any, ...] | None = None
        self._runtime: RuntimeDeprecations | None = None  # the opt-in runtime check
        self._runtime_off: str | None = None  # why it is off though asked for (logged once)

    @property
    def settings(self) -> Settings:
        return self.ls.settings

    # ---- model lifecycle ---------------------------------------------

    def start_loading(self) -> None:
        """Load the configured model on the worker thread; report progress and failure."""
        model = self.settings.model
        key = (
            model.name,
            model.device,
            model.dtype,
            model.allow_downloads,
            model.trust_remote_code,
            model.fim_template,
            model.low_precision_head,
            model.head_precision,
            model.body_precision,
        )
        if not self.settings.completion.enabled:
            self.state, self.completer, self._loaded_for = ModelState.DISABLED, None, None
            return
        if key == self._loaded_for:
            return
        self._loaded_for = key
        self.state, self.error, self.completer = ModelState.LOADING, None, None
        loop = asyncio.get_running_loop()
        progress = LoadProgress(self.ls, loop, f"steerlsp: loading {model.name} model")
        job = self._worker.submit(lambda token: load_configured(self.settings, progress.report))
        progress.begin()

        def done(future: Any) -> None:
            loop.call_soon_threadsafe(self._loaded, job, future, progress)

        job.future.add_done_callback(done)

    def _loaded(self, job: Job[Any], future: Any, progress: LoadProgress) -> None:
        if future.exception() is not None:
            self.state, self.error = ModelState.FAILED, str(future.exception())
            log.error("model load failed: %s", self.error)
            progress.end("failed")
            self.ls.proxy.show_message(
                types.MessageType.Error, f"steerlsp: AI completions are off: {self.error}"
            )
            return
        self.completer = future.result()
        self.state = ModelState.READY
        progress.end("ready")
        log.info("model ready: %s", self.settings.model.name)
        self.completer.use_runtime(self._runtime_check())
        self._warm_analysis()

    def configure(self) -> None:
        """Settings changed; reloads the model only if a model setting changed."""
        self._last.clear()
        self.start_loading()
        if self.state is ModelState.READY:
            if self.completer is not None:
                self.completer.use_runtime(self._runtime_check())
            self._warm_analysis()  # steering may have just been turned on

    def _runtime_check(self) -> RuntimeDeprecations | None:
        """The runtime deprecation check for the project's interpreter (the one Jedi
        resolves imports in), when it is asked for and the workspace is trusted; kept
        while that interpreter is unchanged. One INFO line when asked for without trust."""
        on, off = config.runtime_deprecation(self.settings)
        if off is not None and off != self._runtime_off:
            log.info(off)
        self._runtime_off = off
        python = environment.interpreter(self.ls.python_environment()) if on else None
        if python is None:
            self._runtime = None
        elif self._runtime is None or self._runtime.python != python:
            self._runtime = RuntimeDeprecations(python)
        return self._runtime

    def _warm_analysis(self) -> None:
        """Start the private pylsp now, so that the first steered completion does not
        wait for it (about 2.4 s) and go unsteered."""
        analysis = self._analysis()
        if analysis is not None:
            analysis.warm()

    def status(self) -> dict[str, Any]:
        """``steerlsp/status``: never "ready" while no thread can serve a job."""
        worker = self._worker.health()
        state, error = self.state.value, self.error
        if self._worker.gave_up is not None and self.state is not ModelState.DISABLED:
            state, error = ModelState.FAILED.value, self._worker.gave_up
        return {
            "state": state,
            "model": self.settings.model.name,
            "error": error,
            "served": self.served,
            "accepted": self.accepted,
            "steering_failures": self.steering_failures,
            "worker": worker,
        }

    def explain(self, uri: str) -> dict[str, Any]:
        """``steerlsp/explain``: the last completion of ``uri`` and what steered it."""
        explained = self._explained.get(uri)
        if explained is None:
            return {"uri": printable(uri), "completion": None, "steered": False, "trace": None}
        return explained.as_dict()

    # ---- requests ------------------------------------------------------

    def document_closed(self, uri: str) -> None:
        """``didClose``: its explanation is no longer asked for."""
        self._explained.pop(uri, None)

    def document_changed(self, uri: str) -> None:
        """``didChange``: the running generation for ``uri`` is stale; stop it (the
        completion menu's decides at its next request)."""
        pending = self._pending.get(uri)
        if pending is not None and pending.job is not None and not pending.survives_edits:
            pending.job.cancel()

    async def inline(self, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        """Answer ``textDocument/inlineCompletion``.

        A document that is not open, or a position outside it, gets no items at
        once: Neovim asks for every attached buffer with the current window's
        cursor.
        """
        uri, position = params.text_document.uri, params.position
        around = self._around(uri, position)
        selected = params.context.selected_completion_info
        start = around if selected is None else self._around(uri, selected.range.start)
        if around is None or start is None:
            return types.InlineCompletionList(items=[])
        self._require_ready()
        prefix, suffix = around.prefix, around.suffix
        replace_start = position
        if selected is not None:
            # The editor shows a menu item: continue as if it were accepted.
            prefix = start.prefix + selected.text
            replace_start = selected.range.start
        automatic = params.context.trigger_kind == types.InlineCompletionTriggerKind.Automatic
        # Asked for (Invoked): the editor can cycle through several. Automatic: one.
        wanted = 1 if automatic else self.settings.completion.alternatives
        cached = self._typed_ahead(uri, prefix, suffix, wanted)
        if cached is not None:
            return inline_list(cached, replace_start, position, selected)
        document = self._snapshot(uri, replace_start, position, selected.text if selected else "")
        chat = self.settings.chatlsp
        done, _, others = await self._contextual(
            uri,
            position,
            prefix,
            suffix,
            document,
            debounce=automatic,
            parts=chat.prompt_context if chat.enabled else "none",
            rounds=chat.repair_rounds if chat.enabled and chat.repair_inline else 0,
            budget_s=INLINE_CONTEXT_BUDGET,
            alternatives=wanted,
        )
        return inline_list((done.text, *others), replace_start, position, selected)

    async def snippet(self, hole: Hole, *, rounds: int) -> replies.LlmCompletionResult:
        """``textDocument/llmCompletion`` (``rounds`` 0) and ``llmCompletionResolveErrors``:
        a completion at the hole with the whole ChatLSP context, and error rounds."""
        around = self._around(hole.uri, hole.position)
        if around is None:
            raise ChatLspError(f"{hole.uri} is not open, or the position lies outside it")
        self._require_ready()
        document = self._snapshot(hole.uri, hole.position, hole.position)
        done, used, _ = await self._contextual(
            hole.uri,
            hole.position,
            around.prefix,
            around.suffix,
            document,
            debounce=False,
            parts="headers",
            rounds=rounds,
            budget_s=self.settings.chatlsp.timeout_ms / 1000,
        )
        context = replies.CompletionContext(
            expected_type=used.expected_type,
            relevant_types=used.relevant_types,
            relevant_headers=used.relevant_headers,
            rounds=list(done.feedback),
        )
        return replies.LlmCompletionResult(snippet=done.text, context=context)

    async def _contextual(
        self,
        uri: str,
        position: types.Position,
        prefix: str,
        suffix: str,
        document: Document | None,
        *,
        debounce: bool,
        parts: str,
        rounds: int,
        budget_s: float,
        alternatives: int = 1,
    ) -> tuple[Repaired, ChatContext, tuple[str, ...]]:
        """A completion with ChatLSP context (asked for after the debounce, so that
        superseded keystrokes cost no analysis) and ``rounds`` error rounds; also the
        first attempt's alternatives (up to ``alternatives - 1``, distinct from it)."""
        chat: ChatLsp | None = getattr(self.ls, "chatlsp", None)  # absent on bare test servers
        if chat is None:
            parts, rounds = "none", 0
        version = self._version(uri)
        used: list[ChatContext] = []  # the context the first attempt was given
        others: list[str] = []

        async def generate(attempt: str, errors: str) -> str:
            async def supply() -> ChatContext:
                if not used:
                    found = ChatContext()
                    if chat is not None:
                        found = await contextual(chat, Hole(uri, position), parts, budget_s)
                    used.append(found)
                return dataclasses.replace(used[0], attempt=attempt, feedback=errors)

            first = not used
            texts = await self._generate(
                uri,
                version,
                prefix,
                suffix,
                debounce=debounce and first,
                document=document,
                context=supply,
                alternatives=alternatives if first else 1,
            )
            if first:
                others.extend(texts[1:])
            return texts[0]

        async def check(text: str) -> Checked:
            from steerlsp.server.chatlsp.errors import feedback, needs_repair

            assert chat is not None  # no rounds without it
            _, checked, problems = await chat.error_report(Hole(uri, position, text))
            return Checked(len(problems), needs_repair(problems), feedback(problems, checked))

        done = await repaired(generate, check, rounds)
        explained = self._explained.get(uri)
        if explained is not None and done.feedback:
            self._explained[uri] = dataclasses.replace(
                explained, completion=done.text, rounds=len(done.feedback)
            )
        return done, (used[0] if used else ChatContext()), tuple(others)

    # ---- for the completion menu (server/completion/menu.py) -------------

    @property
    def ready(self) -> bool:
        """A model is loaded and a thread serves its jobs."""
        return self.state is ModelState.READY and self._worker.gave_up is None

    def around(self, uri: str, position: types.Position) -> Around | None:
        """The prompt's window at ``position`` of an open document (see ``_around``)."""
        return self._around(uri, position)

    def snapshot(self, uri: str, position: types.Position) -> Document | None:
        """The document at the cursor for steering (see ``_snapshot``)."""
        return self._snapshot(uri, position, position)

    def version(self, uri: str) -> int | None:
        """The open document's version; None when it is not open."""
        return self._version(uri)

    def suggestion(self, uri: str, prefix: str, suffix: str) -> str | None:
        """What the last suggestion of ``uri`` offers at ``prefix``|``suffix``: itself
        when it was made there ("" when it was nothing), the rest of the first one the
        text typed since begins, or None when it offers nothing there."""
        last = self._last.get(uri)
        if last is None:
            return None
        if (last.prefix, last.suffix) == (prefix, suffix):
            return last.texts[0]
        rests = typed_ahead(last.prefix, last.suffix, last.texts, prefix, suffix)
        return rests[0] if rests else None

    async def in_background(
        self,
        uri: str,
        version: int | None,
        prefix: str,
        suffix: str,
        document: Document | None,
        typed: Callable[[], str],
    ) -> tuple[str, ...]:
        """A generation for the completion menu: never debounced, cancelled by a newer
        generation for ``uri`` but not by an edit, its result kept for typed-ahead;
        abandoned (JsonRpcRequestCancelled) once it no longer agrees with ``typed()``,
        the text typed at the cursor since."""
        return await self._generate(
            uri,
            version,
            prefix,
            suffix,
            debounce=False,
            document=document,
            survives_edits=True,
            typed=typed,
        )

    def _document(self, uri: str) -> SteerDocument | None:
        """An open document, or None; never one read from disk (as pygls' getter would)."""
        return open_document(self.ls.workspace, uri)

    def _around(self, uri: str, position: types.Position) -> Around | None:
        """The prompt's window of an open document at ``position``; None when it is
        not open or the position lies outside it. Bounded by the token budgets (at
        most ``MAX_CHARS_PER_TOKEN`` characters a token), so a keystroke in a 20 MB
        file costs no more than one in a small one."""
        doc = self._document(uri)
        if doc is None:
            return None
        encoding = self.ls.workspace.position_encoding or types.PositionEncodingKind.Utf16
        c = self.settings.completion
        return text_around(
            doc.lines,
            position.line,
            position.character,
            getattr(encoding, "value", encoding),
            before=c.prefix_tokens * MAX_CHARS_PER_TOKEN,
            after=c.suffix_tokens * MAX_CHARS_PER_TOKEN,
        )

    def _snapshot(
        self, uri: str, start: types.Position, end: types.Position, insert: str = ""
    ) -> Document | None:
        """The document for steering, ``insert`` replacing ``start``..``end`` (the cursor);
        None when steering is off (the copy is not needed) or it cannot be built."""
        doc = self._document(uri)
        if doc is None or not self.settings.steering.enabled or self._analysis() is None:
            return None
        return document_with(doc.lines, start, end, insert, client_encoding(self.ls.workspace))

    def _analysis(self) -> AnalysisInstance | None:
        """The private pylsp steering asks, when steering is on and there is one."""
        if not self.settings.steering.enabled:
            return None
        return getattr(self.ls, "analysis", None)  # absent on servers built without one

    def _require_ready(self) -> None:
        if self._worker.gave_up is not None:
            raise RequestFailed(f"steerlsp: no model worker: {self._worker.gave_up}")
        if self.state is ModelState.READY:
            return
        if self.state is ModelState.LOADING:
            raise RequestFailed(
                "steerlsp: the model is still loading; try again in a moment", logging.INFO
            )
        if self.state is ModelState.DISABLED:
            raise RequestFailed(
                "steerlsp: AI completions are disabled (steerlsp.completion.enabled)", logging.INFO
            )
        # The load failure was logged and shown once; each request need not repeat it.
        raise RequestFailed(f"steerlsp: no model: {self.error}", logging.INFO)

    def _typed_ahead(
        self, uri: str, prefix: str, suffix: str, wanted: int = 1
    ) -> tuple[str, ...] | None:
        """The rest of the last suggestions at this document that the text typed since
        begins (at most ``wanted``, in their order); None when none does, or when more
        were wanted than were asked for then."""
        last = self._last.get(uri)
        if last is None or wanted > last.asked:
            return None
        rests = typed_ahead(last.prefix, last.suffix, last.texts, prefix, suffix)
        return rests[:wanted] or None

    async def _generate(
        self,
        uri: str,
        version: int | None,
        prefix: str,
        suffix: str,
        *,
        debounce: bool,
        document: Document | None = None,
        context: Callable[[], Awaitable[ChatContext]] | None = None,
        alternatives: int = 1,
        survives_edits: bool = False,
        typed: Callable[[], str] | None = None,
    ) -> tuple[str, ...]:
        """The completion at ``prefix``|``suffix`` (printable; "" for nothing), then up to
        ``alternatives - 1`` distinct others. Raises JsonRpcRequestCancelled when it
        was superseded, cancelled or the document changed, RequestFailed when the model
        cannot serve it."""
        previous = self._pending.get(uri)
        if previous is not None and previous.job is not None:
            previous.job.cancel()  # cancel-previous
        self._serial += 1
        pending = _Pending(self._serial, version, survives_edits=survives_edits)
        self._pending[uri] = pending
        try:
            if debounce and self.settings.completion.debounce_ms:
                await asyncio.sleep(self.settings.completion.debounce_ms / 1000)
                if self._pending.get(uri) is not pending:
                    raise JsonRpcRequestCancelled("superseded by a newer request")
            given = await context() if context is not None else ChatContext()
            if self._pending.get(uri) is not pending:
                # A newer request arrived while the context was fetched: it found no
                # job to cancel, so this one must not start one.
                raise JsonRpcRequestCancelled("superseded by a newer request")
            completer = self.completer
            assert completer is not None
            path = relative_path(uri, self.ls.workspace.root_path)
            request = CompletionRequest(prefix, suffix, path, document, given, typed)
            instance = self._analysis()
            analysis = instance.document(uri, version) if instance and version is not None else None
            completion = await self._run(
                uri, pending, completer, request, analysis, self._options(alternatives)
            )
        except JobCancelled as exc:
            raise JsonRpcRequestCancelled("cancelled by a newer request or an edit") from exc
        except ModelOutOfMemory as exc:
            raise RequestFailed(f"steerlsp: out of memory while generating: {exc}") from exc
        except (WorkerDied, JobFailed) as exc:
            raise RequestFailed(f"steerlsp: the completion failed: {exc}; try again") from exc
        finally:
            if self._pending.get(uri) is pending:
                del self._pending[uri]
        if self._version(uri) != version and not survives_edits:
            raise JsonRpcRequestCancelled("the document changed while generating")
        self.served += 1
        text = printable(completion.text)
        texts = (text, *(printable(t) for t in getattr(completion, "alternatives", ())))
        self._last[uri] = _Suggestion(uri, prefix, suffix, texts, alternatives)
        self._remember(
            uri,
            version,
            text,
            getattr(completion, "trace", None),
            prompt_tokens=getattr(completion, "prompt_tokens", 0),
            context=tuple(k for k, v in dataclasses.asdict(given).items() if v),
        )
        return texts

    async def _run(
        self,
        uri: str,
        pending: _Pending,
        completer: Completer,
        request: CompletionRequest,
        analysis: Analysis | None,
        options: CompletionOptions,
    ) -> Any:
        """The completion job on the model worker. A steered job that fails for any other
        reason than cancellation or the model itself is run again unsteered: a broken
        steering step must not cost the user the suggestion."""
        if analysis is not None:
            try:
                return await self._submit(
                    pending, lambda token: completer.complete(request, options, token, analysis)
                )
            except (JobCancelled, ModelOutOfMemory, WorkerDied, JobFailed):
                raise
            except Exception as exc:
                self._steering_failed(exc)
            edited = self._version(uri) != pending.version and not pending.survives_edits
            if self._pending.get(uri) is not pending or edited:
                raise JobCancelled()
        return await self._submit(
            pending, lambda token: completer.complete(request, options, token)
        )

    async def _submit(self, pending: _Pending, job: Callable[[CancelToken], Any]) -> Any:
        pending.job = self._worker.submit(job)
        try:
            return await asyncio.wrap_future(pending.job.future)
        except asyncio.CancelledError:
            pending.job.cancel()  # $/cancelRequest: stop within one decode step
            raise

    def _steering_failed(self, exc: Exception) -> None:
        """Logged every time (with the traceback the first time); shown to the user once."""
        self.steering_failures += 1
        first = self.steering_failures == 1
        log.error("steering failed; decoding again unsteered: %r", exc, exc_info=first)
        if first:
            self.ls.proxy.show_message(
                types.MessageType.Warning,
                f"steerlsp: steering failed ({type(exc).__name__}: {exc}); "
                "completions are decoded without it when it fails. See the log.",
            )

    def _remember(
        self,
        uri: str,
        version: int | None,
        text: str,
        trace: dict[str, Any] | None,
        **more: Any,
    ) -> None:
        """Keep the last completion per document for ``steerlsp/explain`` (bounded)."""
        self._explained[uri] = Explained(uri, version, text, trace is not None, trace, **more)
        self._explained.move_to_end(uri)
        while len(self._explained) > EXPLAINED_DOCUMENTS:
            self._explained.popitem(last=False)

    def _version(self, uri: str) -> int | None:
        doc = self._document(uri)
        return doc.version if doc is not None else None

    def _options(self, alternatives: int = 1) -> CompletionOptions:
        c = self.settings.completion
        return CompletionOptions(
            max_new_tokens=c.max_new_tokens,
            max_lines=c.max_lines,
            prefix_tokens=c.prefix_tokens,
            suffix_tokens=c.suffix_tokens,
            sampling=Sampling(temperature=c.temperature, top_p=c.top_p),
            steering=self.settings.steering.options(),
            context_tokens=self.settings.chatlsp.context_tokens,
            alternatives=alternatives,
            alternatives_budget=c.alternatives_budget_ms / 1000,
            lookup=c.prompt_lookup,
            comment_lines=c.comment_lines if c.comment_lines < c.max_lines else None,
        )
