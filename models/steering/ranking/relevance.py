"""Intent relevance: how well a candidate name fits what the code around it is for.

The model picks valid but wrong names: a field where the docstring asks for a
conversion. The words of the enclosing function's name and docstring, the
nearby comments and the line being written say what is wanted; each
candidate's name and first doc line say what it does. This module scores the
overlap, BM25-style (rare words count more, long docs less), with light
stemming, identifier splitting and a few programming synonyms. Pure and fast:
no network, no model.

:func:`rank_candidates` combines that score with the model's log-probability of
each whole identifier and the item's metadata (deprecated, private, dunder).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from steerlsp.models.semantics.declared import Declarations

# Words that say nothing about which member is wanted.
_STOP = frozenset(
    " ".join(
        [
            "a an the of to as and or is are be been in on at by for with from into onto",
            "this that these those it its if else then than so not no do does return returns",
            "self cls we you i me my our your use used using given new one all any some each",
        ]
    ).split()
)
# Spellings of one concept, mapped to one word before and after stemming.
_CANONICAL = {
    "dictionary": "dict",
    "mapping": "dict",
    "string": "str",
    "text": "str",
    "integer": "int",
    "representation": "repr",
    "number": "num",
    "length": "len",
    "size": "len",
    "attribute": "attr",
    "configuration": "config",
    "parameter": "param",
    "argument": "arg",
    "function": "func",
    "directory": "dir",
    "message": "msg",
    "error": "err",
    "exception": "exc",
    "initialize": "init",
    "initialise": "init",
    "maximum": "max",
    "minimum": "min",
    "temporary": "tmp",
    "database": "db",
    "serialise": "serialize",
    "identifier": "id",
}
# Different words for one operation; a match through them counts for less.
_SYNONYMS = [
    "serialize dump encode export",
    "deserialize load parse decode",
    "remove delete pop discard drop",
    "add append insert push",
    "find search lookup index",
    "copy clone duplicate",
    "check validate verify",
    "read load open",
    "write save dump store",
    "join concat combine merge",
    "sort order",
    "count len num",
    "convert transform cast",
    "suffix extension ext",
    "prefix start begin",
]

_EXACT, _PREFIX, _SYNONYM = 1.0, 0.7, 0.5
_K1, _B = 1.2, 0.5  # BM25's term saturation and length normalisation
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SIGNATURE = re.compile(r"^[\w.]+\(.*\)\s*(->.*)?$")  # "dict(mapping) -> new dictionary"


@dataclass(frozen=True)
class Intent:
    """What the code being written is for, as text around the cursor."""

    function: str = ""  # the enclosing function's name
    docstring: str = ""
    comments: str = ""  # nearby comment lines, joined
    line: str = ""  # the line being written, up to the cursor
    expected: str = ""  # the type the expression must have (``return`` in a ``-> T`` function)
    # The document's classes derived from an expected one (``class Dog(Animal)``): they fit.
    subclasses: frozenset[str] = frozenset()
    # What the document's classes declare their members to be, where a type is expected.
    declared: Declarations | None = dataclasses.field(default=None, compare=False, repr=False)

    def returns(self, name: str, returns: str, owner: str) -> str:
        """What the member ``name`` of ``owner`` (where the analysis says it is defined)
        gives: ``returns`` (from its signature) where known, else what the document's
        own class declares it to be (``name: str``)."""
        if returns or not owner or self.declared is None:
            return returns
        return self.declared.type_of(owner, name)


@dataclass(frozen=True)
class Candidate:
    """One completion item, as far as ranking is concerned."""

    name: str
    doc: str = ""  # its documentation; only the first summary line is read
    kind: str = ""  # LSP CompletionItemKind name, lower case
    deprecated: bool = False
    returns: str = ""  # what calling it returns, from its signature, when known
    usage: float = 0.0  # how the document already uses the name (:class:`DocumentUsage`)


def split_words(text: str) -> list[str]:
    """Lower-case words, snake_case and camelCase split: ``HTTPServer`` -> ``http server``."""
    return [part.lower() for part in _PARTS.findall(text)]


def stem(word: str) -> str:
    """A light, deterministic stem: plurals, -ion, -ing, -ed and a final e go; spellings unify."""
    w = _CANONICAL.get(word, word)
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith(("sses", "ches", "shes", "xes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 8 and w.endswith("ization"):
        w = w[:-5]
    elif (len(w) > 6 and w.endswith("tion")) or (len(w) > 5 and w.endswith("ing")):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    w = _CANONICAL.get(w, w)
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


_SYNONYM_GROUPS: dict[str, frozenset[int]] = {}
for _group, _words in enumerate(_SYNONYMS):
    for _word in _words.split():
        _SYNONYM_GROUPS[stem(_word)] = _SYNONYM_GROUPS.get(stem(_word), frozenset()) | {_group}


def terms(text: str) -> list[str]:
    """The stemmed content words of ``text``, in order, stop words left out."""
    return [stem(w) for w in split_words(text) if w not in _STOP and len(w) > 1]


def summary_line(doc: str) -> str:
    """The first line of ``doc`` that describes: no admonitions, links, signatures."""
    for raw in doc.splitlines():
        line = raw.strip()
        if (
            not line
            or line.startswith(("!!!", "..", "[`", "Usage doc", "http", ">>>", ":"))
            or _SIGNATURE.match(line)
        ):
            continue
        return line
    return ""


def intent_terms(intent: Intent) -> dict[str, float]:
    """Query terms with weights: the function's name says most, comments least."""
    weighted: dict[str, float] = {}
    for text, weight in (
        (intent.function, 2.0),
        (summary_line(intent.docstring) or intent.docstring, 1.5),
        (intent.docstring, 0.5),
        (intent.comments, 0.7),
        (intent.line, 0.5),
    ):
        for term in set(terms(text)):
            weighted[term] = weighted.get(term, 0.0) + weight
    return {term: min(weight, 3.0) for term, weight in weighted.items()}


def _candidate_terms(candidate: Candidate) -> dict[str, float]:
    """Document terms with field weights: a word of the name counts double."""
    found: dict[str, float] = {}
    for term in terms(summary_line(candidate.doc)):
        found[term] = 1.0
    for term in terms(candidate.name):
        found[term] = 2.0
    return found


def _similarity(query: str, term: str) -> float:
    if query == term:
        return _EXACT
    shorter = min(len(query), len(term))
    if shorter >= 4:
        common = 0
        for a, b in zip(query, term, strict=False):
            if a != b:
                break
            common += 1
        if common >= 4 and common >= 0.75 * shorter:
            return _PREFIX
    groups = _SYNONYM_GROUPS.get(query)
    if groups and groups & _SYNONYM_GROUPS.get(term, frozenset()):
        return _SYNONYM
    return 0.0


def relevance_scores(intent: Intent, candidates: Sequence[Candidate]) -> list[float]:
    """Relevance of each candidate to ``intent``, rarer shared words weighing more; >= 0."""
    query = intent_terms(intent)
    documents = [_candidate_terms(c) for c in candidates]
    if not query or not documents:
        return [0.0] * len(documents)
    frequency = Counter(term for document in documents for term in document)
    total = len(documents)
    average = sum(len(d) for d in documents) / total or 1.0
    # Each distinct word is compared with the query once, not once per candidate.
    matching = {
        term: [(q, sim * _idf(count, total)) for q in query if (sim := _similarity(q, term))]
        for term, count in frequency.items()
    }
    saturation = _K1 + 1
    scores = []
    for document in documents:
        norm = 1 - _B + _B * len(document) / average
        best: dict[str, float] = {}
        for term, field in document.items():
            for q, value in matching.get(term, ()):
                best[q] = max(best.get(q, 0.0), value * field)
        scores.append(
            sum(query[q] * value for q, value in best.items()) * saturation / (1 + _K1 * norm)
        )
    return scores


def _idf(count: int, total: int) -> float:
    """BM25's inverse document frequency: > 0, larger for words few candidates share."""
    return math.log(1 + (total - count + 0.5) / (count + 0.5))


def relevance(intent: Intent, candidate: Candidate) -> float:
    """:func:`relevance_scores` of one candidate alone (every word equally rare)."""
    return relevance_scores(intent, [candidate])[0]


@dataclass(frozen=True)
class RankWeights:
    """How the signals combine into one score; tuned on our benchmarks' training split."""

    # Tuned on the next-identifier benchmark's train split (bench/tune_rank.py).
    logprob: float = 0.5  # per nat of the model's whole-identifier log-probability
    relevance: float = 1.0  # for the most relevant plausible candidate (scaled to 1)
    deprecated: float = -10.0
    private: float = -4.0  # ``_name``, unless the user typed ``_``
    dunder: float = -6.0  # ``__name__``, unless the user typed ``_``
    missing_logprob: float = -20.0  # for a candidate the model did not score; also the floor
    expected_type: float = 3.0  # its result has the type the code expects here
    # The document already accesses the name as an attribute. Off: +3 of 66 rankings on
    # the train split, but no change on the held-out split (47% either way).
    usage: float = 0.0

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not math.isfinite(value):
                raise ValueError(f"RankWeights.{field.name} must be finite, got {value!r}")


@dataclass(frozen=True)
class Ranked:
    """A candidate's place in the ranking, with the parts of its score for explain."""

    name: str
    score: float
    logprob: float
    relevance: float  # scaled to [0, 1]: 1 for the most relevant plausible candidate
    metadata: float  # the penalties that applied
    expected: float = 0.0  # the bonus for having the expected type
    usage: float = 0.0  # the document's use of the name (0, BARE_WORD or 1), before weighting

    def traced(self) -> dict[str, Any]:
        """The parts of the score, as the explain trace shows them."""
        return {
            "name": self.name,
            "score": round(self.score, 3),
            "logprob": round(self.logprob, 3),
            "relevance": round(self.relevance, 3),
            "metadata": self.metadata,
            "expected": self.expected,
            "usage": self.usage,
        }


def rank_candidates(
    intent: Intent,
    candidates: Iterable[Candidate],
    logprobs: Mapping[str, float] | None = None,
    *,
    typed: str = "",
    weights: RankWeights | None = None,
    replacements: Mapping[str, str] | None = None,
    own: str = "",
) -> list[Ranked]:
    """Candidates best first, by log-probability, relevance and metadata.

    ``logprobs``: the model's log-probability (nats) of each whole identifier
    plus "identifier ends here"; missing names get ``weights.missing_logprob``.
    ``typed``: what the user or model already wrote of the name.
    ``replacements``: deprecated name -> the name its source says replaces it.
    A replacement inherits the deprecated name's log-probability and relevance
    where they are higher: the model (or the intent) asked for that job to be
    done, and the library says this is how it is done now.
    ``own``: the method being written, when the receiver is its own (``self.count``
    inside ``count``). It gets neither relevance nor the expected-type bonus: its name
    is the intent and its return type the expected one, so both would favour a call
    of itself, which recurses unless the model means it (and then its own
    log-probability says so).
    """
    weights = weights or RankWeights()
    listed = list(candidates)
    raw = relevance_scores(intent, listed)
    if replacements:
        logprobs = dict(logprobs or {})
        where = {candidate.name: i for i, candidate in enumerate(listed)}
        for old, new in replacements.items():
            if old in where and new in where and old != new:
                raw[where[new]] = max(raw[where[new]], raw[where[old]])
                if old in logprobs:
                    logprobs[new] = max(logprobs.get(new, -math.inf), logprobs[old])
    penalties = [_metadata_penalty(candidate, typed, weights) for candidate in listed]
    wanted = type_heads(intent.expected) | intent.subclasses
    bonus = [_typed_bonus(c.returns, wanted, intent, weights) for c in listed]
    # Scale to the best plausible name, so a relevant deprecated one does not flatten the rest.
    plausible = [score for score, penalty in zip(raw, penalties, strict=True) if penalty == 0]
    top = max(plausible, default=0.0) or max(raw, default=0.0)
    ranked = []
    for candidate, score, metadata, typed_bonus in zip(listed, raw, penalties, bonus, strict=True):
        logprob = (logprobs or {}).get(candidate.name, weights.missing_logprob)
        logprob = max(logprob, weights.missing_logprob)
        scaled = min(score / top, 1.0) if top > 0 else 0.0
        if own and candidate.name == own:
            scaled, typed_bonus = 0.0, 0.0
        used = weights.usage * candidate.usage
        total = (
            weights.logprob * logprob + weights.relevance * scaled + metadata + typed_bonus + used
        )
        ranked.append(
            Ranked(candidate.name, total, logprob, scaled, metadata, typed_bonus, candidate.usage)
        )
    return sorted(ranked, key=lambda r: -r.score)  # stable: ties keep the list's order


def settled_without_documentation(
    candidates: Sequence[Candidate],
    logprobs: Mapping[str, float],
    intent: Intent,
    *,
    weights: RankWeights,
    first_of: Mapping[str, object],
    typed: str = "",
) -> str | None:
    """The name that ranks first whatever the candidates' documentation says, or None
    when their documentation could change the order's head.

    ``logprobs`` are first-token log-probabilities (an upper bound of each whole
    name's, and the whole when no other name shares the leader's first token, which
    ``first_of`` tells). Documentation moves a name's relevance and expected-type
    bonus, and a replacement inherits a deprecated name's log-probability, so the
    bound is taken loosely: the model's favourite leads when its log-probability and
    its own penalties beat every other's log-probability by more than everything
    else can add (relevance, the expected-type bonus where a type may be expected,
    usage). Exact: asking the documentation only where this is None changes no
    ranking's winner."""
    w = weights
    if not candidates or w.logprob <= 0:
        return None
    floor = w.missing_logprob
    lp = {c.name: max(logprobs.get(c.name, floor), floor) for c in candidates}
    leader = max(candidates, key=lambda c: lp[c.name])
    rivals = [c for c in candidates if c.name != leader.name]
    if not rivals:
        return leader.name
    token = first_of.get(leader.name)
    if token is None or any(first_of.get(c.name) == token for c in rivals):
        return None
    parts = [w.relevance, w.usage]
    if type_heads(intent.expected) or intent.subclasses:
        parts.append(w.expected_type)
    low = w.logprob * lp[leader.name] + _metadata_penalty(leader, typed, w)
    low += sum(min(part, 0.0) for part in parts)
    high = max(w.logprob * lp[c.name] for c in rivals) + sum(max(part, 0.0) for part in parts)
    return leader.name if low > high else None


_TYPE_ALIASES = {
    "Dict": "dict",
    "List": "list",
    "Set": "set",
    "FrozenSet": "frozenset",
    "Tuple": "tuple",
    "Type": "type",
    "Text": "str",
    "DefaultDict": "defaultdict",
    "Deque": "deque",
}
_MAPPINGS = frozenset({"dict", "OrderedDict", "defaultdict", "Counter", "ChainMap"})
_SEQUENCES = frozenset({"list", "tuple", "str", "bytes", "bytearray", "range", "deque"})
_SETS = frozenset({"set", "frozenset"})
_CONTAINERS = _MAPPINGS | _SEQUENCES | _SETS
# The builtin and standard types whose values fit where another is expected: the
# abstract collections' concrete ones, a dict's subclasses, PEP 484's numeric tower.
_SUBTYPES: dict[str, frozenset[str]] = {
    "dict": frozenset({"OrderedDict", "defaultdict", "Counter"}),
    "Mapping": _MAPPINGS | {"MutableMapping"},
    "MutableMapping": _MAPPINGS,
    "Sequence": _SEQUENCES | {"MutableSequence"},
    "MutableSequence": frozenset({"list", "bytearray", "deque"}),
    "AbstractSet": _SETS | {"MutableSet"},
    "MutableSet": frozenset({"set"}),
    "Collection": _CONTAINERS | {"Mapping", "Sequence", "AbstractSet"},
    "Iterable": _CONTAINERS | {"Mapping", "Sequence", "AbstractSet", "Iterator", "Generator"},
    "Iterator": frozenset({"Generator"}),
    "float": frozenset({"int", "bool"}),
    "complex": frozenset({"float", "int", "bool"}),
    "int": frozenset({"bool"}),
}


def type_head(annotation: str) -> str:
    """The outer type of an annotation: ``Dict[str, Any]`` and ``dict[str, int]`` -> ``dict``,
    ``Optional[Foo]`` and ``Foo | None`` -> ``Foo``; "" when there is none, or a union."""
    heads = type_heads(annotation)
    return next(iter(heads)) if len(heads) == 1 else ""


def type_heads(annotation: str) -> frozenset[str]:
    """The outer types of an annotation's alternatives, ``None`` left out:
    ``dict[str, Any] | list[str]`` and ``Union[Dict, List]`` -> {dict, list},
    ``Optional[Foo]`` -> {Foo}; empty where any alternative is ``Any``, ``object`` or
    ``Self`` (anything fits) or there is no annotation."""
    text = annotation.strip().strip("'\"").replace("typing.", "").replace("typing_extensions.", "")
    for wrapper in ("Optional[", "Union["):
        if text.startswith(wrapper) and text.endswith("]"):
            text = text[len(wrapper) : -1].replace(",", "|")  # Union's commas at its top level
    heads = set()
    for part in _top_level(text, "|"):
        head = part.split("[", 1)[0].strip().rsplit(".", 1)[-1]
        if head in ("None", ""):
            continue
        if head in ("Any", "object", "Self"):
            return frozenset()
        heads.add(_TYPE_ALIASES.get(head, head))
    return frozenset(heads)


def assignable(returns: str, wanted: frozenset[str]) -> bool:
    """Whether a value annotated ``returns`` fits where ``wanted`` is expected, by outer
    types: each of its alternatives is one of the wanted ones (``dict[str, Any]`` fits
    ``dict``, ``Optional[dict]`` fits ``dict | None``) or a builtin or standard type
    derived from one (``list`` fits ``Sequence``, ``int`` fits ``float``). Pass the
    document's classes derived from the wanted ones in ``wanted`` too."""
    have = type_heads(returns)
    if not (wanted and have):
        return False
    widened = wanted.union(*(_SUBTYPES.get(name, ()) for name in wanted))
    return have <= widened


# The share of the expected-type bonus for a member that reaches the type in one more
# member step (``.profile`` of a ``Profile`` with ``email: str``, where a ``str`` is
# expected): it beats one that cannot, and loses to one that fits already.
REACHED = 0.5


def _typed_bonus(returns: str, wanted: frozenset[str], intent: Intent, w: RankWeights) -> float:
    if assignable(returns, wanted):
        return w.expected_type
    return w.expected_type * REACHED if reaches(returns, wanted, intent.declared) else 0.0


def reaches(returns: str, wanted: frozenset[str], declared: Declarations | None = None) -> bool:
    """Whether a value annotated ``returns`` reaches a ``wanted`` type in one member
    step that one of the document's classes declares (``Profile`` with ``email: str``
    reaches ``str``): Mündler et al.'s type reachability, one step deep, as a ranking
    signal. The builtin types' conversions are not counted: ``bytes.decode`` made
    ``str.encode`` reach ``str`` and ``bytes.split`` made ``dump_json`` reach
    ``list[Event]``, by outer types alone (the held-out next-identifier split)."""
    if not wanted or declared is None:
        return False
    for head in type_heads(returns):
        if any(assignable(step, wanted) for step in declared.members_of(head).values()):
            return True
    return False


_CLASS = re.compile(r"^[ \t]*class[ \t]+([A-Za-z_]\w*)[ \t]*\(([^)]*)\)", re.MULTILINE)


def subclasses_in(text: str, bases: frozenset[str]) -> frozenset[str]:
    """The classes ``text`` defines that derive, directly or through each other, from
    one of ``bases`` (by the base's last name: ``class Dog(zoo.Animal)``)."""
    if not bases:
        return frozenset()
    parents: dict[str, set[str]] = {}
    for match in _CLASS.finditer(text):
        for base in match.group(2).split(","):
            name = base.split("[", 1)[0].strip().rsplit(".", 1)[-1]
            if name and "=" not in base:
                parents.setdefault(match.group(1), set()).add(name)
    found: set[str] = set()
    grown = True
    while grown:
        grown = False
        for name, own in parents.items():
            if name not in found and own & (bases | found):
                found.add(name)
                grown = True
    return frozenset(found - bases)


def _top_level(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return parts


def _metadata_penalty(candidate: Candidate, typed: str, weights: RankWeights) -> float:
    penalty = weights.deprecated if candidate.deprecated else 0.0
    if not typed.startswith("_"):
        name = candidate.name
        if name.startswith("__") and name.endswith("__"):
            penalty += weights.dunder
        elif name.startswith("_"):
            penalty += weights.private
    return penalty


_ATTRIBUTE = re.compile(r"\.[ \t]*([A-Za-z_]\w*)")
_WORD = re.compile(r"[A-Za-z_]\w*")
# Characters of the document read for usage, before and after the cursor: a cache
# model of the code nearby, bounded so that a huge file costs what a large one does.
USAGE_BEFORE, USAGE_AFTER = 60_000, 40_000
BARE_WORD = 0.25  # the share of the bonus for a name that appears, but not after a dot


class DocumentUsage:
    """Which names the document around the cursor already uses: a member accessed
    elsewhere in the file (``session.execute`` above, ``.execute`` again) is far
    likelier than one never written. Code is repetitive; the model sees only the
    prefix window, and never the text after the cursor."""

    def __init__(self, before: str, after: str) -> None:
        text = before[-USAGE_BEFORE:] + "\n" + after[:USAGE_AFTER]
        self.attributes = frozenset(_ATTRIBUTE.findall(text))
        self.words = frozenset(_WORD.findall(text))

    def score(self, name: str) -> float:
        """1 for a name used after a dot, :data:`BARE_WORD` for one written otherwise."""
        if name in self.attributes:
            return 1.0
        return BARE_WORD if name in self.words else 0.0
