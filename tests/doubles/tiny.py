"""A tiny randomly initialised Gemma 3 and a character tokenizer, for mechanics tests.

Built from a config in the test process: no download, no file. It produces
noise, so it only ever tests *how* decoding runs, never *what* it writes.
"""

from __future__ import annotations

import torch

ALPHABET = ["<pad>", "<eos>", "<bos>", *"abcdefghijklmnopqrstuvwxyz ():.\n=+-_0123456789"]


class CharTokenizer:
    """One token per character; ids follow ALPHABET."""

    pad_token_id, eos_token_id, bos_token_id = 0, 1, 2

    def __init__(self) -> None:
        self.vocab = {tok: i for i, tok in enumerate(ALPHABET)}

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    @property
    def all_special_tokens(self) -> list[str]:
        return ALPHABET[:3]

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = [self.vocab.get(c, self.vocab[" "]) for c in text]
        return [self.bos_token_id, *ids] if add_special_tokens else ids

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [ALPHABET[i] for i in ids]

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(ALPHABET[i] for i in ids if not (skip_special_tokens and i < 3))


def tiny_model(seed: int = 0, vocab: int = len(ALPHABET)):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(seed)
    config = Gemma3TextConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=8,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        max_position_embeddings=512,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        tie_word_embeddings=True,
    )
    return Gemma3ForCausalLM(config).eval()


class Script:
    """A processor that makes any model write ``text`` (cycling), one character per step.

    It counts steps from the first history it sees, so one instance serves one generation.
    """

    def __init__(self, text: str) -> None:
        self.ids = CharTokenizer().encode(text, add_special_tokens=False)
        self.prompt_length: int | None = None

    def __call__(self, history: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        # history: [1, T], scores: [1, V]
        if self.prompt_length is None:
            self.prompt_length = history.shape[1]
        step = history.shape[1] - self.prompt_length
        forced = torch.full_like(scores, float("-inf"))
        forced[:, self.ids[step % len(self.ids)]] = 0
        return forced
