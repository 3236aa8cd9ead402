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
The parts with state of their own sit beside this module: the text fed and the
string literal being read (``lexing.py``), the open brackets and what the
statement makes of the next name (``statement.py``); this one lexes code and says
where the text ends.

Offsets count code points (Python ``str`` indices) from the start of all the
text fed, the prefix included; not UTF-16 units, not lines.
"""

from __future__ import annotations

import copy
import keyword
import re
from dataclasses import dataclass
from enum import Enum

from steerlsp.models.steering.lexing import StringLexer, Text
from steerlsp.models.steering.statement import Brackets, Frame, Statement


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
    argument_start: int = -1  # offset where the current argument starts (after ``(`` or ``,``)


@dataclass(frozen=True)
class TriggerPoint:
    trigger: Trigger
    offset: int  # where the text ends
    partial: str  # the identifier written so far ("" right after a dot, a bracket, a keyword)
    partial_start: int  # where that identifier starts; == offset when it is empty
    after_dot: bool  # the identifier (or the end) follows a ``.``
    call: CallContext | None  # the innermost enclosing call, also inside a nested literal
    # The expression the dot continues is passed as a value where it stands: a
    # decorator (``@functools.``), a call's argument (``map(str.``) or keyword value
    # (``key=str.``), where a method is as often named as called.
    passed: bool = False


_CODE, _STRING, _COMMENT = "code", "string", "comment"
_KEYWORDS = frozenset(keyword.kwlist) - {"True", "False", "None"}
# Keywords an operand (a value) follows: ``return x``, ``a in x``, ``raise X``, ``except X``.
# Those that start a statement are rarely the start of a longer name: written and not
# yet ended (``return|``), they already say that an operand comes after a space.
_STATEMENT_OPERAND_KEYWORDS = frozenset(
    {"return", "yield", "await", "raise", "except", "assert", "elif", "while", "with"}
)
_OPERAND_KEYWORDS = _STATEMENT_OPERAND_KEYWORDS | {"in", "not", "and", "or", "is", "if", "else"}
_OPERAND_KEYWORDS |= {"from"}  # ``raise X from e``, ``yield from x`` (imports aside)
_STRING_PREFIXES = frozenset({"r", "u", "b", "br", "rb", "f", "fr", "rf"})
_EXPRESSION_ENDS = frozenset({"name", "string", "close"})
_DOTS = frozenset({"dot", "dot_bare"})
_WORD = re.compile(r"\w*")
_NUMBER = re.compile(r"[\w.]*")


class MonitorState:
    """The lexer's state at the end of the text fed so far; ``update`` feeds more.

    ``MonitorState().update(prefix)`` lexes the document's prefix once; each
    decode step then calls ``update(piece)`` with the newly decoded text and gets
    the trigger at the new end. ``fork()`` copies the state for a speculative
    continuation (a candidate being scored) without disturbing this one.
    """

    def __init__(self) -> None:
        self._text = Text()
        self._base = 0  # offset of the chunk being lexed
        self._mode = _CODE
        self._string = StringLexer()
        # the identifier or number being read
        self._ident: str | None = None
        self._ident_start = 0
        self._ident_prev = ""  # the token before it
        self._ident_binding = False  # it binds a new name: nothing to complete
        self._ident_module = False  # it is part of the module in ``from x``
        self._keyword = ""  # the last keyword, when the last token is one
        self._number = False
        # tokens
        self._last = ""  # kind of the last token: "" at a statement's start
        self._last_end = 0
        self._chain_start = 0  # start of the expression that the last token ends
        self._chain_passed = False  # that expression is passed as a value (TriggerPoint.passed)
        self._op = ""  # the operator characters of the last token, when it is one
        self._decorator = False  # the statement opened with ``@``
        self._brackets = Brackets()
        self._continuation = False  # a backslash: the next newline joins lines
        self._statement = Statement()
        # Offsets of the newlines that ended a statement (bracket depth 0, no backslash).
        self.statement_ends: list[int] = []

    @property
    def length(self) -> int:
        """How much text has been fed."""
        return self._text.length

    @property
    def context(self) -> str:
        """Where the text ends: ``"code"``, ``"string"`` or ``"comment"``.

        After ``""`` it says code: ended there, that is an empty string, even
        if one more quote would open a triple-quoted one.
        """
        if self._mode == _CODE and self._string.opening == 1:
            return _STRING
        return self._mode

    def fork(self) -> MonitorState:
        """An independent copy: feeding it leaves this state as it is."""
        other = copy.copy(self)
        other._string = copy.copy(self._string)
        other._text = self._text.fork()
        other._brackets = self._brackets.fork()
        other._statement = self._statement.fork()
        other.statement_ends = list(self.statement_ends)
        return other

    def update(self, text: str) -> TriggerPoint:
        """Lex ``text``, which continues what was fed before; the trigger where it now ends."""
        if text:
            self._base = self._text.append(text)
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
        end, frame = self._text.length, self._brackets.innermost_call()
        call = (
            CallContext(frame.callee, frame.arguments, frame.offset, frame.argument_start)
            if frame
            else None
        )
        none = TriggerPoint(Trigger.NONE, end, "", end, False, call)
        if self._mode != _CODE or self._string.opening or self._number:
            return none
        if self._statement.importing:
            return self._import_point(call) or none
        if self._ident is not None:
            if self._ident_binding:
                return none
            after_dot = self._ident_prev == "dot"
            passed = after_dot and self._chain_passed
            return TriggerPoint(
                Trigger.INSIDE_IDENTIFIER,
                end,
                self._ident,
                self._ident_start,
                after_dot,
                call,
                passed,
            )
        if self._last == "dot" and self._last_end == end:
            passed = self._chain_passed
            return TriggerPoint(Trigger.COMPLETIONS_AFTER_DOT, end, "", end, True, call, passed)
        top = self._brackets.top
        if top and top.kind == "call" and self._last in ("open", "comma"):
            return TriggerPoint(Trigger.CALL_ARGUMENT, end, "", end, False, call)
        return none

    def open_brackets(self) -> str:
        """The brackets open where the text ends, outermost first (an f-string's field
        counts as its ``{``)."""
        return "".join(frame.opener for frame in self._brackets.frames)

    def after_string(self) -> str | None:
        """Where the text ends right after a string literal, in code: "" just after its
        closing quote (spaces and tabs aside), or the word begun there and under way
        (``"a" i``); None anywhere else. What comes next continues an expression that
        ends in a string."""
        if self._mode != _CODE or self._string.opening or self._number:
            return None
        if self._ident is not None:
            return self._ident if self._ident_prev == "string" else None
        if self._last != "string":
            return None
        return None if self._text.slice(self._last_end, self._text.length).strip(" \t") else ""

    def in_format_spec(self) -> bool:
        """The text ends in an f-string field's format spec (``f"{x:>``), outside any field
        of its own: text, where ``#`` is the alternate form."""
        return self._mode == _STRING and self._string.spec

    def operand_start(self) -> bool:
        """Whether a name read as a value may start where the text ends, maybe after a
        space: after ``return``, an operator, ``(``, ``,``, ``in`` or ``raise``, also with
        a statement's keyword just written and not yet ended (``return|``). False in a string or
        comment, inside a name or number, after a dot, at a statement's start, after a
        block's or an annotation's ``:``, where a name is bound (``def f(``, ``as``,
        ``for x``) or imported."""
        if self._mode != _CODE or self._string.opening or self._number:
            return False
        if self._statement.importing:
            return False
        if self._ident is not None:
            return (
                self._ident in _STATEMENT_OPERAND_KEYWORDS
                and self._ident_prev != "dot"
                and not self._ident_binding
            )
        if self._statement.binding_next:
            return False
        if self._last == "keyword":
            return self._keyword in _OPERAND_KEYWORDS
        if self._last == "op" and not self._op:  # ``:``, ``;`` or a stray closer
            colon = self._text.slice(self._last_end - 1, self._last_end) == ":"
            return colon and bool(self._brackets)  # a dict's value, a slice, a lambda's body
        return self._last in ("op", "open", "comma")

    def name_under_way(self) -> str | None:
        """The name being written where the text ends, in code (after a dot or not, a
        keyword so far included); None when the text does not end in one."""
        if self._mode != _CODE or self._string.opening:
            return None
        return self._ident

    def field_quotes(self) -> str | None:
        """Inside an f-string's replacement field (its code, a string nested in it, or its
        format spec): the quotes of the single-quoted f-strings around the text, which a
        field may not hold before Python 3.12; None outside any field. A nested string the
        text is in keeps its own quote: its author chose Python 3.12's nesting."""
        fields = [frame.resume for frame in self._brackets.frames if frame.resume is not None]
        if not fields:
            return None
        quotes = "".join(dict.fromkeys(resume.quote for resume in fields if not resume.triple))
        nested = self._string.opening or (self._mode == _STRING and not self._string.spec)
        return quotes.replace(self._string.quote, "") if nested else quotes

    def open_calls(self) -> tuple[int, ...]:
        """Offsets of the ``(`` of every call still open, outermost first."""
        return tuple(frame.offset for frame in self._brackets.calls())

    def _import_point(self, call: CallContext | None) -> TriggerPoint | None:
        end = self._text.length
        if self._ident is not None:
            importing = self._statement.importing
            module_part = self._ident_module if importing == "from" else not self._ident_binding
            if not module_part:
                return None
            after_dot = self._ident_prev in _DOTS
            return TriggerPoint(
                Trigger.IMPORT_NAME, end, self._ident, self._ident_start, after_dot, call
            )
        if not self._statement.import_expect or self._statement.import_alias:
            return None
        after_dot = self._last in _DOTS and self._last_end == end
        return TriggerPoint(Trigger.IMPORT_NAME, end, "", end, after_dot, call)

    # --- lexing ---------------------------------------------------------------------

    def _lex_string(self, text: str, index: int) -> int:
        index, event, at = self._string.scan(text, index, self._base)
        if event == "field":
            self._open_field(at)
        elif event == "close":
            self._close("}", at)
        elif event == "end":
            self._end_string(at)
        return index

    def _lex_code(self, text: str, index: int) -> int:
        char = text[index]
        position = self._base + index
        if self._string.opening:
            return self._lex_opening(char, index, position)
        if self._ident is not None:
            if char.isalnum() or char == "_":
                run = _WORD.match(text, index).end()  # type: ignore[union-attr]
                self._ident += text[index:run]
                return run
            if char in "'\"" and self._ident.lower() in _STRING_PREFIXES:
                start, prefix = self._ident_start, self._ident.lower()
                self._ident = None
                self._string.begin(start, char, self._last, fstring="f" in prefix)
                return index + 1
            self._end_identifier(position)
        if self._number:
            if char.isalnum() or char in "._":
                return _NUMBER.match(text, index).end()  # type: ignore[union-attr]
            self._number = False
        if char in " \t\r\f":
            if self._statement.importing == "from" and self._last in _DOTS:
                self._statement.import_expect = False  # ``from . import``: the keyword follows
            return index + 1
        if char == "\n":
            if self._continuation:
                self._continuation = False
            elif not self._brackets:
                self._end_statement()
                self.statement_ends.append(self._base + index)
            return index + 1
        self._continuation = False
        if char == "\\":
            self._continuation = True
        elif char == "#":
            self._mode = _COMMENT
        elif char in "'\"":
            self._string.begin(position, char, self._last)
        elif char.isidentifier():
            self._ident = char
            self._ident_start = position
            self._ident_prev = self._last
            self._ident_binding = self._statement.binding_next
            importing, expect = self._statement.importing, self._statement.import_expect
            self._ident_module = importing == "from" and expect
        elif char.isdigit():
            self._token("number", position + 1)
            self._number = True
        else:
            self._punctuation(char, position)
        return index + 1

    def _lex_opening(self, char: str, index: int, position: int) -> int:
        """After one or two quotes: a one-line string, an empty one, or a triple-quoted one."""
        consumed, opened = self._string.opened(char)
        if opened == "string":
            self._mode = _STRING
        elif opened == "empty":
            self._end_string(position)
        return index + 1 if consumed else index  # else lexed again in the mode now current

    def _open_field(self, position: int) -> None:
        """A replacement field opens at ``position``: code until its ``}``."""
        resume = self._string.suspend()
        self._mode = _CODE
        self._brackets.open(Frame("{", position, "field", position + 1, "", 0, resume))
        self._token("open", position + 1)

    def _end_string(self, end: int) -> None:
        self._mode = _CODE
        if self._string.previous != "string":  # "a" "b" is one expression
            self._chain_start = self._string.start
            self._chain_passed = self._passes(self._string.previous)
        self._token("string", end)

    def _token(self, kind: str, end: int) -> None:
        self._last = kind
        self._last_end = end
        self._op = ""
        self._statement.token()

    def _passes(self, previous: str) -> bool:
        """Whether an expression that starts after a token of kind ``previous`` is passed
        as a value: right after a statement's ``@``, or as a call's argument."""
        if previous == "op" and self._op == "@":
            return self._decorator
        top = self._brackets.top
        if top is None or top.kind != "call":
            return False
        return previous in ("open", "comma") or (previous == "op" and self._op == "=")

    def _end_identifier(self, end: int) -> None:
        word, start, previous = self._ident or "", self._ident_start, self._last
        self._ident = None
        if word in _KEYWORDS and previous != "dot":
            first = self._statement.tokens == 0
            self._token("keyword", end)
            self._keyword = word
            self._statement.keyword(word, first, len(self._brackets))
            return
        defining = self._statement.defining
        if previous != "dot":
            self._chain_start = start
            self._chain_passed = self._passes(previous)
        self._token("name", end)
        self._statement.named(defining)

    def _end_statement(self) -> None:
        self._last = ""
        self._decorator = False
        self._statement.end()

    def _punctuation(self, char: str, position: int) -> None:
        end = position + 1
        top, depth = self._brackets.top, len(self._brackets)
        if char in "([{":
            self._open(char, position)
        elif char in ")]}":
            self._close(char, end)
        elif char == ",":
            self._token("comma", end)
            self._brackets.comma(end)
            self._statement.comma(depth, top.kind if top is not None else None)
        elif char == ".":
            self._token("dot" if self._last in _EXPRESSION_ENDS else "dot_bare", end)
            if self._statement.importing:
                self._statement.import_expect = True
        elif char == ";":
            self._token("op", end)
            if not self._brackets:
                self._end_statement()
        elif char == ":":
            self._token("op", end)
            if top is not None and top.kind == "field" and not self._statement.in_lambda(depth):
                self._enter_spec(top)
            else:
                self._statement.colon(depth)
        else:
            # ``*args`` and ``**kwargs`` still bind a name
            binding = self._statement.binding_next and char in "*/"
            joined = self._op if self._last == "op" and self._last_end == position else ""
            if char == "@" and self._statement.tokens == 0:
                self._decorator = True
            self._token("op", end)
            self._op = joined + char  # ``==`` is not a keyword argument's ``=``
            self._statement.binding_next = binding

    def _open(self, char: str, position: int) -> None:
        state = self._statement.defining
        chain, callee, passed = position, "", self._passes(self._last)
        if char == "(" and state == "def:named":
            kind = "params"
        elif char == "(" and state == "class:named":
            kind = "bases"
        elif char == "(" and self._statement.importing == "names":
            kind = "import"
        elif char != "{" and self._last in _EXPRESSION_ENDS:
            kind = "call" if char == "(" else "subscript"
            chain, passed = self._chain_start, self._chain_passed
            if kind == "call":
                callee = self._text.slice(chain, position).strip()
        else:
            kind = "group"
        self._brackets.open(
            Frame(
                char, position, kind, chain, callee, 0, passed=passed, argument_start=position + 1
            )
        )
        self._token("open", position + 1)
        self._statement.opened(kind)

    def _close(self, char: str, end: int) -> None:
        frame = self._brackets.close(char)
        if frame is None:  # unbalanced: ignore it rather than lose the brackets still open
            self._token("op", end)
            return
        self._statement.closed(len(self._brackets))
        if frame.resume is not None:  # a replacement field ends
            self._token("op", end)
            self._mode = _STRING
            self._string.resume(frame.resume)
            return
        expression = frame.kind in ("call", "subscript", "group")
        self._token("close" if expression else "op", end)
        self._chain_start, self._chain_passed = frame.chain_start, frame.passed

    def _enter_spec(self, field: Frame) -> None:
        """``:`` at a field's top level: its format spec, a string up to the field's ``}``."""
        assert field.resume is not None
        self._mode = _STRING
        self._string.enter_spec(field.resume)
