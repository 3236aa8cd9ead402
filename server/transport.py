"""Byte transport to the editor: a dedicated reader thread and a locked writer.

The reader owns one thread for the whole session, so no amount of work on
pygls' thread pool can delay reading a ``$/cancelRequest``.
"""

from __future__ import annotations

import asyncio
import logging
import select
import threading
from collections.abc import Callable

from steerlsp.server.framing import Event, FrameDecoder

log = logging.getLogger(__name__)

_CHUNK = 1 << 16
# How long a half-received frame may sit before the decoder tries to resync.
IDLE_RESYNC_SECONDS = 0.5


class ClientWriter:
    """Thread-safe writer: pygls replies come from worker threads too."""

    def __init__(self, write: Callable[[bytes], object], flush: Callable[[], object] | None = None):
        self._write = write
        self._flush = flush
        self._lock = threading.Lock()
        self.broken = False

    def write(self, data: bytes) -> None:
        """Write one framed message, whole."""
        with self._lock:
            if self.broken:
                return
            try:
                self._write(data)
                if self._flush is not None:
                    self._flush()
            except (BrokenPipeError, ConnectionError, ValueError, OSError) as exc:
                self.broken = True
                log.error("lost the connection to the editor: %s", exc)

    def close(self) -> None:
        """pygls calls this on ``exit``; the process owns the real stream."""


def start_reader(
    read: Callable[[int], bytes],
    fileno: int,
    loop: asyncio.AbstractEventLoop,
    on_events: Callable[[list[Event]], None],
    on_eof: Callable[[], None],
) -> threading.Thread:
    """Start the thread that frames the editor's bytes and posts them to ``loop``."""

    def run() -> None:
        decoder = FrameDecoder()
        while True:
            if decoder.pending and not _readable(fileno, IDLE_RESYNC_SECONDS):
                events = decoder.flush_idle()
                if events:
                    loop.call_soon_threadsafe(on_events, events)
                continue
            try:
                data = read(_CHUNK)
            except OSError as exc:
                log.error("reading from the editor failed: %s", exc)
                data = b""
            if not data:
                loop.call_soon_threadsafe(on_eof)
                return
            events = decoder.feed(data)
            if events:
                loop.call_soon_threadsafe(on_events, events)

    thread = threading.Thread(target=run, name="steerlsp-reader", daemon=True)
    thread.start()
    return thread


def _readable(fileno: int, timeout: float) -> bool:
    try:
        ready, _, _ = select.select([fileno], [], [], timeout)
    except (OSError, ValueError):
        return True  # let read() report the problem
    return bool(ready)
