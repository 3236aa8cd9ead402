"""A twenty-token vocabulary and a greedy tokenizer over it, for trie and processor tests.

Greedy longest match merges across boundaries as real tokenizers do: ``obj.``
is ``obj`` ``.`` but ``obj._private`` is ``obj`` ``._`` ``private``.
"""

from __future__ import annotations

from steerlsp.models.steering.tokens.vocab import VocabularyIndex

TEXTS = [
    "<eos>",  # 0
    "obj",  # 1
    ".",  # 2
    "._",  # 3
    "update",  # 4
    "s",  # 5
    "(",  # 6
    "()",  # 7
    " ",  # 8
    "_",  # 9
    "private",  # 10
    "name",  # 11
    "items",  # 12
    "_(",  # 13
    "up",  # 14
    "date",  # 15
    "x",  # 16
    "\n",  # 17
    ")",  # 18
    "dump",  # 19
]
ID = {text: i for i, text in enumerate(TEXTS)}
VOCABULARY = VocabularyIndex(TEXTS)


def tokenize(text: str) -> list[int]:
    """Greedy longest match; characters outside the vocabulary are skipped."""
    ids: list[int] = []
    at = 0
    while at < len(text):
        prefixes = VOCABULARY.ids_prefixing(text[at:]).tolist()
        if prefixes:
            ids.append(prefixes[-1])
            at += len(TEXTS[prefixes[-1]])
        else:
            at += 1
    return ids


def with_dummy_prefix(text: str) -> list[int]:
    """A SentencePiece-like tokenizer that writes a space before everything."""
    return [ID[" "], *tokenize(text)]
