"""Receivers known without inference: ``np.`` where the document binds ``np`` only by
``import numpy as np``.

A module's members are the same in every document that imports it, so the
answer to ``np.`` can be kept per module (and environment) instead of per text:
the next document, the next position and the next keystroke find it, where
Jedi would infer the module again for each (0.3 to 1.8 s for numpy's 600
names). This module says, from the text alone, when that holds. It is
conservative: the name must be bound only by plain ``import`` statements of one
module, and every other occurrence of it must be an attribute access (``np.``);
an assignment, a parameter, ``from x import np``, a keyword argument or a word
in a comment makes it unknown, and the text is then asked about as it is.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterator

# The dotted name a text ends with, then the ``.`` being completed: ``os.path.``.
_CHAIN = re.compile(r"(?<![\w.)\]}'\"])([A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*)[ \t]*\.$")
# An ``import`` statement (not ``from ... import``), up to the line's end, a ``;`` or
# a comment.
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.MULTILINE)
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*")
_ALIAS = re.compile(r"^(" + _DOTTED.pattern + r")(?:[ \t]+as[ \t]+([A-Za-z_]\w*))?[ \t]*$")
# How far back the chain is looked for.
_TAIL = 256


def module_receiver(text: str, offset: int) -> str | None:
    """The module ``text[:offset]`` completes the members of, when the text ends with a
    dotted name and a ``.`` whose first name is a module the text imports and uses
    only as a module: ``"numpy"`` for ``np.`` after ``import numpy as np``,
    ``"os.path"`` for ``os.path.`` after ``import os``; else None."""
    match = _CHAIN.search(text[max(0, offset - _TAIL) : offset])
    if match is None:
        return None
    parts = [p.strip() for p in match.group(1).split(".")]
    name = parts[0]
    if keyword.iskeyword(name):
        return None
    modules: set[str] = set()
    spans: list[tuple[int, int]] = []
    for statement in _IMPORT.finditer(text):
        bound = dict(_bindings(statement.group(1)))
        if name in bound:
            modules.add(bound[name])
            spans.append(statement.span())
    if len(modules) != 1:
        return None
    use = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?!\w)")
    for found in use.finditer(text):
        if any(start <= found.start() < end for start, end in spans):
            continue
        if not re.match(r"[ \t]*\.", text[found.end() : found.end() + 64]):
            return None  # bound or passed some other way: the module is not certain
    return ".".join([modules.pop(), *parts[1:]])


def _bindings(names: str) -> Iterator[tuple[str, str]]:
    """(name bound, module) for each ``dotted [as alias]`` of an import's list;
    ``import os.path`` binds ``os`` to the module ``os``."""
    for part in names.split(","):
        match = _ALIAS.match(part.strip())
        if match is None:
            continue
        dotted = re.sub(r"[ \t]", "", match.group(1))
        alias = match.group(2)
        if alias:
            yield alias, dotted
        else:
            top = dotted.split(".")[0]
            yield top, top


# A class statement's start, up to its opening parenthesis.
_CLASS = re.compile(r"^[ \t]*class[ \t]+[A-Za-z_]\w*[ \t]*\(", re.MULTILINE)
# Bases whose members every Python knows: nothing to read ahead.
_TRIVIAL_BASES = frozenset({"object", "Exception", "BaseException", "type"})


def class_bases(text: str, limit: int) -> list[str]:
    """The dotted names the text's classes derive from, first seen first, at most
    ``limit``: ``old_build`` for ``class build(old_build):``, ``models.Model``,
    ``Generic`` for ``Generic[T]``. Keyword arguments (``metaclass=``), starred
    ones and anything but a dotted name are left out.

    What ``self.`` lists in a method is mostly its bases' members: Jedi's first
    listing of a library base costs 0.3 to 0.6 s, the next one in the process
    tens of ms, so these are worth reading ahead while the user reads."""
    found: list[str] = []
    for match in _CLASS.finditer(text):
        for part in _top_level_parts(text, match.end()):
            base = re.sub(r"\s", "", part.split("[", 1)[0])
            if "=" in part or not _DOTTED.fullmatch(base) or base in _TRIVIAL_BASES:
                continue
            if any(keyword.iskeyword(word) for word in base.split(".")):
                continue
            if base not in found:
                found.append(base)
                if len(found) >= limit:
                    return found
    return found


def _top_level_parts(text: str, start: int) -> list[str]:
    """The comma-separated parts between ``text[start - 1]``'s ``(`` and its ``)``;
    none where it is not closed within :data:`_TAIL` * 4 characters."""
    parts: list[str] = []
    depth = 0
    begin = start
    for index in range(start, min(len(text), start + _TAIL * 4)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                parts.append(text[begin:index])
                return [p.strip() for p in parts if p.strip()]
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[begin:index])
            begin = index + 1
    return []
