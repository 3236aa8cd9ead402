"""Deprecations: which completion items are deprecated, read from their source.

Items group by their defining class or module (Jedi's ``detail``): resolving
one item of a class finds its file, and ``models/deprecation/static.py`` reads every
deprecated definition there. An item the analysis names no class for is its
own group, resolved by name. Files are looked up as soon as a list arrives
(:func:`definition_files`, on a pool thread), the contenders' definitions while
the ranker scores (:meth:`Deprecations.ask`), and :meth:`Deprecations.read`
reads them when the name is due; the opt-in runtime check adds what earlier
probes found and starts one more. The walk after ``.`` (``stages/members.py``)
uses them to demote deprecated names and to hint at the favourite's.
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from steerlsp.models.deprecation.static import Deprecation
from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import (
    Analysis,
    AnalysisError,
    CompletionCandidate,
    DefinitionSource,
)
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.monitor import TriggerPoint
from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.models.steering.ranking.relevance import Candidate, relevance_scores
from steerlsp.models.steering.stages.base import Answer, Definitions, Files, Inputs, Query, Trace

# Defining classes whose files are looked up as soon as a completion list arrives, and
# (for items that name no class) the names likeliest by relevance alone.
PREFETCH_GROUPS = 3
PREFETCH_BY_RELEVANCE = 2


@dataclass
class Asked:
    """Definitions asked for, to read which items are deprecated."""

    groups: dict[str, CompletionCandidate]  # see group_of -> one item of it
    listed: str  # the completion list's fingerprint
    paths: dict[str, str] = field(default_factory=dict)  # group -> its file
    queries: list[Query] = field(default_factory=list)  # ``extra``: the group resolved
    # group -> the asked group it is nested in (``Range.__init__`` in ``Range``): the
    # same file, unless that one's file is a package's ``__init__`` (see ``nested_in``)
    shares: dict[str, str] = field(default_factory=dict)


def definition_files(
    analysis: Analysis,
    facts: SteeringFacts,
    text: str,
    offset: int,
    items: list[CompletionCandidate],
    limit: float,
) -> dict[str, tuple[str, int | None]]:
    """On a pool thread: the files of the groups (see :func:`group_of`) not yet known: one
    item of each defining class (Jedi's ``detail``), in the server's order, then
    the items that name no class and are likeliest by relevance. A group nested in
    another's name shares its file (see :func:`nested_in`).
    -> {group: (path, definition line)}; ("", None): no definition known"""
    listed = fingerprint(items)
    groups: dict[str, CompletionCandidate] = {}
    for item in items:
        if item.detail and item.detail not in facts.defined_in:
            groups.setdefault(item.detail, item)
    wanted: list[tuple[str, CompletionCandidate]] = []
    shares: dict[str, str] = {}  # a group -> the wanted one it is nested in (its file)
    for detail, item in groups.items():
        outer = next((group for group, _ in wanted if nested_in(detail, group)), None)
        if outer is not None:
            shares[detail] = outer
        elif len(wanted) < PREFETCH_GROUPS:
            wanted.append((detail, item))
    plain = [c for c in items if not c.detail]
    if plain:
        intent = intent_at(text[:offset], typed=False)
        candidates = [Candidate(c.name, c.documentation, c.kind) for c in plain]
        relevant = relevance_scores(intent, candidates)
        best = sorted(range(len(plain)), key=lambda i: -relevant[i])
        for i in [i for i in best if relevant[i] > 0][:PREFETCH_BY_RELEVANCE]:
            group = group_of(plain[i], listed)
            if group not in facts.defined_in:
                wanted.append((group, plain[i]))
    found: Definitions = {}

    def resolve(detail: str, item: CompletionCandidate) -> None:
        spliced = text[:offset] + item.name + text[offset:]
        try:
            source = analysis.definition_source(spliced, offset + len(item.name) - 1, timeout=limit)
        except AnalysisError:
            return
        found[detail] = (source.path, source.line) if source is not None else ("", None)

    for detail, item in wanted:
        resolve(detail, item)
    for detail, outer in shares.items():
        path = found.get(outer, ("", None))[0]
        if path and not package_file(path):
            found[detail] = (path, None)
        elif path:  # in a package's name: perhaps a submodule, so asked on its own
            resolve(detail, groups[detail])
    return found


class Deprecations:
    """Per completion: asks which contenders are deprecated, and reads the answers."""

    def __init__(self, inputs: Inputs) -> None:
        self.analysis = inputs.analysis
        self.facts = inputs.facts
        self.options = inputs.options
        self.budget = inputs.budget
        self.trace = inputs.trace
        self.written = inputs.written

    def ask(
        self,
        point: TriggerPoint,
        found: list[CompletionCandidate],
        items: list[CompletionCandidate],
        contenders: list[CompletionCandidate],
        sources: Files | None = None,
    ) -> Asked:
        """Start resolving the contenders' definitions (see :meth:`read`).

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
        at = self.written.generated(point.offset)
        if sources is not None:  # prefetched when the items arrived
            files = Query("definitions", sources, time.perf_counter(), point, at)
            answer = self.budget.wait(files)
            for detail, (path, line) in (answer if isinstance(answer, dict) else {}).items():
                asked.paths[detail] = path
                self.facts.remember_definition(detail, path, line)
        wanted = list(dict.fromkeys(group_of(c, listed) for c in contenders))
        for group in wanted:
            item = groups[group]
            known = self._known(group, asked)
            if known is not None:  # "": the analysis knows no definition for it
                asked.paths[group] = known
                continue
            outer = min(  # the outermost: what it is nested in is asked itself
                (o for o in wanted if nested_in(group, o) and self._known(o, asked) is None),
                key=len,
                default=None,
            )
            if outer is not None:  # resolved with it, not on its own
                asked.shares[group] = outer
                continue
            if self.budget.capped:
                break
            self.budget.count_query()
            text, offset = self.written.speculative(point.partial_start, item.name)
            future = self.facts.pool.submit(
                self.analysis.definition_source, text, offset - 1, timeout=self.budget.limit
            )
            query = Query("definition", future, time.perf_counter(), point, at, extra=group)
            asked.queries.append(query)
        return asked

    def _known(self, group: str, asked: Asked) -> str | None:
        """The file of ``group`` where it is known already: its own, or that of a group
        it is nested in. None: not known."""
        known = asked.paths.get(group, self.facts.defined_in.get(group))
        if known is None:
            known = enclosing_file(group, asked.paths, self.facts.defined_in)
        return known

    def read(self, items: list[CompletionCandidate], asked: Asked | None) -> dict[str, Deprecation]:
        """Deprecated items: read from the files ``asked`` found (None: not asked), and
        those the server tags deprecated."""
        deprecated = (
            read_deprecations(
                items,
                asked,
                facts=self.facts,
                options=self.options,
                trace=self.trace,
                wait=self.budget.wait,
            )
            if asked is not None
            else {}
        )
        for name, server_flag in ((c.name, c.deprecated) for c in items):
            if server_flag and name not in deprecated:
                deprecated[name] = Deprecation("tagged deprecated by the server", None, "docstring")
        return deprecated


def read_deprecations(
    items: list[CompletionCandidate],
    asked: Asked,
    *,
    facts: SteeringFacts,
    options: SteeringOptions,
    trace: Trace,
    wait: Callable[[Query], Answer],
) -> dict[str, Deprecation]:
    """Deprecated items, read from the files the asked definitions are in: every
    deprecated definition there whose name is an item of that class or module."""
    for query in asked.queries:
        source = wait(query)
        if answered(query.future):  # maybe None: no definition known
            path, line = (
                (source.path, source.line) if isinstance(source, DefinitionSource) else ("", None)
            )
            asked.paths[query.extra] = path
            facts.remember_definition(query.extra, path, line)
    for group, outer in asked.shares.items():
        path = asked.paths.get(outer, "")
        if path and not package_file(path):
            asked.paths[group] = path
            facts.remember_definition(group, path)
    found: dict[str, Deprecation] = {}
    quiet = []  # groups in whose file the static reading found none of their items
    for group, path in asked.paths.items():
        if not path:
            continue
        deprecated = {d.name: d.deprecation for d in facts.deprecations.definitions(path)}
        hit = False
        for item in items:  # only the names of that class or module
            if group_of(item, asked.listed) == group and item.name in deprecated:
                found.setdefault(item.name, deprecated[item.name])
                hit = True
        if not hit:
            quiet.append(group)
    if found:
        trace.notes.append(f"deprecated here: {', '.join(sorted(found))}")
    if options.runtime_deprecation and facts.runtime is not None:
        _runtime_deprecations(items, asked, quiet, found, facts=facts, trace=trace)
    return found


def _runtime_deprecations(
    items: list[CompletionCandidate],
    asked: Asked,
    quiet: list[str],
    found: dict[str, Deprecation],
    *,
    facts: SteeringFacts,
    trace: Trace,
) -> None:
    """The opt-in runtime check, never waited for: adds to ``found`` what earlier
    probes found, and starts one probe (on the pool) of a group the static reading
    found nothing in. The first completion of a class is not delayed; later ones
    benefit."""
    late: dict[str, Deprecation] = {}
    for group in asked.paths:
        key = facts.runtime_groups.get(group)
        results = facts.runtime_found.get(key, {}) if key is not None else {}
        for item in items:
            name = item.name
            if name in results and name not in found and probed_for(item, group, asked):
                late[name] = results[name]
    if late:
        found.update(late)
        trace.notes.append(f"deprecated at runtime: {', '.join(sorted(late))}")
    for group in quiet:
        line, path = facts.defined_at.get(group), asked.paths[group]
        if line is None or group in facts.runtime_groups:
            continue
        names = [c.name for c in items if probed_for(c, group, asked)]
        if not names:
            continue
        # Other groups of one item each in this file: the probe asks about them too.
        covered = [group] + [
            g
            for g in quiet
            if g != group
            and asked.paths[g] == path
            and g in asked.groups
            and probed_for(asked.groups[g], group, asked)
        ]
        if facts.submit_probe(covered, path, line, names):
            where = os.path.basename(path)
            trace.notes.append(f"runtime deprecation check started: {where}")
        break  # one probe at a time


def nested_in(group: str, outer: str) -> bool:
    """Whether ``group`` names a definition inside ``outer`` (``validate.Range.__init__``
    in ``validate.Range``), so in its file, when ``outer`` is a class or a function.
    When ``outer`` is a package, the rest may name a submodule: ``package_file`` tells,
    once ``outer``'s file is known. Groups of unresolved items (``list:name``) nest in
    nothing."""
    return ":" not in group and group.startswith(outer + ".")


def package_file(path: str) -> bool:
    """A package's ``__init__``: what is nested in its name may be another file."""
    return os.path.basename(path).split(".")[0] == "__init__"


def enclosing_file(group: str, *known: dict[str, str]) -> str | None:
    """The file of a group ``group`` is nested in (see :func:`nested_in`), where one is
    known and is not a package's: the innermost first."""
    if ":" in group:
        return None
    parts = group.split(".")
    for end in range(len(parts) - 1, 0, -1):
        outer = ".".join(parts[:end])
        for paths in known:
            path = paths.get(outer)
            if path and not package_file(path):
                return path
    return None


def answered(future: concurrent.futures.Future[Any]) -> bool:
    """Whether the query answered (with None, perhaps), not failed, timed out or cancelled."""
    return future.done() and not future.cancelled() and future.exception() is None


def fingerprint(items: Sequence[CompletionCandidate]) -> str:
    """The completion list's names, hashed: the same receiver type gives the same list."""
    return format(hash(frozenset(item.name for item in items)) & 0xFFFFFFFFFFFF, "x")


def group_of(item: CompletionCandidate, listed: str) -> str:
    """What an item's file is known by: its defining class or module (Jedi's
    ``detail``), or, when the analysis gave none, its name in this list."""
    return item.detail or f"{listed}:{item.name}"


def probed_for(item: CompletionCandidate, group: str, asked: Asked) -> bool:
    """Whether a runtime probe of ``group`` asks about ``item``: the items of its class or
    module, or, for a group of one item that names none (see :func:`group_of`), every such
    item of the list (one receiver, so its names are looked up on one class)."""
    listed = asked.listed
    return group_of(item, listed) == group or (not item.detail and group.startswith(f"{listed}:"))
