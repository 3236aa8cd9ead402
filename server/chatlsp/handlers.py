"""The ChatLSP handlers: each method, and a command that runs it for editor keybindings.

``register`` puts them on a server built by ``server/app.py``. A handler reads the
hole from the params, asks the ChatLSP component (or, for the completions,
``repair.snippet``) and returns the reply; a ChatLspError becomes
``RequestFailed`` with its message, malformed params ``InvalidParams``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from steerlsp.server.chatlsp import replies
from steerlsp.server.chatlsp.repair import snippet
from steerlsp.server.chatlsp.service import ChatLsp, ChatLspError, Hole, hole_from
from steerlsp.server.config import Settings
from steerlsp.server.lsp.errors import JsonRpcInvalidParams, RequestFailed

# pygls reads a command's type hints when it runs: SteerServer must be importable here.
from steerlsp.server.lsp.server import SteerServer

if TYPE_CHECKING:
    from steerlsp.server.completion.policy import Completions

T = TypeVar("T")

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


def capabilities() -> dict[str, Any]:
    """The ``chatlsp`` entry of ``capabilities.experimental``."""
    return {
        "methods": list(CHATLSP_METHODS),
        "commands": [command_of(m) for m in CHATLSP_METHODS],
    }


def hole_of(settings: Settings, params: Any, *, with_completion: bool = False) -> Hole:
    """The hole the params name; RequestFailed while ChatLSP is off, InvalidParams
    when the params are malformed."""
    if not settings.chatlsp.enabled:
        raise RequestFailed(
            "steerlsp: ChatLSP is disabled (steerlsp.chatlsp.enabled)", logging.INFO
        )
    try:
        return hole_from(params, with_completion=with_completion)
    except ChatLspError as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc


async def answered(call: Awaitable[T]) -> T:
    """``call``'s value; a ChatLspError becomes RequestFailed with its message."""
    try:
        return await call
    except ChatLspError as exc:
        raise RequestFailed(f"steerlsp: {exc}", logging.INFO) from exc


def register(server: SteerServer, chat: ChatLsp, completions: Completions) -> None:
    """Register the ChatLSP methods and their commands on ``server``."""

    @server.feature(EXPECTED_TYPE)
    async def expected_type(ls: SteerServer, params: Any) -> replies.ExpectedTypeResult:
        """The type the expression at the position must have, or a statement that none is known."""
        hole = hole_of(ls.settings, params)
        source, found = await answered(chat.expected_type(hole))
        return replies.expected_type_result(found, source.location(hole.position))

    @server.feature(RELEVANT_TYPES)
    async def relevant_types(ls: SteerServer, params: Any) -> replies.ContextListResult:
        """The definitions of the types reachable from the expected type."""
        hole = hole_of(ls.settings, params)
        source, found = await answered(chat.relevant_types(hole))
        return replies.context_list_result(found, source.location(hole.position))

    @server.feature(RELEVANT_HEADERS)
    async def relevant_headers(ls: SteerServer, params: Any) -> replies.ContextListResult:
        """Headers of the functions in scope that return the expected type (or a part of it)."""
        hole = hole_of(ls.settings, params)
        source, found = await answered(chat.relevant_headers(hole))
        return replies.context_list_result(found, source.location(hole.position))

    @server.feature(AI_TUTORIAL)
    async def ai_tutorial(ls: SteerServer, params: Any) -> replies.TutorialResult:
        """The project's Python version, key dependencies and style, ready for a prompt."""
        text = await answered(chat.tutorial(hole_of(ls.settings, params)))
        return replies.TutorialResult(replies.plain(text))

    @server.feature(ERROR_REPORT)
    async def error_report(ls: SteerServer, params: Any) -> replies.ErrorReportResult:
        """Static errors on the lines of ``completion`` if it were inserted at the position
        (diagnostic ranges are in that text)."""
        from steerlsp.server.chatlsp.errors import feedback, needs_repair

        hole = hole_of(ls.settings, params, with_completion=True)
        _, checked, problems = await answered(chat.error_report(hole))
        return replies.error_report_result(
            problems, feedback(problems, checked), needs_repair(problems)
        )

    @server.feature(LLM_COMPLETION)
    async def llm_completion(ls: SteerServer, params: Any) -> replies.LlmCompletionResult:
        """A completion at the position from the model, given the ChatLSP context."""
        hole = hole_of(ls.settings, params)
        return await answered(snippet(completions, hole, rounds=0))

    @server.feature(LLM_COMPLETION_RESOLVE_ERRORS)
    async def llm_completion_resolve_errors(
        ls: SteerServer, params: Any
    ) -> replies.LlmCompletionResult:
        """llmCompletion, then up to ``chatlsp.repairRounds`` rounds of static-error repair."""
        hole = hole_of(ls.settings, params)
        rounds = ls.settings.chatlsp.repair_rounds
        return await answered(snippet(completions, hole, rounds=rounds))

    handlers: dict[str, Callable[[SteerServer, Any], Awaitable[Any]]] = {
        EXPECTED_TYPE: expected_type,
        RELEVANT_TYPES: relevant_types,
        RELEVANT_HEADERS: relevant_headers,
        AI_TUTORIAL: ai_tutorial,
        ERROR_REPORT: error_report,
        LLM_COMPLETION: llm_completion,
        LLM_COMPLETION_RESOLVE_ERRORS: llm_completion_resolve_errors,
    }
    for method, handler in handlers.items():
        server.command(command_of(method))(_command(handler))


def _command(handler: Callable[[SteerServer, Any], Awaitable[Any]]) -> Any:
    """A command running ``handler`` with its one argument as the params."""

    async def run(ls: SteerServer, *args: Any) -> Any:
        if len(args) != 1:
            raise JsonRpcInvalidParams("expected one argument: the method's params")
        return await handler(ls, args[0])

    return run
