"""The KV cache the decode loop owns, and exactly the tokens it holds.

The cache is a plain transformers ``DynamicCache`` (every layer keeps full keys
and values; the model still applies sliding-window masks), which makes rolling
back to a shared prefix a crop. Tokens reach it only through :meth:`KVCache.forward`
(or :meth:`KVCache.hidden_step`), so ``cached`` and the layers never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


class KVCache:
    """One model's reusable KV cache: what prefill, decoding, hints and rewinds edit.

    Between requests it keeps the cache of the last sequence, so a request whose
    prompt shares a prefix with it (the user kept typing) prefills only the new
    tokens. Not thread-safe: it belongs to the engine's worker thread.
    """

    def __init__(self, model: Any, device: Any) -> None:
        from transformers import DynamicCache

        self.model, self.device = model, device
        self._new = DynamicCache
        self.kv: Any = None  # the DynamicCache; None until the first prefill
        self._cached: list[int] = []  # exactly the tokens ``kv`` holds

    @property
    def cached(self) -> list[int]:
        """The tokens the cache holds, hints included (read-only by convention)."""
        return self._cached

    def reset(self) -> None:
        """Forget the cached sequence (after an error, or to free memory)."""
        self.kv = None
        self._cached = []

    def reuse(self, prompt_ids: Sequence[int]) -> int:
        """Crop the cache to the longest prefix it shares with ``prompt_ids``. -> its length"""
        shared = 0
        limit = min(len(self._cached), len(prompt_ids) - 1)  # always prefill >= 1 token
        while shared < limit and self._cached[shared] == prompt_ids[shared]:
            shared += 1
        if self.kv is None or shared == 0:
            self.kv = self._new()
            self._cached = []
            return 0
        if shared < len(self._cached):
            self._crop(shared)
        return shared

    def forget(self, drop: int) -> None:
        """Crop the last ``drop`` cached tokens (nothing recomputed)."""
        if drop <= 0:
            return
        if drop >= len(self._cached):
            self.reset()
            return
        self._crop(len(self._cached) - drop)

    @torch.inference_mode()
    def rewind(self, drop: int) -> torch.Tensor:
        """Forget the last ``drop`` cached tokens, and feed the one before them again.

        -> logits [1, V] for the position after the new last token. Hints in the
        cache count as tokens: the caller rewinds only where none follows.
        """
        keep = len(self._cached) - drop
        if drop < 0 or keep < 1:
            raise ValueError(f"rewind({drop}) of {len(self._cached)} cached tokens")
        last = self._cached[keep - 1]
        if keep == 1:
            self.kv, self._cached = self._new(), []
        else:
            self._crop(keep - 1)
        return self.forward([last])

    @torch.inference_mode()
    def splice(self, at: int, remove: int, insert: Sequence[int]) -> torch.Tensor:
        """Replace ``remove`` cached tokens at ``at`` with ``insert``, keeping the rest.

        The cache is cropped to ``at`` and ``insert`` plus the old tail is
        prefilled again: the cost is the tail's length, not the prompt's.
        -> logits [1, V] for the position after the (unchanged) last token.
        """
        if not 0 <= at <= len(self._cached) or remove < 0 or at + remove > len(self._cached):
            raise ValueError(f"splice({at}, {remove}) outside {len(self._cached)} cached tokens")
        tail = self._cached[at + remove :]
        if not insert and not tail:
            raise ValueError("splice would leave no token to compute logits from")
        if at == 0:
            self.kv, self._cached = self._new(), []
        elif at < len(self._cached):
            self._crop(at)
        return self.forward([*insert, *tail])

    def forward(self, ids: list[int], keep: int = 1) -> torch.Tensor:
        """Feed ``ids`` [T] on the cache. -> logits of the last ``keep`` positions [keep, V];
        the LM head runs for those positions only."""
        input_ids = torch.tensor([ids], device=self.device)
        out = self.model(
            input_ids=input_ids, past_key_values=self.kv, use_cache=True, logits_to_keep=keep
        )
        self.kv = out.past_key_values
        self._cached.extend(ids)
        return out.logits[0, -keep:, :].float()

    def hidden_step(self, token: int) -> torch.Tensor:
        """Feed one token without the LM head. -> its last hidden state [1, H]"""
        hidden = self.hidden(torch.tensor([[token]], device=self.device))[0, -1:]
        self._cached.append(token)
        return hidden

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """The last hidden states for ``ids`` [B, W] on the cache, without the LM head.
        -> [B, W, H]. ``cached`` is not told: callers record the tokens, or restore
        the layers they saved (scoring)."""
        base = getattr(self.model, "model", None)
        if base is None:  # not a *ForCausalLM with a base model: use the whole model
            raise NotImplementedError("score_continuations needs model.model")
        out = base(input_ids=ids, past_key_values=self.kv, use_cache=True)
        return out.last_hidden_state  # type: ignore[no-any-return]

    @property
    def layers(self) -> Sequence[Any] | None:
        """The DynamicCache's layers (None before a prefill, or in a cache without them)."""
        return None if self.kv is None else getattr(self.kv, "layers", None)

    def repeat(self, copies: int) -> None:
        """Make the cache a batch of ``copies`` rows (scoring only: restore it after)."""
        self.kv.batch_repeat_interleave(copies)

    # Scoring runs tentative tokens on the shared cache and then puts it back.
    # DynamicCache offers no undo for a forward pass or a batch repeat, so the
    # layers' attributes (keys, values, lengths) are saved and written back
    # whole: this pair is the one place that rewrites a layer's ``vars()``.
    def save(self) -> list[tuple[Any, dict[str, Any]]]:
        """Every layer with its attributes, for :meth:`restore`."""
        return [(layer, dict(vars(layer))) for layer in self.layers or ()]

    @staticmethod
    def restore(saved: Sequence[tuple[Any, dict[str, Any]]]) -> None:
        """Put the layers' attributes back as :meth:`save` took them."""
        for layer, state in saved:
            vars(layer).clear()
            vars(layer).update(state)

    def _crop(self, keep: int) -> None:
        """Keep the first ``keep`` cached tokens (0 < keep < len(cached))."""
        self.kv.crop(keep - len(self._cached))  # transformers: a negative count
        del self._cached[keep:]
