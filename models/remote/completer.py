"""A completion job against a shared inference server: the remote twin of
``models/decoding/completer.py``, with the same ``complete`` and the same answer type.

Everything but the weights stays here: the prompt (``prompts/``), the monitor, the
analysis questions, the ranking and the post-processing. Only the prompt (the
window of the document that the in-process model would read) goes to the
configured endpoint. Greedy by default; an invoked completion's alternatives are
sampled requests with fixed seeds, like the in-process ones.

The server's tokenizer is not known here, so the prompt's token budgets are
counted at :data:`CHARS_PER_TOKEN` characters a token, a little generous for code.
When nothing answers at the endpoint and ``model.fallback`` is on, the completion is
made in-process instead (the local model is loaded on first need), and the server
is tried again on the next request. A server that answers too slowly, or stays
overloaded past ``model.timeoutMs``, is reported, not replaced.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from steerlsp.models.decoding.alternatives import distinct_draws
from steerlsp.models.decoding.engine import Generation
from steerlsp.models.decoding.prompting import Shape, agrees, prompt_for
from steerlsp.models.decoding.worker import CancelToken, JobCancelled
from steerlsp.models.options import CompletionOptions, CompletionRequest, Sampling
from steerlsp.models.remote.api import Api, Capabilities, connect
from steerlsp.models.remote.client import (
    Client,
    Deadline,
    Endpoint,
    RemoteCancelled,
    RemoteError,
    RemoteUnavailable,
)
from steerlsp.models.remote.segments import Segments
from steerlsp.models.remote.steering import RemoteSteering
from steerlsp.models.steering.analysis import Analysis
from steerlsp.models.steering.stages.written import steering_window
from steerlsp.prompts.fim import FimTemplate, template_named
from steerlsp.prompts.window import WindowAnchors

if TYPE_CHECKING:
    from steerlsp.models.decoding.completer import Completer, Completion
    from steerlsp.models.deprecation.runtime import RuntimeDeprecations

log = logging.getLogger(__name__)

# The prompt's budgets in tokens, counted without the server's tokenizer: code runs
# 2.3 to 3.5 characters a token in Gemma's (2.3 on repetitive code), so a budget is
# seldom overrun by much.
CHARS_PER_TOKEN = 2.5

# The most seconds finding the server's model and probing what it supports may take,
# where ``model.timeoutMs`` is less: it happens once per connection, and on a CPU
# server the probe that tells whether ``logprobs`` are served from the prompt cache
# evaluates a 400-token prompt twice (6-9 s with llama-cpp-python on 2 cores).
PROBE_TIMEOUT = 30.0


@dataclass(frozen=True)
class RemoteSettings:
    """What ``model.*`` says about the server (``server/config.py`` validates it)."""

    endpoint: str
    api_key: str = ""  # the value of the variable model.apiKeyEnv names; never logged
    model: str = ""  # model.remoteModel; "": the one the server serves
    timeout: float = 10.0  # seconds a completion may take, all its requests together
    fim: str = "none"  # a template name, or "none"/"auto" for prefix-only prompts


class RemoteCompleter:
    """Completions from the server at ``settings.endpoint`` (see the module doc)."""

    backend = "openai"

    def __init__(
        self,
        settings: RemoteSettings,
        *,
        fallback: Callable[[], Completer] | None = None,
    ) -> None:
        self.settings = settings
        self.endpoint = Endpoint(settings.endpoint, settings.api_key)
        self.client = Client(self.endpoint)
        self.api: Api | None = None
        self.error = ""  # why the last request failed, for steerlsp/status
        self.template: FimTemplate | None = (
            template_named(settings.fim) if settings.fim not in ("auto", "none") else None
        )
        self.windows = WindowAnchors()
        self.fallbacks = 0  # completions made in-process because the server was gone
        self._fallback = fallback
        self._local: Completer | None = None
        self._runtime: RuntimeDeprecations | None = None
        self._lock = threading.Lock()

    # ---- the server -----------------------------------------------------------------

    def connect(self, cancelled: Callable[[], bool] = lambda: False) -> Api:
        """The API, its model and capabilities found on first use (and again after the
        server was lost). Raises :class:`RemoteError`."""
        with self._lock:
            if self.api is None:
                limit = max(self.settings.timeout, PROBE_TIMEOUT)
                deadline = Deadline.within(limit, cancelled)
                self.api = connect(self.client, self.settings.model, deadline)
                self.error = ""
                log.info(
                    "remote model %s at %s: %s",
                    self.api.model,
                    self.endpoint.shown,
                    self.api.capabilities,
                )
            return self.api

    @property
    def capabilities(self) -> Capabilities | None:
        return self.api.capabilities if self.api is not None else None

    def status(self) -> dict[str, Any]:
        """``steerlsp/status``'s ``model.remote``: where, what, and which stages run."""
        api = self.api
        return {
            "endpoint": self.endpoint.shown,
            "model": api.model if api else self.settings.model or None,
            "state": "connected" if api else ("unreachable" if self.error else "not yet asked"),
            "error": self.error or None,
            "capabilities": dataclasses.asdict(api.capabilities) if api else None,
            "steering": api.capabilities.stages() if api else None,
            "requests": self.client.requests,
            "retries": self.client.retries,
            "fallbacks": self.fallbacks,
        }

    def use_runtime(self, runtime: RuntimeDeprecations | None) -> None:
        """The runtime deprecation check, for the in-process fallback's steering."""
        self._runtime = runtime
        if self._local is not None:
            self._local.use_runtime(runtime)

    def count_tokens(self, text: str) -> int:
        return max(1, int(len(text) / CHARS_PER_TOKEN)) if text else 0

    # ---- a completion ---------------------------------------------------------------

    def complete(
        self,
        request: CompletionRequest,
        options: CompletionOptions,
        token: CancelToken,
        analysis: Analysis | None = None,
    ) -> Completion:
        """Run on the worker thread. Raises JobCancelled, or RemoteError saying why the
        server could not serve it (after the fallback, when there is one, also failed)."""
        try:
            completion = self._remote(request, options, token, analysis)
            self.error = ""
            return completion
        except RemoteCancelled as exc:
            raise JobCancelled() from exc
        except RemoteUnavailable as exc:
            self.error = str(exc)
            if not exc.gone or self._fallback is None:
                if exc.gone:
                    self.api = None  # a server that comes back is probed again
                raise
            self.api = None
            log.warning("%s; completing in-process (model.fallback)", exc)
            self.fallbacks += 1
            return self._local_completer().complete(request, options, token, analysis)
        except RemoteError as exc:
            self.error = str(exc)
            raise

    def _local_completer(self) -> Completer:
        if self._local is None:
            assert self._fallback is not None
            self._local = self._fallback()
            self._local.use_runtime(self._runtime)
        return self._local

    def _remote(
        self,
        request: CompletionRequest,
        options: CompletionOptions,
        token: CancelToken,
        analysis: Analysis | None,
    ) -> Completion:
        from steerlsp.models.decoding.completer import Completion

        api = self.connect(lambda: token.cancelled)
        deadline = Deadline.within(self.settings.timeout, lambda: token.cancelled)
        prompt, shape = self._prompt(request, options)
        walk = None
        steer = options.steering
        if analysis is not None and steer.enabled:
            before, after = (
                request.document.split() if request.document else (request.prefix, request.suffix)
            )
            walk = RemoteSteering(
                analysis,
                steer,
                window=steering_window(request.prefix),
                before=before,
                after=after,
                rank=api.capabilities.ranks,
                members=api.capabilities.ranks or bool(api.capabilities.constraint),
            )
        typed = request.typed
        segments = Segments(
            api,
            prompt,
            max_tokens=options.max_new_tokens,
            ends=lambda text: (
                (typed is not None and not agrees(text, typed()))
                or shape.ends(text, options.max_lines)
            ),
            deadline=deadline,
            sampling=_sampling(options.sampling),
            walk=walk,
        ).run()
        if token.cancelled or (typed is not None and not agrees(segments.text, typed())):
            raise JobCancelled()
        text = shape.finish(
            segments.text, options.max_lines, truncated=segments.stop == "max_tokens"
        )
        generation = Generation(
            token_ids=[],
            text=segments.text,
            stop=segments.stop,
            prompt_tokens=self.count_tokens(prompt),
            reused_tokens=0,
            prefill_seconds=0.0,
            decode_seconds=segments.seconds,
            timings={"steering": segments.steering_seconds, "requests": segments.requests},
        )
        started = time.perf_counter()
        alternatives = self._alternatives(api, prompt, shape, options, deadline, text)
        return Completion(
            text,
            shape.mode,
            generation,
            segments.trace or None,
            self.count_tokens(prompt),
            alternatives,
            time.perf_counter() - started if options.alternatives > 1 else 0.0,
        )

    def _prompt(self, request: CompletionRequest, options: CompletionOptions) -> tuple[str, Shape]:
        """The prompt text, as the in-process model would read it, and how to cut the
        output."""
        built = prompt_for(
            request,
            options,
            template=self.template,
            count_tokens=self.count_tokens,
            windows=self.windows,
        )
        return built.text, Shape.of(request)

    def _alternatives(
        self,
        api: Api,
        prompt: str,
        shape: Shape,
        options: CompletionOptions,
        deadline: Deadline,
        first: str,
    ) -> tuple[str, ...]:
        """Up to ``options.alternatives - 1`` distinct sampled completions, unsteered,
        within ``options.alternatives_budget`` seconds."""
        wanted = options.alternatives - 1
        if wanted <= 0:
            return ()
        until = time.monotonic() + options.alternatives_budget
        budget = Deadline(min(until, deadline.at), deadline.cancelled, deadline.seconds)

        def draw(sampling: Sampling) -> str | None:
            try:
                drawn = Segments(
                    api,
                    prompt,
                    max_tokens=options.max_new_tokens,
                    ends=lambda text: shape.ends(text, options.max_lines),
                    deadline=budget,
                    sampling=_sampling(sampling),
                ).run()
            except RemoteUnavailable:
                return None  # the budget ran out mid-draw, or the server went: keep what we have
            return shape.finish(drawn.text, options.max_lines, truncated=drawn.stop == "max_tokens")

        return distinct_draws(first, wanted, draw, lambda: budget.left() <= 0)


def _sampling(sampling: Sampling) -> dict[str, Any]:
    """The request's sampling fields: greedy at temperature 0, as in-process."""
    fields: dict[str, Any] = {"temperature": sampling.temperature}
    if sampling.temperature > 0:
        fields["top_p"] = sampling.top_p
    if sampling.seed is not None:
        fields["seed"] = sampling.seed
    return fields
