"""The undefined-name stage: the names in scope, and the walk after a rewind.

At each statement's end :class:`UndefinedNames` asks its :class:`NameGuard`
whether the statement reads a name nothing defines
(``models/steering/stages/scope.py``). If it does, the decode loop rewinds to
that name's first token and :func:`names_walk` steers the token written there
again: the name that was read is demoted below every other token, and the
names in scope are boosted, with the usual escape for a model that is far more
sure of something else (a literal, say).
"""

from __future__ import annotations

import ast
import concurrent.futures
import re
import time
from typing import Any, NamedTuple

import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import Analysis, CompletionCandidate
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.lexing import TOP_LEVEL
from steerlsp.models.steering.monitor import MonitorState, TriggerPoint
from steerlsp.models.steering.processors.base import LogitsProcessor
from steerlsp.models.steering.processors.candidates import CandidateWalk, Demote
from steerlsp.models.steering.stages.base import Inputs, Stage, Step, Trace
from steerlsp.models.steering.stages.scope import (
    NameCheck,
    Undefined,
    bound_names,
    names_in_scope,
    parse_statement,
)
from steerlsp.models.steering.stages.walking import Walk
from steerlsp.models.steering.tokens.trie import CandidateTrie

# Names in scope offered to the walk after a rewind (Jedi lists ~150 builtins alone).
MAX_NAMES = 600
# How far before the cursor a top-level line is looked for, to lex the cursor's statement
# from, and how far after it the statement is looked for to end (characters).
STATEMENT_HEAD = 32768
STATEMENT_TAIL = 4096
_NEXT_LINE = re.compile(r"\n([ \t]*)[^\s#]")  # the next line of code, and its indentation


def scope_query(before: str, after: str, indent: str | None = None) -> tuple[str, int]:
    """The document with the cursor's line replaced by a ``pass`` at its indentation
    (or ``indent``), and the offset before it: a statement's start, where the analysis
    lists every name in scope."""
    line_start = before.rfind("\n") + 1
    line = before[line_start:]
    if indent is None:
        indent = line[: len(line) - len(line.lstrip(" \t"))]
    newline = after.find("\n")
    rest = after[newline:] if newline >= 0 else "\n"
    return before[:line_start] + indent + "pass" + rest, line_start + len(indent)


def scope_queries(before: str, after: str) -> list[tuple[str, int]]:
    """The scope questions the cursor calls for, deepest last. On a line of only
    whitespace the next statement may also stand deeper (the previous line's
    indentation, one level more after a ``:``): a completion at column 0 after a
    function's docstring writes the function's body, and at column 0 alone its
    parameters would look undefined. Both scopes then count."""
    line = before[before.rfind("\n") + 1 :]
    here = line[: len(line) - len(line.lstrip(" \t"))]
    deeper = _next_indent(before[: len(before) - len(line)]) if not line.strip() else ""
    questions = [scope_query(before, after)]
    if len(deeper) > len(here):
        questions.append(scope_query(before, after, deeper))
    return questions


def _next_indent(head: str) -> str:
    """The deepest indentation a statement after ``head`` (whole lines) can have."""
    for line in reversed(head.splitlines()):
        if line.strip():
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            if line.rstrip().endswith(":"):
                return indent + ("\t" if "\t" in indent else "    ")
            return indent
    return ""


class StatementQuestion(NamedTuple):
    """:func:`statement_query`'s answer."""

    text: str  # the document, the cursor's statement replaced
    offset: int  # where the replacement starts
    statement: str  # the statement as it stands (the cursor's text missing)
    cursor: int  # the cursor's offset in ``statement``


def statement_query(before: str, after: str) -> StatementQuestion | None:
    """The document with the cursor's whole statement replaced (every line of it, from
    the line it began on to the one it ends on, which may lie after the cursor) and the
    offset before the replacement: a ``pass``, or an ``if 1:`` when the statement is a
    compound header whose body follows (the next line stands deeper). Where the cursor
    is inside brackets or a header (``elif isinstance(x, (np.``), replacing its line
    alone leaves a document ``ast`` cannot read.

    The statements are lexed from the last top-level ``def``, ``class`` or decorator
    line before the cursor, or the document's start (the prompt's window may begin
    inside a docstring); None when neither is within :data:`STATEMENT_HEAD` characters,
    or the statement does not end within :data:`STATEMENT_TAIL` characters after the
    cursor (nor the document)."""
    head = before[-STATEMENT_HEAD:]
    anchors = list(TOP_LEVEL.finditer(head))
    if not anchors and len(head) < len(before):
        return None
    window = head[anchors[-1].start() :] if anchors else before
    monitor = MonitorState()
    monitor.update(window)
    ends = monitor.statement_ends
    start = len(before) - len(window) + (ends[-1] + 1 if ends else 0)
    fed, end = 0, None
    while end is None and fed < min(len(after), STATEMENT_TAIL):
        chunk = after[fed : fed + 256]
        monitor.update(chunk)
        fed += len(chunk)
        end = next((e for e in monitor.statement_ends if e >= len(window)), None)
    if end is None and fed == len(after):  # the statement runs to the document's end
        end = len(window) + len(after)
    if end is None:
        return None
    rest = after[end - len(window) :]  # from the newline that ends the statement
    line = before[start:]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    following = _NEXT_LINE.search(rest)
    deeper = following is not None and len(following.group(1)) > len(indent)
    replaced = before[:start] + indent + ("if 1:" if deeper else "pass") + rest
    statement = before[start:] + after[: end - len(window)]
    return StatementQuestion(replaced, start + len(indent), statement, len(before) - start)


def statement_bindings(statement: str, cursor: int) -> set[str]:
    """The names ``statement`` binds (``x`` of ``x = f(\n    a.``), read as it stands or
    with a name where the cursor is (``a._``, the attribute still to be written)."""
    for attempt in (statement, statement[:cursor] + "_" + statement[cursor:]):
        parsed = parse_statement(attempt)
        if parsed is not None:
            return bound_names(parsed.tree)
    return set()


def static_names(questions: list[tuple[str, int]]) -> frozenset[str] | None:
    """The union of the names in scope at each question, read with ``ast``; None when
    any of them cannot be read statically."""
    union: frozenset[str] = frozenset()
    for text, offset in questions:
        names = names_in_scope(text, offset)
        if names is None:
            if (text, offset) != questions[-1] and not _parses(text):
                continue  # no statement can stand there (a header still wants its body)
            return None
        union |= names
    return union


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, SystemError):  # SystemError: see scope.PARSE_ERRORS
        return False
    return True


def statement_start(window: str, monitor: MonitorState) -> int | None:
    """Where the statement the cursor is in began, when it began on the cursor's line
    (``monitor`` has read ``window``: the newline before the line ended a statement);
    else None."""
    line_start = window.rfind("\n") + 1
    return line_start if line_start and line_start - 1 in monitor.statement_ends[-1:] else None


class NameGuard:
    """Per completion: the scope query, the names known so far, and the rewinds spent."""

    def __init__(
        self,
        analysis: Analysis,
        facts: SteeringFacts,
        options: SteeringOptions,
        *,
        window: str,
        before: str,
        after: str,
        monitor: MonitorState,
        limit: float,
    ) -> None:
        questions = scope_queries(before, after)
        text, offset = questions[-1]  # the analysis is asked the deepest
        self.options = options
        self.facts = facts
        self.started = time.perf_counter()
        self.key = (hash(text), offset)
        known = facts.scopes.get(self.key)
        # Read from the document itself where it parses: no question, no wait, the same
        # names whatever the load. Jedi is asked only where ``ast`` cannot answer.
        static = static_names(questions) if known is None else None
        if static is None and known is None:  # the cursor's statement spans lines
            whole = statement_query(before, after)
            static = names_in_scope(whole.text, whole.offset) if whole is not None else None
            if whole is not None and static is not None:
                static |= statement_bindings(whole.statement, whole.cursor)
        self.future: concurrent.futures.Future[list[CompletionCandidate]]
        if known is not None or static is not None:  # a keystroke ago, or read here
            names = known if known is not None else sorted(static or ())
            self.future = concurrent.futures.Future()
            self.future.set_result([CompletionCandidate(name) for name in names])
        else:
            self.future = facts.pool.submit(
                analysis.completions_at, text, offset, timeout=limit, documented=False
            )
        self.remembered = known is not None
        self.static = static is not None
        self.check = NameCheck(statement_start=statement_start(window, monitor))
        self.checked_upto = len(window)  # statement ends before this are the user's
        self.rewinds = 0
        self.loaded: bool | None = None  # None: not yet; False: the query failed

    def ready(self, trace: Trace) -> bool:
        """Whether the names in scope are known (does not wait for them)."""
        if self.loaded is None and self.future.done():
            entry: dict[str, Any] = {
                "query": "scope",
                "latency_ms": round((time.perf_counter() - self.started) * 1000, 2),
            }
            try:
                items = self.future.result()
            except Exception as exc:  # a failed question only means no checking
                self.loaded = False
                entry.update(outcome="error", error=f"{type(exc).__name__}: {exc}"[:200])
            else:
                # An empty list from the analysis means it did not know; read statically,
                # a module may bind nothing but builtins.
                self.loaded = bool(items) or self.static
                self.check.known.update(c.name for c in items)
                entry.update(outcome="ok", results=len(items), remembered=self.remembered)
                if self.static:
                    entry["static"] = True
                if items and not self.remembered:
                    self.facts.remember_scope(self.key, tuple(c.name for c in items))
            trace.queries.append(entry)
        return bool(self.loaded)

    def may_rewind(self) -> bool:
        return self.rewinds < self.options.max_rewinds

    def statement(self, text: str, end: int, generated_from: int, trace: Trace) -> Undefined | None:
        """A statement ended at ``end``: the name to rewrite, or None (it then stands)."""
        self.checked_upto = end
        if self.ready(trace) and self.may_rewind():
            found = self.check.check(text, end, generated_from)
            if found is not None:
                return found
        self.check.advance(text, end)
        return None

    def stands(self, text: str, end: int) -> None:
        """The statement ending at ``end`` stands after all (its name was kept)."""
        self.check.advance(text, end)

    def rewound(self, limit: int) -> None:
        """The text was written again from monitor offset ``limit``."""
        self.checked_upto = limit
        self.rewinds += 1

    @property
    def known(self) -> set[str]:
        """The names known to be defined so far."""
        return self.check.known


def names_walk(
    known: set[str],
    undefined: str,
    *,
    lead: str,
    banned: int,
    context: str,
    facts: SteeringFacts,
    options: SteeringOptions,
    start: int,
) -> tuple[list[LogitsProcessor], CandidateWalk] | None:
    """The processors for the token that wrote ``undefined``: ``banned`` (that token)
    demoted, the names in scope (each after ``lead``, the text the token had before the
    name) boosted. None when no name can be spelled."""
    names = sorted(n for n in known if n.isidentifier() and n != undefined)[:MAX_NAMES]
    trie = CandidateTrie.in_context(
        [lead + n for n in names],
        context=context,
        tokenize=facts.tokenize,
        vocabulary=facts.vocabulary,
    )
    if not len(trie):
        return None
    walk = CandidateWalk(
        trie, mode="boost", delta=options.delta, escape_margin=options.escape_margin, start=start
    )
    demote = Demote(torch.tensor([banned], dtype=torch.long), steps=1, start=start)
    return [demote, walk], walk


class UndefinedNames(Stage):
    """At each statement's end, a name it reads that nothing defines is written again
    (while rewinds are left and no hint is in the cache: a hint after the name would
    have to be taken out too)."""

    def __init__(self, inputs: Inputs, guard: NameGuard) -> None:
        self.guard = guard
        self.facts = inputs.facts
        self.options = inputs.options
        self.budget = inputs.budget
        self.trace = inputs.trace
        self.written = inputs.written
        self.walking = inputs.walking
        self.hints = inputs.hints
        self._rewind: tuple[int, int, str, str] | None = None  # keep, banned token, lead, name
        self._rewound: tuple[int, str, str] | None = None  # banned token, lead, name

    @classmethod
    def build(cls, inputs: Inputs) -> UndefinedNames | None:
        """None unless names are checked and rewinds allowed. The scope question is
        asked now, so that its answer overlaps the prompt's prefill."""
        options, written = inputs.options, inputs.written
        if not (options.names and options.max_rewinds > 0):
            return None
        guard = NameGuard(
            inputs.analysis,
            inputs.facts,
            options,
            window=written.window,
            before=written.before,
            after=written.after,
            monitor=written.prefix_monitor,
            limit=inputs.budget.ahead,
        )
        return cls(inputs, guard)

    def observe(self, point: TriggerPoint) -> None:
        guard, written = self.guard, self.written
        whole = written.whole
        for end in written.monitor.statement_ends:
            if end <= guard.checked_upto or self._rewind is not None:
                continue
            if guard.loaded is None and not guard.future.done():
                # Due now, like any answer: waited for within the query and completion
                # budgets (it was asked before the prefill, so it is rarely still out).
                self.budget.wait_for(guard.future)
            found = guard.statement(whole, end, len(written.window), self.trace)
            if found is None:
                continue
            at = written.generated(found.offset)
            keep = next(i for i, e in enumerate(written.ends) if e > at)
            if self.hints.shown:
                self.trace.notes.append(f"undefined name {found.name!r} kept: a hint is shown")
                guard.stands(whole, end)
                continue
            lead = written.text[written.ends[keep - 1] if keep else 0 : at]
            self._rewind = (keep, written.tokens[keep], lead, found.name)

    def wanted_rewind(self) -> int | None:
        return None if self._rewind is None else self._rewind[0]

    def rewind(self, keep: int) -> None:
        """Called before the text goes back to ``keep`` tokens: note where, and what to
        write instead at the next step."""
        if self._rewind is None:
            return
        _, banned, lead, name = self._rewind
        self._rewind = None
        written = self.written
        kept = written.kept(keep)
        self.guard.rewound(len(written.window) + len(kept))
        self._rewound = (banned, lead, name)
        dropped = len(written.tokens) - keep
        self.trace.interrupts.append(
            {"at": len(kept), "reason": f"undefined name {name!r}", "rewound": dropped}
        )

    def quiet(self) -> bool:
        return self._rewind is None and self._rewound is None

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        """After a rewind: write the token that held the undefined name again, among
        the names in scope."""
        if self._rewound is None:
            return logits
        banned, lead, name = self._rewound
        self._rewound = None
        written = self.written
        built = names_walk(
            self.guard.known,
            name,
            lead=lead,
            banned=banned,
            context=written.line_context(),
            facts=self.facts,
            options=self.options,
            start=step.history.shape[-1],
        )
        if built is None:
            return logits
        processors, walk = built
        entry = {
            "at": len(written.text),
            "typed": "",
            "candidates": len(walk.trie.spellings),
            "mode": "boost",
            "followed": "all",
            "instead_of": name,
        }
        at = len(written.window) + len(written.text)
        self.walking.start(Walk(processors, [walk], "", at), entry)
        return logits
