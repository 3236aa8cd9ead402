"""The decode loop steerlsp owns: prefill, decode_step, apply_steering, sample, should_stop.

One :class:`Engine` holds one model and one :class:`~.cache.KVCache` and is used
from one worker thread. The cache (``cache.py``) keeps the last sequence between
requests and is what hints and rewinds edit; candidate names are scored on it by
the :class:`~.scoring.Scorer` (``scoring.py``); prompt-lookup drafts come from
:class:`~.lookup.Lookup` (``lookup.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from steerlsp.models.decoding.cache import KVCache
from steerlsp.models.decoding.lookup import Lookup
from steerlsp.models.decoding.scoring import Scorer
from steerlsp.models.options import Sampling
from steerlsp.models.steering.processors.base import LogitsProcessor

GREEDY = Sampling()


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
        """Whether ``steer`` at the next steps is a function of the history and the
        logits alone (nothing is due: no answer to wait for, no cache to edit; a walk's
        mask may apply): the loop may then verify drafted tokens, steering each."""
        ...

    def draft(self, history: torch.Tensor) -> list[int]:
        """When ``quiet``: the tokens steering expects after ``history`` (the rest of a
        name it walks along), for the loop to verify in one pass; may be empty."""
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
    drafted: int = 0  # drafted tokens verified (a walk's name, prompt lookup)
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
        self.steering = 0.0  # seconds in the processors and the hook (Generation.timings)

    def take(self, token: int, extra: int = 0) -> str:
        """Append a chosen token. ``extra``: how many tokens the cache holds beyond the
        prompt and the tokens taken before this one. -> "next", "stop" (``should_stop``
        said so; ``self.stop`` is set) or "rewound" (the hook asked to write some tokens
        again: ``self.logits`` are the logits to go on from)."""
        self.out.append(token)
        self.text = self.engine.tokenizer.decode(self.out, skip_special_tokens=True)
        self.history = torch.cat([self.history, self.history.new_tensor([[token]])], dim=1)
        if self.hook is not None:
            started = time.perf_counter()
            self.hook.observe(token, self.text)
            keep = self.hook.rewind()
            self.steering += time.perf_counter() - started
            if keep is not None and 0 <= keep < len(self.out):
                # Keep prompt + out[:keep]: cut the cache to prompt + out[:-1] first.
                self.engine.cache.forget(extra)
                self.logits = self.engine.cache.rewind(len(self.out) - 1 - keep)
                del self.out[keep:]
                self.text = self.engine.tokenizer.decode(self.out, skip_special_tokens=True)
                self.history = self.history[:, : len(self.prompt) + keep]
                return "rewound"
        if self.should_stop(self.text):
            self.stop = "stop"
            return "stop"
        return "next"


class Engine:
    """Greedy/sampled decoding over a reusable KV cache. Not thread-safe."""

    def __init__(self, model: Any, tokenizer: Any, device: Any | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device or next(model.parameters()).device
        self._cache = KVCache(model, self.device)
        self._scorer = Scorer(model, self._cache, self.device)
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

        Greedy decoding verifies drafted tokens several at a time, in one forward pass:
        the rest of the name a ``hook``'s walk follows, else (with ``lookup``) tokens
        drafted from n-grams of the prompt. The output is the same as without them.
        """
        if not prompt_ids:
            raise ValueError("prompt_ids must not be empty")
        generator = _generator(sampling.seed, self.device)
        started = time.perf_counter()
        reused = self._cache.reuse(prompt_ids)
        logits = self.prefill(prompt_ids[reused:])  # [1, V] at every step; run.history [1, T]
        prefilled = time.perf_counter()
        run = _Run(self, list(prompt_ids), should_stop, hook)
        greedy = sampling.temperature == 0  # drafts are verified against the argmax
        steps = 0  # rewinds write tokens again: every step counts against twice the limit
        while len(run.out) < max_new_tokens and steps < 2 * max_new_tokens:
            steps += 1
            if cancelled():
                run.stop = "cancelled"
                break
            steering = time.perf_counter()
            logits = self.apply_steering(run.history, logits, processors)
            if hook is not None:
                logits = hook.steer(self, run.history, logits)
            run.steering += time.perf_counter() - steering
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
            if greedy and room > 0 and (hook is None or hook.quiet()):
                walked = hook.draft(run.history)[:room] if hook is not None else []
                looked = (
                    [] if walked or lookup is None else lookup.draft(run.prompt + run.out, room)
                )
                if draft := walked or looked:
                    logits = self._verify(run, token, draft, processors, stop_ids)
                    if looked and lookup is not None:
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
            timings={"steering": run.steering},
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
        decoding would have chosen, steered as the loop would steer them (the hook is
        quiet: its steering depends on the history and the logits alone, a walk's mask
        included). -> logits [1, V] after the last kept token."""
        every = self._cache.forward([token, *draft], keep=len(draft) + 1)  # [1 + k, V]
        kept = 0
        for position, drafted in enumerate(draft):
            logits = self.apply_steering(run.history, every[position : position + 1], processors)
            if run.hook is not None:
                logits = run.hook.steer(self, run.history, logits)
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
        self._cache.forget(len(draft) - kept + (run.stop == "stop"))
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
        if not all(processor.idle for processor in processors):
            return None
        return hook.rows(history)

    def decode_rows(self, token: int, rows: torch.Tensor) -> torch.Tensor:
        """Feed one token; the LM head runs for ``rows`` only, every other logit is -inf
        (steering's hard mask: 262k rows are most of a step's bytes). -> [1, V]"""
        hidden = self._cache.hidden_step(token)  # [1, H]
        head = self.model.get_output_embeddings()
        values = head.rows(hidden, rows.to(self.device))[0]  # [N]
        cap = getattr(self.model.config.get_text_config(), "final_logit_softcapping", None)
        if cap:
            values = torch.tanh(values / cap) * cap
        width = self.model.config.get_text_config().vocab_size
        logits = torch.full((1, width), float("-inf"), device=self.device)
        logits[0, rows] = values
        return logits

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        """Run the new prompt tokens; logits for the last position only. -> [1, V]"""
        return self._cache.forward(list(ids))

    def decode_step(self, token: int) -> torch.Tensor:
        """Feed one sampled token. -> logits [1, V]"""
        return self._cache.forward([token])

    @property
    def cache(self) -> KVCache:
        """What stages edit the KV cache through (``cached``, ``splice``, ``rewind``)."""
        return self._cache

    @property
    def scorer(self) -> Scorer:
        """What stages score candidate names with (``score_continuations``)."""
        return self._scorer

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
        self._cache.reset()


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
