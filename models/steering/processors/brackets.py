"""A closing bracket that closes nothing open is ruled out.

Each token's *bracket program* is the brackets it writes in code, in order, up
to a quote or ``#`` (what follows is a string's or a comment's): ``)`` for
``)``, ``)]`` for ``)]\\n``, ``()`` for ``()``. A token is ruled out when its
program, run against the brackets open where the text stands, closes one that
is not the innermost open (or when none is open): ``)`` at the statement's
top level, ``]`` inside ``(``. Programs are indexed once per vocabulary
(:class:`BracketPrograms`); the ids one stack rules out are kept per the
stack's innermost brackets.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor, rule_out

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_MATCH = {")": "(", "]": "[", "}": "{"}
_STOPS = frozenset("'\"#")


def bracket_program(text: str) -> str:
    """The brackets ``text`` writes in code, up to a quote or ``#``; "" when it closes none."""
    brackets = []
    for char in text:
        if char in _STOPS:
            break
        if char in _OPENERS or char in _MATCH:
            brackets.append(char)
    program = "".join(brackets)
    return program if any(char in _MATCH for char in program) else ""


def closes_only_what_is_open(program: str, stack: str) -> bool:
    """Whether each closer of ``program`` closes the innermost bracket open, starting
    from ``stack`` (the openers open, outermost first)."""
    open_ = list(stack)
    for char in program:
        if char in _OPENERS:
            open_.append(char)
        elif not open_ or open_.pop() != _MATCH[char]:
            return False
    return True


class BracketPrograms:
    """Every token's bracket program, indexed once per vocabulary."""

    def __init__(self, texts: Sequence[str]) -> None:
        by_program: dict[str, list[int]] = {}
        for token, text in enumerate(texts):
            if ")" not in text and "]" not in text and "}" not in text:
                continue  # most of a vocabulary: a quick test, then the program
            program = bracket_program(text)
            if program:
                by_program.setdefault(program, []).append(token)
        self.programs = {p: torch.tensor(ids, dtype=torch.long) for p, ids in by_program.items()}
        # A program closes at most this many brackets open before it: only that many of
        # the stack's innermost ones decide it.
        self.reach = max((sum(c in _MATCH for c in p) for p in self.programs), default=0)
        self._ruled_out: dict[tuple[str, bool], torch.Tensor] = {}

    def ruled_out(self, stack: str) -> torch.Tensor:
        """The ids whose program closes what ``stack`` does not hold open. -> [N] long"""
        key = (stack[-self.reach :] if self.reach else "", len(stack) > self.reach)
        found = self._ruled_out.get(key)
        if found is None:
            tail = key[0] if not key[1] else "\0" + key[0]  # deeper brackets: never closable
            bad = [ids for p, ids in self.programs.items() if not closes_only_what_is_open(p, tail)]
            found = torch.cat(bad).sort().values if bad else torch.empty(0, dtype=torch.long)
            self._ruled_out[key] = found
        return found


class UnmatchedClosers(LogitsProcessor):
    """Rules out the tokens whose brackets close what is not open (see the module
    docstring). ``stack``: the openers open where the text stands, outermost first."""

    def __init__(self, programs: BracketPrograms, stack: str) -> None:
        if any(char not in _OPENERS for char in stack):
            raise ValueError(f"UnmatchedClosers stack must hold openers only, got {stack!r}")
        self.programs = programs
        self.stack = stack

    @property
    def idle(self) -> bool:
        return False

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V] -> [1, V]
        return rule_out(self.programs.ruled_out(self.stack), scores)
