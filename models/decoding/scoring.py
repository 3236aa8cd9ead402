"""Scoring candidate continuations (whole names after a ``.``) on the shared KV cache."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import torch

from steerlsp.models.decoding.cache import KVCache

log = logging.getLogger(__name__)

# Layer types score_continuations can mask itself (one pass, no cache copies).
_TREE_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})


class Scorer:
    """Log-probabilities of candidate token sequences after the cached ones.

    Scoring leaves the cache as it found it. It tries the sequences as one token
    tree first and falls back to a batch, for the rest of the session, when the
    model refuses the tree's masks.
    """

    def __init__(self, model: Any, cache: KVCache, device: Any) -> None:
        self.model, self.cache, self.device = model, cache, device
        self._tree = True  # score_continuations may try one pass as a token tree

    @torch.inference_mode()
    def score_continuations(
        self, logits: torch.Tensor, sequences: Sequence[Sequence[int]], ends: torch.Tensor
    ) -> list[float]:
        """Log-probability of each token sequence after the cached ones, then an end.

        ``logits`` [1, V] are the current next-token logits; ``ends`` [V] bool marks
        the tokens that end the sequence (those that cannot continue an
        identifier). All sequences run in one forward pass on the shared cache,
        which is left as it was: as one row, a token tree (a prefix the sequences
        share is fed once: ``message_gte`` and ``message_lte`` share ``message`` and
        ``_``, and each token fed costs the whole vocabulary's logits) whose
        attention masks keep each token to the prefix and its ancestors (Gemma 3's full and sliding
        layers; than a batch, which copies the cache once per sequence, 1.3x
        faster after 200 tokens and 1.9x after 1,000: ``bench/score_names.py``),
        or else as a batch.
        """
        if not sequences:
            return []
        if any(not s for s in sequences):
            raise ValueError("score_continuations needs non-empty sequences")
        first = torch.log_softmax(logits[0].float(), dim=-1)  # [V]
        layers = self.cache.layers
        if layers is None:
            return [float("-inf")] * len(sequences)
        tree = PrefixTree(sequences)
        saved = self.cache.save()
        try:
            hidden = self._tree_hidden(tree, layers) if self._tree else None
            if hidden is None:
                self.cache.restore(saved)
                hidden = self._batched_hidden(sequences)[tree.first_seen]
            logprobs = torch.log_softmax(self._head(hidden), dim=-1)  # [nodes, V]
        finally:
            self.cache.restore(saved)
        ends = ends[: logprobs.shape[-1]].to(logprobs.device)
        scores = []
        for sequence, path in zip(sequences, tree.paths, strict=True):
            total = float(first[sequence[0]])
            for position in range(len(sequence) - 1):
                total += float(logprobs[path[position], sequence[position + 1]])
            last = logprobs[path[-1], : len(ends)]
            total += float(torch.logsumexp(last[ends], dim=0))
            scores.append(total)
        return scores

    def _batched_hidden(self, sequences: Sequence[Sequence[int]]) -> torch.Tensor:
        """The sequences as a batch, each on its own copy of the cache (right padding).
        -> hidden states [N, H] at their real positions (N: all their tokens)."""
        width = max(len(s) for s in sequences)
        padded = [[*s, *[s[-1]] * (width - len(s))] for s in sequences]
        ids = torch.tensor(padded, device=self.device)  # [K, W]
        rows = torch.tensor([r for r, s in enumerate(sequences) for _ in s])
        cols = torch.tensor([c for s in sequences for c in range(len(s))])
        self.cache.repeat(len(sequences))
        return self.cache.hidden(ids)[rows, cols]

    def _tree_masks(
        self, tree: PrefixTree, layers: Sequence[Any]
    ) -> dict[str, torch.Tensor] | None:
        """Attention masks that put the tree's nodes in one row after the cache, each
        seeing the cached prefix (within a sliding window where its layer has one),
        its ancestors and itself: a token tree, no cache copies. One mask per layer
        type, [1, 1, N, cached + N] bool; None where the model does not name its
        layer types as full or sliding attention (the batch then)."""
        config = self.model.config.get_text_config()
        kinds = getattr(config, "layer_types", None)
        window = getattr(config, "sliding_window", None) or 0
        if not kinds or len(kinds) != len(layers) or not set(kinds) <= _TREE_LAYER_TYPES:
            return None
        if "sliding_attention" in kinds and window <= 0:
            return None
        cached = len(self.cache.cached)
        offsets = torch.tensor(tree.depths)
        own = tree.ancestry()
        positions = cached + offsets  # [N]
        masks: dict[str, torch.Tensor] = {}
        for kind, layer in zip(kinds, layers, strict=True):
            kept = getattr(layer, "keys", None)
            if not isinstance(kept, torch.Tensor) or kept.dim() != 4:
                return None
            held = kept.shape[-2]  # a sliding layer may hold only the last tokens
            if kind in masks:
                if masks[kind].shape[-1] != held + len(offsets):
                    return None
                continue
            if kind == "full_attention":
                prefix = torch.ones(len(offsets), held, dtype=torch.bool)
            else:
                at = torch.arange(cached - held, cached)
                prefix = at[None, :] > positions[:, None] - window
            masks[kind] = torch.cat([prefix, own], dim=1)[None, None].to(self.device)
        return masks

    def _tree_hidden(self, tree: PrefixTree, layers: Sequence[Any]) -> torch.Tensor | None:
        """One forward pass over the tree's nodes with the tree masks. -> [nodes, H];
        None where the masks cannot be built or the model refuses them (the batch then,
        for the rest of the session)."""
        base = getattr(self.model, "model", None)
        if base is None:
            raise NotImplementedError("score_continuations needs model.model")
        masks = self._tree_masks(tree, layers)
        if masks is None:
            return None
        flat = tree.tokens
        positions = [len(self.cache.cached) + depth for depth in tree.depths]
        try:
            out = base(
                input_ids=torch.tensor([flat], device=self.device),
                position_ids=torch.tensor([positions], device=self.device),
                attention_mask=masks,
                past_key_values=self.cache.kv,
                use_cache=True,
            )
        except (TypeError, ValueError, KeyError, IndexError, RuntimeError) as exc:
            if "out of memory" in str(exc):  # torch's OutOfMemoryError: the caller's to handle
                raise
            log.warning("scoring names as a token tree failed (%s); batching them", exc)
            self._tree = False
            return None
        return out.last_hidden_state[0]  # type: ignore[no-any-return]

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden [N, H] -> logits [N, V] in fp32, soft-capped as the model does."""
        logits = self.model.get_output_embeddings()(hidden[None])[0].float()
        config = self.model.config.get_text_config()
        cap = getattr(config, "final_logit_softcapping", None)
        return torch.tanh(logits / cap) * cap if cap else logits


class PrefixTree:
    """Token sequences as a trie: each distinct prefix one node, parents first.

    ``tokens``/``depths``/``parents`` per node; ``paths[k]``: the nodes of sequence
    ``k``, one per token; ``first_seen[n]``: the index, among all the sequences'
    tokens in order, where node ``n`` first appears (to pick a batch's rows).
    """

    def __init__(self, sequences: Sequence[Sequence[int]]) -> None:
        self.tokens: list[int] = []
        self.depths: list[int] = []
        self.parents: list[int] = []
        self.paths: list[list[int]] = []
        self.first_seen: list[int] = []
        children: dict[tuple[int, int], int] = {}  # (parent, token) -> node
        at = 0
        for sequence in sequences:
            path, parent = [], -1
            for depth, token in enumerate(sequence):
                node = children.get((parent, token))
                if node is None:
                    node = children[(parent, token)] = len(self.tokens)
                    self.tokens.append(token)
                    self.depths.append(depth)
                    self.parents.append(parent)
                    self.first_seen.append(at)
                path.append(node)
                parent = node
                at += 1
            self.paths.append(path)

    def ancestry(self) -> torch.Tensor:
        """[N, N] bool: node j is node i or one of its ancestors."""
        seen = torch.eye(len(self.tokens), dtype=torch.bool)
        for node, parent in enumerate(self.parents):
            if parent >= 0:
                seen[node] |= seen[parent]
        return seen
