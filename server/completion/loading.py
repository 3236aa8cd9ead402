"""Loading the configured model for the server: the job the model worker runs, and
the ``window/workDoneProgress`` that reports it to the editor."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp.server.config import Settings

if TYPE_CHECKING:
    from steerlsp.models.decoding.completer import Completer
    from steerlsp.server.lsp.handlers import SteerServer


def load_configured(settings: Settings, report: Any) -> Completer:
    """The completer for ``settings.model``; runs on the model worker (imports torch)."""
    from steerlsp.models.decoding.completer import load_completer
    from steerlsp.models.loading.load import LoadRequest

    model = settings.model
    request = LoadRequest(
        model.name, model.device, model.dtype, model.allow_downloads, model.trust_remote_code
    )
    return load_completer(
        request,
        fim=model.fim_template,
        head=model.head_precision if model.low_precision_head else "fp32",
        body=model.body_precision,
        report=report,
    )


class LoadProgress:
    """``window/workDoneProgress`` for model loading, when the client supports it."""

    def __init__(self, ls: SteerServer, loop: asyncio.AbstractEventLoop, title: str) -> None:
        self.ls, self.loop, self.title = ls, loop, title
        caps = ls.client_capabilities.window
        self.enabled = bool(caps and caps.work_done_progress)
        self.token = f"steerlsp-load-{uuid.uuid4().hex[:8]}"

    def begin(self) -> None:
        if not self.enabled:
            return
        progress = self.ls.work_done_progress
        progress.create(self.token)
        progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title=self.title, percentage=0, cancellable=False),
        )

    def report(self, message: str, percent: int) -> None:
        """Called on the worker thread."""
        if self.enabled:
            self.loop.call_soon_threadsafe(
                self.ls.work_done_progress.report,
                self.token,
                types.WorkDoneProgressReport(message=message, percentage=percent),
            )

    def end(self, message: str) -> None:
        if self.enabled:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
