"""Three ways a string literal breaks the code: a word glued to its end, a name run into
its opening quote, and an f-string's field that ends the f-string.

- **After a string.** A string literal may be followed by an operator, a bracket,
  a comma, another string (``"a" f"b"``), or a keyword that continues the
  expression (``"a" if x else "b"``, ``"a" in s``, ``for`` in a comprehension,
  ``as`` in ``case "a" as x:``).
  Never by a name or a number: ``"${context.get("name")}"`` closed the string at
  ``get("`` and went on with ``name``, a syntax error the completion would carry
  into the file. Right after a string (spaces and tabs aside), the tokens whose
  first word is neither such a keyword nor a string prefix before a quote are
  ruled out (:class:`AfterString`); and while a word begun there is under way,
  the tokens that would make it anything else.
- **Before a string.** The mirror case: a name may not run into a quote
  (``is-template-name")}"``), unless the name is a string prefix (``f"``) or a
  keyword (``return"a"``, ``if"a"``). While a name is being written, the tokens
  that would open a string right after it are ruled out (:class:`QuoteAfterName`).
- **Inside an f-string's field.** Before Python 3.12 (PEP 701), a replacement
  field may not hold the quote its f-string is delimited by (the f-string ends
  there: ``f"Invalid: {form.get("email")}"`` does not parse on 3.11), a
  backslash, or a ``#``. Inside a field, tokens holding any of them are ruled out
  (:class:`FieldCharacters`), whatever the project's version: the f-string then
  parses the same on every Python 3, and the model writes ``form.get('email')``.
  For a triple-quoted f-string only the backslash and ``#`` are ruled out (one
  quote does not end it); in a field's format spec, which is text
  (``f"{n:#x}"``), only the quotes.

All three are pure masks over token sets indexed once per vocabulary
(:class:`StringTables`).
"""

from __future__ import annotations

import itertools
import keyword
import re
from collections.abc import Sequence

import torch

from steerlsp.models.steering.processors.base import LogitsProcessor, rule_out

# The keywords that may follow a string literal: within an expression or a comprehension,
# and ``as`` after a literal pattern (``case "a" as x:``).
FOLLOWERS = frozenset({"if", "else", "for", "async", "in", "not", "is", "and", "or", "as"})
STRING_PREFIXES = frozenset({"r", "u", "b", "f", "br", "rb", "fr", "rf"})  # any case
# What a field of a single-quoted f-string must not hold, by its quote, before PEP 701.
FIELD_CHARACTERS = ("'", '"', "\\", "#")
_STARTS = frozenset(k[:i] for k in FOLLOWERS for i in range(1, len(k) + 1))
_PREFIX_STARTS = frozenset(p[:i] for p in STRING_PREFIXES for i in range(1, len(p) + 1))
# Every piece of a follower or a prefix: the words a token may add to a word under way.
_PIECES = frozenset(
    word[i:j].lower()
    for word in (*FOLLOWERS, *STRING_PREFIXES)
    for i in range(len(word))
    for j in range(i + 1, len(word) + 1)
)
_WORD = re.compile(r"\w*")
# The words a quote may follow: string prefixes (any case), keywords and soft keywords.
_BEFORE_QUOTE = frozenset(
    {
        *(kw for kw in keyword.kwlist if kw not in ("True", "False", "None")),
        *(kw for kw in keyword.softkwlist if kw != "_"),
        *(
            "".join(chars)
            for prefix in STRING_PREFIXES
            for chars in itertools.product(*((c, c.upper()) for c in prefix))
        ),
    }
)


def _follows(word: str, rest: str) -> bool:
    """Whether a token made of ``word`` and then ``rest`` may come right after a string."""
    if not word:
        return True
    if not rest:  # the word may go on in the next token
        return word in _STARTS or word.lower() in _PREFIX_STARTS
    if rest[0] in "'\"":  # a prefixed string, or a keyword before a string (``if"b"``)
        return word.lower() in STRING_PREFIXES or word in FOLLOWERS
    return word in FOLLOWERS


def may_follow_a_string(text: str) -> bool:
    """Whether the token ``text`` may come right after a string literal's closing quote.

    Its first word (after spaces and tabs) must be a keyword of :data:`FOLLOWERS` or a
    string prefix before a quote; a token that ends inside its first word may also be
    the start of one (``i`` of ``if``, ``f`` of ``f"``). A token with no word first
    (``)``, `` +``, ``,``, ``\\n``) is left to the other stages."""
    text = text.lstrip(" \t")
    word = _WORD.match(text).group()  # type: ignore[union-attr]
    return _follows(word, text[len(word) :])


class StringTables:
    """The token sets the processors mask, indexed once per vocabulary: [V] bool masks for
    the large ones, sorted ids for the sparse ones."""

    def __init__(self, texts: Sequence[str]) -> None:
        size = len(texts)
        glued, worded, empty = [], [], []
        quoted: list[int] = []
        holding: dict[str, list[int]] = {char: [] for char in FIELD_CHARACTERS}
        self._pieces: list[tuple[int, str, str]] = []  # (id, its first word, the rest)
        quoting: dict[str, list[int]] = {}  # a word and then a quote: the word -> ids
        for token, text in enumerate(texts):
            if not text:
                empty.append(token)
                continue
            word = _WORD.match(text).group()  # type: ignore[union-attr]
            if word:
                worded.append(token)
                rest = text[len(word) :]
                if len(word) > 5 or not _follows(word, rest):
                    glued.append(token)
                if word.lower() in _PIECES:
                    self._pieces.append((token, word, rest))
                if rest[:1] in ("'", '"'):
                    quoting.setdefault(word, []).append(token)
            elif text[0] in " \t":
                if not may_follow_a_string(text):
                    glued.append(token)
            elif text[0] in "'\"":
                quoted.append(token)
            for char in FIELD_CHARACTERS:
                if char in text:
                    holding[char].append(token)
        self.size = size
        self.glued = _mask(size, glued)
        self.worded = _mask(size, worded)  # tokens that go on a word under way
        self.quoted = _mask(size, quoted)
        self.empty = _mask(size, empty)  # special tokens: never ruled out here
        self.holding = {char: _mask(size, ids) for char, ids in holding.items()}
        self._quoting = quoting
        # A quote, or a word and a quote, after a name that is no prefix of a keyword or a
        # string prefix: the mask of most names being written.
        self.quoting = _ids(self.quoted | _mask(size, [t for ids in quoting.values() for t in ids]))
        self._field: dict[str, torch.Tensor] = {}
        self._after: dict[str, torch.Tensor] = {}
        self._before: dict[str, torch.Tensor] = {}

    def before_quote(self, name: str) -> torch.Tensor:
        """What may not come next while ``name`` is being written: a quote that would open
        a string right after it, alone or after more of the name. -> [N] long, sorted"""
        ends = [word[len(name) :] for word in _BEFORE_QUOTE if word.startswith(name)]
        if not ends:
            return self.quoting
        found = self._before.get(name)
        if found is None:
            allowed = torch.zeros(self.size, dtype=torch.bool)
            for end in ends:
                if not end:  # ``f``, ``return``: a quote may come now
                    allowed |= self.quoted
                elif end in self._quoting:  # ``retur`` + ``n"``
                    allowed[self._quoting[end]] = True
            found = self._before[name] = self.quoting[~allowed[self.quoting]]
        return found

    def after(self, word: str) -> torch.Tensor:
        """What may not come next after a string literal, where ``word`` is what has been
        written since (spaces aside): "" or a word under way. Nothing for a word that can
        no longer become a follower (the text's own mistake: ruling out more would only
        force the completion's end). -> [V] bool, or no ids"""
        if not word:
            return self.glued
        if word not in _STARTS and word.lower() not in _PREFIX_STARTS:
            return _NOTHING
        found = self._after.get(word)
        if found is None:
            allowed = self.empty.clone()
            if word in FOLLOWERS:  # ``"a" if``: a space, a bracket, a string may follow
                allowed |= ~self.worded
            elif word.lower() in STRING_PREFIXES:  # ``"a" f``: a string may follow
                allowed |= self.quoted
            for token, piece, rest in self._pieces:
                if _follows(word + piece, rest):
                    allowed[token] = True
            found = self._after[word] = ~allowed
        return found

    def in_field(self, quotes: str, spec: bool = False) -> torch.Tensor:
        """What a field may not hold, inside f-strings delimited by ``quotes`` (the
        single-quoted ones' quotes; "" for triple-quoted ones only); in its format spec
        (``spec``, text: ``#`` is the alternate form), the quotes only. -> [N] long, sorted"""
        key = "".join(sorted(set(quotes))) + ("spec" if spec else "")
        found = self._field.get(key)
        if found is None:
            mask = torch.zeros(self.size, dtype=torch.bool)
            for char in (*({"'", '"'} & set(quotes)), *(() if spec else ("\\", "#"))):
                mask |= self.holding[char]
            found = self._field[key] = _ids(mask)
        return found


_NOTHING = torch.empty(0, dtype=torch.long)


def _mask(size: int, ids: list[int]) -> torch.Tensor:
    mask = torch.zeros(size, dtype=torch.bool)
    mask[ids] = True
    return mask


def _ids(mask: torch.Tensor) -> torch.Tensor:
    """A sparse set's ids, sorted: an ``index_fill`` of a few hundred costs a fraction of a
    [V] ``masked_fill`` at the steps that mask them (every token of a name). -> [N] long"""
    return mask.nonzero().flatten()


class AfterString(LogitsProcessor):
    """Rules out the tokens that glue a word to the string just closed (module docstring).
    ``word``: what was written since its quote, "" or a word under way (``i`` of ``if``)."""

    def __init__(self, tables: StringTables, word: str = "") -> None:
        if word and not _WORD.fullmatch(word):
            raise ValueError(f"AfterString word must be a word, got {word!r}")
        self.tables = tables
        self.word = word

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V] -> [1, V]
        return rule_out(self.tables.after(self.word), scores)


class QuoteAfterName(LogitsProcessor):
    """Rules out the tokens that open a string right after the name being written, which
    is no string prefix or keyword (module docstring)."""

    def __init__(self, tables: StringTables, name: str) -> None:
        if not name or not _WORD.fullmatch(name):
            raise ValueError(f"QuoteAfterName name must be a word, got {name!r}")
        self.tables = tables
        self.name = name

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V] -> [1, V]
        return rule_out(self.tables.before_quote(self.name), scores)


class FieldCharacters(LogitsProcessor):
    """Rules out, in an f-string's field, the tokens holding a character that ends the
    f-string or that a field may not hold before PEP 701 (module docstring). ``quotes``:
    the quotes of the single-quoted f-strings whose fields the text is in."""

    def __init__(self, tables: StringTables, quotes: str, spec: bool = False) -> None:
        if any(char not in "'\"" for char in quotes):
            raise ValueError(f"FieldCharacters quotes must be quote characters, got {quotes!r}")
        self.tables = tables
        self.quotes = quotes
        self.spec = spec  # in the field's format spec: only the quotes

    @property
    def idle(self) -> bool:
        """Always: no identifier's continuation holds a quote, a backslash or ``#``."""
        return True

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # input_ids: [1, T]; scores: [1, V] -> [1, V]
        return rule_out(self.tables.in_field(self.quotes, self.spec), scores)
