"""Loading the configured model for the server: the job the model worker runs, and
the ``window/workDoneProgress`` that reports it to the editor."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.progress import Progress as WorkDone

from steerlsp.server.completion import heap
from steerlsp.server.config import Settings

if TYPE_CHECKING:
    from steerlsp.models.decoding.completer import Completer
    from steerlsp.models.remote.completer import RemoteCompleter

__all__ = ["LoadProgress", "WorkDone", "load_configured"]

log = logging.getLogger("steerlsp.server.completion.policy")


def load_configured(settings: Settings, report: Any) -> Completer | RemoteCompleter:
    """The completer for ``settings.model``; runs on the model worker. In-process it
    imports torch and loads the weights; for a server (``model.backend: openai``) it
    asks what the server serves and supports, and loads nothing unless the server is
    gone and ``model.fallback`` is on. The heap is released before and settled after
    (``heap``), so that garbage collections skip what the model keeps alive."""
    heap.release()
    if settings.model.backend == "openai":
        completer: Completer | RemoteCompleter = connect_configured(settings, report)
    else:
        completer = load_in_process(settings, report)
    heap.settle()
    return completer


def connect_configured(settings: Settings, report: Any) -> RemoteCompleter:
    """The remote completer. A server that does not answer yet is not an error here
    (it is asked again at each completion); a wrong model or a refused key is."""
    from steerlsp.models.remote.client import RemoteUnavailable
    from steerlsp.models.remote.completer import RemoteCompleter, RemoteSettings

    model = settings.model
    if not model.endpoint:
        raise ValueError("model.backend is openai, but model.endpoint is not set")
    key = ""
    if model.api_key_env:
        if model.api_key_env not in os.environ:
            raise ValueError(
                f"model.apiKeyEnv names {model.api_key_env}, which is not set in "
                "steerlsp's environment"
            )
        key = os.environ[model.api_key_env]
    remote = RemoteCompleter(
        RemoteSettings(
            model.endpoint,
            key,
            model.remote_model,
            model.timeout_ms / 1000,
            model.fim_template,
        ),
        fallback=(lambda: heap.settled(load_in_process(settings, lambda message, percent: None)))
        if model.fallback
        else None,
    )
    report(f"asking {remote.endpoint.shown}", 50)
    try:
        remote.connect()
    except RemoteUnavailable as exc:
        remote.error = str(exc)
        log.warning("%s; asking again at each completion", exc)
    return remote


def load_in_process(settings: Settings, report: Any) -> Completer:
    """The in-process completer for ``settings.model`` (imports torch)."""
    from steerlsp.models.decoding.completer import load_completer
    from steerlsp.models.loading.load import LoadRequest

    model = settings.model
    request = LoadRequest(
        model.name, model.device, model.dtype, model.allow_downloads, model.trust_remote_code
    )
    completer = load_completer(
        request,
        fim=model.fim_template,
        head=model.head_precision if model.low_precision_head else "fp32",
        body=model.body_precision,
        report=report,
    )
    if settings.steering.enabled:
        completer.prepare_steering()
    return completer


class LoadProgress:
    """``window/workDoneProgress`` for model loading; ``progress`` is None when the
    client does not support it."""

    def __init__(
        self, progress: WorkDone | None, loop: asyncio.AbstractEventLoop, title: str
    ) -> None:
        self.progress, self.loop, self.title = progress, loop, title
        self.token = f"steerlsp-load-{uuid.uuid4().hex[:8]}"

    def begin(self) -> None:
        progress = self.progress
        if progress is None:
            return
        progress.create(self.token)
        progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title=self.title, percentage=0, cancellable=False),
        )

    def report(self, message: str, percent: int) -> None:
        """Called on the worker thread."""
        if self.progress is not None:
            self.loop.call_soon_threadsafe(
                self.progress.report,
                self.token,
                types.WorkDoneProgressReport(message=message, percentage=percent),
            )

    def end(self, message: str) -> None:
        if self.progress is not None:
            self.progress.end(self.token, types.WorkDoneProgressEnd(message=message))
