"""Completions with ChatLSP context, and the error rounds (Hazel, ProCoder).

``contextual`` asks the ChatLSP component for the hole's context, and
``repaired`` runs the repair loop: generate; if errorReport says the result
needs repair, generate again with the errors as feedback in the prompt; at most
``rounds`` times. The loop keeps the best attempt: the one with the fewest
errors, the latest among equals, so a round can never make the answer worse.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from steerlsp.prompts.context import ChatContext
from steerlsp.server.chatlsp.service import ChatLsp, ChatLspError, Hole

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


@dataclass(frozen=True)
class Repaired:
    text: str
    feedback: tuple[str, ...]  # each error round's feedback, in order


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
