"""A private analysis instance on its own event-loop thread, for benchmarks and probes.

The server runs :class:`~steerlsp.server.analysis.instance.AnalysisInstance` on its event
loop; a benchmark that drives :class:`~steerlsp.models.decoding.completer.Completer`
directly has no loop, so this hosts one in a daemon thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from pathlib import Path

from steerlsp.models.steering.analysis import AnalysisError
from steerlsp.server.analysis.instance import AnalysisInstance, DocumentAnalysis


class AnalysisHost:
    def __init__(self, root: Path, python: str | None = None, *, background: bool = True) -> None:
        """``background``: the instance yields the CPU, as the server's does."""
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.instance = AnalysisInstance(
            self.loop,
            root_uri=lambda: root.resolve().as_uri(),
            python_environment=lambda: python,
            background=background,
        )
        self._versions = itertools.count(1)

    def document(self, path: Path) -> DocumentAnalysis:
        """A fresh document version (answers are not shared with earlier versions)."""
        return self.instance.document(path.resolve().as_uri(), next(self._versions))

    def warm(self, path: Path, timeout: float = 30.0) -> None:
        """Start pylsp and Jedi: the first question waits for both."""
        text = "import os\nos."
        with contextlib.suppress(AnalysisError):
            self.document(path).completions_at(text, len(text), timeout=timeout)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.instance.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
