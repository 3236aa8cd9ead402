"""The module-level pygls server and steerlsp's own LSP handlers.

The proxy (``server/upstream/proxy.py``) decides which messages reach pygls; the
handlers here only ever see typed lsprotocol messages.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from steerlsp import __version__
from steerlsp.server import config
from steerlsp.server.chatlsp import replies
from steerlsp.server.chatlsp.service import ChatLsp, ChatLspError, Hole, hole_from
from steerlsp.server.completion.policy import Completions
from steerlsp.server.completion.replies import ACCEPTED_COMMAND
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.errors import JsonRpcInvalidParams, RequestFailed
from steerlsp.server.lsp.pygls_adapter import GatedProtocol, has_workspace
from steerlsp.server.upstream import environment, isolation

if TYPE_CHECKING:
    from steerlsp.server.analysis.instance import AnalysisInstance
    from steerlsp.server.upstream.proxy import Proxy

log = logging.getLogger(__name__)

STATUS = "steerlsp/status"
EXPLAIN = "steerlsp/explain"
BENCH_BUSY = "steerlsp/benchBusy"


class SteerServer(LanguageServer):
    """The steerlsp language server."""

    proxy: Proxy
    completions: Completions
    chatlsp: ChatLsp
    analysis: AnalysisInstance | None = None  # the private pylsp steering asks (lazy)
    base_settings: config.Settings = config.Settings()
    settings: config.Settings = config.Settings()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.shown_problems: set[str] = set()  # settings problems already popped up

    def apply_settings(self, raw: Any) -> None:
        """Merge settings from the editor; invalid values are ignored and reported."""
        self.settings, problems = config.merge(self.settings, raw)
        self.proxy.set_settings_overlay(environment.overlay(self.python_environment()))
        isolation.set_trusted(self.settings.python.trust_workspace)
        bounds = self.settings.upstream
        self.proxy.size_limit.max_bytes = bounds.max_document_bytes
        self.proxy.upstream.limit_memory(bounds.memory_limit())
        if self.analysis is not None:
            self.analysis.configure()  # the same Jedi environment as the main upstream
            self.analysis.limit(bounds.memory_limit(), bounds.max_document_bytes)
        self.report_settings(problems)

    def experimental_capabilities(self) -> dict[str, Any]:
        """What ``capabilities.experimental`` advertises: the ChatLSP methods and the
        commands that run them (``executeCommandProvider`` lists those too)."""
        return {
            "chatlsp": {
                "methods": list(CHATLSP_METHODS),
                "commands": [command_of(m) for m in CHATLSP_METHODS],
            },
            "steerlsp": {"methods": [STATUS, EXPLAIN]},
        }

    def report_settings(self, problems: list[str]) -> None:
        """Log every problem; pop up each distinct one once a session (editors resend settings)."""
        if not problems:
            return
        log.warning("invalid settings: %s", "; ".join(problems))
        new = [problem for problem in problems if problem not in self.shown_problems]
        if new:
            self.shown_problems.update(new)
            self.proxy.show_message(
                types.MessageType.Warning, "steerlsp: invalid settings ignored: " + "; ".join(new)
            )

    def python_environment(self) -> str | None:
        """The environment pylsp's Jedi resolves imports in (see server/upstream/environment.py)."""
        python = self.settings.python
        root = self.workspace.root_path if has_workspace(self.protocol) else None
        found = environment.resolve(
            python.environment, root, os.environ, trusted=python.trust_workspace
        )
        if found is None and (skipped := environment.untrusted_venv(root)):
            log.info("not using %s: the workspace is not trusted (python.trustWorkspace)", skipped)
        return found

    def root_uri(self) -> str | None:
        """The workspace root the editor gave at initialize, or None."""
        return self.workspace.root_uri if has_workspace(self.protocol) else None

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls pops up a message per failure; a malformed message must not.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


server = SteerServer("steerlsp", __version__, protocol_cls=GatedProtocol, max_workers=2)


@server.feature(STATUS)
def status(ls: SteerServer, params: Any) -> dict[str, Any]:
    """Report the lifecycle, upstream (pid, restarts), model and analysis instance state."""
    analysis = ls.analysis.status() if ls.analysis is not None else {"state": "idle"}
    return {
        "version": __version__,
        **ls.proxy.status(),
        "model": ls.completions.status(),
        "analysis": analysis,
    }


@server.feature(EXPLAIN)
def explain(ls: SteerServer, params: Any) -> dict[str, Any]:
    """The last completion of a document and what steered it: ``{"textDocument": {"uri"}}``."""
    uri = explained_uri(params)
    if uri is None:
        raise JsonRpcInvalidParams(f'{EXPLAIN} expects {{"textDocument": {{"uri": string}}}}')
    result = ls.completions.explain(uri)
    log.debug("explain %s: %s", uri, result)
    return result


def explained_uri(params: Any) -> str | None:
    """``params.textDocument.uri`` of untyped params, or None when it is missing or no string."""
    document = param(params, "textDocument", None)
    uri = param(document, "uri", None) if document is not None else None
    return uri if isinstance(uri, str) and uri else None


@server.feature(types.INITIALIZE)
def initialize(ls: SteerServer, params: types.InitializeParams) -> None:
    """Read steerlsp's settings from initializationOptions, over the CLI's."""
    ls.settings = ls.base_settings
    options = params.initialization_options
    if options is not None and not isinstance(options, dict):
        # Not forwarded upstream either (see proxy.upstream_init_params).
        ls.report_settings(
            [
                f"initializationOptions must be an object, got {config.shown(options)}; "
                "using the defaults and command-line flags"
            ]
        )
        options = None
    elif options is not None and (problem := rpc.unsendable(options)) is not None:
        ls.report_settings([f"initializationOptions ignored: {problem}"])
        options = None
    ls.apply_settings(config.section(options))


@server.feature(types.INITIALIZED)
def initialized(ls: SteerServer, params: types.InitializedParams) -> None:
    """Start loading the model in the background; initialize has been answered."""
    ls.completions.start_loading()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: SteerServer, params: types.DidChangeConfigurationParams) -> None:
    """Section ``steerlsp``; a changed model setting reloads the model."""
    ls.apply_settings(config.section(params.settings))
    ls.completions.configure()


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: SteerServer, params: types.DidChangeTextDocumentParams) -> None:
    """A running generation for this document is now stale, and so are its ChatLSP answers."""
    ls.completions.document_changed(params.text_document.uri)
    ls.chatlsp.document_changed(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: SteerServer, params: types.DidCloseTextDocumentParams) -> None:
    """Forget the document's last completion and its ChatLSP answers."""
    ls.completions.document_closed(params.text_document.uri)
    ls.chatlsp.document_changed(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def inline_completion(
    ls: SteerServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    """Ghost text at the cursor from the in-process model."""
    return await ls.completions.inline(params)


# ---- ChatLSP (server/chatlsp/): each method is also a command, for editor keybindings --------

EXPECTED_TYPE = "textDocument/expectedType"
RELEVANT_TYPES = "textDocument/relevantTypes"
RELEVANT_HEADERS = "textDocument/relevantHeaders"
AI_TUTORIAL = "textDocument/aiTutorial"
ERROR_REPORT = "textDocument/errorReport"
LLM_COMPLETION = "textDocument/llmCompletion"
LLM_COMPLETION_RESOLVE_ERRORS = "textDocument/llmCompletionResolveErrors"
CHATLSP_METHODS = (
    EXPECTED_TYPE,
    RELEVANT_TYPES,
    RELEVANT_HEADERS,
    AI_TUTORIAL,
    ERROR_REPORT,
    LLM_COMPLETION,
    LLM_COMPLETION_RESOLVE_ERRORS,
)


def command_of(method: str) -> str:
    """``textDocument/expectedType`` -> ``steerlsp.expectedType``."""
    return "steerlsp." + method.split("/", 1)[1]


def chatlsp_hole(ls: SteerServer, params: Any, *, with_completion: bool = False) -> Hole:
    if not ls.settings.chatlsp.enabled:
        raise RequestFailed(
            "steerlsp: ChatLSP is disabled (steerlsp.chatlsp.enabled)", logging.INFO
        )
    try:
        return hole_from(params, with_completion=with_completion)
    except ChatLspError as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc


async def answered(call: Any) -> Any:
    """``call``'s value; a ChatLspError becomes RequestFailed with its message."""
    try:
        return await call
    except ChatLspError as exc:
        raise RequestFailed(f"steerlsp: {exc}", logging.INFO) from exc


@server.feature(EXPECTED_TYPE)
async def expected_type(ls: SteerServer, params: Any) -> replies.ExpectedTypeResult:
    """The type the expression at the position must have, or a statement that none is known."""
    hole = chatlsp_hole(ls, params)
    source, found = await answered(ls.chatlsp.expected_type(hole))
    return replies.expected_type_result(found, source.location(hole.position))


@server.feature(RELEVANT_TYPES)
async def relevant_types(ls: SteerServer, params: Any) -> replies.ContextListResult:
    """The definitions of the types reachable from the expected type."""
    hole = chatlsp_hole(ls, params)
    source, found = await answered(ls.chatlsp.relevant_types(hole))
    return replies.context_list_result(found, source.location(hole.position))


@server.feature(RELEVANT_HEADERS)
async def relevant_headers(ls: SteerServer, params: Any) -> replies.ContextListResult:
    """Headers of the functions in scope that return the expected type (or a part of it)."""
    hole = chatlsp_hole(ls, params)
    source, found = await answered(ls.chatlsp.relevant_headers(hole))
    return replies.context_list_result(found, source.location(hole.position))


@server.feature(AI_TUTORIAL)
async def ai_tutorial(ls: SteerServer, params: Any) -> replies.TutorialResult:
    """The project's Python version, key dependencies and style, ready for a prompt."""
    text = await answered(ls.chatlsp.tutorial(chatlsp_hole(ls, params)))
    return replies.TutorialResult(replies.plain(text))


@server.feature(ERROR_REPORT)
async def error_report(ls: SteerServer, params: Any) -> replies.ErrorReportResult:
    """Static errors on the lines of ``completion`` if it were inserted at the position
    (diagnostic ranges are in that text)."""
    from steerlsp.server.chatlsp.errors import feedback, needs_repair

    hole = chatlsp_hole(ls, params, with_completion=True)
    _, checked, problems = await answered(ls.chatlsp.error_report(hole))
    return replies.error_report_result(
        problems, feedback(problems, checked), needs_repair(problems)
    )


@server.feature(LLM_COMPLETION)
async def llm_completion(ls: SteerServer, params: Any) -> replies.LlmCompletionResult:
    """A completion at the position from the model, given the ChatLSP context."""
    hole = chatlsp_hole(ls, params)
    return await answered(ls.completions.snippet(hole, rounds=0))


@server.feature(LLM_COMPLETION_RESOLVE_ERRORS)
async def llm_completion_resolve_errors(
    ls: SteerServer, params: Any
) -> replies.LlmCompletionResult:
    """llmCompletion, then up to ``chatlsp.repairRounds`` rounds of static-error repair."""
    hole = chatlsp_hole(ls, params)
    rounds = ls.settings.chatlsp.repair_rounds
    return await answered(ls.completions.snippet(hole, rounds=rounds))


def register_chatlsp_commands(ls: SteerServer) -> None:
    """``steerlsp.expectedType`` etc.: the method's params as the command's one argument."""
    handlers = {
        EXPECTED_TYPE: expected_type,
        RELEVANT_TYPES: relevant_types,
        RELEVANT_HEADERS: relevant_headers,
        AI_TUTORIAL: ai_tutorial,
        ERROR_REPORT: error_report,
        LLM_COMPLETION: llm_completion,
        LLM_COMPLETION_RESOLVE_ERRORS: llm_completion_resolve_errors,
    }
    for method, handler in handlers.items():
        ls.command(command_of(method))(_command(handler))


def _command(handler: Any) -> Any:
    async def run(ls: SteerServer, *args: Any) -> Any:
        if len(args) != 1:
            raise JsonRpcInvalidParams("expected one argument: the method's params")
        return await handler(ls, args[0])

    return run


register_chatlsp_commands(server)


@server.command(ACCEPTED_COMMAND)
def accepted(ls: SteerServer, *args: Any) -> None:
    """The editor accepted a suggestion; counted locally, never sent anywhere."""
    ls.completions.accepted += 1


def param(params: Any, name: str, default: Any) -> Any:
    """A field of untyped params: pygls gives a namedtuple-like ``Object``, or a dict."""
    if isinstance(params, dict):
        return params.get(name, default)
    return getattr(params, name, default)


def register_bench_methods(ls: SteerServer) -> None:
    """A deliberately slow request of our own, standing in for model work in benchmarks."""

    @ls.thread()
    @ls.feature(BENCH_BUSY)
    def bench_busy(ls: SteerServer, params: Any) -> dict[str, Any]:
        seconds = float(param(params, "seconds", 1.0))
        deadline = time.perf_counter() + min(seconds, 60.0)
        spins = 0
        while time.perf_counter() < deadline:
            # Pure-Python work holds the GIL: the worst case for the event loop.
            sum(i * i for i in range(2000))
            spins += 1
        return {"spins": spins}
