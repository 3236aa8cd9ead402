"""Interrupt-guided decoding: the monitor, its queries, the processors and the hints.

One :class:`Steerer` steers one completion from inside ``Engine.generate``, on
the decode thread, in named stages:

1. ``observe`` (after each token is chosen, before its forward pass): feed the
   monitor the new text; at a trigger, **prefetch** the language server's
   answer on the query pool, so its latency overlaps the forward pass; at a
   statement's end, check the names it reads (``models/steering/stages/names.py``);
1b. ``rewind``: after an undefined name, tell the loop how many tokens to keep;
2. ``steer`` (before the next token is chosen):
   - ``collect``: wait for a due answer within the query and completion budgets
     (a timeout leaves the step unsteered and is traced);
   - ``deprecations``: resolve the model's likeliest candidates to their source
     and read which names there are deprecated (``models/steering/stages/deprecations.py``);
   - ``interrupt``: place a hint (a comment line above the current line) by
     splicing the KV cache (``models/steering/stages/hints.py``);
   - ``rank``: score the short list by whole-identifier log-probability (one
     pass on the shared cache, as a token tree), intent relevance and metadata;
   - ``walk``: build the processors (:mod:`models.candidates`) that steer the
     identifier token by token along the chosen names;
   - ``trace``: record every token whose choice the steering changed.

Nothing here talks LSP: answers come through the :class:`Analysis` seam.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from steerlsp.models.deprecation.static import Deprecation
from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import (
    Analysis,
    AnalysisError,
    CompletionCandidate,
    Signature,
)
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.monitor import MonitorState, Trigger, TriggerPoint
from steerlsp.models.steering.processors.candidates import (
    CandidateWalk,
    Demote,
    FollowByKind,
    WalkState,
)
from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.models.steering.ranking.ranker import Ranker
from steerlsp.models.steering.ranking.relevance import (
    DocumentUsage,
)
from steerlsp.models.steering.stages.deprecations import (
    Asked,
    definition_files,
    fingerprint,
    group_of,
    read_deprecations,
)
from steerlsp.models.steering.stages.hints import Hints
from steerlsp.models.steering.stages.names import NameGuard, names_walk
from steerlsp.models.steering.tokens.trie import CandidateTrie

log = logging.getLogger(__name__)

LogitsProcessor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

# Candidates resolved to their definitions to read their deprecation: this many of the
# model's likeliest names, and this many of the ranker's.
RESOLVE_FOR_DEPRECATION = 2
# A query's own limit on its pool thread, beyond ``query_timeout``: the decode loop
# waits at most ``query_timeout`` once the answer is due (a prefetched query also has
# the prefill or forward pass it overlaps), then goes on without it.
QUERY_LIMIT = 3.0
# Candidate lists longer than this are cut (the server's order) before spelling.
MAX_CANDIDATES = 400


@dataclass
class Trace:
    """What steered one completion: ``steerlsp/explain``'s answer."""

    triggers: list[dict[str, Any]] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)
    rankings: list[dict[str, Any]] = field(default_factory=list)
    walks: list[dict[str, Any]] = field(default_factory=list)
    hints: list[dict[str, Any]] = field(default_factory=list)
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    waited_ms: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Query:
    kind: str  # "completions" | "signature" | "definition"
    future: concurrent.futures.Future[Any]
    started: float
    point: TriggerPoint
    extra: Any = None


@dataclass
class _Walk:
    processors: list[LogitsProcessor]
    walks: list[CandidateWalk]  # the walk is over when none of these is still walking
    partial: str  # what was written of the name when the walk began
    offset: int = -1  # the monitor offset of the trigger it answers (where the name starts)

    @property
    def walking(self) -> bool:
        return any(walk.state is WalkState.WALKING for walk in self.walks)


class Steerer:
    """Steers one completion (see the module docstring). Used on the decode thread only."""

    def __init__(
        self,
        *,
        analysis: Analysis,
        facts: SteeringFacts,
        options: SteeringOptions,
        window: str,
        before: str,
        after: str,
        prompt_length: int,
    ) -> None:
        self.analysis = analysis
        self.facts = facts
        self.options = options
        if not before.endswith(window):  # an inconsistent snapshot: the window is all we know
            before = window
        self.before, self.after = before, after  # the whole document around the cursor
        self.window = window  # the prompt's code up to the cursor (what the monitor read)
        self.trace = Trace()
        self.weights = options.rank_weights()
        self._prefix_monitor = MonitorState()
        self._prefix_monitor.update(window)
        self._monitor = self._prefix_monitor.fork()
        self._text = ""
        self._tokens: list[int] = []
        self._prompt_length = prompt_length
        self._pending: list[_Query] = []
        self._asked: set[tuple[str, int]] = set()
        self._walk: _Walk | None = None
        self._hints = Hints(facts, options, self.trace)
        self._queries = 0
        self._waited = 0.0
        self._started = time.perf_counter()
        self._usage: DocumentUsage | None = None
        self._ends: list[int] = []  # the generated text's length after each token
        self._names = (
            NameGuard(
                analysis,
                facts,
                options,
                window=self.window,
                before=before,
                after=after,
                monitor=self._prefix_monitor,
                limit=QUERY_LIMIT + options.query_timeout,
            )
            if options.names and options.max_rewinds > 0
            else None
        )
        self._rewind: tuple[int, int, str, str] | None = None  # keep, banned token, lead, name
        self._rewound: tuple[int, str, str] | None = None  # banned token, lead, name
        # The cursor itself may be a trigger (``profile.|``): ask now, so that the
        # answer overlaps the prompt's prefill.
        self._prefetch(self._monitor.point())

    # ---- stage 1: observe (after a token is chosen) ---------------------------------

    def observe(self, token: int, text: str) -> None:
        self._tokens.append(token)
        if text.startswith(self._text):
            point = self._monitor.update(text[len(self._text) :])
        else:  # a multi-byte character completed differently: lex the text again
            self._monitor = self._prefix_monitor.fork()
            point = self._monitor.update(text)
        self._text = text
        self._ends.append(len(text))
        self._prefetch(point)
        self._hints.note_open_calls(self._monitor.open_calls())
        if self._names is not None:
            self._check_names()

    def _check_names(self) -> None:
        """At each statement's end: a name it reads that nothing defines is to be
        written again (see :meth:`rewind`), while rewinds are left and no hint is in
        the cache (a hint after the name would have to be taken out too)."""
        guard = self._names
        assert guard is not None
        whole = self.window + self._text
        for end in self._monitor.statement_ends:
            if end <= guard.checked_upto or self._rewind is not None:
                continue
            if guard.loaded is None and not guard.future.done():
                # Due now, like any answer: waited for within the query and completion
                # budgets (it was asked before the prefill, so it is rarely still out).
                left = max(0.0, min(self.options.query_timeout, self.options.budget - self._waited))
                started = time.perf_counter()
                concurrent.futures.wait([guard.future], timeout=left)
                self._waited += time.perf_counter() - started
                self.trace.waited_ms = round(self._waited * 1000, 2)
            found = guard.statement(whole, end, len(self.window), self.trace)
            if found is None:
                continue
            at = found.offset - len(self.window)  # in the generated text
            keep = next(i for i, e in enumerate(self._ends) if e > at)
            if self._hints.shown:
                self.trace.notes.append(f"undefined name {found.name!r} kept: a hint is shown")
                guard.check.advance(whole, end)
                continue
            lead = self._text[self._ends[keep - 1] if keep else 0 : at]
            self._rewind = (keep, self._tokens[keep], lead, found.name)

    # ---- stage 1b: rewind (after observe, when a name was undefined) -----------------

    def rewind(self) -> int | None:
        """How many generated tokens to keep, after :meth:`_check_names` found a name to
        write again; the steerer's own state goes back to that point."""
        if self._rewind is None:
            return None
        keep, banned, lead, name = self._rewind
        self._rewind = None
        guard = self._names
        assert guard is not None
        dropped = len(self._tokens) - keep
        kept = self._text[: self._ends[keep - 1]] if keep else ""
        del self._tokens[keep:], self._ends[keep:]
        self._text = kept
        self._monitor = self._prefix_monitor.fork()
        self._monitor.update(kept)
        limit = len(self.window) + len(kept)
        for query in [q for q in self._pending if q.point.offset > limit]:
            query.future.cancel()
            self._pending.remove(query)
        self._asked = {(kind, at) for kind, at in self._asked if at <= limit}
        self._walk = None
        self._hints.forget_closed()
        guard.checked_upto = limit
        guard.rewinds += 1
        self._rewound = (banned, lead, name)
        self.trace.interrupts.append(
            {"at": len(kept), "reason": f"undefined name {name!r}", "rewound": dropped}
        )
        return keep

    def quiet(self) -> bool:
        """Nothing is due at the next token: no query out, no walk, no rewind to start,
        no hint in the cache. ``steer`` would change nothing, so the loop may verify
        drafted tokens without calling it at each."""
        return self._walk is None and self._quiet_but_walking()

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        """The only tokens the next step can take, when a masking walk is under way and
        nothing else is due (a query or hint would need every logit): the loop then
        computes the LM head for these rows only. None: all rows. -> [N] long"""
        walk = self._walk
        if walk is None or not self._quiet_but_walking():
            return None
        known = [rows for w in walk.walks if (rows := w.next_rows(history)) is not None]
        return min(known, key=len) if known else None  # each is a superset of the allowed

    def _quiet_but_walking(self) -> bool:
        return (
            not self._pending
            and self._rewind is None
            and self._rewound is None
            and not self._hints.shown
        )

    def _prefetch(self, point: TriggerPoint) -> None:
        o = self.options
        if point.trigger is Trigger.NONE:
            return
        # A dot right after a walked name (``obj.config.``) starts the next walk: the
        # old one would only notice its end at the next step, one token late.
        if o.walk and (self._walk is None or self._walk.offset != point.partial_start):
            at_name = point.trigger is Trigger.COMPLETIONS_AFTER_DOT or (
                point.trigger is Trigger.INSIDE_IDENTIFIER and point.after_dot
            )
            at_import = point.trigger is Trigger.IMPORT_NAME
            if at_name or at_import:
                self._ask("completions", point, point.partial_start)
        call = point.call
        if o.hints and point.trigger is Trigger.CALL_ARGUMENT and call and not call.argument_index:
            self._ask("signature", point, point.offset)

    def _ask(self, kind: str, point: TriggerPoint, at: int) -> None:
        key = (kind, at)
        if key in self._asked:
            return
        self._asked.add(key)
        trace = {"kind": point.trigger.value, "offset": self._generated(at), "query": kind}
        if point.partial:
            trace["partial"] = point.partial
        self.trace.triggers.append(trace)
        if self._queries >= self.options.max_queries:
            self.trace.notes.append(f"{kind} at {trace['offset']}: query cap reached")
            return
        if self._waited >= self.options.budget:
            self.trace.notes.append(f"{kind} at {trace['offset']}: time budget spent")
            return
        self._queries += 1
        text, offset = self._speculative(at)
        call = self.analysis.completions_at if kind == "completions" else self.analysis.signature_at
        # The budget counts from when the answer is due (``_wait``), not from now:
        # a prefetched query has the forward pass (or the prefill) for free.
        limit = QUERY_LIMIT + self.options.query_timeout
        if kind == "completions":
            future = self.facts.pool.submit(self._completions_then_files, text, offset, limit)
        else:
            future = self.facts.pool.submit(call, text, offset, timeout=limit)
        self._pending.append(_Query(kind, future, time.perf_counter(), point))

    def _completions_then_files(
        self, text: str, offset: int, limit: float
    ) -> tuple[list[CompletionCandidate], concurrent.futures.Future[dict[str, str]] | None]:
        """On a pool thread: the items, and (started as soon as they arrive, so the
        deprecations are read by the time the name is due) the files of their classes."""
        items = self.analysis.completions_at(text, offset, timeout=limit)
        if not (self.options.deprecation and items):
            return items, None
        files = self.facts.pool.submit(
            definition_files, self.analysis, self.facts, text, offset, items, limit
        )
        return items, files

    def _generated(self, window_offset: int) -> int:
        """A monitor offset (into window + generated) as an offset into the generated text."""
        return window_offset - len(self.window)

    def _speculative(self, window_offset: int, insert: str = "") -> tuple[str, int]:
        """The document with the generated text up to the offset (and ``insert``) in place."""
        head = self.before[: len(self.before) - len(self.window)]
        written = (self.window + self._text)[:window_offset] + insert
        return head + written + self.after, len(head) + len(written)

    # ---- stage 2: steer (before a token is chosen) ----------------------------------

    def steer(self, engine: Any, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        raw = logits
        logits = self._collect(engine, history, logits)
        if self._rewound is not None:
            self._start_names_walk(history)
        by = ""
        if self._walk is not None:
            logits, by = self._apply_walk(history, logits), "walk"
        elif self._hints.shown:
            logits, by = self._hints.suppress_comments(history, logits), "hint"
        self._record_change(history, raw, logits, by)
        return logits

    def _collect(self, engine: Any, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        for query in list(self._pending):
            if query.kind == "completions":
                # Due now: the identifier's first token is chosen at this step.
                self._pending.remove(query)
                answer = self._wait(query)
                found, files = answer if answer is not None else ([], None)
                if found:
                    logits = self._start_walk(engine, history, logits, query.point, found, files)
            elif query.future.done():
                self._pending.remove(query)
                signature = self._wait(query)
                call = query.point.call
                if call is not None and call.open_bracket not in self._monitor.open_calls():
                    self.trace.notes.append("signature hint skipped: its call closed")
                elif isinstance(signature, Signature) and call is not None:
                    logits = self._place_hint(
                        engine,
                        history,
                        logits,
                        "signature",
                        f"signature: {signature.label}",
                        call=call.open_bracket,
                    )
        return self._hints.drop_closed(engine, logits, at=len(self._text))

    def _wait(self, query: _Query) -> Any:
        """The query's answer within what is left of the budgets; None on a timeout or error."""
        left = max(0.0, min(self.options.query_timeout, self.options.budget - self._waited))
        waited_from = time.perf_counter()
        entry: dict[str, Any] = {"query": query.kind, "offset": self._generated(query.point.offset)}
        try:
            answer = query.future.result(timeout=left)
            entry["outcome"] = "ok"
        except concurrent.futures.TimeoutError:
            query.future.cancel()
            answer, entry["outcome"] = None, "timeout"
        except AnalysisError as exc:
            answer, entry["outcome"] = None, "timeout" if "took over" in str(exc) else "error"
            entry["error"] = str(exc)[:200]
        except Exception as exc:  # a broken analysis must not break the completion
            log.warning("steering query failed: %s", exc)
            answer, entry["outcome"] = None, "error"
            entry["error"] = f"{type(exc).__name__}: {exc}"[:200]
        now = time.perf_counter()
        blocked = now - waited_from
        self._waited += blocked
        self.trace.waited_ms = round(self._waited * 1000, 2)
        entry["latency_ms"] = round((now - query.started) * 1000, 2)
        entry["blocked_ms"] = round(blocked * 1000, 2)
        if isinstance(answer, tuple):  # completions, and the future of their files
            entry["results"] = len(answer[0])
        elif isinstance(answer, list | dict):
            entry["results"] = len(answer)
        elif answer is not None:
            entry["results"] = 1
        self.trace.queries.append(entry)
        return answer

    # ---- the walk: deprecations, ranking, processors ---------------------------------

    def _start_walk(
        self,
        engine: Any,
        history: torch.Tensor,
        logits: torch.Tensor,
        point: TriggerPoint,
        found: list[CompletionCandidate],
        sources: concurrent.futures.Future[dict[str, str]] | None = None,
    ) -> torch.Tensor:
        o = self.options
        typed = self._monitor.point().partial if self._current_partial(point) else ""
        items = [c for c in found[:MAX_CANDIDATES] if c.name.startswith(typed) and c.name]
        if not items:
            self.trace.notes.append(f"no completion item continues {typed!r}")
            return logits
        if not typed.startswith("_") and all(_dunder(c.name) for c in items):
            # ``object``'s members alone: Jedi did not infer the receiver's type.
            self.trace.notes.append("only dunders listed: the receiver's type is unknown")
            return logits
        context = self._line_context()
        trie = CandidateTrie.in_context(
            [c.name[len(typed) :] for c in items],
            context=context,
            tokenize=self.facts.tokenize,
            vocabulary=self.facts.vocabulary,
        )
        items = [c for c in items if c.name[len(typed) :] in trie.spellings]
        if not items or not len(trie):
            return logits
        remainder = {c.name: c.name[len(typed) :] for c in items}
        first = torch.log_softmax(logits[0].float(), dim=-1)
        first_token = {
            c.name: float(first[trie.spellings[remainder[c.name]].tokens[0]]) for c in items
        }
        by_first = sorted(items, key=lambda c: -first_token[c.name])
        ranker = (
            Ranker(
                intent_at(self.window + self._text),
                items,
                first_token,
                typed=typed,
                weights=self.weights,
                breaks=self.facts.vocabulary.identifier_break_mask,
                usage=self._document_usage() if self.weights.usage else None,
            )
            if o.rank
            else None
        )
        # Who could be chosen: the model's likeliest names and the ranker's (on first tokens).
        contenders = by_first[:RESOLVE_FOR_DEPRECATION]
        if ranker is not None:
            contenders += [ranker.item(r.name) for r in ranker.proxy[:RESOLVE_FOR_DEPRECATION]]
        asked = (
            self._ask_deprecations(point, found, items, contenders, sources)
            if o.deprecation
            else None
        )
        # The scoring pass runs while the analysis resolves the contenders' definitions.
        logprobs = ranker.score(engine, logits, trie, remainder) if ranker is not None else None
        deprecated = (
            read_deprecations(
                items,
                asked,
                facts=self.facts,
                options=self.options,
                trace=self.trace,
                wait=self._wait,
            )
            if asked is not None
            else {}
        )
        for name, server_flag in ((c.name, c.deprecated) for c in items):
            if server_flag and name not in deprecated:
                deprecated[name] = Deprecation("tagged deprecated by the server", None, "docstring")
        favourite = by_first[0].name
        if o.hints and favourite in deprecated:
            note = deprecated[favourite]
            better = f"; use {note.replacement}" if note.replacement else ""
            logits = self._place_hint(
                engine, history, logits, "deprecation", f"note: {favourite} is deprecated{better}"
            )
        chosen = [c.name for c in items]
        if ranker is not None and logprobs is not None:
            ranked = ranker.final(logprobs, deprecated)
            chosen = [r.name for r in ranked]
            self.trace.rankings.append(ranker.traced(len(self._text), ranked))
        mask = o.mode == "mask" or (o.mode == "auto" and _static(found))
        start = history.shape[-1]
        processors: list[LogitsProcessor] = []
        if mask:
            processors.append(CandidateWalk(trie, mode="mask", start=start))
        followed = [remainder[n] for n in chosen[: max(1, o.follow)]] if o.rank else None
        walk_trie = (
            trie
            if followed is None
            else CandidateTrie(
                [trie.spellings[r] for r in followed if r in trie.spellings], trie.vocabulary
            )
        )
        # A static list is complete: the ranker's choice among it is followed, not only
        # boosted (its score already holds the model's log-probability). Elsewhere the
        # boost keeps its escape, for names missing from the list.
        hard = mask and followed is not None
        walk = CandidateWalk(
            walk_trie,
            mode="mask" if hard else "boost",
            delta=o.delta,
            escape_margin=o.escape_margin,
            start=start,
        )
        processors.append(walk)
        if deprecated:
            names = [remainder[n] for n in deprecated if n in remainder]
            leading = trie.leading_only_to([], names)
            if len(leading):
                processors.append(
                    Demote(leading, among=trie.allowed_next([]), steps=1, start=start)
                )
        if o.follow_kind:
            kinds = {remainder[c.name]: c.kind for c in items if c.kind in _KINDS}
            processors.append(FollowByKind(trie, kinds, delta=o.delta, start=start))
        walks = [p for p in processors if isinstance(p, CandidateWalk)]
        self._end_walk()
        self._walk = _Walk(processors, walks, typed, point.partial_start)
        self.trace.walks.append(
            {
                "at": len(self._text),
                "typed": typed,
                "candidates": len(items),
                "mode": "mask" if mask else "boost",
                "followed": [typed + r for r in followed] if followed else "all",
                "deprecated": sorted(deprecated),
            }
        )
        return logits

    def _start_names_walk(self, history: torch.Tensor) -> None:
        """After a rewind: write the token that held the undefined name again, among
        the names in scope (see ``models/steering/stages/names.py``)."""
        assert self._rewound is not None and self._names is not None
        banned, lead, name = self._rewound
        self._rewound = None
        known = self._names.check.known
        built = names_walk(
            known,
            name,
            lead=lead,
            banned=banned,
            context=self._line_context(),
            facts=self.facts,
            options=self.options,
            start=history.shape[-1],
        )
        if built is None:
            return
        processors, walk = built
        self._end_walk()
        self._walk = _Walk(processors, [walk], "", len(self.window) + len(self._text))
        self.trace.walks.append(
            {
                "at": len(self._text),
                "typed": "",
                "candidates": len(walk.trie.spellings),
                "mode": "boost",
                "followed": "all",
                "instead_of": name,
            }
        )

    def _current_partial(self, point: TriggerPoint) -> bool:
        now = self._monitor.point()
        return now.trigger is Trigger.INSIDE_IDENTIFIER and now.partial_start == point.partial_start

    def _document_usage(self) -> DocumentUsage:
        """The names the document already uses (read once per completion)."""
        if self._usage is None:
            self._usage = DocumentUsage(self.before, self.after)
        return self._usage

    def _line_context(self) -> str:
        """The current line up to the cursor and what was generated: the trie's context."""
        whole = self.window + self._text
        return whole[whole.rfind("\n") + 1 :]

    def _ask_deprecations(
        self,
        point: TriggerPoint,
        found: list[CompletionCandidate],
        items: list[CompletionCandidate],
        contenders: list[CompletionCandidate],
        sources: concurrent.futures.Future[dict[str, str]] | None = None,
    ) -> Asked:
        """Start resolving the contenders' definitions (see :meth:`_read_deprecations`).

        Items group by their defining class or module (Jedi's ``detail``):
        resolving ``dict`` finds pydantic's main.py, and with it every deprecated
        BaseModel method. An item without a detail (the analysis instance does not
        resolve items eagerly) is its own group: it is resolved by name.
        """
        listed = fingerprint(found)
        groups: dict[str, CompletionCandidate] = {}
        for item in [*contenders, *items]:
            groups.setdefault(group_of(item, listed), item)
        asked = Asked(groups, listed)
        if sources is not None:  # prefetched when the items arrived
            prefetched = self._wait(_Query("definitions", sources, time.perf_counter(), point))
            for detail, (path, line) in (prefetched or {}).items():
                asked.paths[detail] = path
                self.facts.remember_definition(detail, path, line)
        wanted = list(dict.fromkeys(group_of(c, listed) for c in contenders))
        for group in wanted:
            item = groups[group]
            known = asked.paths.get(group, self.facts.defined_in.get(group))
            if known is not None:  # "": the analysis knows no definition for it
                asked.paths[group] = known
                continue
            if self._queries >= self.options.max_queries:
                break
            self._queries += 1
            text, offset = self._speculative(point.partial_start, item.name)
            future = self.facts.pool.submit(
                self.analysis.definition_source,
                text,
                offset - 1,
                timeout=QUERY_LIMIT + self.options.query_timeout,
            )
            asked.queries.append(_Query("definition", future, time.perf_counter(), point, group))
        return asked

    def _apply_walk(self, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        walk = self._walk
        assert walk is not None
        for processor in walk.processors:
            logits = processor(history, logits)
        if not walk.walking:
            self._end_walk()
        return logits

    def _end_walk(self) -> None:
        walk = self._walk
        if walk is None:
            return
        ended = [w.chosen[0] for w in walk.walks if w.state is WalkState.ENDED and w.chosen]
        if self.trace.walks and "wrote" not in self.trace.walks[-1]:
            self.trace.walks[-1]["wrote"] = walk.partial + ended[0] if ended else None
        self._walk = None

    # ---- interrupts (models/steering/stages/hints.py) -----------------------------------------

    def _place_hint(
        self,
        engine: Any,
        history: torch.Tensor,
        logits: torch.Tensor,
        kind: str,
        message: str,
        call: int | None = None,
    ) -> torch.Tensor:
        logits, spent = self._hints.place(
            engine,
            history,
            logits,
            kind,
            message,
            at=len(self._text),
            waited=self._waited,
            call=call,
        )
        self._waited += spent
        return logits

    # ---- trace ----------------------------------------------------------------------

    def _record_change(
        self, history: torch.Tensor, raw: torch.Tensor, steered: torch.Tensor, by: str
    ) -> None:
        before, after = int(raw.argmax()), int(steered.argmax())
        if before == after:
            return
        probs = torch.softmax(raw[0].float(), dim=-1)
        texts = self.facts.vocabulary.texts
        self.trace.changed.append(
            {
                "step": history.shape[-1] - self._prompt_length,
                "at": len(self._text),
                "before": texts[before] if before < len(texts) else str(before),
                "after": texts[after] if after < len(texts) else str(after),
                "p_before": round(float(probs[before]), 4),
                "p_after": round(float(probs[after]), 4),
                "by": by or "hint",
            }
        )


_KINDS = frozenset(
    {"property", "attribute", "field", "variable", "constant", "enummember"}
    | {"method", "function", "constructor", "class", "module", "keyword"}
)


def _static(found: list[CompletionCandidate]) -> bool:
    """Whether the receiver's members look statically known: a list with some name of
    its own (only ``object``'s dunders means Jedi did not infer the type) and without
    ``__getattr__`` (which makes any name possible)."""
    own = any(not _dunder(c.name) for c in found)
    return own and not any(c.name == "__getattr__" for c in found)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")
