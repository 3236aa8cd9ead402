"""Trigger points in the text the model is writing: where the language server has something to say.

The decode loop feeds the monitor the decoded text, the document's prefix once and
then each generated piece, and after every piece asks where the text now ends:

- ``COMPLETIONS_AFTER_DOT``: right after a ``.`` that follows an expression
  (a name, ``)``, ``]``, ``}`` or a string), not after a number (``1.``), in
  ``...`` or in an import;
- ``INSIDE_IDENTIFIER``: inside a name being written (after a dot or not),
  with the part written so far; not a name being bound (``def f``, ``as x``,
  a parameter), where there is nothing to complete;
- ``CALL_ARGUMENT``: right after the ``(`` or a ``,`` of a call, with the callee
  and the argument's index;
- ``IMPORT_NAME``: where a module or imported name goes (``import ``,
  ``from x import ``, ``from ``, ``import os.pa``);
- ``NONE``: in a string or a comment, or anywhere else.

The lexer knows strings (quotes, triple quotes, prefixes, escapes), the
replacement fields of f-strings (``f"{user.``: code, so a trigger, up to the
``}`` or the format spec's ``:``; ``{{`` is a brace; a quote inside a field
opens a nested string, as Python 3.12 reads it),
comments, brackets and line continuations. It is not a parser: code it
cannot read yields NONE.
It is incremental: ``update`` lexes only the new text, whatever the length of
what came before, so the prefix is lexed once per completion.

Offsets count code points (Python ``str`` indices) from the start of all the
text fed, the prefix included; not UTF-16 units, not lines.
"""

from __future__ import annotations

import copy
import keyword
import re
from bisect import bisect_right
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple


class Trigger(Enum):
    NONE = "none"
    COMPLETIONS_AFTER_DOT = "completions_after_dot"
    INSIDE_IDENTIFIER = "inside_identifier"
    CALL_ARGUMENT = "call_argument"
    IMPORT_NAME = "import_name"


@dataclass(frozen=True)
class CallContext:
    """The innermost call the text ends in: ``a.b(c, d`` -> callee ``a.b``, argument 1."""

    callee: str  # the callee expression's source text, stripped
    argument_index: int  # 0-based: the number of top-level commas so far
    open_bracket: int  # offset of the call's ``(``


@dataclass(frozen=True)
class TriggerPoint:
    trigger: Trigger
    offset: int  # where the text ends
    partial: str  # the identifier written so far ("" right after a dot, a bracket, a keyword)
    partial_start: int  # where that identifier starts; == offset when it is empty
    after_dot: bool  # the identifier (or the end) follows a ``.``
    call: CallContext | None  # the innermost enclosing call, also inside a nested literal


_CODE, _STRING, _COMMENT = "code", "string", "comment"
_KEYWORDS = frozenset(keyword.kwlist) - {"True", "False", "None"}
_STRING_PREFIXES = frozenset({"r", "u", "b", "br", "rb", "f", "fr", "rf"})
_EXPRESSION_ENDS = frozenset({"name", "string", "close"})
_DOTS = frozenset({"dot", "dot_bare"})
_WORD = re.compile(r"\w*")
_NUMBER = re.compile(r"[\w.]*")
_STRING_STOPS = {
    (q, braces): re.compile(rf"[\\\n{q}{'{}' if braces else ''}]")
    for q in "'\""
    for braces in (False, True)
}
_OPENERS = {")": "(", "]": "[", "}": "{"}


class _StringState(NamedTuple):
    """The f-string a replacement field interrupts, to resume at its ``}``."""

    quote: str
    triple: bool
    start: int
    previous: str  # the token before the string
    spec: bool  # the field sits in a format spec: ``f"{x:>{width}}"``


class _Frame(NamedTuple):
    opener: str  # ( [ {
    offset: int
    kind: str  # call, subscript, group, params, bases, import, field
    chain_start: int  # where the expression this bracket belongs to starts
    callee: str
    arguments: int
    resume: _StringState | None = None  # a field: the string it interrupts


class MonitorState:
    """The lexer's state at the end of the text fed so far; ``update`` feeds more.

    ``MonitorState().update(prefix)`` lexes the document's prefix once; each
    decode step then calls ``update(piece)`` with the newly decoded text and gets
    the trigger at the new end. ``fork()`` copies the state for a speculative
    continuation (a candidate being scored) without disturbing this one.
    """

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._starts: list[int] = []
        self._length = 0
        self._base = 0  # offset of the chunk being lexed
        self._mode = _CODE
        # string
        self._quote = '"'
        self._triple = False
        self._escape = False
        self._quote_run = 0  # closing quotes seen in a row, in a triple-quoted string
        self._opening = 0  # quotes seen that open a string not yet known to be triple
        self._string_start = 0
        self._string_prev = ""
        self._fstring = False  # the string has replacement fields
        self._spec = False  # in a field's format spec, which ends at the field's ``}``
        self._brace = False  # a ``{`` was seen in an f-string: a field, or ``{{``
        # the identifier or number being read
        self._ident: str | None = None
        self._ident_start = 0
        self._ident_prev = ""  # the token before it
        self._ident_binding = False  # it binds a new name: nothing to complete
        self._ident_module = False  # it is part of the module in ``from x``
        self._number = False
        # tokens
        self._last = ""  # kind of the last token: "" at a statement's start
        self._last_end = 0
        self._chain_start = 0  # start of the expression that the last token ends
        self._frames: list[_Frame] = []
        self._continuation = False  # a backslash: the next newline joins lines
        # the statement
        self._line_tokens = 0
        self._binding_next = False
        self._def_state: str | None = None  # def, class, def:named, class:named
        self._lambdas: list[int] = []  # bracket depths of lambdas whose parameters are open
        self._import: str | None = None  # "from" (the module) or "names" (after import)
        self._import_expect = False  # a module or imported name may start here
        self._import_alias = False
        # Offsets of the newlines that ended a statement (bracket depth 0, no backslash).
        self.statement_ends: list[int] = []

    @property
    def length(self) -> int:
        """How much text has been fed."""
        return self._length

    @property
    def context(self) -> str:
        """Where the text ends: ``"code"``, ``"string"`` or ``"comment"``.

        After ``""`` it says code: ended there, that is an empty string, even
        if one more quote would open a triple-quoted one.
        """
        if self._mode == _CODE and self._opening == 1:
            return _STRING
        return self._mode

    def fork(self) -> MonitorState:
        """An independent copy: feeding it leaves this state as it is."""
        other = copy.copy(self)
        other._chunks = list(self._chunks)
        other._starts = list(self._starts)
        other._frames = list(self._frames)
        other._lambdas = list(self._lambdas)
        other.statement_ends = list(self.statement_ends)
        return other

    def update(self, text: str) -> TriggerPoint:
        """Lex ``text``, which continues what was fed before; the trigger where it now ends."""
        if text:
            self._chunks.append(text)
            self._starts.append(self._length)
            self._base = self._length
            self._length += len(text)
            index, end = 0, len(text)
            while index < end:
                if self._mode == _STRING:
                    index = self._lex_string(text, index)
                elif self._mode == _COMMENT:
                    newline = text.find("\n", index)
                    if newline < 0:
                        break
                    self._mode = _CODE
                    index = newline
                else:
                    index = self._lex_code(text, index)
        return self.point()

    def point(self) -> TriggerPoint:
        """The trigger at the end of the text fed so far."""
        end = self._length
        call = self._call()
        none = TriggerPoint(Trigger.NONE, end, "", end, False, call)
        if self._mode != _CODE or self._opening or self._number:
            return none
        if self._import:
            return self._import_point(call) or none
        if self._ident is not None:
            if self._ident_binding:
                return none
            after_dot = self._ident_prev == "dot"
            return TriggerPoint(
                Trigger.INSIDE_IDENTIFIER, end, self._ident, self._ident_start, after_dot, call
            )
        if self._last == "dot" and self._last_end == end:
            return TriggerPoint(Trigger.COMPLETIONS_AFTER_DOT, end, "", end, True, call)
        top = self._frames[-1] if self._frames else None
        if top and top.kind == "call" and self._last in ("open", "comma"):
            return TriggerPoint(Trigger.CALL_ARGUMENT, end, "", end, False, call)
        return none

    def open_calls(self) -> tuple[int, ...]:
        """Offsets of the ``(`` of every call still open, outermost first."""
        return tuple(frame.offset for frame in self._frames if frame.kind == "call")

    # --- reporting ------------------------------------------------------------------

    def _call(self) -> CallContext | None:
        for frame in reversed(self._frames):
            if frame.kind == "call":
                return CallContext(frame.callee, frame.arguments, frame.offset)
        return None

    def _import_point(self, call: CallContext | None) -> TriggerPoint | None:
        end = self._length
        if self._ident is not None:
            module_part = self._ident_module if self._import == "from" else not self._ident_binding
            if not module_part:
                return None
            after_dot = self._ident_prev in _DOTS
            return TriggerPoint(
                Trigger.IMPORT_NAME, end, self._ident, self._ident_start, after_dot, call
            )
        if not self._import_expect or self._import_alias:
            return None
        after_dot = self._last in _DOTS and self._last_end == end
        return TriggerPoint(Trigger.IMPORT_NAME, end, "", end, after_dot, call)

    # --- lexing ---------------------------------------------------------------------

    def _slice(self, start: int, end: int) -> str:
        if end <= start:
            return ""
        index = bisect_right(self._starts, start) - 1
        parts = []
        while index < len(self._chunks) and self._starts[index] < end:
            chunk_start = self._starts[index]
            parts.append(self._chunks[index][max(start - chunk_start, 0) : end - chunk_start])
            index += 1
        return "".join(parts)

    def _lex_string(self, text: str, index: int) -> int:
        if self._escape:
            self._escape = False
            self._quote_run = 0
            return index + 1
        if self._brace:
            self._brace = False
            if text[index] == "{" and not self._spec:  # ``{{``: a literal brace
                return index + 1
            self._open_field(self._base + index - 1)
            return index  # lexed again as code
        stop = _STRING_STOPS[self._quote, self._fstring].search(text, index)
        if stop is None:
            self._quote_run = 0
            return len(text)
        at = stop.start()
        if at > index:
            self._quote_run = 0
        char = text[at]
        if char == "\\":
            self._escape = True
            return at + 1
        if char == "{":
            self._brace, self._quote_run = True, 0
            return at + 1
        if char == "}":
            self._quote_run = 0
            if self._spec:  # the end of the field whose format spec this is
                self._close("}", self._base + at + 1)
            return at + 1  # else ``}}``, or a stray brace, is text
        if char == "\n":
            if self._triple:
                self._quote_run = 0
                return at + 1
            self._end_string(self._base + at)  # unterminated: the newline ends it
            return at
        if not self._triple:
            self._end_string(self._base + at + 1)
            return at + 1
        self._quote_run += 1
        if self._quote_run == 3:
            self._end_string(self._base + at + 1)
        return at + 1

    def _lex_code(self, text: str, index: int) -> int:
        char = text[index]
        position = self._base + index
        if self._opening:
            return self._lex_opening(char, index, position)
        if self._ident is not None:
            if char.isalnum() or char == "_":
                run = _WORD.match(text, index).end()  # type: ignore[union-attr]
                self._ident += text[index:run]
                return run
            if char in "'\"" and self._ident.lower() in _STRING_PREFIXES:
                start, prefix = self._ident_start, self._ident.lower()
                self._ident = None
                self._start_string(start, char, fstring="f" in prefix)
                return index + 1
            self._end_identifier(position)
        if self._number:
            if char.isalnum() or char in "._":
                return _NUMBER.match(text, index).end()  # type: ignore[union-attr]
            self._number = False
        if char in " \t\r\f":
            if self._import == "from" and self._last in _DOTS:
                self._import_expect = False  # ``from . import``: what follows is the keyword
            return index + 1
        if char == "\n":
            if self._continuation:
                self._continuation = False
            elif not self._frames:
                self._end_statement()
                self.statement_ends.append(self._base + index)
            return index + 1
        self._continuation = False
        if char == "\\":
            self._continuation = True
        elif char == "#":
            self._mode = _COMMENT
        elif char in "'\"":
            self._start_string(position, char)
        elif char.isidentifier():
            self._ident = char
            self._ident_start = position
            self._ident_prev = self._last
            self._ident_binding = self._binding_next
            self._ident_module = self._import == "from" and self._import_expect
        elif char.isdigit():
            self._token("number", position + 1)
            self._number = True
        else:
            self._punctuation(char, position)
        return index + 1

    def _lex_opening(self, char: str, index: int, position: int) -> int:
        """After one or two quotes: a one-line string, an empty one, or a triple-quoted one."""
        if char == self._quote:
            if self._opening == 1:
                self._opening = 2
            else:
                self._opening = 0
                self._mode, self._triple, self._quote_run = _STRING, True, 0
            return index + 1
        if self._opening == 1:
            self._opening = 0
            self._mode, self._triple, self._escape = _STRING, False, False
        else:
            self._opening = 0
            self._end_string(position)
        return index  # lexed again in the mode now current

    def _start_string(self, start: int, quote: str, *, fstring: bool = False) -> None:
        self._opening = 1
        self._quote = quote
        self._string_start = start
        self._string_prev = self._last
        self._fstring = fstring
        self._spec = False

    def _open_field(self, position: int) -> None:
        """A replacement field opens at ``position``: code until its ``}``."""
        resume = _StringState(
            self._quote, self._triple, self._string_start, self._string_prev, self._spec
        )
        self._mode, self._spec, self._quote_run = _CODE, False, 0
        self._frames.append(_Frame("{", position, "field", position + 1, "", 0, resume))
        self._token("open", position + 1)

    def _resume_string(self, resume: _StringState) -> None:
        """Back in the f-string (or its format spec) after a field's ``}``."""
        self._mode, self._fstring, self._escape, self._quote_run = _STRING, True, False, 0
        self._quote, self._triple, self._spec = resume.quote, resume.triple, resume.spec
        self._string_start, self._string_prev = resume.start, resume.previous

    def _end_string(self, end: int) -> None:
        self._mode = _CODE
        if self._string_prev != "string":  # "a" "b" is one expression
            self._chain_start = self._string_start
        self._token("string", end)

    def _token(self, kind: str, end: int) -> None:
        self._last = kind
        self._last_end = end
        self._line_tokens += 1
        self._binding_next = False
        self._def_state = None

    def _end_identifier(self, end: int) -> None:
        word, start, previous = self._ident or "", self._ident_start, self._last
        self._ident = None
        if word in _KEYWORDS and previous != "dot":
            self._keyword(word, end)
            return
        defining = self._def_state
        if previous != "dot":
            self._chain_start = start
        self._token("name", end)
        if defining in ("def", "class"):
            self._def_state = f"{defining}:named"
        if self._import:
            self._import_expect = False

    def _keyword(self, word: str, end: int) -> None:
        first = self._line_tokens == 0
        self._token("keyword", end)
        if word == "import":
            self._import, self._import_expect, self._import_alias = "names", True, False
        elif word == "from" and first:
            self._import, self._import_expect = "from", True
        elif word in ("def", "class"):
            self._binding_next = True
            self._def_state = word
        elif word == "as":
            self._binding_next = True
            if self._import:
                self._import_alias, self._import_expect = True, False
        elif word == "for":
            self._binding_next = True
        elif word == "lambda":
            self._binding_next = True
            self._lambdas.append(len(self._frames))

    def _end_statement(self) -> None:
        self._last = ""
        self._line_tokens = 0
        self._binding_next = False
        self._def_state = None
        self._lambdas.clear()
        self._import = None
        self._import_expect = self._import_alias = False

    def _punctuation(self, char: str, position: int) -> None:
        end = position + 1
        top = self._frames[-1] if self._frames else None
        depth = len(self._frames)
        if char in "([{":
            self._open(char, position)
        elif char in ")]}":
            self._close(char, end)
        elif char == ",":
            self._token("comma", end)
            if top is not None:
                self._frames[-1] = top._replace(arguments=top.arguments + 1)
            in_lambda = bool(self._lambdas) and self._lambdas[-1] == depth
            self._binding_next = in_lambda or (top is not None and top.kind == "params")
            if self._import and (top is None or top.kind == "import"):
                self._import_expect, self._import_alias = True, False
        elif char == ".":
            self._token("dot" if self._last in _EXPRESSION_ENDS else "dot_bare", end)
            if self._import:
                self._import_expect = True
        elif char == ";":
            self._token("op", end)
            if not self._frames:
                self._end_statement()
        elif char == ":":
            self._token("op", end)
            in_lambda = bool(self._lambdas) and self._lambdas[-1] == depth
            if top is not None and top.kind == "field" and not in_lambda:
                self._enter_spec(top)
            elif self._lambdas and self._lambdas[-1] == depth:
                self._lambdas.pop()
            elif depth == 0:
                self._line_tokens = 0  # ``else: from x import y``
        else:
            # ``*args`` and ``**kwargs`` still bind a name
            binding = self._binding_next and char in "*/"
            self._token("op", end)
            self._binding_next = binding

    def _open(self, char: str, position: int) -> None:
        state = self._def_state
        chain, callee = position, ""
        if char == "(" and state == "def:named":
            kind = "params"
        elif char == "(" and state == "class:named":
            kind = "bases"
        elif char == "(" and self._import == "names":
            kind = "import"
        elif char != "{" and self._last in _EXPRESSION_ENDS:
            kind = "call" if char == "(" else "subscript"
            chain = self._chain_start
            if kind == "call":
                callee = self._slice(chain, position).strip()
        else:
            kind = "group"
        self._frames.append(_Frame(char, position, kind, chain, callee, 0))
        self._token("open", position + 1)
        if kind == "params":
            self._binding_next = True
        elif kind == "import":
            self._import_expect = True

    def _close(self, char: str, end: int) -> None:
        opener = _OPENERS[char]
        match = next(
            (i for i in range(len(self._frames) - 1, -1, -1) if self._frames[i].opener == opener),
            None,
        )
        if match is None:  # unbalanced: ignore it rather than lose the brackets still open
            self._token("op", end)
            return
        frame = self._frames[match]
        del self._frames[match:]
        while self._lambdas and self._lambdas[-1] > len(self._frames):
            self._lambdas.pop()
        if frame.resume is not None:  # a replacement field ends
            self._token("op", end)
            self._resume_string(frame.resume)
            return
        expression = frame.kind in ("call", "subscript", "group")
        self._token("close" if expression else "op", end)
        self._chain_start = frame.chain_start

    def _enter_spec(self, field: _Frame) -> None:
        """``:`` at a field's top level: its format spec, text up to the field's ``}``
        (which :meth:`_lex_string` closes), with fields of its own."""
        assert field.resume is not None
        self._mode, self._spec, self._fstring = _STRING, True, True
        self._quote, self._triple = field.resume.quote, field.resume.triple
        self._escape = self._brace = False


def trigger_at(text: str) -> TriggerPoint:
    """The trigger at the end of ``text``, lexed in one go."""
    return MonitorState().update(text)
