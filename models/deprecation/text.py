"""What deprecation messages and docstrings say, in words: the notice and the replacement.

Pure text heuristics, kept apart from the syntax-tree checks of
``models.deprecation``, which calls them on messages and docstrings it has
read statically.
"""

from __future__ import annotations

import re


def replacement_in(text: str, avoid: str | None = None) -> str | None:
    """The identifier a deprecation message recommends, or None.

    ``"use `model_dump` instead"`` -> ``"model_dump"``; ``"in favor of
    :func:`torch.nn.functional.interpolate`"`` -> ``"interpolate"`` (the last
    dotted part: what is written after the ``.``). Prose ("use an explicit
    dtype") is not a name. When the last part is ``avoid`` (the deprecated
    name itself: ``use `inspect.iscoroutinefunction()```), the dotted name is
    returned, since the bare one would name the deprecated definition.
    """
    for match in _RECOMMENDS.finditer(text):
        found = _code_at(text, match.end(), avoid)
        if found:
            return found
    return None


# Phrases that introduce the replacement; ``the`` may follow them.
_RECOMMENDS = re.compile(
    r"\b(?:use|replaced\s+(?:by|with)|in\s+favou?r\s+of|superseded\s+by|renamed\s+to"
    r"|switch\s+to|migrate\s+to|prefer|alias\s+(?:of|for))\s+(?:the\s+)?",
    re.IGNORECASE,
)
_QUOTED = re.compile(
    r"(?::[\w:]+:)?``?~?(?:[^`<]*<)?(?P<a>[^`>]+)>?``?|'(?P<b>[^'\s]+)'|\"(?P<c>[^\"\s]+)\""
)
_BARE = re.compile(r"(?P<name>[A-Za-z_][\w.]*)(?P<call>\([^)]*\))?")
_PROSE = frozenset(
    {"a", "an", "this", "that", "these", "those", "it", "of", "with", "instead", "other", "another"}
    | {"any", "some", "one", "your", "its", "explicit", "is", "are", "and", "or", "to"}
    | {"in", "for", "as", "by", "if", "not", "no"}
)


def _code_at(text: str, at: int, avoid: str | None = None) -> str | None:
    quoted = _QUOTED.match(text, at)
    if quoted:
        code = quoted.group("a") or quoted.group("b") or quoted.group("c") or ""
        return identifier_in(code, avoid, quoted=True)
    bare = _BARE.match(text, at)
    if not bare or bare.group("name").lower() in _PROSE:
        return None
    name = bare.group("name").rstrip(".")
    rest = text[bare.end() :].lstrip()
    # A bare word is code only if it looks like code or closes the phrase.
    looks_like_code = (
        bool(bare.group("call")) or "_" in name or "." in name or any(c.isupper() for c in name[1:])
    )
    closes = not rest or rest[0] in ".,;:)" or rest.lower().startswith("instead")
    return identifier_in(name, avoid) if looks_like_code or closes else None


def identifier_in(code: str, avoid: str | None = None, quoted: bool = False) -> str | None:
    """The bare identifier that names ``code`` (``pkg.Cls.method()`` -> ``method``), or None.

    ``quoted`` code (backticks, quotes) may be any identifier; a bare word
    must not be prose ("an", "this"). ``avoid`` as in ``replacement_in``.
    """
    code = code.strip().split("(", 1)[0].rstrip(".")
    last = code.rsplit(".", 1)[-1]
    if not last.isidentifier() or (not quoted and last.lower() in _PROSE):
        return None
    if last == avoid:
        dotted = all(part.isidentifier() for part in code.split("."))
        return code if dotted and code != last else None
    return last


_PARAMETER_SECTIONS = re.compile(
    r"(?:parameters|params|args|arguments|keyword args|keyword arguments|other parameters"
    r"|attributes|raises|returns|yields|examples?)\s*:?",
    re.IGNORECASE,
)
_DIRECTIVE = re.compile(r"\.\. deprecated::\s*(?P<version>\S*)")
_DEPRECATED_LINE = re.compile(
    r"(?:\(|\[|\*\*?)?deprecated(?:\)|\]|\*\*?)?(?![a-z])(?P<rest>.*)", re.IGNORECASE
)


def _prose(docstring: str) -> list[str]:
    """The docstring's lines outside parameter-like sections and ``:param`` fields."""
    lines = docstring.splitlines()
    kept: list[str] = []
    skipping = False
    field = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        indented = line[:1].isspace()
        underline = index + 1 < len(lines) and set(lines[index + 1].strip()) == {"-"}
        header = not indented and bool(stripped) and (underline or stripped.endswith(":"))
        if header and _PARAMETER_SECTIONS.fullmatch(stripped):
            skipping, field = True, False
            continue
        if header:
            skipping = False  # another section (Notes, Warnings, Deprecated:) is prose
        if re.match(r":(?:param|parameter|arg|argument|key|keyword|type|raises?)\b", stripped):
            field = True
            continue
        if field and (indented or not stripped):
            continue
        field = False
        if skipping and (indented or not stripped or set(stripped) == {"-"}):
            continue
        if skipping and not indented:
            # numpy item line ("axis : int"): still inside the section
            if " : " in stripped or stripped.isidentifier():
                continue
            skipping = False
        kept.append(line)
    return kept


def deprecation_notice(docstring: str, name: str) -> str | None:
    """The passage of a cleaned docstring that deprecates its definition ``name``, or None.

    Counted: an unindented ``.. deprecated::`` directive (its body is the
    notice), a line that starts with "Deprecated", and "this function / `name`
    is deprecated" anywhere. Parameter, return and example sections do not
    count: there "deprecated" is about an argument or a value.
    """
    lines = _prose(docstring)
    for index, line in enumerate(lines):
        if line[:1].isspace():
            continue
        directive = _DIRECTIVE.match(line)
        if directive:
            body = []
            for following in lines[index + 1 :]:
                if following.strip() and not following[:1].isspace():
                    break
                body.append(following)
            return " ".join(body).strip() or f"deprecated since {directive.group('version')}"
        if _DEPRECATED_LINE.match(line):
            return _paragraph(lines, index)
    for index, line in enumerate(lines):
        for match in _SUBJECT_DEPRECATED.finditer(line):
            subject = match.group("name")
            if subject is None or subject.rsplit(".", 1)[-1] == name:
                return _paragraph(lines, index)
    return None


# "this function is deprecated", "`old` has been deprecated"
_SUBJECT_DEPRECATED = re.compile(
    r"(?:\bthis\s+(?:function|method|class|property|attribute|alias|module|api|decorator"
    r"|callable|field|type|constructor|classmethod|staticmethod|name)"
    r"|`*(?P<name>[\w.]+)`*(?:\(\))?)\s+(?:is|has\s+been)\s+(?:now\s+)?deprecated",
    re.IGNORECASE,
)


def _paragraph(lines: list[str], index: int) -> str:
    """The line at ``index`` and the non-blank lines after it."""
    taken = [lines[index]]
    for line in lines[index + 1 :]:
        if not line.strip():
            break
        taken.append(line)
    return " ".join(taken)
