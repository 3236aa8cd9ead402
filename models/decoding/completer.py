"""A completion job, run on the model worker: prompt, decode, post-process.

Request in (text before and after the cursor), final insert text out. The
stop rule of ``prompts.postprocess`` is consulted after every token, so a
single-line completion ends at its newline rather than at the token limit, and
a looping model is stopped within a few tokens of its third repeat.

Alternatives (``options.alternatives`` > 1, an explicitly invoked completion) are
sampled after the first completion from the same prompt: the engine keeps the
prompt's KV cache, so each costs its decode steps, not a prefill. They use fixed
seeds (the same prompt gets the same alternatives) and stop at a time budget.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from steerlsp.models.decoding.alternatives import distinct_draws
from steerlsp.models.decoding.engine import (
    Engine,
    Generation,
    LogitsProcessor,
    release_memory,
)
from steerlsp.models.decoding.lookup import Lookup
from steerlsp.models.decoding.prompting import Shape, agrees, prompt_for
from steerlsp.models.decoding.worker import CancelToken, JobCancelled
from steerlsp.models.deprecation.runtime import RuntimeDeprecations
from steerlsp.models.deprecation.static import DeprecationCache
from steerlsp.models.loading.load import LoadedModel, LoadRequest, Progress, load
from steerlsp.models.loading.precision import use_bf16_body, use_low_precision_head
from steerlsp.models.options import (
    CompletionOptions,
    CompletionRequest,
    ModelOutOfMemory,
    Sampling,
)
from steerlsp.models.steering.analysis import Analysis
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.processors.comments import CommentRuns
from steerlsp.models.steering.processors.healing import TokenHealing, split_trailing_space
from steerlsp.models.steering.stages.written import steering_window
from steerlsp.models.steering.steerer import Steerer
from steerlsp.models.steering.tokens.vocab import VocabularyText
from steerlsp.prompts.fim import FimTemplate, detect_template, spelling_in, template_named
from steerlsp.prompts.postprocess import CompletionMode
from steerlsp.prompts.window import WindowAnchors

log = logging.getLogger(__name__)


@dataclass
class Completion:
    text: str  # what to insert at the cursor; "" for nothing
    mode: CompletionMode
    generation: Generation
    trace: dict[str, Any] | None = None  # what steered it (``steerlsp/explain``); None: unsteered
    prompt_tokens: int = 0
    # Further distinct completions (options.alternatives > 1), best first after ``text``.
    alternatives: tuple[str, ...] = ()
    alternative_seconds: float = 0.0  # decoding them took this long


@dataclass(frozen=True)
class Prepared:
    """A request made ready for decoding: the token ids and how to cut the output."""

    ids: list[int]
    shape: Shape
    healed: str  # whitespace cut off the prompt that the first tokens must re-produce
    after: list[int]  # the start of the suffix: where prompt-lookup drafts may also come from

    @property
    def mode(self) -> CompletionMode:
        return self.shape.mode

    @property
    def line_prefix(self) -> str:
        return self.shape.line_prefix

    def ends(self, text: str, max_lines: int) -> bool:
        """Whether the generated ``text`` has reached its end (``prompts.postprocess``)."""
        return self.shape.ends(text, max_lines)


class Completer:
    """Owns the engine for one loaded model."""

    def __init__(self, loaded: LoadedModel, fim: str = "auto") -> None:
        self.loaded = loaded
        self.tokenizer = loaded.tokenizer
        self.engine = Engine(loaded.model, loaded.tokenizer, loaded.device)
        self.template = _template(loaded.tokenizer, fim)
        vocab_size = loaded.model.config.get_text_config().vocab_size
        self.vocabulary = VocabularyText(loaded.tokenizer, vocab_size)
        self.stop_ids = frozenset(
            _token_ids(loaded.tokenizer, self.template.stop_tokens if self.template else ())
        )
        self._facts: SteeringFacts | None = None
        self.windows = WindowAnchors()  # where each document's prompt started
        self._runtime: RuntimeDeprecations | None = None  # see use_runtime

    @property
    def facts(self) -> SteeringFacts:
        """What steering shares across completions, built on first use."""
        if self._facts is None:
            self._facts = SteeringFacts(
                vocabulary=self.vocabulary.index,
                tokenize=lambda text: self.tokenizer.encode(text, add_special_tokens=False),
                pool=concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="steerlsp-query"),
                deprecations=DeprecationCache(),
                runtime=self._runtime,
                end_ids=frozenset(self.engine.eos_ids) | self.stop_ids,
            )
        return self._facts

    def prepare_steering(self) -> None:
        """Build now what steering's first completion would build: its shared facts
        and the vocabulary's tables (which tokens end an identifier, open a comment,
        hold brackets): 75 ms over the 262k tokens of the embedded model's vocabulary
        on an idle 2-core machine, which the first steered completion after a load
        would otherwise wait for. Called on the loading thread."""
        facts = self.facts
        _ = facts.vocabulary.identifier_break_mask, facts.comment_tokens
        _ = facts.bracket_programs, facts.string_tables

    def use_runtime(self, runtime: RuntimeDeprecations | None) -> None:
        """The opt-in runtime deprecation check steering may use; None: off. The server
        decides (it needs a trusted workspace), for the project's interpreter."""
        self._runtime = runtime
        if self._facts is not None:
            self._facts.use_runtime(runtime)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def complete(
        self,
        request: CompletionRequest,
        options: CompletionOptions,
        token: CancelToken,
        analysis: Analysis | None = None,
    ) -> Completion:
        """Run on the worker thread. Raises JobCancelled or ModelOutOfMemory.

        With an ``analysis`` and ``options.steering.enabled``, the language
        server steers the decoding (``models/steering/steerer.py``).
        """
        prompt = self.prepare(request, options)
        steerer = None
        if analysis is not None and options.steering.enabled:
            before, after = (
                request.document.split() if request.document else (request.prefix, request.suffix)
            )
            window = request.prefix[: len(request.prefix) - len(prompt.healed)]
            steerer = Steerer(
                analysis=analysis,
                facts=self.facts,
                # Hints splice the prefix-only prompt's current line; FIM prompts
                # put the suffix after it, so they get the walk and ranking only.
                options=options.steering
                if self.template is None
                else dataclasses.replace(options.steering, hints=False),
                window=steering_window(window),
                before=before[: len(before) - len(prompt.healed)],
                after=after,
                prompt_length=len(prompt.ids),
            )
        abandon = _abandon(request, prompt)
        generation = self._decode(
            prompt, options, options.sampling, lambda: token.cancelled, steerer, abandon
        )
        if generation.stop == "cancelled" or (abandon is not None and abandon(generation.text)):
            raise JobCancelled()
        cut = steerer is not None and steerer.cut_short()
        text = self._finish(prompt, generation, options, cut_short=cut)
        trace = steerer.trace.as_dict() if steerer is not None else None
        if trace is not None:
            log.debug("steering trace: %s", trace)
        started = time.perf_counter()
        alternatives = self._alternatives(prompt, options, token, text)
        return Completion(
            text,
            prompt.mode,
            generation,
            trace,
            len(prompt.ids),
            alternatives,
            time.perf_counter() - started if options.alternatives > 1 else 0.0,
        )

    def prepare(self, request: CompletionRequest, options: CompletionOptions) -> Prepared:
        """The prompt's token ids and how to cut the output, as ``complete`` builds them."""
        built = prompt_for(
            request,
            options,
            template=self.template,
            count_tokens=self.count_tokens,
            windows=self.windows,
        )
        text, healed = built.text, ""
        if self.template is None:  # FIM prompts end with a marker, not the cursor
            text, healed = split_trailing_space(built.text)
        return Prepared(
            ids=self.tokenizer.encode(text),
            shape=Shape.of(request),
            healed=healed,
            after=self.tokenizer.encode(request.suffix[:_LOOKUP_SUFFIX], add_special_tokens=False)
            if options.lookup
            else [],
        )

    def _decode(
        self,
        prompt: Prepared,
        options: CompletionOptions,
        sampling: Sampling,
        stop_now: Callable[[], bool],
        steerer: Steerer | None = None,
        abandon: Callable[[str], bool] | None = None,
    ) -> Generation:
        """One generation on the engine; ``stop_now`` is read at every step, ``abandon``
        with the text after every token."""
        processors: list[LogitsProcessor] = []
        if prompt.healed:
            processors.append(TokenHealing(self.vocabulary, prompt.healed))
        if prompt.mode is CompletionMode.MULTI_LINE and options.comment_lines is not None:
            processors.append(
                CommentRuns(self.vocabulary, prompt.line_prefix, options.comment_lines)
            )
        try:
            return self.engine.generate(
                prompt.ids,
                processors=processors,
                max_new_tokens=options.max_new_tokens,
                sampling=sampling,
                stop_ids=self.stop_ids,
                should_stop=lambda text: (
                    (abandon is not None and abandon(text)) or prompt.ends(text, options.max_lines)
                ),
                cancelled=stop_now,
                hook=steerer,
                lookup=Lookup(prompt.after) if options.lookup else None,
            )
        except Exception as exc:
            if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
                self._free()
                raise ModelOutOfMemory(str(exc) or "out of memory") from exc
            self.engine.reset()
            raise
        finally:
            release_memory()

    def _finish(
        self,
        prompt: Prepared,
        generation: Generation,
        options: CompletionOptions,
        cut_short: bool = False,
    ) -> str:
        """The text to insert: the healed whitespace taken off, post-processed; a
        generation cut short (the token limit, a time budget, or ``cut_short``: a
        steering stage ended it) ends at its last complete statement."""
        generated = generation.text
        if prompt.healed:
            healed = prompt.healed
            generated = generated[len(healed) :] if generated.startswith(healed) else ""
        return prompt.shape.finish(
            generated,
            options.max_lines,
            truncated=cut_short or generation.stop in ("max_tokens", "cancelled"),
        )

    def _alternatives(
        self, prompt: Prepared, options: CompletionOptions, token: CancelToken, first: str
    ) -> tuple[str, ...]:
        """Up to ``options.alternatives - 1`` further completions, distinct from ``first``
        and each other after trailing whitespace, none empty. Sampled unsteered (their
        cost is decode steps only) until ``options.alternatives_budget`` seconds have
        passed. A draw the budget cuts off is the last: a block keeps its complete
        lines; a single line is dropped (its last word may be half written). Raises
        JobCancelled."""
        wanted = options.alternatives - 1
        if wanted <= 0:
            return ()
        deadline = time.perf_counter() + options.alternatives_budget

        def draw(sampling: Sampling) -> str | None:
            generation = self._decode(
                prompt,
                options,
                sampling,
                lambda: token.cancelled or time.perf_counter() >= deadline,
            )
            if token.cancelled:
                raise JobCancelled()
            if generation.stop == "cancelled" and prompt.mode is not CompletionMode.MULTI_LINE:
                return None
            return self._finish(prompt, generation, options)

        return distinct_draws(first, wanted, draw, lambda: time.perf_counter() >= deadline)

    def _free(self) -> None:
        self.engine.reset()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


# Prompt-lookup drafts may copy from this many characters after the cursor.
_LOOKUP_SUFFIX = 2_000


def load_completer(
    request: LoadRequest,
    *,
    fim: str = "auto",
    head: str = "int8",
    body: str = "auto",
    report: Progress | None = None,
) -> Completer:
    """Load a model as the server does: an fp32 model on the CPU gets bf16 linear
    layers where the CPU has native bf16 (``body``: "auto", "bf16" or "fp32") and a
    low-precision LM head (``head``: "int8", "bf16" or "fp32"); see
    ``models/loading/precision.py``."""
    loaded = load(request, report)
    on_cpu = loaded.device.type == "cpu" and str(loaded.dtype) == "torch.float32"
    if on_cpu:
        layers = use_bf16_body(loaded.model, body)
        log.info(
            "weights: %s linear layers, %s LM head",
            layers,
            use_low_precision_head(loaded.model, head),
        )
    return Completer(loaded, fim)


def _abandon(request: CompletionRequest, prompt: Prepared) -> Callable[[str], bool] | None:
    """For a request that follows the typing: is the text generated so far no longer
    what the user types? The generation continues the prompt, which ends before the
    healed whitespace, so that whitespace leads what it must agree with."""
    typed = request.typed
    if typed is None:
        return None
    return lambda text: not agrees(text, prompt.healed + typed())


def _template(tokenizer: Any, fim: str) -> FimTemplate | None:
    if fim == "none":
        return None
    if fim != "auto":
        return template_named(fim)
    tokens = set(tokenizer.get_vocab()) | set(getattr(tokenizer, "all_special_tokens", []))
    return detect_template(tokens)


def _token_ids(tokenizer: Any, tokens: Any) -> list[int]:
    vocab = tokenizer.get_vocab()
    spelled = (spelling_in(token, vocab) for token in tokens)
    return [vocab[s] for s in spelled if s is not None]
