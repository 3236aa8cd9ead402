"""Logits processors that steer the identifier after a trigger toward the real names.

Each is a :class:`LogitsProcessor` (``processors/base.py``) and receives facts
gathered at the trigger (a :class:`CandidateTrie`, token ids, item kinds).
Compose them in a list, in this order: :class:`CandidateWalk`, :class:`Demote`,
:class:`FollowByKind`.

"Since the trigger" is counted from ``start``, the length of ``input_ids`` when
the first identifier token is about to be chosen. Left as None it is taken from
the first call, so a processor made at the trigger needs no length.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Literal

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor
from steerlsp.models.steering.tokens.trie import CandidateTrie

# Item kinds (LSP CompletionItemKind names, lower case) by what may follow the name.
NOT_CALLED = frozenset({"property", "attribute", "field", "variable", "constant", "enummember"})
CALLED = frozenset({"method", "function", "constructor"})
NEUTRAL = frozenset(
    {"class", "module", "keyword", "text", "value", "unit", "snippet", "reference", "folder"}
    | {"interface", "struct", "enum", "event", "operator", "typeparameter", "file", "color"}
)


class WalkState(enum.Enum):
    """Where the identifier being written stands relative to the candidates."""

    WALKING = "walking"  # what has been written starts some candidate
    ENDED = "ended"  # a candidate was written and then a token that ends identifiers
    LEFT = "left"  # the model wrote something that is not a candidate: hands off


def _check_start(start: int | None, owner: str) -> None:
    if start is not None and start < 0:
        raise ValueError(f"{owner} start must be a token count >= 0, got {start!r}")


def _consumed(input_ids: torch.Tensor, start: int) -> list[int]:
    # input_ids: [1, T]
    return [int(t) for t in input_ids[0, start:].tolist()]


def _below_floor(
    scores: torch.Tensor, ids: torch.Tensor, among: torch.Tensor | None, margin: float
) -> torch.Tensor:
    """``scores`` with ``ids`` pushed under the lowest finite score of the others."""
    # scores: [1, V]; ids, among: [N] long
    width = scores.shape[-1]
    ids = ids[ids < width].to(scores.device)
    if not len(ids):
        return scores
    rest = torch.isfinite(scores[0])
    if among is not None:
        within = torch.zeros_like(rest)
        within[among[among < width].to(scores.device)] = True
        rest &= within
    rest[ids] = False
    if not bool(rest.any()):
        return scores  # nothing else to put them under: leave the choice to the model
    floor = scores[0][rest].min() - margin
    out = scores.clone()
    out[:, ids] = torch.minimum(out[:, ids], floor)
    return out


class CandidateWalk(LogitsProcessor):
    """Steers the identifier after a trigger along the candidates' token spellings.

    Each step boosts by ``delta`` (``mode="boost"``) or allows only
    (``mode="mask"``) the tokens that continue some candidate. Where a candidate
    ends, tokens that end an identifier are continuations too, so both
    ``update`` and ``updates`` can be written. In boost mode, when the model's
    own best token is more than ``escape_margin`` nats likelier than every
    continuation, the step is left alone: the list may be incomplete
    (``__getattr__``, dynamic attributes). The margin only matters below
    ``delta``: past it, the boost could not overturn the model anyway; the
    default 5.0 (a factor of ~150) lets through only a clear preference. Once
    the model writes a token off the
    trie the walk is over (:attr:`state` LEFT), as it is when an identifier
    ends (ENDED, with :attr:`chosen`).
    """

    def __init__(
        self,
        trie: CandidateTrie,
        mode: Literal["boost", "mask"] = "boost",
        delta: float = 7.0,
        escape_margin: float = 5.0,
        start: int | None = None,
    ) -> None:
        if not len(trie):
            raise ValueError(f"CandidateWalk needs candidates, got {len(trie)!r} in the trie")
        if mode not in ("boost", "mask"):
            raise ValueError(f"CandidateWalk mode must be 'boost' or 'mask', got {mode!r}")
        if not (math.isfinite(delta) and delta > 0):
            raise ValueError(f"CandidateWalk delta must be finite and > 0, got {delta!r}")
        if math.isnan(escape_margin) or escape_margin < 0:
            raise ValueError(f"CandidateWalk escape_margin must be >= 0, got {escape_margin!r}")
        _check_start(start, "CandidateWalk")
        self.trie = trie
        self.mode = mode
        self.delta = delta
        self.escape_margin = escape_margin  # math.inf: never escape
        self.start = start
        self.state = WalkState.WALKING
        self.chosen: list[str] = []  # the candidate written, once ENDED
        self.escapes = 0  # steps left alone because the model was far more sure
        self._masks: dict[tuple[tuple[int, ...], int], torch.Tensor] = {}  # node, width

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V]
        if self.start is None:
            self.start = input_ids.shape[-1]
        if self.state is not WalkState.WALKING:
            return scores
        consumed = _consumed(input_ids, self.start)
        self._advance(consumed)
        if self.state is not WalkState.WALKING:
            return scores
        allowed = self.continuations(consumed, scores.shape[-1]).to(scores.device)
        if self.mode == "mask":
            if not bool(torch.isfinite(scores[0][allowed]).any()):
                return scores  # an earlier processor ruled every candidate out: no dead end
            return scores.masked_fill(~allowed, float("-inf"))
        logprobs = torch.log_softmax(scores.float(), dim=-1)
        best_allowed = logprobs.masked_fill(~allowed, float("-inf")).max()
        if float(logprobs.max() - best_allowed) > self.escape_margin:
            self.escapes += 1
            return scores
        return torch.where(allowed, scores + self.delta, scores)

    def next_rows(self, history: torch.Tensor) -> torch.Tensor | None:
        """Before the step after ``history`` [1, T]: the tokens this walk will allow
        there, when it masks and knows them (a name is under way, none ends here: an
        end allows the ~150k identifier-ending tokens); None when it will not
        constrain the step or allows too much to list. A superset of what the step
        allows, so a caller may compute only these rows' logits. -> [N] long"""
        if self.mode != "mask" or self.state is not WalkState.WALKING or self.start is None:
            return None
        consumed = _consumed(history, self.start)
        if not self.trie.contains(consumed) or self.trie.ends_here(consumed):
            return None
        return self.trie.allowed_next(consumed)

    def draft(self, history: torch.Tensor) -> list[int]:
        """After ``history`` [1, T]: the rest of the first candidate (the trie keeps the
        order it was given, best first) that what the walk consumed begins; the
        tokens the walk expects next, for the loop to verify in one pass. Empty when
        the walk is over, has not started, or no candidate goes on from here."""
        if self.state is not WalkState.WALKING or self.start is None:
            return []
        consumed = _consumed(history, self.start)
        for spelling in self.trie.spellings.values():
            tokens = spelling.tokens
            if len(tokens) > len(consumed) and list(tokens[: len(consumed)]) == consumed:
                return list(tokens[len(consumed) :])
        return []

    def continuations(self, consumed: list[int], width: int) -> torch.Tensor:
        """Tokens the walk allows after ``consumed``: the trie's, plus identifier ends.

        A mask over ``width`` scores, kept per node: where a candidate ends, the
        identifier ends are ~150k of Gemma's 262k tokens, too many to index by id.
        """
        # returns: [width] bool
        key = (tuple(consumed), width)
        mask = self._masks.get(key)
        if mask is None:
            mask = torch.zeros(width, dtype=torch.bool)
            if self.trie.ends_open(consumed):
                mask[:] = True  # ``name=``: the value follows, whatever it is
            elif self.trie.ends_here(consumed):
                breaks = self.trie.vocabulary.identifier_break_mask[:width]
                mask[: len(breaks)] = breaks
            following = self.trie.allowed_next(consumed)
            mask.index_fill_(0, following[following < width], True)
            self._masks[key] = mask
        return mask

    def _advance(self, consumed: list[int]) -> None:
        if self.trie.contains(consumed):
            return
        finished = self.trie.completed(consumed)  # a token that went past a name's end
        ended_name = self.trie.ends_here(consumed[:-1])
        if (
            not finished
            and ended_name
            and (
                self.trie.vocabulary.breaks_identifier(consumed[-1])
                or self.trie.ends_open(consumed[:-1])
            )
        ):
            finished = self.trie.completed(consumed[:-1])
        if finished:
            self.state, self.chosen = WalkState.ENDED, finished
        else:
            self.state = WalkState.LEFT


class Demote(LogitsProcessor):
    """Pushes ``token_ids`` below the lowest score of every other valid token.

    For the first tokens of deprecated names (see ``CandidateTrie.leading_only_to``):
    they stay possible, but last. ``among`` narrows "valid" to those ids (the
    candidates' tokens), so a demoted name still ranks above unrelated tokens.
    ``steps`` limits how many steps after ``start`` it acts (None: every step).
    """

    def __init__(
        self,
        token_ids: torch.Tensor,
        among: torch.Tensor | None = None,
        margin: float = 1.0,
        steps: int | None = None,
        start: int | None = None,
    ) -> None:
        for name, ids in (("token_ids", token_ids), ("among", among)):
            if ids is None:
                continue
            if ids.dim() != 1 or ids.dtype != torch.long:
                raise ValueError(f"Demote {name} must be a 1-D long tensor, got {ids!r}")
            if len(ids) and int(ids.min()) < 0:
                raise ValueError(f"Demote {name} must be ids >= 0, got {ids.tolist()!r}")
        if not (math.isfinite(margin) and margin > 0):
            raise ValueError(f"Demote margin must be finite and > 0, got {margin!r}")
        if steps is not None and steps < 1:
            raise ValueError(f"Demote steps must be >= 1 or None, got {steps!r}")
        _check_start(start, "Demote")
        self.token_ids = token_ids
        self.among = among
        self.margin = margin
        self.steps = steps
        self.start = start

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V]
        if self.start is None:
            self.start = input_ids.shape[-1]
        if self.steps is not None and input_ids.shape[-1] - self.start >= self.steps:
            return scores
        return _below_floor(scores, self.token_ids, self.among, self.margin)


class FollowByKind(LogitsProcessor):
    """Steers the token right after a candidate's name by the candidate's kind.

    Where the written tokens spell a whole candidate, a property, attribute or
    variable is not called: tokens starting with ``(`` are demoted below every
    other valid token. A method or function is: they are boosted by ``delta``.
    Other kinds (class, module) are left alone. Once the identifier has ended
    or left the trie, the processor is done.
    """

    def __init__(
        self,
        trie: CandidateTrie,
        kinds: Mapping[str, str],
        delta: float = 7.0,
        start: int | None = None,
    ) -> None:
        known = NOT_CALLED | CALLED | NEUTRAL
        for name, kind in kinds.items():
            if kind not in known:
                raise ValueError(f"FollowByKind: unknown kind {kind!r} for {name!r}")
        if not (math.isfinite(delta) and delta > 0):
            raise ValueError(f"FollowByKind delta must be finite and > 0, got {delta!r}")
        _check_start(start, "FollowByKind")
        self.trie = trie
        self.kinds = dict(kinds)
        self.delta = delta
        self.start = start
        self.done = False
        self.parens = trie.vocabulary.ids_starting_with("(")  # "(", "()", "([", ...

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V]
        if self.start is None:
            self.start = input_ids.shape[-1]
        if self.done:
            return scores
        consumed = _consumed(input_ids, self.start)
        if not self.trie.contains(consumed):
            self.done = True
            return scores
        kind = next((self.kinds.get(c) for c in self.trie.completed(consumed)), None)
        if kind in NOT_CALLED:
            return _below_floor(scores, self.parens, None, 1.0)
        if kind in CALLED:
            parens = self.parens[self.parens < scores.shape[-1]].to(scores.device)
            out = scores.clone()
            out[:, parens] += self.delta
            return out
        return scores
