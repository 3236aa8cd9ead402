"""What the tokens lexed so far leave open: brackets, and the statement and its next name."""

from __future__ import annotations

import copy
from typing import NamedTuple

from steerlsp.models.steering.lexing import StringState

_OPENERS = {")": "(", "]": "[", "}": "{"}


class Frame(NamedTuple):
    """One open bracket."""

    opener: str  # ( [ {
    offset: int
    kind: str  # call, subscript, group, params, bases, import, field
    chain_start: int  # where the expression this bracket belongs to starts
    callee: str
    arguments: int
    resume: StringState | None = None  # a field: the string it interrupts
    passed: bool = False  # the expression it belongs to is passed as a value (TriggerPoint)
    argument_start: int = -1  # where its current argument starts (after ``(`` or a comma)


class Brackets:
    """The brackets open at the end of the text, innermost last; ``len`` is the depth."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    def fork(self) -> Brackets:
        """An independent copy."""
        other = Brackets()
        other.frames = list(self.frames)
        return other

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def top(self) -> Frame | None:
        """The innermost open bracket."""
        return self.frames[-1] if self.frames else None

    def open(self, frame: Frame) -> None:
        """A bracket opens."""
        self.frames.append(frame)

    def close(self, closer: str) -> Frame | None:
        """Close the innermost bracket ``closer`` matches, and every one opened inside it.
        -> that bracket; None, closing nothing, where none matches (unbalanced text)."""
        opener = _OPENERS[closer]
        match = next(
            (i for i in range(len(self.frames) - 1, -1, -1) if self.frames[i].opener == opener),
            None,
        )
        if match is None:
            return None
        frame = self.frames[match]
        del self.frames[match:]
        return frame

    def comma(self, end: int) -> None:
        """A comma ending at ``end``, at the top level of the innermost bracket: one more
        argument, starting there."""
        top = self.top
        if top is not None:
            self.frames[-1] = top._replace(arguments=top.arguments + 1, argument_start=end)

    def calls(self) -> list[Frame]:
        """The open calls, outermost first."""
        return [frame for frame in self.frames if frame.kind == "call"]

    def innermost_call(self) -> Frame | None:
        """The innermost open call, also inside a literal in its arguments."""
        return next((frame for frame in reversed(self.frames) if frame.kind == "call"), None)


class Statement:
    """What the statement being lexed makes of the next name: one it binds (after
    ``def``, ``class``, ``as``, ``for`` or ``lambda``, or in a parameter list),
    where nothing is to be completed; the module or an imported name of an
    import; or else a name in an expression.

    The monitor tells it every token (``token``, then what the token was);
    ``end`` starts the next statement.
    """

    def __init__(self) -> None:
        self.tokens = 0  # tokens since the statement (or a block's ``:``) started
        self.binding_next = False  # the next name binds one
        self.defining: str | None = None  # def, class, def:named, class:named
        self.lambdas: list[int] = []  # bracket depths of lambdas whose parameters are open
        self.importing: str | None = None  # "from" (the module) or "names" (after import)
        self.import_expect = False  # a module or imported name may start here
        self.import_alias = False

    def fork(self) -> Statement:
        """An independent copy."""
        other = copy.copy(self)
        other.lambdas = list(self.lambdas)
        return other

    def token(self) -> None:
        """Any token: what a keyword announced applies to the next one only."""
        self.tokens += 1
        self.binding_next = False
        self.defining = None

    def keyword(self, word: str, first: bool, depth: int) -> None:
        """After ``token``: the keyword ``word``, ``first`` in its statement, at bracket
        depth ``depth``."""
        if word == "import":
            self.importing, self.import_expect, self.import_alias = "names", True, False
        elif word == "from" and first:
            self.importing, self.import_expect = "from", True
        elif word in ("def", "class"):
            self.binding_next = True
            self.defining = word
        elif word == "as":
            self.binding_next = True
            if self.importing:
                self.import_alias, self.import_expect = True, False
        elif word == "for":
            self.binding_next = True
        elif word == "lambda":
            self.binding_next = True
            self.lambdas.append(depth)

    def named(self, defining: str | None) -> None:
        """After ``token``: a name; ``defining`` is what ``defining`` was before it."""
        if defining in ("def", "class"):
            self.defining = f"{defining}:named"
        if self.importing:
            self.import_expect = False

    def comma(self, depth: int, bracket: str | None) -> None:
        """After ``token``: a comma at ``depth``, in a bracket of kind ``bracket`` (or none)."""
        self.binding_next = self.in_lambda(depth) or bracket == "params"
        if self.importing and bracket in (None, "import"):
            self.import_expect, self.import_alias = True, False

    def colon(self, depth: int) -> None:
        """After ``token``: a ``:`` at ``depth`` that does not start a format spec."""
        if self.in_lambda(depth):
            self.lambdas.pop()
        elif depth == 0:
            self.tokens = 0  # ``else: from x import y``

    def opened(self, bracket: str) -> None:
        """After ``token``: a bracket of kind ``bracket`` opened."""
        if bracket == "params":
            self.binding_next = True
        elif bracket == "import":
            self.import_expect = True

    def closed(self, depth: int) -> None:
        """Brackets closed down to ``depth``: lambdas opened inside them are over."""
        while self.lambdas and self.lambdas[-1] > depth:
            self.lambdas.pop()

    def in_lambda(self, depth: int) -> bool:
        """Whether a lambda's parameters are open at bracket depth ``depth``."""
        return bool(self.lambdas) and self.lambdas[-1] == depth

    def end(self) -> None:
        """The statement ended: the next one starts."""
        self.tokens = 0
        self.binding_next = False
        self.defining = None
        self.lambdas.clear()
        self.importing = None
        self.import_expect = self.import_alias = False
