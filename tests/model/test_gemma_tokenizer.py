"""Candidate spellings with the real Gemma 3 tokenizer (the embedded default model's)."""

from __future__ import annotations

import pytest

from steerlsp.models.steering.tokens.trie import CandidateTrie
from steerlsp.models.steering.tokens.vocab import WHITESPACE_MARKERS, VocabularyIndex
from tests.doubles.toyvocab import ID


def ids(*texts: str) -> list[int]:
    return [ID[t] for t in texts]


def gemma_tokenizer_file():
    from steerlsp.models.loading.load import cache_root

    found = sorted((cache_root() / "converted").glob("*/tokenizer.json"))
    return found[0] if found else None


@pytest.mark.skipif(gemma_tokenizer_file() is None, reason="no converted Gemma 3 tokenizer")
def test_spellings_with_the_real_gemma_tokenizer():
    from tokenizers import Tokenizer  # the fast tokenizer alone: a third of AutoTokenizer's load

    tokenizer = Tokenizer.from_file(str(gemma_tokenizer_file()))
    pieces = [tokenizer.id_to_token(i) or "" for i in range(tokenizer.get_vocab_size())]
    vocabulary = VocabularyIndex([p.translate(WHITESPACE_MARKERS) for p in pieces])
    trie = CandidateTrie.in_context(
        ["model_dump", "model_dump_json", "update", "updates", "_iter", "__init__"],
        context="        data = self.model.",
        tokenize=lambda s: tokenizer.encode(s, add_special_tokens=False).ids,
        vocabulary=vocabulary,
    )
    spelled = {c: [pieces[t] for t in s.tokens] for c, s in trie.spellings.items()}
    assert spelled["model_dump"] == ["model", "_", "dump"]
    assert trie.spellings["model_dump"].canonical
    # Gemma writes "._" and ".__" as one token: these would rewrite the "." already written.
    assert trie.spellings["_iter"].rollback == 1
    assert trie.spellings["__init__"].rollback == 1
    dump = list(trie.spellings["model_dump"].tokens)
    assert trie.ends_here(dump)
    assert trie.completed(dump) == ["model_dump"]
    json = list(trie.spellings["model_dump_json"].tokens)
    assert json[: len(dump)] == dump and trie.contains(json)  # below model_dump
    assert trie.dropped == []
