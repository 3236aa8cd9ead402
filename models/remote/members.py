"""The name after ``.``, chosen through the API: the remote form of the member walk.

In-process, the walk (``models/steering/stages/members.py``) ranks the completion
items on the model's logits and then masks or boosts the name's tokens. Through an
API there are no logits to edit between tokens, so the segment that writes the
name is replaced by the ranker's choice, as the walk's hard mask (a statically
known receiver) would write it:

1. the model's distribution over the name's first token comes from the ``logprobs``
   of the request that confirmed the ``.`` (the k likeliest tokens after it);
2. the same ranking as in-process (``ranking/relevance.py``: log-probability,
   relevance to the intent, the expected type, metadata) orders the items on it;
3. where the leader's first token begins other shortlisted names too, the model
   chooses among those, constrained to them by the server (a grammar): one short
   request, where in-process the whole names are scored;
4. where the receiver's members are not statically known (``__getattr__``, or only
   ``object``'s), the model keeps its own name when it is far likelier than any
   listed one: the boost's escape.

Pure: the requests are the caller's, passed in as ``whole``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from steerlsp.models.steering.analysis import CompletionCandidate
from steerlsp.models.steering.ranking.intent import Intent
from steerlsp.models.steering.ranking.ranker import RANKED_IN_TRACE, SHORTLIST
from steerlsp.models.steering.ranking.relevance import (
    Candidate,
    DocumentUsage,
    Ranked,
    RankWeights,
    rank_candidates,
    settled_without_documentation,
)


@dataclass(frozen=True)
class Chosen:
    """The name to write (None: the model's own), and the ranking for the trace."""

    name: str | None
    ranked: list[Ranked]
    picked: int  # names that shared the leader's first token, left to the model's choice
    reason: str = ""  # why none was chosen


def first_tokens(
    names: list[str], top: Mapping[str, float], floor: float, typed: str = ""
) -> dict[str, tuple[str, float]]:
    """Each name's first token and its log-probability, from the k likeliest tokens
    after the ``.`` (and ``typed``, what is written of the name already): the longest
    listed token that the rest of the name starts with, or one that spells the whole
    rest and then ends it (``join(``). A name none starts gets ("", ``floor``)."""
    result = {}
    for full in names:
        name = full[len(typed) :]
        best, token_of, length = floor, "", 0
        for token, logprob in top.items():
            if not token or not math.isfinite(logprob):
                continue
            if name.startswith(token):
                fits = len(token)
            elif token.startswith(name) and not continues(token[len(name)]):
                fits = len(name) + 1
            else:
                continue
            if fits > length or (fits == length and logprob > best):
                best, token_of, length = logprob, token, fits
        result[full] = (token_of, best)
    return result


def choose(
    items: list[CompletionCandidate],
    top: Mapping[str, float],
    intent: Intent,
    *,
    weights: RankWeights,
    static: bool,
    escape_margin: float,
    pick: Callable[[list[str]], str | None] | None = None,
    usage: DocumentUsage | None = None,
    own: str = "",
    typed: str = "",
) -> Chosen:
    """The item to write after the ``.`` and ``typed`` (see the module doc); ``items``
    all start with ``typed``. Where the leader shares its first token with others of
    the shortlist (``get``: ``getsize``, ``getmtime``), the first tokens cannot tell
    them apart: ``pick`` (the model's own choice among them, constrained by the server)
    decides, as whole-name scoring does in-process."""
    floor = weights.missing_logprob
    names = [c.name for c in items]
    firsts = first_tokens(names, top, floor, typed)
    first = {n: v for n, (_, v) in firsts.items()}
    ranked = _ranking(items, first, intent, weights, usage, own, typed)
    favourite = max(names, key=lambda n: first[n])
    picked = 0
    lead_token = firsts[ranked[0].name][0]
    shared = [r.name for r in ranked[:SHORTLIST] if lead_token and firsts[r.name][0] == lead_token]
    if pick is not None and len(shared) > 1:
        picked = len(shared)
        winner = pick(shared)
        if winner in shared:
            ranked.sort(key=lambda r: r.name != winner)  # stable: the rest keep their order
    if not static and top:
        # The boost's escape: a name the list does not have, far likelier than its best.
        token, logprob = max(top.items(), key=lambda kv: kv[1])
        rests = [n[len(typed) :] for n in names]
        listed = any(r.startswith(token) or token.startswith(r) for r in rests if token)
        if (
            token
            and continues(token[0])
            and not listed
            and logprob > first[favourite] + escape_margin
        ):
            return Chosen(None, ranked, picked, f"the model's {token!r} is not listed")
    return Chosen(ranked[0].name, ranked, picked)


def decided(
    items: list[CompletionCandidate],
    top: Mapping[str, float],
    intent: Intent,
    *,
    weights: RankWeights,
    typed: str = "",
) -> str | None:
    """The name :func:`choose` writes whatever the items' documentation says, or None
    when the documentation could change it (``settled_without_documentation``, on the
    first tokens; where no other name shares the leader's, no constrained choice
    among names can overturn it either)."""
    firsts = first_tokens([c.name for c in items], top, weights.missing_logprob, typed)
    candidates = [Candidate(c.name, "", c.kind, c.deprecated, "") for c in items]
    return settled_without_documentation(
        candidates,
        {n: v for n, (_, v) in firsts.items()},
        intent,
        weights=weights,
        first_of={n: t or None for n, (t, _) in firsts.items()},
        typed=typed,
    )


def plausible(items: list[CompletionCandidate], typed: str) -> list[CompletionCandidate]:
    """The items the ranker would not penalise: no deprecated ones, and no private or
    dunder ones unless ``typed`` starts with ``_``; all of them when that leaves none."""
    kept = [
        c
        for c in items
        if not c.deprecated and (typed.startswith("_") or not c.name.startswith("_"))
    ]
    return kept or items


def traced(offset: int, chosen: Chosen, intent: Intent, candidates: int) -> dict[str, Any]:
    """The ranking for ``steerlsp/explain``, shaped as the in-process walk's."""
    return {
        "offset": offset,
        "candidates": candidates,
        "picked_among": chosen.picked,
        "intent": intent.function,
        "expected": intent.expected,
        "chosen": chosen.name,
        **({"escaped": chosen.reason} if chosen.reason else {}),
        "top": [r.traced() for r in chosen.ranked[:RANKED_IN_TRACE]],
    }


def _ranking(
    items: list[CompletionCandidate],
    logprobs: dict[str, float],
    intent: Intent,
    weights: RankWeights,
    usage: DocumentUsage | None,
    own: str,
    typed: str,
) -> list[Ranked]:
    used = usage.score if usage is not None else (lambda name: 0.0)
    candidates = [
        Candidate(
            c.name,
            c.documentation,
            c.kind,
            c.deprecated,
            intent.returns(c.name, c.returns, c.detail),
            used(c.name),
        )
        for c in items
    ]
    return rank_candidates(intent, candidates, logprobs, typed=typed, weights=weights, own=own)


def continues(char: str) -> bool:
    """Whether ``char`` can continue an identifier."""
    return char.isalnum() or char == "_"


# Tokens a walk among names may ask the k likeliest of before it leaves the choice
# to the server's constraint.
WALK_STEPS = 6


def walked_choice(
    rests: list[str], top_of: Callable[[str], dict[str, float]], steps: int = WALK_STEPS
) -> str | None:
    """The model's greedy choice among ``rests`` (each followed by a character that
    ends an identifier), read token by token from its k likeliest next tokens after
    what the walk wrote so far (``top_of``), as a constraint would make it: at each
    step the likeliest token that stays within some rest, or that ends one. None
    when no token in the k tells, or after ``steps`` tokens: the constraint decides."""
    alive = sorted(set(rests))
    text = ""
    for _ in range(steps):
        if len(alive) == 1:
            return alive[0]  # the constraint would force the rest of it
        best: str | None = None
        for token, _logprob in sorted(top_of(text).items(), key=lambda t: -t[1]):
            grown = text + token
            if any(r.startswith(grown) for r in alive):
                best = grown
                break
            ended = [r for r in alive if grown.startswith(r) and not _continued(grown, r)]
            if ended:
                return max(ended, key=len)  # the name, then what ends it (``cache(``)
        if best is None:
            return None
        text = best
        alive = [r for r in alive if r.startswith(text)]
    return None


def _continued(grown: str, name: str) -> bool:
    """Whether ``grown`` (which starts with ``name``) goes on with the identifier."""
    return len(grown) == len(name) or continues(grown[len(name)])
