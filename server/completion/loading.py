"""Loading the configured model for the server: the job the model worker runs, and
the ``window/workDoneProgress`` that reports it to the editor."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.progress import Progress as WorkDone

from steerlsp.server.config import Settings

if TYPE_CHECKING:
    from steerlsp.models.decoding.completer import Completer

__all__ = ["LoadProgress", "WorkDone", "load_configured"]


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
