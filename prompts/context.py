"""ChatLSP's context in a prompt: a comment block above the function being written.

A base model reads comments as part of the code, so the context is written the
way a programmer would note it above a function: the type the hole must have,
the definitions of the types around it, the functions that produce it, and,
in an error round, the earlier attempt with the errors found on it. The block
is budgeted in tokens and cut at line boundaries, most important first
(expected type, then the error feedback, then types, then headers).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ChatContext:
    """ChatLSP's static context for a prompt (``server/chatlsp/``); "" where nothing is known.

    ``attempt`` and ``feedback``: an earlier completion at this cursor and the static
    errors found on it, for an error round.
    """

    expected_type: str = ""
    relevant_types: str = ""
    relevant_headers: str = ""
    attempt: str = ""
    feedback: str = ""
    returns: bool = False  # ``expected_type`` is the enclosing function's result

    def __bool__(self) -> bool:
        return any((self.expected_type, self.relevant_types, self.relevant_headers, self.feedback))


_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]")


def context_block(context: ChatContext, *, budget: int, count_tokens: Callable[[str], int]) -> str:
    """The comment lines for ``context`` (each ending in a newline), within ``budget``
    tokens; "" when there is nothing to say or no room."""
    sections: list[list[str]] = []
    if context.expected_type:
        said = "This function returns" if context.returns else "Expected type here"
        sections.append([f"{said}: {context.expected_type}"])
    if context.feedback:
        attempt = [f"    {line}" for line in context.attempt.strip("\n").splitlines()]
        errors = context.feedback.strip("\n").splitlines()
        sections.append(
            ["A previous attempt here:", *attempt, "had these errors:", *errors, "Fix them."]
        )
    if context.relevant_types:
        sections.append(["Relevant types:", *context.relevant_types.strip("\n").splitlines()])
    if context.relevant_headers:
        sections.append(
            ["Functions that return it:", *context.relevant_headers.strip("\n").splitlines()]
        )
    kept: list[str] = []
    used = 0
    for section in sections:
        for line in section:
            comment = _comment(line)
            cost = count_tokens(comment)
            if used + cost > budget:
                return "".join(kept)
            kept.append(comment)
            used += cost
    return "".join(kept)


def with_context(code: str, block: str) -> str:
    """``code`` (the prompt's code up to the cursor) with ``block`` above the innermost
    ``def`` or ``class`` that encloses the cursor's line, indented like it; at the top
    when none is in ``code``."""
    if not block:
        return code
    lines = code.split("\n")
    current = lines[-1]
    indent = len(current) - len(current.lstrip()) if current.strip() else len(current)
    for index in range(len(lines) - 2, -1, -1):
        found = _DEF.match(lines[index])
        if found and len(found.group(1)) < max(indent, 1):
            start = index
            while start > 0 and lines[start - 1].lstrip().startswith("@"):
                start -= 1  # above its decorators
            prefix = found.group(1)
            indented = "".join(prefix + line + "\n" for line in block.splitlines())
            return (
                "\n".join(lines[:start])
                + ("\n" if start else "")
                + indented
                + "\n".join(lines[start:])
            )
    return block + code


def _comment(line: str) -> str:
    """One comment line; line breaks and control characters cannot escape it."""
    flat = "".join(ch if ch.isprintable() else " " for ch in line)
    return f"# {flat}".rstrip() + "\n"
