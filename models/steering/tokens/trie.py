"""Candidate identifiers as a trie over the token sequences that spell them in context.

At a trigger (``obj.``) the language server lists the names that may come next.
The model writes them token by token: Gemma splits a snake_case name into about
3.7 tokens, so steering only the first token leaves the rest to chance. This
trie answers, after any number of tokens written since the trigger, which
tokens continue some candidate, and where a candidate may end.

Spelling in context. A candidate is spelled by tokenizing ``context + candidate``
and dropping the tokens of ``context``, so that merges the tokenizer makes
across the boundary are the ones the model was trained on. When the candidate's
text changes the last context token (Gemma writes ``obj._x`` as ``obj`` ``._``
``x``, but ``obj.`` as ``obj`` ``.``), the canonical spelling would need tokens
the model has already written to be taken back. A logits processor can only
choose the next token, so such a candidate is spelled from the boundary on
(tokenized alone, or greedily by the longest vocabulary match), and the number
of context tokens its canonical spelling rewrites is recorded as ``rollback``:
a decode loop that can crop its KV cache may re-spell it canonically. Every
spelling is checked against the vocabulary's texts; a candidate that cannot be
spelled exactly is dropped (``trie.dropped``).

Limits: only the canonical spelling is followed (a model that writes ``up``
``date`` where the tokenizer writes ``update`` leaves the trie); the context
tail should be the current line up to the trigger, since merges reach back at
most a token or two and long tails cost tokenizer time per candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch

from steerlsp.models.steering.tokens.vocab import VocabularyIndex, is_identifier_char

# text -> token ids, without special tokens (``lambda s: tok.encode(s, add_special_tokens=False)``)
Tokenize = Callable[[str], Sequence[int]]

_EMPTY = torch.zeros(0, dtype=torch.long)


@dataclass(frozen=True)
class Spelling:
    """The tokens that write ``candidate`` right after the context."""

    candidate: str
    tokens: tuple[int, ...]
    rollback: int  # context tokens the canonical spelling of context + candidate rewrites
    canonical: bool  # tokens are the tokenizer's own, in context


def spell_in_context(
    candidate: str,
    *,
    context: str,
    tokenize: Tokenize,
    vocabulary: VocabularyIndex,
    context_ids: Sequence[int] | None = None,
) -> Spelling | None:
    """How ``candidate`` is written after ``context``; None when the vocabulary cannot spell it.

    ``context_ids`` (``tokenize(context)``) may be passed to tokenize it once per trigger.
    """
    if not candidate:
        return None
    before = list(tokenize(context) if context_ids is None else context_ids)
    full = list(tokenize(context + candidate))
    shared = _shared_length(before, full)
    rollback = len(before) - shared
    tail = tuple(full[shared:])
    if rollback == 0 and _text(vocabulary, tail) == candidate:
        return Spelling(candidate, tail, 0, canonical=True)
    alone = tuple(tokenize(candidate))
    if _text(vocabulary, alone) == candidate:
        return Spelling(candidate, alone, rollback, canonical=False)
    greedy = _longest_match(vocabulary, candidate)
    return None if greedy is None else Spelling(candidate, greedy, rollback, canonical=False)


class _Node:
    __slots__ = ("_next", "_overshoot", "below", "children", "ends")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.ends: list[str] = []  # candidates spelled exactly by the path to this node
        self.below: list[tuple[str, str]] = []  # (candidate, its text still to write)
        self._next: torch.Tensor | None = None
        self._overshoot: dict[int, list[str]] | None = None


class CandidateTrie:
    """Token-level trie of candidate names, walked by the tokens written since the trigger.

    ``consumed`` is always the token ids written since the trigger, oldest first.
    Per-node index tensors are built on first use and kept.
    """

    def __init__(self, spellings: Iterable[Spelling], vocabulary: VocabularyIndex) -> None:
        self.vocabulary = vocabulary
        self.spellings: dict[str, Spelling] = {}
        self.dropped: list[str] = []
        self._root = _Node()
        for spelling in spellings:
            if spelling.candidate in self.spellings or not spelling.tokens:
                continue
            self.spellings[spelling.candidate] = spelling
            self._insert(spelling)

    @classmethod
    def in_context(
        cls,
        candidates: Iterable[str],
        *,
        context: str,
        tokenize: Tokenize,
        vocabulary: VocabularyIndex,
    ) -> CandidateTrie:
        """Spell each candidate after ``context`` (see the module docstring) and index them.

        ``candidates`` are the texts that follow ``context``: after ``obj.up`` they
        are the names' remainders (``date``), not the names.
        """
        context_ids = list(tokenize(context))
        spellings: list[Spelling] = []
        dropped: list[str] = []
        for candidate in dict.fromkeys(candidates):
            spelling = spell_in_context(
                candidate,
                context=context,
                tokenize=tokenize,
                vocabulary=vocabulary,
                context_ids=context_ids,
            )
            if spelling is None:
                dropped.append(candidate)
            else:
                spellings.append(spelling)
        trie = cls(spellings, vocabulary)
        trie.dropped.extend(dropped)
        return trie

    def __len__(self) -> int:
        return len(self.spellings)

    def contains(self, consumed: Sequence[int]) -> bool:
        """Whether ``consumed`` is the start (or the whole) of some candidate's spelling."""
        return self._node(consumed) is not None

    def allowed_next(self, consumed: Sequence[int]) -> torch.Tensor:
        """Tokens that continue some candidate after ``consumed``; empty when off the trie.

        Besides the next tokens of the spellings, this includes tokens that write
        a candidate's whole remaining text and then a character that cannot be
        in an identifier (Gemma's ``__(``): they finish it and go past its end.
        """
        # returns: [N] long, sorted
        node = self._node(consumed)
        if node is None:
            return _EMPTY
        if node._next is None:
            ids = set(node.children) | set(self._overshoot(node))
            node._next = torch.tensor(sorted(ids), dtype=torch.long)
        return node._next

    def ends_here(self, consumed: Sequence[int]) -> bool:
        """Whether some candidate is spelled exactly by ``consumed``: ending is a choice here."""
        node = self._node(consumed)
        return node is not None and bool(node.ends)

    def ends_open(self, consumed: Sequence[int]) -> bool:
        """Whether the candidates spelled exactly by ``consumed`` all end in punctuation
        (``only=``, ``)``): any token may follow them, not only one that ends a name."""
        node = self._node(consumed)
        return (
            node is not None
            and bool(node.ends)
            and not any(is_identifier_char(n[-1]) for n in node.ends if n)
        )

    def completed(self, consumed: Sequence[int]) -> list[str]:
        """The candidates ``consumed`` has written in full.

        Either ``consumed`` spells one exactly (it may still grow: ``update`` into
        ``updates``), or its last token finished one and went past its end.
        """
        node = self._node(consumed)
        if node is not None:
            return list(node.ends)
        parent = self._node(consumed[:-1]) if consumed else None
        if parent is None:
            return []
        return list(self._overshoot(parent).get(consumed[-1], ()))

    def leading_only_to(self, consumed: Sequence[int], names: Iterable[str]) -> torch.Tensor:
        """Next tokens after ``consumed`` every one of whose candidates is in ``names``.

        Demoting these (deprecated names) leaves alone a token shared with a valid name.
        """
        # returns: [N] long, sorted
        node = self._node(consumed)
        if node is None:
            return _EMPTY
        chosen = set(names)
        ids = [
            token
            for token, child in node.children.items()
            if all(candidate in chosen for candidate, _ in child.below)
        ]
        ids += [
            token
            for token, ended in self._overshoot(node).items()
            if all(candidate in chosen for candidate in ended)
        ]
        return torch.tensor(sorted(set(ids)), dtype=torch.long)

    def _insert(self, spelling: Spelling) -> None:
        node = self._root
        written = ""
        node.below.append((spelling.candidate, spelling.candidate))
        for token in spelling.tokens:
            node = node.children.setdefault(token, _Node())
            written += self.vocabulary.texts[token]
            node.below.append((spelling.candidate, spelling.candidate[len(written) :]))
        node.ends.append(spelling.candidate)

    def _node(self, consumed: Sequence[int]) -> _Node | None:
        node = self._root
        for token in consumed:
            child = node.children.get(int(token))
            if child is None:
                return None
            node = child
        return node

    def _overshoot(self, node: _Node) -> dict[int, list[str]]:
        """Tokens that write a candidate's whole remaining text, then a non-identifier char."""
        if node._overshoot is None:
            found: dict[int, list[str]] = {}
            for candidate, remaining in node.below:
                if not remaining:
                    continue
                ids = self.vocabulary.ids_starting_with(remaining).tolist()
                texts = self.vocabulary.texts_starting_with(remaining)
                for token, text in zip(ids, texts, strict=True):
                    if len(text) > len(remaining) and not is_identifier_char(text[len(remaining)]):
                        found.setdefault(token, []).append(candidate)
            node._overshoot = found
        return node._overshoot


def _shared_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _text(vocabulary: VocabularyIndex, tokens: Sequence[int]) -> str | None:
    if any(not 0 <= t < vocabulary.size for t in tokens):
        return None
    return "".join(vocabulary.texts[t] for t in tokens)


def _longest_match(vocabulary: VocabularyIndex, text: str) -> tuple[int, ...] | None:
    """Spell ``text`` greedily with the longest vocabulary entry at each position."""
    tokens: list[int] = []
    at = 0
    while at < len(text):
        prefixes = vocabulary.ids_prefixing(text[at:])
        if not len(prefixes):
            return None
        token = int(prefixes[-1])  # shortest first: the last is the longest
        tokens.append(token)
        at += len(vocabulary.texts[token])
    return tuple(tokens)
