"""The decode loop steerlsp owns: prefill, decode_step, apply_steering, sample, should_stop.

One :class:`Engine` holds one model and one KV cache and is used from one
worker thread. Between requests it keeps the cache of the last sequence, so a
request whose prompt shares a prefix with it (the user kept typing) prefills
only the new tokens. The cache is a plain ``DynamicCache`` (every layer keeps
full keys and values; the model still applies sliding-window masks), which
makes rolling back to a shared prefix a crop.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from steerlsp.models.options import Sampling

log = logging.getLogger(__name__)

GREEDY = Sampling()
# Layer types score_continuations can mask itself (one pass, no cache copies).
_TREE_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})

# (input_ids [1, T], scores [1, V]) -> scores [1, V]; transformers' processor shape.
LogitsProcessor = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class StepHook(Protocol):
    """What steers a generation from inside the loop (``models/steering/steerer.py``).

    ``steer`` runs before each token is chosen and may use the engine (score
    candidate continuations on the cache, splice a hint into it); ``observe``
    runs after each token is chosen, before its forward pass, so a query it
    starts overlaps that pass.
    """

    def steer(self, engine: Engine, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """history: [1, T] prompt + generated; logits: [1, V] -> [1, V]"""
        ...

    def observe(self, token: int, text: str) -> None: ...

    def rewind(self) -> int | None:
        """After ``observe``: how many generated tokens to keep, to write the rest again
        (an undefined name was read); None to go on."""
        ...

    def quiet(self) -> bool:
        """Whether ``steer`` would leave the next logits as they are (nothing is due):
        the loop may then verify drafted tokens without it."""
        ...

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        """Before the forward pass for the step after ``history``: the only tokens
        steering will allow there (a hard mask it knows already), or None for all. The
        loop then computes the LM head for those rows only. -> [N] long"""
        ...


@dataclass
class Generation:
    """What one call to :meth:`Engine.generate` produced, and how."""

    token_ids: list[int]
    text: str
    stop: str  # "eos" | "stop" | "max_tokens" | "cancelled"
    prompt_tokens: int
    reused_tokens: int
    prefill_seconds: float
    decode_seconds: float
    timings: dict[str, float] = field(default_factory=dict)
    drafted: int = 0  # prompt-lookup tokens verified
    accepted: int = 0  # of which kept


class _Run:
    """One generation's state: the tokens taken so far and what taking one more does."""

    def __init__(
        self,
        engine: Engine,
        prompt: list[int],
        should_stop: Callable[[str], bool],
        hook: StepHook | None,
    ) -> None:
        self.engine, self.prompt, self.should_stop, self.hook = engine, prompt, should_stop, hook
        self.history = torch.tensor([prompt], device=engine.device)  # [1, T]
        self.out: list[int] = []
        self.text = ""
        self.stop = "max_tokens"
        self.logits = torch.empty(0)  # after a rewind: the logits to go on from
        self.drafted = self.accepted = 0
        self.kept = 0  # of the last draft

    def take(self, token: int, extra: int = 0) -> str:
        """Append a chosen token. ``extra``: how many tokens the cache holds beyond the
        prompt and the tokens taken before this one. -> "next", "stop" (``should_stop``
        said so; ``self.stop`` is set) or "rewound" (the hook asked to write some tokens
        again: ``self.logits`` are the logits to go on from)."""
        self.out.append(token)
        self.text = self.engine.tokenizer.decode(self.out, skip_special_tokens=True)
        self.history = torch.cat([self.history, self.history.new_tensor([[token]])], dim=1)
        if self.hook is not None:
            self.hook.observe(token, self.text)
            keep = self.hook.rewind()
            if keep is not None and 0 <= keep < len(self.out):
                # Keep prompt + out[:keep]: cut the cache to prompt + out[:-1] first.
                self.engine.forget(extra)
                self.logits = self.engine.rewind(len(self.out) - 1 - keep)
                del self.out[keep:]
                self.text = self.engine.tokenizer.decode(self.out, skip_special_tokens=True)
                self.history = self.history[:, : len(self.prompt) + keep]
                return "rewound"
        if self.should_stop(self.text):
            self.stop = "stop"
            return "stop"
        return "next"


class Lookup:
    """Prompt-lookup drafts: the tokens that followed the last earlier occurrence of
    the sequence's final n-gram (longest n first), in the sequence itself or in
    ``extra`` (the text after the cursor, which prefix-only prompts leave out).

    The draft length adapts to how drafts fare (one object per generation): it
    doubles after a draft kept whole, up to ``tokens``, and halves after one
    refused at its first token. A refused draft costs a wider forward pass (on
    two cores, 9 tokens cost about 1.6 single steps); measured on the completion
    benchmark's real completions this beat every fixed length.
    """

    def __init__(
        self, extra: Sequence[int] = (), *, longest: int = 4, tokens: int = 8, start: int = 3
    ) -> None:
        self.extra, self.longest, self.tokens = list(extra), longest, tokens
        self.size = min(start, tokens)

    def draft(self, sequence: list[int], room: int) -> list[int]:
        """Up to ``min(size, room)`` tokens that may come next after ``sequence``."""
        wanted = min(self.size, room)
        if wanted <= 0:
            return []
        for n in range(min(self.longest, len(sequence) - 1), 0, -1):
            tail = sequence[-n:]
            for source, end in ((sequence, len(sequence) - n), (self.extra, len(self.extra))):
                found = _last_occurrence(source, tail, end)
                if found is not None and found + n < len(source):
                    return source[found + n : found + n + wanted]
        return []

    def tell(self, drafted: int, kept: int) -> None:
        """How the last draft fared: ``kept`` of its ``drafted`` tokens were right."""
        if kept == drafted:
            self.size = min(self.tokens, self.size * 2)
        elif kept == 0:
            self.size = max(1, self.size // 2)


def _restore(layers: Sequence[Any], saved: Sequence[dict[str, Any]]) -> None:
    """Put the cache layers' attributes back as ``saved`` took them."""
    for layer, state in zip(layers, saved, strict=True):
        vars(layer).clear()
        vars(layer).update(state)


def _last_occurrence(source: list[int], tail: list[int], end: int) -> int | None:
    """Start of the last occurrence of ``tail`` in ``source`` that starts before ``end``."""
    n, first = len(tail), tail[0]
    for start in range(min(end, len(source) - n + 1) - 1, -1, -1):
        if source[start] == first and source[start : start + n] == tail:
            return start
    return None


class Engine:
    """Greedy/sampled decoding over a reusable KV cache. Not thread-safe."""

    def __init__(self, model: Any, tokenizer: Any, device: Any | None = None) -> None:
        from transformers import DynamicCache

        self.model = model
        self.tokenizer = tokenizer
        self.device = device or next(model.parameters()).device
        self._new_cache = DynamicCache
        self._cache: Any = None
        self._cached: list[int] = []  # exactly the tokens the cache holds
        self._tree = True  # score_continuations may try one pass as a token tree
        eos = getattr(tokenizer, "eos_token_id", None)
        self.eos_ids: set[int] = {eos} if isinstance(eos, int) else set(eos or [])

    @torch.inference_mode()
    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_new_tokens: int,
        sampling: Sampling = GREEDY,
        stop_ids: frozenset[int] = frozenset(),
        should_stop: Callable[[str], bool] = lambda text: False,
        cancelled: Callable[[], bool] = lambda: False,
        processors: Sequence[LogitsProcessor] = (),
        hook: StepHook | None = None,
        lookup: Lookup | None = None,
    ) -> Generation:
        """Continue ``prompt_ids`` until EOS, ``stop_ids``, ``should_stop(text)`` or the limit.

        With ``lookup`` (greedy only), tokens drafted from n-grams of the prompt are
        verified several at a time: the output is the same as without it.
        """
        if not prompt_ids:
            raise ValueError("prompt_ids must not be empty")
        generator = _generator(sampling.seed, self.device)
        started = time.perf_counter()
        reused = self._reuse(prompt_ids)
        logits = self.prefill(prompt_ids[reused:])
        prefilled = time.perf_counter()
        run = _Run(self, list(prompt_ids), should_stop, hook)
        drafting = lookup is not None and sampling.temperature == 0
        steps = 0  # rewinds write tokens again: every step counts against twice the limit
        while len(run.out) < max_new_tokens and steps < 2 * max_new_tokens:
            steps += 1
            if cancelled():
                run.stop = "cancelled"
                break
            logits = self.apply_steering(run.history, logits, processors)
            if hook is not None:
                logits = hook.steer(self, run.history, logits)
            token = self.sample(logits, sampling, generator)
            if token in self.eos_ids or token in stop_ids:
                run.stop = "eos"
                break
            taken = run.take(token)
            if taken == "rewound":
                logits = run.logits
                continue
            if taken == "stop" or len(run.out) == max_new_tokens:
                break  # no forward pass for logits nobody will read
            room = max_new_tokens - len(run.out) - 1  # drafts beyond the limit are waste
            if drafting and room > 0 and (hook is None or hook.quiet()):
                assert lookup is not None
                draft = lookup.draft(run.prompt + run.out, room)
                if draft:
                    logits = self._verify(run, token, draft, processors, stop_ids)
                    lookup.tell(len(draft), run.kept)
                    if run.stop != "max_tokens":
                        break
                    continue
            rows = self._rows(hook, run.history, processors)
            logits = self.decode_step(token) if rows is None else self.decode_rows(token, rows)
        ended = time.perf_counter()
        return Generation(
            run.out,
            run.text,
            run.stop,
            len(prompt_ids),
            reused,
            prefilled - started,
            ended - prefilled,
            drafted=run.drafted,
            accepted=run.accepted,
        )

    def _verify(
        self,
        run: _Run,
        token: int,
        draft: list[int],
        processors: Sequence[LogitsProcessor],
        stop_ids: frozenset[int],
    ) -> torch.Tensor:
        """Feed ``token`` and the drafted tokens in one pass; keep the drafts greedy
        decoding would have chosen. -> logits [1, V] after the last kept token."""
        every = self._forward([token, *draft], keep=len(draft) + 1)  # [1 + k, V]
        kept = 0
        for position, drafted in enumerate(draft):
            logits = self.apply_steering(run.history, every[position : position + 1], processors)
            if int(logits.argmax(dim=-1).item()) != drafted:
                break
            if drafted in self.eos_ids or drafted in stop_ids:
                run.stop = "eos"
                break
            kept += 1
            # The cache holds the drafts after this one, and this one itself.
            taken = run.take(drafted, extra=len(draft) - position)
            if taken == "rewound":  # the cache was cut back already
                run.kept = kept - 1
                run.drafted, run.accepted = run.drafted + len(draft), run.accepted + kept - 1
                return run.logits
            if taken == "stop" or (run.hook is not None and not run.hook.quiet()):
                break  # done, or steering has something to do at the next token
        run.kept = kept
        run.drafted, run.accepted = run.drafted + len(draft), run.accepted + kept
        # Keep the cache as the loop without drafts leaves it: a stopping token unfed.
        self.forget(len(draft) - kept + (run.stop == "stop"))
        return every[kept : kept + 1]

    def _rows(
        self,
        hook: StepHook | None,
        history: torch.Tensor,
        processors: Sequence[LogitsProcessor],
    ) -> torch.Tensor | None:
        """The rows steering restricts the next step to, when the head can compute rows
        alone and no processor may still allow others (one that says it is ``idle``)."""
        if hook is None or getattr(self.model, "model", None) is None:
            return None  # decode_rows needs the base model without its head
        if not hasattr(self.model.get_output_embeddings(), "rows"):
            return None
        if not all(getattr(processor, "idle", False) for processor in processors):
            return None
        return hook.rows(history)

    def decode_rows(self, token: int, rows: torch.Tensor) -> torch.Tensor:
        """Feed one token; the LM head runs for ``rows`` only, every other logit is -inf
        (steering's hard mask: 262k rows are most of a step's bytes). -> [1, V]"""
        hidden = self._hidden(torch.tensor([[token]], device=self.device))[0, -1:]  # [1, H]
        self._cached.append(token)
        head = self.model.get_output_embeddings()
        values = head.rows(hidden, rows.to(self.device))[0]  # [N]
        cap = getattr(self.model.config.get_text_config(), "final_logit_softcapping", None)
        if cap:
            values = torch.tanh(values / cap) * cap
        width = self.model.config.get_text_config().vocab_size
        logits = torch.full((1, width), float("-inf"), device=self.device)
        logits[0, rows] = values
        return logits

    def forget(self, drop: int) -> None:
        """Crop the last ``drop`` cached tokens (nothing recomputed)."""
        if drop <= 0:
            return
        if drop >= len(self._cached):
            self.reset()
            return
        self._cache.crop(-drop)  # transformers: a negative count
        del self._cached[-drop:]

    def _reuse(self, prompt_ids: Sequence[int]) -> int:
        """Crop the cache to the longest prefix it shares with ``prompt_ids``."""
        shared = 0
        limit = min(len(self._cached), len(prompt_ids) - 1)  # always prefill >= 1 token
        while shared < limit and self._cached[shared] == prompt_ids[shared]:
            shared += 1
        if self._cache is None or shared == 0:
            self._cache = self._new_cache()
            self._cached = []
            return 0
        if shared < len(self._cached):
            self._cache.crop(shared - len(self._cached))
            del self._cached[shared:]
        return shared

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        """Run the new prompt tokens; logits for the last position only. -> [1, V]"""
        return self._forward(list(ids))

    def decode_step(self, token: int) -> torch.Tensor:
        """Feed one sampled token. -> logits [1, V]"""
        return self._forward([token])

    @property
    def cache(self) -> Engine:
        """What stages edit the KV cache through (``cached``, ``splice``, ``rewind``)."""
        return self

    @property
    def scorer(self) -> Engine:
        """What stages score candidate names with (``score_continuations``)."""
        return self

    @property
    def cached(self) -> list[int]:
        """The tokens the cache holds, hints included (read-only by convention)."""
        return self._cached

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
            self._cache, self._cached = self._new_cache(), []
        else:
            self._cache.crop(keep - 1 - len(self._cached))  # transformers: a negative count
            del self._cached[keep - 1 :]
        return self._forward([last])

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
            self._cache, self._cached = self._new_cache(), []
        elif at < len(self._cached):
            self._cache.crop(at - len(self._cached))  # transformers: a negative count
            del self._cached[at:]
        return self._forward([*insert, *tail])

    @torch.inference_mode()
    def score_continuations(
        self, logits: torch.Tensor, sequences: Sequence[Sequence[int]], ends: torch.Tensor
    ) -> list[float]:
        """Log-probability of each token sequence after the cached ones, then an end.

        ``logits`` [1, V] are the current next-token logits; ``ends`` [V] bool marks
        the tokens that end the sequence (those that cannot continue an
        identifier). All sequences run in one forward pass on the shared cache,
        which is left as it was: as one row, a token tree whose attention masks
        keep each sequence to the prefix and itself (Gemma 3's full and sliding
        layers; than a batch, which copies the cache once per sequence, 1.3x
        faster after 200 tokens and 1.9x after 1,000: ``bench/score_names.py``),
        or else as a batch.
        """
        if not sequences:
            return []
        if any(not s for s in sequences):
            raise ValueError("score_continuations needs non-empty sequences")
        first = torch.log_softmax(logits[0].float(), dim=-1)  # [V]
        layers = getattr(self._cache, "layers", None)
        if self._cache is None or layers is None:
            return [float("-inf")] * len(sequences)
        saved = [dict(vars(layer)) for layer in layers]  # keys, values, lengths
        try:
            hidden = self._tree_hidden(sequences, layers) if self._tree else None
            if hidden is None:
                _restore(layers, saved)
                hidden = self._batched_hidden(sequences)
            logprobs = torch.log_softmax(self._head(hidden), dim=-1)  # [N, V]
        finally:
            _restore(layers, saved)
        ends = ends[: logprobs.shape[-1]].to(logprobs.device)
        scores, at = [], 0
        for sequence in sequences:
            total = float(first[sequence[0]])
            for position in range(len(sequence) - 1):
                total += float(logprobs[at + position, sequence[position + 1]])
            last = logprobs[at + len(sequence) - 1, : len(ends)]
            total += float(torch.logsumexp(last[ends], dim=0))
            scores.append(total)
            at += len(sequence)
        return scores

    def _batched_hidden(self, sequences: Sequence[Sequence[int]]) -> torch.Tensor:
        """The sequences as a batch, each on its own copy of the cache (right padding).
        -> hidden states [N, H] at their real positions (N: all their tokens)."""
        width = max(len(s) for s in sequences)
        padded = [[*s, *[s[-1]] * (width - len(s))] for s in sequences]
        ids = torch.tensor(padded, device=self.device)  # [K, W]
        rows = torch.tensor([r for r, s in enumerate(sequences) for _ in s])
        cols = torch.tensor([c for s in sequences for c in range(len(s))])
        self._cache.batch_repeat_interleave(len(sequences))
        return self._hidden(ids)[rows, cols]

    def _tree_masks(
        self, sequences: Sequence[Sequence[int]], layers: Sequence[Any]
    ) -> dict[str, torch.Tensor] | None:
        """Attention masks that put every sequence in one row after the cache, each
        token seeing the cached prefix (within a sliding window where its layer has
        one) and its own sequence's earlier tokens: a token tree, no cache copies.
        One mask per layer type, [1, 1, N, cached + N] bool; None where the model
        does not name its layer types as full or sliding attention (the batch then)."""
        config = self.model.config.get_text_config()
        kinds = getattr(config, "layer_types", None)
        window = getattr(config, "sliding_window", None) or 0
        if not kinds or len(kinds) != len(layers) or not set(kinds) <= _TREE_LAYER_TYPES:
            return None
        if "sliding_attention" in kinds and window <= 0:
            return None
        cached = len(self._cached)
        offsets = torch.tensor([o for s in sequences for o in range(len(s))])
        owner = torch.tensor([k for k, s in enumerate(sequences) for _ in s])
        own = (owner[:, None] == owner[None, :]) & (offsets[None, :] <= offsets[:, None])
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

    def _tree_hidden(
        self, sequences: Sequence[Sequence[int]], layers: Sequence[Any]
    ) -> torch.Tensor | None:
        """One forward pass over every sequence's tokens with the tree masks. -> [N, H];
        None where the masks cannot be built or the model refuses them (the batch then,
        for the rest of the session)."""
        base = getattr(self.model, "model", None)
        if base is None:
            raise NotImplementedError("score_continuations needs model.model")
        masks = self._tree_masks(sequences, layers)
        if masks is None:
            return None
        flat = [t for s in sequences for t in s]
        positions = [len(self._cached) + o for s in sequences for o in range(len(s))]
        try:
            out = base(
                input_ids=torch.tensor([flat], device=self.device),
                position_ids=torch.tensor([positions], device=self.device),
                attention_mask=masks,
                past_key_values=self._cache,
                use_cache=True,
            )
        except (TypeError, ValueError, KeyError, IndexError, RuntimeError) as exc:
            if "out of memory" in str(exc):  # torch's OutOfMemoryError: the caller's to handle
                raise
            log.warning("scoring names as a token tree failed (%s); batching them", exc)
            self._tree = False
            return None
        return out.last_hidden_state[0]  # type: ignore[no-any-return]

    def _hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """The last hidden states for ``ids`` [B, W] on the cache, without the LM head."""
        base = getattr(self.model, "model", None)
        if base is None:  # not a *ForCausalLM with a base model: use the whole model
            raise NotImplementedError("score_continuations needs model.model")
        out = base(input_ids=ids, past_key_values=self._cache, use_cache=True)
        return out.last_hidden_state  # type: ignore[no-any-return]

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden [N, H] -> logits [N, V] in fp32, soft-capped as the model does."""
        logits = self.model.get_output_embeddings()(hidden[None])[0].float()
        config = self.model.config.get_text_config()
        cap = getattr(config, "final_logit_softcapping", None)
        return torch.tanh(logits / cap) * cap if cap else logits

    def _forward(self, ids: list[int], keep: int = 1) -> torch.Tensor:
        """Feed ``ids`` [T] on the cache. -> logits of the last ``keep`` positions [keep, V];
        the LM head runs for those positions only."""
        input_ids = torch.tensor([ids], device=self.device)
        out = self.model(
            input_ids=input_ids, past_key_values=self._cache, use_cache=True, logits_to_keep=keep
        )
        self._cache = out.past_key_values
        self._cached.extend(ids)
        return out.logits[0, -keep:, :].float()

    @staticmethod
    def apply_steering(
        history: torch.Tensor, logits: torch.Tensor, processors: Sequence[LogitsProcessor]
    ) -> torch.Tensor:
        """The hook steering uses: each processor maps scores [1, V] -> [1, V]."""
        for processor in processors:
            logits = processor(history, logits)
        return logits

    @staticmethod
    def sample(logits: torch.Tensor, sampling: Sampling, generator: torch.Generator | None) -> int:
        """Greedy argmax, or temperature + nucleus sampling. logits: [1, V]"""
        if sampling.temperature == 0:
            return int(logits.argmax(dim=-1).item())
        probs = torch.softmax(logits / sampling.temperature, dim=-1)
        if sampling.top_p < 1:
            sorted_probs, order = probs.sort(dim=-1, descending=True)
            keep = sorted_probs.cumsum(dim=-1) - sorted_probs < sampling.top_p
            sorted_probs = sorted_probs * keep
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        return int(torch.multinomial(probs, 1, generator=generator).item())

    def reset(self) -> None:
        """Forget the cached sequence (after an error, or to free memory)."""
        self._cache = None
        self._cached = []


def release_memory() -> None:
    """Hand freed heap memory back to the OS (glibc keeps large prefill buffers)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _generator(seed: int | None, device: Any) -> torch.Generator | None:
    if seed is None:
        return None
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator
