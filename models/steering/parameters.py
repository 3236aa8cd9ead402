"""What a callee accepts as keyword arguments, read from its signature's label.

pylsp's signature help labels a call with the callee's signature lines as Jedi
prints them (``dumps(obj: Any, *, skipkeys: bool=False, **kwds: Any) -> str``),
every overload's in a row, and lists the first one's parameter names without
their kinds. The kinds are in the label: ``/`` ends the positional-only ones,
``*`` or ``*args`` starts the keyword-only ones, ``**kw`` takes any keyword.
Pure functions: no analysis, no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


class Kind(Enum):
    POSITIONAL_ONLY = "positional_only"
    EITHER = "either"  # positional or keyword
    KEYWORD_ONLY = "keyword_only"
    VAR_POSITIONAL = "var_positional"
    VAR_KEYWORD = "var_keyword"


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: Kind
    required: bool  # no default

    @property
    def keyword(self) -> bool:
        """Whether it may be given as ``name=``."""
        return self.kind in (Kind.EITHER, Kind.KEYWORD_ONLY)


@dataclass(frozen=True)
class CallShape:
    """The parameters of each overload of one callee."""

    overloads: tuple[tuple[Parameter, ...], ...]

    @property
    def open(self) -> bool:
        """It takes any keyword (``**kwargs`` in some overload): none can be ruled out."""
        return any(p.kind is Kind.VAR_KEYWORD for o in self.overloads for p in o)

    def keywords(self) -> list[str]:
        """Every name some overload accepts as a keyword, in signature order."""
        return list(dict.fromkeys(p.name for o in self.overloads for p in o if p.keyword))

    def accepts(self, name: str) -> bool:
        return self.open or name in self.keywords()

    def wanted(self, given: set[str], positional: int) -> list[str]:
        """The keywords still to give, those the call cannot do without first (see
        :meth:`required`), then the rest, in signature order; none of ``given``."""
        names = list(dict.fromkeys([*self.required(given, positional), *self.keywords()]))
        return [n for n in names if n not in given and n not in self._positional(positional)]

    def required(self, given: set[str], positional: int) -> list[str]:
        """The first overload's parameters without a default that may be given as
        keywords and are not yet given: keyword-only, or positional-or-keyword past the
        ``positional`` arguments given."""
        first = self.overloads[0] if self.overloads else ()
        before = 0
        required = []
        for parameter in first:
            if parameter.kind in (Kind.POSITIONAL_ONLY, Kind.EITHER):
                before += 1
                if parameter.kind is Kind.EITHER and before <= positional:
                    continue  # given by position
            if parameter.keyword and parameter.required and parameter.name not in given:
                required.append(parameter.name)
        return required

    def positional_capacity(self) -> int | None:
        """The most arguments some overload takes by position; None: any number
        (``*args``)."""
        capacity = 0
        for overload in self.overloads:
            if any(p.kind is Kind.VAR_POSITIONAL for p in overload):
                return None
            taken = sum(p.kind in (Kind.POSITIONAL_ONLY, Kind.EITHER) for p in overload)
            capacity = max(capacity, taken)
        return capacity

    def _positional(self, positional: int) -> set[str]:
        """The names the first ``positional`` arguments fill, in every overload."""
        filled: set[str] = set()
        for overload in self.overloads:
            taken = [p for p in overload if p.kind in (Kind.POSITIONAL_ONLY, Kind.EITHER)]
            filled.update(p.name for p in taken[:positional])
        return filled


def call_shape(label: str, name: str = "") -> CallShape | None:
    """The overloads in a signature help label (each ``callee(...)``, ``name``'s where
    given); None when none can be read: then no keyword is ruled out."""
    overloads = []
    for params in _signatures(label, name):
        parsed = _parameters(params)
        if parsed is None:
            return None
        overloads.append(parsed)
    return CallShape(tuple(overloads)) if overloads else None


def _signatures(label: str, name: str) -> list[str]:
    """The text inside each top-level ``callee(...)`` of ``label``."""
    found: list[str] = []
    index = 0
    while True:
        match = _NAME.search(label, index)
        if match is None:
            return found
        index = match.end()
        if index >= len(label) or label[index] != "(" or (name and match.group() != name):
            continue
        close = closing(label, index)
        if close is None:
            return found
        found.append(label[index + 1 : close])
        index = close + 1


def _outside_strings(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """Each character of ``text`` from ``start`` that is outside a string literal, with
    the bracket depth after it (a closer's depth is the one it returns to)."""
    depth, quote, index = 0, "", start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        else:
            if char in _OPENERS:
                depth += 1
            elif char in ")]}":
                depth -= 1
            yield index, char, depth
        index += 1


def closing(text: str, start: int) -> int | None:
    """The index of the ``)`` that closes the bracket at ``start``, past strings; None
    while it is open (or a bracket of another kind closes it)."""
    for index, char, depth in _outside_strings(text, start):
        if depth == 0:
            return index if char == ")" else None
    return None


def argument_spans(params: str) -> tuple[list[tuple[int, int]], bool]:
    """Where each argument of ``params`` (a call's text after its ``(``) starts and ends,
    whitespace left out, split at its top-level commas; and whether the last one is
    still being written (no comma after it)."""
    spans, last = [], 0
    for index, char, depth in _outside_strings(params):
        if char == "," and depth == 0:
            spans.append(_stripped(params, last, index))
            last = index + 1
    rest = _stripped(params, last, len(params))
    return ([*spans, rest], True) if rest[0] < rest[1] else (spans, False)


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_arguments(params: str) -> list[str]:
    """``params`` (a signature's, or a call's arguments) at its top-level commas."""
    spans, _ = argument_spans(params)
    return [params[start:end] for start, end in spans]


def _parameters(params: str) -> tuple[Parameter, ...] | None:
    parts = split_arguments(params)
    if "/" in parts:  # everything before it is positional-only
        slash = parts.index("/")
        kinds = [Kind.POSITIONAL_ONLY] * slash + [Kind.EITHER] * (len(parts) - slash)
    else:
        kinds = [Kind.EITHER] * len(parts)
    out: list[Parameter] = []
    keyword_only = False
    for part, kind in zip(parts, kinds, strict=True):
        if part == "/":
            continue
        if part == "*":
            keyword_only = True
            continue
        stars = len(part) - len(part.lstrip("*"))
        match = _NAME.match(part, stars)
        if match is None or stars > 2:
            return None
        name = match.group()
        if stars == 2:
            out.append(Parameter(name, Kind.VAR_KEYWORD, False))
        elif stars == 1:
            out.append(Parameter(name, Kind.VAR_POSITIONAL, False))
            keyword_only = True
        else:
            if keyword_only:
                kind = Kind.KEYWORD_ONLY
            out.append(Parameter(name, kind, not _has_default(part)))
    return tuple(out)


def _has_default(part: str) -> bool:
    """Whether a parameter's text (``name: T = value``) has a top-level ``=``."""
    return any(
        char == "=" and depth == 0 and part[index + 1 : index + 2] != "="
        for index, char, depth in _outside_strings(part)
    )
