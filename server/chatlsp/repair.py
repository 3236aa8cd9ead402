"""Completions with ChatLSP context, and the error rounds (Hazel, ProCoder).

``contextual`` asks the ChatLSP component for the hole's context, ``repaired``
runs the repair loop, ``with_context`` puts them around the request policy's
generation, and ``snippet`` answers llmCompletion with them. The loop: generate;
if errorReport says the result needs repair, generate again with the errors as
feedback in the prompt; at most ``rounds`` times. The loop keeps the best
attempt: the one with the fewest errors, the latest among equals, so a round can
never make the answer worse.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from steerlsp.prompts.context import ChatContext
from steerlsp.server.chatlsp import replies
from steerlsp.server.chatlsp.service import ChatLsp, ChatLspError, Hole

if TYPE_CHECKING:
    from steerlsp.server.completion.policy import Completions

log = logging.getLogger(__name__)

# (an earlier attempt, the errors found on it) -> a completion; ("", "") the first time.
Generate = Callable[[str, str], Awaitable[str]]


@dataclass(frozen=True)
class Checked:
    """errorReport on one attempt, as the loop needs it."""

    errors: int
    needs_repair: bool
    feedback: str


Check = Callable[[str], Awaitable[Checked]]

# (the context to give the model, is this the first attempt) -> the completion, then
# its alternatives. The context is asked for only when the attempt needs it.
Attempt = Callable[[Callable[[], Awaitable[ChatContext]], bool], Awaitable[tuple[str, ...]]]


@dataclass(frozen=True)
class Repaired:
    text: str
    feedback: tuple[str, ...]  # each error round's feedback, in order


@dataclass(frozen=True)
class Completed:
    """A completion after its error rounds, the context its first attempt was given,
    and that attempt's alternatives."""

    done: Repaired
    context: ChatContext
    alternatives: tuple[str, ...]


async def contextual(chat: ChatLsp, hole: Hole, parts: str, budget_s: float) -> ChatContext:
    """The hole's ChatLSP context (``parts``: "none", "types" or "headers"), or an empty
    one when the analysis fails or takes longer than ``budget_s``: context is a help
    to the completion, never a reason to fail it."""
    if parts == "none":
        return ChatContext()
    try:
        found = await asyncio.wait_for(chat.prompt_context(hole, parts), budget_s)
    except (ChatLspError, TimeoutError) as exc:
        log.info("completion without ChatLSP context: %s", exc or "timed out")
        return ChatContext()
    return ChatContext(
        found.expected_type,
        found.relevant_types,
        found.relevant_headers,
        returns=found.returns,
    )


async def repaired(generate: Generate, check: Check, rounds: int) -> Repaired:
    """A completion, then up to ``rounds`` error rounds; every attempt is checked, and
    the one with the fewest errors wins (the latest among equals)."""
    attempt = await generate("", "")
    if rounds <= 0:
        return Repaired(attempt, ())
    best, fewest = attempt, math.inf
    feedback: list[str] = []
    for round_ in range(rounds + 1):
        if not attempt.strip():
            break
        found = await check(attempt)
        if found.errors <= fewest:
            best, fewest = attempt, found.errors
        if not found.needs_repair or round_ == rounds:
            break
        feedback.append(found.feedback)
        attempt = await generate(attempt, found.feedback)
    return Repaired(best, tuple(feedback))


async def with_context(
    attempt: Attempt,
    chat: ChatLsp | None,
    hole: Hole,
    *,
    parts: str,
    rounds: int,
    budget_s: float,
) -> Completed:
    """A completion with ChatLSP context (asked for when the attempt needs it: after
    the debounce, so that superseded keystrokes cost no analysis) and ``rounds`` error
    rounds; without ``chat``, neither."""
    if chat is None:
        parts, rounds = "none", 0
    used: list[ChatContext] = []  # the context the first attempt was given
    others: list[str] = []

    async def generate(earlier: str, errors: str) -> str:
        async def supply() -> ChatContext:
            if not used:
                found = ChatContext()
                if chat is not None:
                    found = await contextual(chat, Hole(hole.uri, hole.position), parts, budget_s)
                used.append(found)
            return dataclasses.replace(used[0], attempt=earlier, feedback=errors)

        first = not used
        texts = await attempt(supply, first)
        if first:
            others.extend(texts[1:])
        return texts[0]

    async def check(text: str) -> Checked:
        from steerlsp.server.chatlsp.errors import feedback, needs_repair

        assert chat is not None  # no rounds without it
        _, checked, problems = await chat.error_report(Hole(hole.uri, hole.position, text))
        return Checked(len(problems), needs_repair(problems), feedback(problems, checked))

    done = await repaired(generate, check, rounds)
    return Completed(done, used[0] if used else ChatContext(), tuple(others))


async def snippet(
    completions: Completions, hole: Hole, *, rounds: int
) -> replies.LlmCompletionResult:
    """``textDocument/llmCompletion`` (``rounds`` 0) and ``llmCompletionResolveErrors``:
    a completion at the hole with the whole ChatLSP context, and error rounds."""
    around = completions.around(hole.uri, hole.position)
    if around is None:
        raise ChatLspError(f"{hole.uri} is not open, or the position lies outside it")
    completions.host.require_ready()
    document = completions.snapshot(hole.uri, hole.position, hole.position)
    completed = await completions.contextual(
        hole,
        around.prefix,
        around.suffix,
        document,
        debounce=False,
        parts="headers",
        rounds=rounds,
        budget_s=completions.settings.chatlsp.timeout_ms / 1000,
    )
    used, done = completed.context, completed.done
    context = replies.CompletionContext(
        expected_type=used.expected_type,
        relevant_types=used.relevant_types,
        relevant_headers=used.relevant_headers,
        rounds=list(done.feedback),
    )
    return replies.LlmCompletionResult(snippet=done.text, context=context)
