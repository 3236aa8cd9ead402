"""The Steerer's deprecation stage: which completion items are deprecated, read from source.

Items group by their defining class or module (Jedi's ``detail``): resolving
one item of a class finds its file, and ``models/deprecation/static.py`` reads every
deprecated definition there. An item the analysis names no class for is its
own group, resolved by name. Files are looked up as soon as a list arrives
(:func:`definition_files`, on a pool thread), the contenders' definitions while
the ranker scores (the Steerer asks them), and :func:`read_deprecations` reads
them when the name is due; the opt-in runtime check adds what earlier probes
found and starts one more.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from steerlsp.models.deprecation.static import Deprecation
from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import Analysis, AnalysisError, CompletionCandidate
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.models.steering.ranking.relevance import Candidate, relevance_scores

# Defining classes whose files are looked up as soon as a completion list arrives, and
# (for items that name no class) the names likeliest by relevance alone.
PREFETCH_GROUPS = 3
PREFETCH_BY_RELEVANCE = 2


class DefinitionQuery(Protocol):
    """A definition asked of the analysis (the Steerer's query record)."""

    future: concurrent.futures.Future[Any]
    extra: Any  # the group it resolves


@dataclass
class Asked:
    """Definitions asked for, to read which items are deprecated."""

    groups: dict[str, CompletionCandidate]  # see group_of -> one item of it
    listed: str  # the completion list's fingerprint
    paths: dict[str, str] = field(default_factory=dict)  # group -> its file
    queries: list[DefinitionQuery] = field(default_factory=list)


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
    the items that name no class and are likeliest by relevance.
    -> {group: (path, definition line)}; ("", None): no definition known"""
    listed = fingerprint(items)
    groups: dict[str, CompletionCandidate] = {}
    for item in items:
        if item.detail and item.detail not in facts.defined_in:
            groups.setdefault(item.detail, item)
    wanted = list(groups.items())[:PREFETCH_GROUPS]
    plain = [c for c in items if not c.detail]
    if plain:
        intent = intent_at(text[:offset])
        candidates = [Candidate(c.name, c.documentation, c.kind) for c in plain]
        relevant = relevance_scores(intent, candidates)
        best = sorted(range(len(plain)), key=lambda i: -relevant[i])
        for i in [i for i in best if relevant[i] > 0][:PREFETCH_BY_RELEVANCE]:
            group = group_of(plain[i], listed)
            if group not in facts.defined_in:
                wanted.append((group, plain[i]))
    found = {}
    for detail, item in wanted:
        spliced = text[:offset] + item.name + text[offset:]
        try:
            source = analysis.definition_source(spliced, offset + len(item.name) - 1, timeout=limit)
        except AnalysisError:
            continue
        found[detail] = (source.path, source.line) if source is not None else ("", None)
    return found


def read_deprecations(
    items: list[CompletionCandidate],
    asked: Asked,
    *,
    facts: SteeringFacts,
    options: SteeringOptions,
    trace: Any,
    wait: Callable[[Any], Any],
) -> dict[str, Deprecation]:
    """Deprecated items, read from the files the asked definitions are in: every
    deprecated definition there whose name is an item of that class or module."""
    for query in asked.queries:
        source = wait(query)
        if answered(query.future):  # maybe None: no definition known
            path, line = (source.path, source.line) if source is not None else ("", None)
            asked.paths[query.extra] = path
            facts.remember_definition(query.extra, path, line)
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
    trace: Any,
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
