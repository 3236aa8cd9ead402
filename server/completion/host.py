"""The model host: loads the configured model on the model worker, keeps the worker
alive, and decides whether the runtime deprecation check runs.

The request policy (``server/completion/policy.py``) asks it whether a model is
ready and submits completion jobs to its worker; ``steerlsp/status`` reports its
state.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp.models.decoding.worker import CancelToken, Job, ModelWorker
from steerlsp.models.deprecation.runtime import RuntimeDeprecations
from steerlsp.server import config
from steerlsp.server.completion import heap
from steerlsp.server.completion.loading import LoadProgress, WorkDone, load_configured
from steerlsp.server.config import Settings
from steerlsp.server.lsp.errors import RequestFailed
from steerlsp.server.upstream import environment

if TYPE_CHECKING:
    from steerlsp.models.decoding.completer import Completer
    from steerlsp.models.remote.completer import RemoteCompleter

# The logger these lines have always been written under: editors' logs and the
# model tests read "steerlsp.server.completion.policy: model ready".
log = logging.getLogger("steerlsp.server.completion.policy")

# (message type, text): one window/showMessage to the editor.
Notify = Callable[[types.MessageType, str], None]


class ModelState(enum.Enum):
    DISABLED = "disabled"
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


def _model_key(settings: Settings) -> tuple[Any, ...]:
    """The model settings whose change needs the model loaded again."""
    model = settings.model
    return (
        model.name,
        model.device,
        model.dtype,
        model.allow_downloads,
        model.trust_remote_code,
        model.fim_template,
        model.low_precision_head,
        model.head_precision,
        model.body_precision,
        model.backend,
        model.endpoint,
        model.api_key_env,
        model.remote_model,
        model.timeout_ms,
        model.fallback,
    )


class ModelHost:
    """Owns the model worker and the loaded completer.

    ``settings`` reads the server's current settings; ``notify`` shows a message to
    the user; ``python_environment`` is the environment Jedi resolves imports in
    (the runtime check runs its interpreter); ``work_done`` is the client's progress
    reporter, or None when it has none; ``ready_hook`` runs once a model is ready
    and after each settings change while it is (steering warms its analysis).
    """

    def __init__(
        self,
        settings: Callable[[], Settings],
        *,
        notify: Notify,
        python_environment: Callable[[], str | None],
        work_done: Callable[[], WorkDone | None] = lambda: None,
        ready_hook: Callable[[], None] = lambda: None,
    ) -> None:
        self._settings = settings
        self._notify = notify
        self._python_environment = python_environment
        self._work_done = work_done
        self._ready_hook = ready_hook
        self.state = ModelState.LOADING
        self.error: str | None = None
        self.completer: Completer | RemoteCompleter | None = None
        self.accepted = 0
        self.served = 0
        self.steering_failures = 0  # steered jobs that failed and were decoded unsteered
        self.worker = ModelWorker()
        heap.pauses()  # counts the collector's pauses from here
        self._loaded_for: tuple[Any, ...] | None = None
        self._runtime: RuntimeDeprecations | None = None  # the opt-in runtime check
        self._runtime_off: str | None = None  # why it is off though asked for (logged once)

    @property
    def settings(self) -> Settings:
        return self._settings()

    def start_loading(self) -> None:
        """Load the configured model on the worker thread; report progress and failure."""
        settings = self.settings
        key = _model_key(settings)
        if not settings.completion.enabled:
            self.state, self.completer, self._loaded_for = ModelState.DISABLED, None, None
            return
        if key == self._loaded_for:
            return
        self._loaded_for = key
        self.state, self.error, self.completer = ModelState.LOADING, None, None
        loop = asyncio.get_running_loop()
        title = (
            f"steerlsp: loading {settings.model.name} model"
            if settings.model.backend == "inprocess"
            else f"steerlsp: connecting to {settings.model.endpoint}"
        )
        progress = LoadProgress(self._work_done(), loop, title)
        job = self.worker.submit(lambda token: load_configured(self.settings, progress.report))
        progress.begin()

        def done(future: Any) -> None:
            loop.call_soon_threadsafe(self._loaded, job, future, progress)

        job.future.add_done_callback(done)

    def _loaded(self, job: Job[Any], future: Any, progress: LoadProgress) -> None:
        if future.exception() is not None:
            self.state, self.error = ModelState.FAILED, str(future.exception())
            log.error("model load failed: %s", self.error)
            progress.end("failed")
            self._notify(types.MessageType.Error, f"steerlsp: AI completions are off: {self.error}")
            return
        self.completer = future.result()
        self.state = ModelState.READY
        progress.end("ready")
        log.info("model ready: %s", self._model_name())
        self.completer.use_runtime(self.runtime_check())
        self._ready_hook()

    def configure(self) -> None:
        """Settings changed; reloads the model only if a model setting changed."""
        self.start_loading()
        if self.state is ModelState.READY:
            if self.completer is not None:
                self.completer.use_runtime(self.runtime_check())
            self._ready_hook()  # steering may have just been turned on

    def runtime_check(self) -> RuntimeDeprecations | None:
        """The runtime deprecation check for the project's interpreter (the one Jedi
        resolves imports in), when it is asked for and the workspace is trusted; kept
        while that interpreter is unchanged. One INFO line when asked for without trust."""
        on, off = config.runtime_deprecation(self.settings)
        if off is not None and off != self._runtime_off:
            log.info(off)
        self._runtime_off = off
        python = environment.interpreter(self._python_environment()) if on else None
        if python is None:
            self._runtime = None
        elif self._runtime is None or self._runtime.python != python:
            self._runtime = RuntimeDeprecations(python)
        return self._runtime

    def status(self) -> dict[str, Any]:
        """``steerlsp/status``: never "ready" while no thread can serve a job."""
        worker = self.worker.health()
        state, error = self.state.value, self.error
        if self.worker.gave_up is not None and self.state is not ModelState.DISABLED:
            state, error = ModelState.FAILED.value, self.worker.gave_up
        remote = getattr(self.completer, "status", None)
        return {
            "state": state,
            "model": self._model_name(),
            "backend": self.settings.model.backend,
            **({"remote": remote()} if remote is not None else {}),
            "error": error,
            "served": self.served,
            "accepted": self.accepted,
            "steering_failures": self.steering_failures,
            "worker": worker,
            "gc": heap.pauses().status(),
        }

    def _model_name(self) -> str:
        model = self.settings.model
        if model.backend == "inprocess":
            return model.name
        api = getattr(self.completer, "api", None)
        return f"{api.model if api else model.remote_model or '?'} at {model.endpoint}"

    @property
    def ready(self) -> bool:
        """A model is loaded and a thread serves its jobs."""
        return self.state is ModelState.READY and self.worker.gave_up is None

    def require_ready(self) -> None:
        """RequestFailed, saying why, unless a model is ready."""
        if self.worker.gave_up is not None:
            raise RequestFailed(f"steerlsp: no model worker: {self.worker.gave_up}")
        if self.state is ModelState.READY:
            return
        if self.state is ModelState.LOADING:
            raise RequestFailed(
                "steerlsp: the model is still loading; try again in a moment", logging.INFO
            )
        if self.state is ModelState.DISABLED:
            raise RequestFailed(
                "steerlsp: AI completions are disabled (steerlsp.completion.enabled)", logging.INFO
            )
        # The load failure was logged and shown once; each request need not repeat it.
        raise RequestFailed(f"steerlsp: no model: {self.error}", logging.INFO)

    def suggestion_accepted(self) -> None:
        """The editor accepted a suggestion; counted locally, never sent anywhere."""
        self.accepted += 1

    def steering_failed(self, exc: Exception) -> None:
        """Logged every time (with the traceback the first time); shown to the user once."""
        self.steering_failures += 1
        first = self.steering_failures == 1
        log.error("steering failed; decoding again unsteered: %r", exc, exc_info=first)
        if first:
            self._notify(
                types.MessageType.Warning,
                f"steerlsp: steering failed ({type(exc).__name__}: {exc}); "
                "completions are decoded without it when it fails. See the log.",
            )

    def submit(self, job: Callable[[CancelToken], Any]) -> Job[Any]:
        """Queue ``job`` on the model worker."""
        return self.worker.submit(job)

    def stop(self) -> None:
        """Stop the worker thread (jobs still queued are answered WorkerDied)."""
        self.worker.stop()
