"""The request policy of inline completions: what to answer, and when.

Per document: a new request cancels the one still running (cancel-previous);
``didChange`` cancels it too, and a result computed for an older version is
never delivered; text typed that matches the last suggestion is answered from
it without generating (typed-ahead); automatic triggers are debounced. Every
request ends in exactly one reply: a result, or ``RequestCancelled``, or
``RequestFailed`` while no model is ready (``server/completion/host.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp.models.decoding.worker import CancelToken, Job, JobCancelled, JobFailed, WorkerDied
from steerlsp.models.options import (
    CompletionOptions,
    CompletionRequest,
    Document,
    ModelOutOfMemory,
)
from steerlsp.models.remote.client import RemoteError
from steerlsp.prompts.builder import MAX_CHARS_PER_TOKEN
from steerlsp.prompts.context import ChatContext
from steerlsp.server.chatlsp.repair import Completed, with_context
from steerlsp.server.chatlsp.service import ChatLsp, Hole
from steerlsp.server.completion.explained import ExplainStore
from steerlsp.server.completion.host import ModelHost
from steerlsp.server.completion.replies import (
    document_with,
    inline_list,
    printable,
    relative_path,
    timing_of,
)
from steerlsp.server.completion.suggestions import Suggestions
from steerlsp.server.config import Settings
from steerlsp.server.documents.cursor import Around, text_around
from steerlsp.server.documents.workspace import OpenDocuments
from steerlsp.server.lsp.errors import JsonRpcRequestCancelled, RequestFailed

if TYPE_CHECKING:
    from steerlsp.models.decoding.completer import Completer, Completion
    from steerlsp.models.remote.completer import RemoteCompleter
    from steerlsp.models.steering.analysis import Analysis
    from steerlsp.server.analysis.instance import AnalysisInstance

log = logging.getLogger(__name__)

# The most an inline completion waits for its ChatLSP context (Jedi, three questions
# cached per document version) before it goes on without.
INLINE_CONTEXT_BUDGET = 0.5


@dataclass
class _Pending:
    serial: int
    version: int | None
    job: Job[Any] | None = None
    # The completion menu's: an edit does not stop it, and its result is kept for
    # typed-ahead whatever the version (see server/completion/menu.py).
    survives_edits: bool = False


class Completions:
    """Answers completion requests: inline, the completion menu's and (through
    ``server/chatlsp/repair.py``) llmCompletion.

    It reads the editor's open ``documents`` and the current ``settings``, runs jobs
    on the ``host``'s model worker, keeps what it answered in ``explained``, asks
    ``chat`` for the prompt's context (none without it) and, when steering is on,
    steers with ``analysis``.
    """

    def __init__(
        self,
        host: ModelHost,
        documents: OpenDocuments,
        settings: Callable[[], Settings],
        *,
        explained: ExplainStore,
        chat: ChatLsp | None = None,
        analysis: AnalysisInstance | None = None,
    ) -> None:
        self.host = host
        self.documents = documents
        self._settings = settings
        self.explained = explained
        self._chat = chat
        self._analysis_instance = analysis
        self._pending: dict[str, _Pending] = {}
        self._serial = 0
        self.suggestions = Suggestions()

    @property
    def settings(self) -> Settings:
        return self._settings()

    def configure(self) -> None:
        """Settings changed: suggestions made under the old ones are not offered again."""
        self.suggestions.clear()

    def document_closed(self, uri: str) -> None:
        """``didClose``: its explanation is no longer asked for."""
        self.explained.forget(uri)

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
        around = self.around(uri, position)
        selected = params.context.selected_completion_info
        start = around if selected is None else self.around(uri, selected.range.start)
        if around is None or start is None:
            return types.InlineCompletionList(items=[])
        self.host.require_ready()
        prefix, suffix = around.prefix, around.suffix
        replace_start = position
        if selected is not None:
            # The editor shows a menu item: continue as if it were accepted.
            prefix = start.prefix + selected.text
            replace_start = selected.range.start
        automatic = params.context.trigger_kind == types.InlineCompletionTriggerKind.Automatic
        # Asked for (Invoked): the editor can cycle through several. Automatic: one.
        wanted = 1 if automatic else self.settings.completion.alternatives
        cached = self.suggestions.typed_ahead(uri, prefix, suffix, wanted)
        if cached is not None:
            return inline_list(cached, replace_start, position, selected)
        document = self.snapshot(uri, replace_start, position, selected.text if selected else "")
        chat = self.settings.chatlsp
        completed = await self.contextual(
            Hole(uri, position),
            prefix,
            suffix,
            document,
            debounce=automatic,
            parts=chat.prompt_context if chat.enabled else "none",
            rounds=chat.repair_rounds if chat.enabled and chat.repair_inline else 0,
            budget_s=INLINE_CONTEXT_BUDGET,
            alternatives=wanted,
        )
        texts = (completed.done.text, *completed.alternatives)
        return inline_list(texts, replace_start, position, selected)

    async def contextual(
        self,
        hole: Hole,
        prefix: str,
        suffix: str,
        document: Document | None,
        *,
        debounce: bool,
        parts: str,
        rounds: int,
        budget_s: float,
        alternatives: int = 1,
    ) -> Completed:
        """A completion with ChatLSP context and ``rounds`` error rounds
        (``server/chatlsp/repair.py``); the first attempt also makes up to
        ``alternatives - 1`` others."""
        uri = hole.uri
        version = self.documents.version(uri)

        def attempt(
            context: Callable[[], Awaitable[ChatContext]], first: bool
        ) -> Awaitable[tuple[str, ...]]:
            return self.generate(
                uri,
                version,
                prefix,
                suffix,
                debounce=debounce and first,
                document=document,
                context=context,
                alternatives=alternatives if first else 1,
            )

        completed = await with_context(
            attempt, self._chat, hole, parts=parts, rounds=rounds, budget_s=budget_s
        )
        self.explained.repaired(uri, completed.done.text, len(completed.done.feedback))
        return completed

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
        return await self.generate(
            uri,
            version,
            prefix,
            suffix,
            debounce=False,
            document=document,
            survives_edits=True,
            typed=typed,
        )

    def around(self, uri: str, position: types.Position) -> Around | None:
        """The prompt's window of an open document at ``position``; None when it is
        not open or the position lies outside it. Bounded by the token budgets (at
        most ``MAX_CHARS_PER_TOKEN`` characters a token), so a keystroke in a 20 MB
        file costs no more than one in a small one."""
        doc = self.documents.get(uri)
        if doc is None:
            return None
        c = self.settings.completion
        return text_around(
            doc.lines,
            position.line,
            position.character,
            self.documents.encoding(),
            before=c.prefix_tokens * MAX_CHARS_PER_TOKEN,
            after=c.suffix_tokens * MAX_CHARS_PER_TOKEN,
        )

    def snapshot(
        self, uri: str, start: types.Position, end: types.Position, insert: str = ""
    ) -> Document | None:
        """The document for steering, ``insert`` replacing ``start``..``end`` (the cursor);
        None when steering is off (the copy is not needed) or it cannot be built."""
        doc = self.documents.get(uri)
        if doc is None or self.analysis() is None:
            return None
        return document_with(doc.lines, start, end, insert, self.documents.encoding())

    def analysis(self) -> AnalysisInstance | None:
        """The private pylsp steering asks, when steering is on and there is one."""
        if not self.settings.steering.enabled:
            return None
        return self._analysis_instance

    async def generate(
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
            completer = self.host.completer
            assert completer is not None
            path = relative_path(uri, self.documents.root_path())
            request = CompletionRequest(prefix, suffix, path, document, given, typed)
            instance = self.analysis()
            analysis = instance.document(uri, version) if instance and version is not None else None
            options = self.settings.completion_options(alternatives)
            completion = await self._run(uri, pending, completer, request, analysis, options)
        except JobCancelled as exc:
            raise JsonRpcRequestCancelled("cancelled by a newer request or an edit") from exc
        except ModelOutOfMemory as exc:
            raise RequestFailed(f"steerlsp: out of memory while generating: {exc}") from exc
        except (WorkerDied, JobFailed) as exc:
            raise RequestFailed(f"steerlsp: the completion failed: {exc}; try again") from exc
        except RemoteError as exc:  # the shared server's, said once per request
            raise RequestFailed(f"steerlsp: the model server: {exc}", logging.WARNING) from exc
        finally:
            if self._pending.get(uri) is pending:
                del self._pending[uri]
        if self.documents.version(uri) != version and not survives_edits:
            raise JsonRpcRequestCancelled("the document changed while generating")
        self.host.served += 1
        text = printable(completion.text)
        texts = (text, *(printable(t) for t in completion.alternatives))
        self.suggestions.made(uri, prefix, suffix, texts, alternatives)
        self.explained.remember(
            uri,
            version,
            text,
            completion.trace,
            prompt_tokens=completion.prompt_tokens,
            context=tuple(k for k, v in dataclasses.asdict(given).items() if v),
            timing=timing_of(completion.generation),
        )
        return texts

    async def _run(
        self,
        uri: str,
        pending: _Pending,
        completer: Completer | RemoteCompleter,
        request: CompletionRequest,
        analysis: Analysis | None,
        options: CompletionOptions,
    ) -> Completion:
        """The completion job on the model worker. A steered job that fails for any other
        reason than cancellation or the model itself is run again unsteered: a broken
        steering step must not cost the user the suggestion."""
        if analysis is not None:
            try:
                return await self._submit(
                    pending, lambda token: completer.complete(request, options, token, analysis)
                )
            except (JobCancelled, ModelOutOfMemory, WorkerDied, JobFailed, RemoteError):
                raise
            except Exception as exc:
                self.host.steering_failed(exc)
            edited = self.documents.version(uri) != pending.version and not pending.survives_edits
            if self._pending.get(uri) is not pending or edited:
                raise JobCancelled()
        return await self._submit(
            pending, lambda token: completer.complete(request, options, token)
        )

    async def _submit(
        self, pending: _Pending, job: Callable[[CancelToken], Completion]
    ) -> Completion:
        pending.job = self.host.submit(job)
        try:
            return await asyncio.wrap_future(pending.job.future)
        except asyncio.CancelledError:
            pending.job.cancel()  # $/cancelRequest: stop within one decode step
            raise
