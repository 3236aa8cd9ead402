"""The keyword-argument stage: a keyword the callee does not take is written again,
and so is an argument passed by position where the callee takes no more.

Once an argument inside a call reads ``name=``, the callee's signature is
asked (once per call), so that its answer overlaps the next token's forward
pass. At the next token (the ``=`` not the start of ``==``) the keyword is
checked against the parameters every overload accepts
(``models/steering/parameters.py``). A name none of them takes, where the
callee takes no ``**kwargs``, or a keyword given twice (Python refuses it),
is written again from its first token: among the keywords still to give (none
already given), the one the model finds likeliest as a whole name, a required
one ahead, followed along a hard mask (the model chose to write a keyword, and
these are the ones that exist). A keyword repeated in a call whose keywords
are not known (``**kwargs``) has its first token ruled out, the rest left to
the model.

An argument the model passes by position is a value (``Schema(columns)``): the
signature is asked once it reads as one, and where the call already holds more
such arguments than any overload takes by position (pylint's E1121), the first
one too many is written again from its first token, as a keyword the callee
takes (``name=``), or, where it is the call's first argument and nothing is
required, as the call's close. Where the signature is known when a generated
``)`` closes the call, a required parameter not given (E1120) has the ``)``
written again as that keyword (``, retries=``). Not for the builtins and the
builtin types' methods (``len``, ``.append``), whose calls a model rarely gets
wrong and which are the most frequent. Up to ``steering.maxRewinds`` times per
completion, like an undefined name (the two count separately).
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, replace
from typing import Any, cast

import torch

from steerlsp.models.deprecation.evidence import Deprecation
from steerlsp.models.steering.analysis import Signature
from steerlsp.models.steering.monitor import CallContext, TriggerPoint
from steerlsp.models.steering.parameters import (
    CallShape,
    argument_spans,
    call_shape,
    closing,
    split_arguments,
)
from steerlsp.models.steering.processors.candidates import CandidateWalk
from steerlsp.models.steering.stages.base import Answer, Inputs, Query, Stage, Step
from steerlsp.models.steering.stages.walking import Walk
from steerlsp.models.steering.tokens.trie import CandidateTrie

# ``name=`` at an argument's start, and one character after it (``==`` is no keyword).
_KEYWORD = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)(?=.)", re.DOTALL)
_GIVEN = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")
_STARTS_NAME = re.compile(r"\s*[A-Za-z_]\w*\s*=?\Z")  # could still become ``name=``
_KEYWORD_SO_FAR = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)", re.DOTALL)  # ``name=``, maybe more
_LAST_NAME = re.compile(r"([A-Za-z_]\w*)\s*\Z")
# The keywords scored whole after a rewind (by first token), and the head start of a
# required one not yet given (nats): the call is an error without it.
SHORTLIST = 6
REQUIRED_BONUS = 1.0
# How far a keyword the callee's source deprecates falls behind (nats).
DEPRECATED_PENALTY = 2.0
_BUILTINS = frozenset(dir(builtins))
# Methods of the builtin types (``.append``, ``.join``, ``.get``): by far the most
# frequent calls on a receiver, and ones a model rarely miscounts.
_BUILTIN_METHODS = frozenset(
    name for kind in (str, bytes, list, tuple, dict, set) for name in dir(kind)
)


@dataclass(frozen=True)
class _Rewrite:
    """What a keyword is written again as: after ``lead`` (the text its first token had
    before it), one of ``offered``, instead of ``name``."""

    lead: str
    name: str  # the keyword, or the argument written by position
    offered: list[str]  # empty: a repeated keyword where the callee's own are unknown
    required: set[str]
    banned: int  # the token that began the keyword
    deprecated: frozenset[str] = frozenset()  # of ``offered``: demoted


def counted(call: CallContext) -> bool:
    """Whether arguments passed by position are counted in this call: one to a name
    (not ``d["k"](...)``) that is neither a builtin nor a builtin type's method."""
    last = _LAST_NAME.search(call.callee)
    if last is None or call.callee.startswith("builtins."):
        return False
    if "." in call.callee:
        return last.group(1) not in _BUILTIN_METHODS
    return call.callee not in _BUILTINS


def given_arguments(arguments: str) -> tuple[set[str], int]:
    """The keywords given among a call's earlier ``arguments`` (the text between its
    ``(`` and the current argument), and how many were passed by position."""
    keywords: set[str] = set()
    positional = 0
    for argument in split_arguments(arguments):
        match = _GIVEN.match(argument)
        if match is not None:
            keywords.add(match.group(1))
        elif argument and not argument.startswith("*"):
            positional += 1
    return keywords, positional


def shape_of(signature: Signature, callee: str) -> CallShape | None:
    """The callee's parameters from its signature help, when its label can be read
    and agrees with the parameter names the server listed; None: check nothing."""
    match = _LAST_NAME.search(callee)
    if match is None:
        return None
    shape = call_shape(signature.label, match.group(1))
    if shape is None:
        return None
    listed = [p for p in signature.parameters if p not in ("/", "*")]
    if listed and not any([p.name for p in o] == listed for o in shape.overloads):
        return None  # the label says something else than the parameters: trust neither
    return shape


class KeywordArguments(Stage):
    """Keyword arguments the callee takes (see the module docstring)."""

    def __init__(self, inputs: Inputs) -> None:
        self.analysis = inputs.analysis
        self.facts = inputs.facts
        self.options = inputs.options
        self.budget = inputs.budget
        self.trace = inputs.trace
        self.written = inputs.written
        self.questions = inputs.questions
        self.walking = inputs.walking
        self.rewinds = 0
        self._shapes: dict[int, CallShape | None] = {}  # by the call's ``(`` offset
        # The parameters each callee's source deprecates, by the call's ``(`` offset.
        self._deprecated: dict[int, dict[str, Deprecation]] = {}
        self._checked: set[tuple[int, int]] = set()  # (call, argument start)
        # Calls with arguments to count: by the ``(`` offset, with the number of
        # arguments passed by position already checked.
        self._calls: dict[int, tuple[CallContext, int]] = {}
        self._scanned = 0  # the text up to this offset was looked at for completed arguments
        # A rewind to ask for: (keep, what to write instead, the argument's key).
        self._rewind: tuple[int, _Rewrite, tuple[int, int]] | None = None
        self._rewound: _Rewrite | None = None

    @classmethod
    def build(cls, inputs: Inputs) -> KeywordArguments | None:
        options = inputs.options
        if not (options.keywords and options.max_rewinds > 0):
            return None
        return cls(inputs)

    # ---- asking ---------------------------------------------------------------------

    def ask(self, point: TriggerPoint) -> None:
        """Once an argument's text reads ``name=`` (or ``name =``): its call's signature,
        at most once per call. Not at every ``(``: most calls take no keyword, and each
        question counts against the line's cap."""
        call = point.call
        if call is None or call.argument_start < 0 or call.open_bracket in self._shapes:
            return
        argument = self.written.whole[call.argument_start : point.offset]
        match = _KEYWORD_SO_FAR.match(argument)
        if match is not None:
            if call.argument_start + match.start(1) >= len(self.written.window):
                self._ask(point, call)
                self._ask_callee(point, call)
        elif (
            counted(call)
            and argument.strip()
            and not argument.lstrip().startswith("*")  # unpacked: nothing to count
            and not _STARTS_NAME.match(argument)
        ):
            lead = len(argument) - len(argument.lstrip())
            if call.argument_start + lead >= len(self.written.window):
                self._ask(point, call)  # a generated value, passed by position

    def _ask(self, point: TriggerPoint, call: CallContext) -> None:
        pool, signature_at = self.facts.pool, self.analysis.signature_at
        self.questions.ask(
            "parameters",
            point if point.call is call else replace(point, call=call),
            call.open_bracket + 1,
            lambda text, offset, limit: pool.submit(signature_at, text, offset, timeout=limit),
            self,
        )

    def _ask_callee(self, point: TriggerPoint, call: CallContext) -> None:
        """Which parameters the callee's source deprecates: where it is defined, and
        that file read, both on the query pool (the decode thread reads no file)."""
        pool = self.facts.pool
        self.questions.ask(
            "callee",
            point,
            call.open_bracket,
            lambda text, offset, limit: pool.submit(self._read_callee, text, offset - 1, limit),
            self,
        )

    def _read_callee(self, text: str, offset: int, limit: float) -> dict[str, Deprecation]:
        found = self.analysis.definition_source(text, offset, timeout=limit)
        return {} if found is None else self.facts.deprecated_parameters(found.path, found.line)

    def due(self, query: Query) -> bool:
        return query.future.done()  # else waited for where a keyword needs it (observe)

    def answered(
        self, query: Query, answer: Answer, step: Step, logits: torch.Tensor
    ) -> torch.Tensor:
        self._keep(query, answer)
        return logits

    def _keep(self, query: Query, answer: Answer) -> None:
        call = query.point.call
        if call is None:
            return
        if query.kind == "callee":
            # The answer of ``_read_callee`` (None on a timeout or error).
            found = cast(dict[str, Deprecation], answer) if isinstance(answer, dict) else {}
            self._deprecated[call.open_bracket] = found
        else:
            shape = shape_of(answer, call.callee) if isinstance(answer, Signature) else None
            self._shapes[call.open_bracket] = shape

    def _shape(self, call: CallContext) -> tuple[bool, CallShape | None]:
        """The call's parameters, waited for if still out. -> (known, shape)"""
        if call.open_bracket not in self._shapes and not self._wait("parameters", call):
            return False, None  # never asked (a cap), or asked before a rewind
        return True, self._shapes.get(call.open_bracket)

    def _deprecations(self, call: CallContext) -> dict[str, Deprecation]:
        """The parameters the callee's source deprecates, waited for if still out."""
        if call.open_bracket not in self._deprecated:
            self._wait("callee", call)
        return self._deprecated.get(call.open_bracket, {})

    def _wait(self, kind: str, call: CallContext) -> bool:
        """Wait for this stage's ``kind`` question about ``call``; False: none is out."""
        query = next(
            (
                q
                for q in self.questions.pending
                if q.owner is self
                and q.kind == kind
                and q.point.call
                and q.point.call.open_bracket == call.open_bracket
            ),
            None,
        )
        if query is None:
            return False
        self.questions.take(query)
        self._keep(query, self.budget.wait(query))
        return True

    # ---- after each token -----------------------------------------------------------

    def observe(self, point: TriggerPoint) -> None:
        self._check_keyword(point)
        self._check_positional(point)

    def _check_keyword(self, point: TriggerPoint) -> None:
        call = point.call
        if call is None or call.argument_start < 0 or self._rewind is not None:
            return
        key = (call.open_bracket, call.argument_start)
        if key in self._checked or self.rewinds >= self.options.max_rewinds:
            return
        written = self.written
        whole = written.whole
        argument = whole[call.argument_start : point.offset]
        match = _KEYWORD.match(argument)
        if match is None:
            if not _STARTS_NAME.match(argument) and argument.strip():
                self._checked.add(key)  # a value, not a keyword: nothing to check
            return
        self._checked.add(key)
        name = match.group(1)
        start = call.argument_start + match.start(1)
        if start < len(written.window):
            return  # the user wrote it
        given, positional = given_arguments(whole[call.open_bracket + 1 : call.argument_start])
        repeated = name in given  # a syntax error whatever the callee takes
        known, shape = self._shape(call)
        if not repeated and (not known or shape is None or shape.accepts(name)):
            if shape is not None:
                self._check_deprecated(call, shape, name, start, given, key)
            return
        closed = shape if shape is not None and not shape.open else None
        offered = [n for n in closed.wanted(given, positional) if n != name] if closed else []
        if not offered and not repeated:
            self.trace.notes.append(f"keyword {name!r} kept: {call.callee} takes no other")
            return
        required = set(closed.required(given, positional)) if closed else set()
        deprecated = frozenset(self._deprecations(call)) if offered else frozenset()
        rewrite = _Rewrite("", name, offered, required, -1, deprecated)
        reason = f"{'repeated' if repeated else 'unexpected'} keyword {name!r} for"
        self._rewrite_from(start, rewrite, call, reason, key)

    def _check_deprecated(
        self,
        call: CallContext,
        shape: CallShape,
        name: str,
        start: int,
        given: set[str],
        key: tuple[int, int],
    ) -> None:
        """A keyword the callee takes but its source deprecates, naming the parameter
        that replaces it (``sparse`` -> ``sparse_output``): written again as that one."""
        deprecation = self._deprecations(call).get(name)
        if deprecation is None:
            return
        replacement = deprecation.replacement
        if replacement is None or replacement in given or not shape.accepts(replacement):
            self.trace.notes.append(f"deprecated keyword {name!r} kept: no replacement to write")
            return
        rewrite = _Rewrite("", name, [replacement], set(), -1)
        reason = f"deprecated keyword {name!r} (use {replacement!r}) for"
        self._rewrite_from(start, rewrite, call, reason, key)

    def _check_positional(self, point: TriggerPoint) -> None:
        """Once an argument passed by position is whole (a ``,`` or the call's ``)``
        after it): more of them than the callee takes is an error (E1121), and the
        first one too many is written again; and once a call whose signature is known
        closes, a required parameter not given is an error (E1120), and the ``)`` is
        written again as that keyword (see :meth:`steer`)."""
        call = point.call
        if call is not None and call.argument_start >= 0 and counted(call):
            self._calls.setdefault(call.open_bracket, (call, 0))
        whole, window = self.written.whole, len(self.written.window)
        new, self._scanned = whole[self._scanned : point.offset], point.offset
        if "," not in new and ")" not in new:
            return  # no argument completed since the last look
        for open_at, (tracked, checked) in list(self._calls.items()):
            if self._rewind is not None or self.rewinds >= self.options.max_rewinds:
                return
            close = closing(whole, open_at)
            if close is not None and close >= point.offset:
                close = None
            inside = whole[open_at + 1 : point.offset if close is None else close]
            spans, writing = argument_spans(inside)
            if close is None and writing:
                spans = spans[:-1]  # the argument being written
            if close is not None:
                del self._calls[open_at]
            arguments = [(open_at + 1 + a, inside[a:b]) for a, b in spans]
            if any(text.startswith("*") for _, text in arguments):
                self._calls.pop(open_at, None)  # unpacked: no count holds
                continue
            positional = [at for at, text in arguments if not _GIVEN.match(text)]
            fresh = len(positional) > checked and positional[-1] >= window
            if fresh:
                if close is None:
                    self._calls[open_at] = (tracked, len(positional))
                self._ask(point, tracked)
            elif close is None:
                continue  # nothing new
            _, shape = self._shape(tracked)  # (never asked: unknown)
            if shape is None or not any(shape.overloads):
                continue  # unknown, or a bare ``f()`` that may be all Jedi could read
            capacity = shape.positional_capacity()
            if fresh and capacity is not None and len(positional) > capacity:
                start = positional[capacity]
                if start >= window:
                    self._rewrite_positional(tracked, shape, capacity, start, arguments)
                continue
            if close is not None and close >= window and len(shape.overloads) == 1:
                given, _ = given_arguments(inside)
                missing = shape.required(given, len(positional))
                if missing:
                    self._rewrite_missing(tracked, close, missing, inside)

    def _rewrite_positional(
        self,
        call: CallContext,
        shape: CallShape,
        capacity: int,
        start: int,
        arguments: list[tuple[int, str]],
    ) -> None:
        """Write the argument at ``start`` (one too many by position) again: as a keyword
        the callee takes, or as the call's close where it is the first argument."""
        given, _ = given_arguments(self.written.whole[call.open_bracket + 1 : start])
        offered = [f"{name}=" for name in shape.wanted(given, capacity)]
        required = {f"{name}=" for name in shape.required(given, capacity)}
        if start == arguments[0][0] and not required:
            offered.append(")")
        text = next(text for at, text in arguments if at == start)
        if not offered:
            self.trace.notes.append(f"argument {text!r} kept: {call.callee} takes no keyword")
            return
        plural = "" if capacity == 1 else "s"
        reason = f"argument {text!r} past the {capacity} positional parameter{plural} of"
        self._rewrite_from(start, _Rewrite("", text, offered, required, -1), call, reason)

    def _rewrite_missing(
        self, call: CallContext, close: int, missing: list[str], inside: str
    ) -> None:
        """Write the call's ``)`` again as a required keyword it lacks (``, name=``)."""
        given = inside.strip()
        separator = "" if not given or given.endswith(",") else ", "
        offered = [f"{separator}{name}=" for name in missing]
        rewrite = _Rewrite("", ")", offered, set(offered), -1)
        reason = f"missing required argument{'s' if len(missing) > 1 else ''}"
        self._rewrite_from(close, rewrite, call, f"{reason} {', '.join(missing)} of")

    def _rewrite_from(
        self,
        start: int,
        rewrite: _Rewrite,
        call: CallContext,
        reason: str,
        key: tuple[int, int] | None = None,
    ) -> None:
        """Rewind to the token that holds monitor offset ``start``, to write ``rewrite``
        from there (its lead: what that token had before ``start``); ``key``: the
        argument to check again once written."""
        written = self.written
        at = written.generated(start)
        keep = next(i for i, end in enumerate(written.ends) if end > at)
        lead = written.text[written.ends[keep - 1] if keep else 0 : at]
        rewrite = replace(rewrite, lead=lead, banned=written.tokens[keep])
        self._rewind = (keep, rewrite, key or (call.open_bracket, start))
        self.trace.interrupts.append(
            {
                "at": at,
                "reason": f"{reason} {call.callee}",
                "rewound": len(written.tokens) - keep,
            }
        )

    def wanted_rewind(self) -> int | None:
        return None if self._rewind is None else self._rewind[0]

    def rewind(self, keep: int) -> None:
        """Before the text goes back to ``keep`` tokens: forget what came after it, and
        note what to write instead at the next step when the rewind is this stage's."""
        limit = len(self.written.window) + len(self.written.kept(keep))
        self._checked = {k for k in self._checked if k[1] < limit}
        self._shapes = {o: s for o, s in self._shapes.items() if o < limit}
        self._deprecated = {o: d for o, d in self._deprecated.items() if o < limit}
        # A call still open is counted again from its first argument.
        self._calls = {o: (c, 0) for o, (c, _) in self._calls.items() if o < limit}
        self._scanned = 0
        if self._rewind is None:
            return
        _, rewrite, key = self._rewind
        self._rewind = None
        self._checked.discard(key)  # the argument written again is checked again
        self.rewinds += 1
        self._rewound = rewrite

    def quiet(self) -> bool:
        return self._rewind is None and self._rewound is None

    # ---- before a token -------------------------------------------------------------

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        """After a rewind: the keyword written again, the best of those the callee
        takes (see :meth:`_best`), along a hard mask."""
        if self._rewound is None:
            return logits
        rewrite, self._rewound = self._rewound, None
        if not rewrite.offered:  # a repeated keyword, and nothing known to offer instead
            self.trace.notes.append(f"repeated keyword {rewrite.name!r}: its first token banned")
            return logits.index_fill(1, torch.tensor([rewrite.banned]), float("-inf"))
        written, vocabulary = self.written, self.facts.vocabulary
        trie = CandidateTrie.in_context(
            [rewrite.lead + n for n in rewrite.offered],
            context=written.line_context(),
            tokenize=self.facts.tokenize,
            vocabulary=vocabulary,
        )
        if not len(trie):
            return logits
        entry: dict[str, Any] = {
            "at": len(written.text),
            "typed": "",
            "candidates": len(rewrite.offered),
            "mode": "mask",
            "followed": "all",
            "instead_of": rewrite.name,
        }
        best = self._best(step, logits, trie, rewrite, entry)
        if best is not None:
            trie = CandidateTrie([trie.spellings[rewrite.lead + best]], vocabulary)
            entry["followed"] = [best]
        walk = CandidateWalk(trie, mode="mask", start=step.history.shape[-1])
        at = len(written.window) + len(written.text)
        self.walking.start(Walk([walk], [walk], "", at), entry)
        return logits

    def _best(
        self,
        step: Step,
        logits: torch.Tensor,
        trie: CandidateTrie,
        rewrite: _Rewrite,
        entry: dict[str, Any],
    ) -> str | None:
        """The keyword to write: the model's likeliest whole name among a shortlist (the
        :data:`SHORTLIST` best by first token), a required one not yet given ahead by
        :data:`REQUIRED_BONUS` nats. None where none can be scored (then the mask over
        all of them, the model choosing token by token)."""
        tokens = {
            name: spelling.tokens
            for name in rewrite.offered
            if (spelling := trie.spellings.get(rewrite.lead + name)) is not None
            and spelling.rollback == 0
        }
        if not tokens:
            return None
        first = torch.log_softmax(logits[0].float(), dim=-1)
        bonus = {
            n: (REQUIRED_BONUS if n in rewrite.required else 0.0)
            - (DEPRECATED_PENALTY if n in rewrite.deprecated else 0.0)
            for n in tokens
        }
        shortlist = sorted(tokens, key=lambda n: -(float(first[tokens[n][0]]) + bonus[n]))
        shortlist = shortlist[:SHORTLIST]
        breaks = self.facts.vocabulary.identifier_break_mask
        if not any(name[-1:].isidentifier() or name[-1:].isdigit() for name in shortlist):
            breaks = torch.ones_like(breaks)  # ``name=`` or ``)``: anything may follow
        scores = step.scorer.score_continuations(logits, [tokens[n] for n in shortlist], breaks)
        ranked = sorted(
            ((s + bonus[n], n) for n, s in zip(shortlist, scores, strict=True) if s > -1e30),
            reverse=True,
        )
        entry["scores"] = {n: round(s, 3) for s, n in ranked}
        return ranked[0][1] if ranked else None
