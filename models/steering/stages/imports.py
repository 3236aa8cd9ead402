"""The unused-import stage: a name the document imports and never uses is the likelier
operand.

A module imported at the top of a file and not yet used anywhere in it is there for
the code being written: pylint calls it an error otherwise (W0611), and an editor
greys it out. The embedded 270M model does not read imports as intent. Teacher-forced
on the task suite's reference bodies (``bench/teacher_forcing.py``), it would write
``sum`` where the reference has ``statistics`` (``return statistics.correlation(xs,
ys)``, 0.36 nats apart), ``[]`` for ``string`` (1.1 nats) and ``policy`` for ``attrs``;
unsteered, it writes the whole body by hand instead.

Where an operand may start (``monitor.operand_start``: after ``return``, ``=``,
``(``, ``,``, ``in``, ``raise``...), each imported name the document (before and
after the cursor, this completion included) does not use yet gets :data:`BONUS` nats
on the first token that spells it, and on the next ones while it is being written
from there. A preference, not a mask: the model writes what it is surer of by more
than that. Once the completion has written the name it counts as used. A document
with more than :data:`MAX_UNUSED` unused imports (a package's ``__init__`` that
re-exports, a file being cleaned up) is not steered: there they say nothing of intent;
nor is one longer than :data:`MAX_DOCUMENT`, which would cost the decode thread more
than 10 ms to read at each completion.

Pure functions and the stage; no I/O, no question to the analysis.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

import torch

from steerlsp.models.steering.monitor import TriggerPoint
from steerlsp.models.steering.processors.bonus import Bonus
from steerlsp.models.steering.stages.base import Inputs, Stage, Step
from steerlsp.models.steering.stages.written import Written
from steerlsp.models.steering.tokens.trie import Tokenize, spell_in_context
from steerlsp.models.steering.tokens.vocab import VocabularyIndex

# Nats added to the first token of an unused import's name where an operand may start.
# The gap above which a teacher-forced divergence is called firm (bench/teacher_forcing.py):
# chosen before any run, not tuned on the task suite.
BONUS = 2.0
# More unused imports than this and none is steered toward.
MAX_UNUSED = 8
# The longest import statement read (characters): a parenthesised list over many lines.
MAX_STATEMENT = 4000
# The longest document read (characters), before and after the cursor: reading one
# costs about 0.1 ms per 1,000 characters on the decode thread (7 ms for 67,000), once
# per completion.
MAX_DOCUMENT = 100_000

_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import\b|import\b)", re.MULTILINE)


def imported_names(document: str) -> dict[str, tuple[int, int]]:
    """Every name an ``import`` or ``from ... import`` statement of ``document`` binds
    (``import a.b`` binds ``a``; ``as`` the alias; not ``*`` nor ``__future__``), with
    the span of the statement that binds it last. Statements that do not read as an
    import (a half-written one) are skipped.

    Read with regular expressions, not ``ast``: CPython 3.11's ``ast.parse`` keeps its
    recursion depth in state every thread shares, and two threads parsing at once may
    fail with ``SystemError: AST constructor recursion depth mismatch``; the decode
    thread runs this while the query pool reads library sources with ``ast``."""
    names: dict[str, tuple[int, int]] = {}
    for match in _IMPORT.finditer(document):
        start = match.start()
        end = _statement_end(document, match.end())
        for name in bound_by(document[start:end]) or ():
            names[name] = (start, end)
    return names


_IDENT = r"[^\W\d]\w*"
_DOTTED = rf"{_IDENT}(?:\s*\.\s*{_IDENT})*"
_ALIAS = re.compile(rf"\s*({_DOTTED})(?:\s+as\s+({_IDENT}))?\s*")
_IMPORT_STATEMENT = re.compile(r"import\s+(.+)", re.DOTALL)
_FROM_STATEMENT = re.compile(rf"from\s+(\.*\s*(?:{_DOTTED})?)\s*import\s*(.+)", re.DOTALL)


def bound_by(statement: str) -> list[str] | None:
    """The names one ``import`` or ``from ... import`` statement binds, in order; None
    when it is not one (half-written, or not Python)."""
    code = re.sub(r"#[^\n]*", "", statement).replace("\\\n", " ").strip()
    whole = _IMPORT_STATEMENT.fullmatch(code)
    if whole:
        aliases = [_ALIAS.fullmatch(item) for item in whole.group(1).split(",")]
        if not all(aliases):
            return None
        names = [a.group(2) or a.group(1).split(".")[0].strip() for a in aliases if a]
        return names if not any(keyword.iskeyword(n) for n in names) else None
    parts = _FROM_STATEMENT.fullmatch(code)
    if parts is None or not parts.group(1).strip():
        return None
    listed = parts.group(2).strip()
    if listed == "*":
        return []
    if listed.startswith("("):
        if not listed.endswith(")"):
            return None
        listed = listed[1:-1].strip().removesuffix(",")
    aliases = [_ALIAS.fullmatch(item) for item in listed.split(",")]
    if not all(a and "." not in a.group(1) for a in aliases):
        return None
    names = [a.group(2) or a.group(1) for a in aliases if a]
    if any(keyword.iskeyword(n) for n in names):
        return None
    return [] if parts.group(1).replace(" ", "") == "__future__" else names


def _statement_end(document: str, at: int) -> int:
    """Where the import statement that goes on at ``at`` ends: its line's end, or past
    the ``)`` that closes a parenthesised list (or a backslash's next line)."""
    end = at
    limit = min(len(document), at + MAX_STATEMENT)
    depth = 0
    while end < limit:
        char = document[end]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "\\" and document.startswith("\n", end + 1):
            end += 2
            continue
        elif char in "\n#;" and depth <= 0:
            break
        end += 1
    return end


def unused_imports(document: str) -> tuple[str, ...]:
    """The names ``document``'s imports bind that its other code does not mention as a
    whole word, in the order they are imported. Strings and comments are not code (a
    docstring names ``statistics.StatisticsError`` before any use), but a string that
    is the name itself is a use: ``__all__ = ["name"]`` re-exports it."""
    if len(document) > MAX_DOCUMENT:
        return ()
    names = imported_names(document)
    if not names:
        return ()
    spans = sorted(set(names.values()))
    rest, last = [], 0
    for start, end in spans:
        rest.append(document[last:start])
        last = max(last, end)
    rest.append(document[last:])
    others = "\n".join(rest)
    used = code_names(others) | set(_WHOLE_STRING.findall(others))
    return tuple(name for name in names if name not in used)


# A string literal (triple-quoted ones first, maybe unterminated where the text ends) or
# a comment, matched from the left: a ``#`` in a string and a quote in a comment are read
# as what they are in.
_NOT_CODE = re.compile(
    r'[rRbBuUfF]{0,2}(?:"""[\s\S]*?(?:"""|\Z)'
    r"|'''[\s\S]*?(?:'''|\Z))"
    r'|[rRbBuUfF]{0,2}(?:"(?:\\.|[^"\\\n])*"?'
    r"|'(?:\\.|[^'\\\n])*'?)"
    r"|#[^\n]*"
)
# Either of those, or a name that is not an attribute: one pass finds the names in code.
_CODE_NAME = re.compile(_NOT_CODE.pattern + r"|(?<![\w.])([^\W\d]\w*)")
_WHOLE_STRING = re.compile(r"""["']([A-Za-z_]\w*)["']""")


def code_names(text: str) -> set[str]:
    """The names ``text``'s code mentions, attributes (``x.name``) aside; what its
    string literals and comments say is not read."""
    return {name for name in _CODE_NAME.findall(text) if name}


def first_tokens(
    texts: Iterable[str], *, context: str, tokenize: Tokenize, vocabulary: VocabularyIndex
) -> torch.Tensor:
    """The first token of each text's spelling after ``context``. -> [N] long"""
    ids = []
    for text in texts:
        spelling = spell_in_context(text, context=context, tokenize=tokenize, vocabulary=vocabulary)
        if spelling is not None and spelling.tokens:
            ids.append(spelling.tokens[0])
    return torch.tensor(ids, dtype=torch.long)


class UnusedImports(Stage):
    """Prefers an unused import's name where an operand starts (see the module docstring)."""

    def __init__(self, inputs: Inputs, names: tuple[str, ...]) -> None:
        self.written: Written = inputs.written
        self.tokenize = inputs.facts.tokenize
        self.vocabulary = inputs.facts.vocabulary
        self.names = names
        self._starts: set[int] = set()  # offsets (in ``written.whole``) an operand started at
        self.observe(None)  # the cursor itself: ``return |``

    @classmethod
    def build(cls, inputs: Inputs) -> UnusedImports | None:
        if not inputs.options.imports:
            return None
        written = inputs.written
        names = unused_imports(written.before + written.after)
        if not names or len(names) > MAX_UNUSED:
            return None
        inputs.trace.unused_imports.extend(names)
        return cls(inputs, names)

    def _left(self) -> list[str]:
        used = code_names(self.written.text)
        return [name for name in self.names if name not in used]

    def _wanted(self) -> list[str]:
        """The texts whose first token gets the bonus at the next step ([] for none)."""
        left = self._left()
        if not left:
            return []
        monitor = self.written.monitor
        under_way = monitor.name_under_way()
        if monitor.operand_start():
            if under_way:  # ``return|``: the name follows a space
                return [" " + name for name in left]
            last = self.written.text[-1:] or self.written.window[-1:]
            if not last or last in " \t\n([{":
                return left
            return [*left, *(" " + name for name in left)]
        if not under_way:
            return []
        point = monitor.point()
        begun = point.partial_start
        if point.after_dot or not ({begun, begun - 1} & self._starts):
            return []
        return [name[len(under_way) :] for name in left if name.startswith(under_way)]

    def observe(self, point: TriggerPoint | None) -> None:
        if self.written.monitor.operand_start():
            self._starts.add(len(self.written.window) + len(self.written.text))

    def rewind(self, keep: int) -> None:
        end = len(self.written.window) + len(self.written.kept(keep))
        self._starts = {start for start in self._starts if start <= end}

    def quiet(self) -> bool:
        return not self._wanted()

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        wanted = [text for text in self._wanted() if text]
        if not wanted:
            return logits
        ids = first_tokens(
            wanted,
            context=self.written.line_context(),
            tokenize=self.tokenize,
            vocabulary=self.vocabulary,
        )
        if not len(ids):
            return logits
        return Bonus(ids, BONUS)(step.history, logits)
