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

from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.framing import Event, FrameDecoder, encode_frame

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
        """Write one framed message, whole, with no NUL in any of its strings.

        Every byte to the editor passes here (the proxy's and pygls' alike), so
        this is the one place that keeps NUL out: forwarded text can hold one.
        """
        data = _without_nul(data)
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


def _without_nul(frame: bytes) -> bytes:
    split = frame.find(b"\r\n\r\n")
    body = frame[split + 4 :] if split >= 0 else frame
    if not rpc.has_nul(body):
        return frame
    log.warning("replaced NUL characters in a message to the editor")
    return encode_frame(rpc.without_nul(body))


def start_reader(
    read: Callable[[int], bytes],
    fileno: int,
    loop: asyncio.AbstractEventLoop,
    on_events: Callable[[list[Event]], None],
    on_eof: Callable[[], None],
) -> threading.Thread:
    """Start the thread that frames the editor's bytes and posts them to ``loop``."""

    decoder = FrameDecoder()

    def step() -> bool:
        """Read and post one chunk; False at end of input."""
        if decoder.pending and not _readable(fileno, IDLE_RESYNC_SECONDS):
            events = decoder.flush_idle()
            if events:
                loop.call_soon_threadsafe(on_events, events)
            return True
        try:
            data = read(_CHUNK)
        except OSError as exc:
            log.error("reading from the editor failed: %s", exc)
            data = b""
        if not data:
            loop.call_soon_threadsafe(on_eof)
            return False
        events = decoder.feed(data)
        if events:
            loop.call_soon_threadsafe(on_events, events)
        return True

    def run() -> None:
        # The session is deaf without this thread: a bug in one chunk's framing
        # costs that chunk (the decoder starts afresh), never the thread.
        nonlocal decoder
        while True:
            try:
                if not step():
                    return
            except RuntimeError:  # the event loop is closed: the session is over
                return
            except Exception:
                log.exception("error framing the editor's input; resynchronising")
                decoder = FrameDecoder()

    thread = threading.Thread(target=run, name="steerlsp-reader", daemon=True)
    thread.start()
    return thread


def _readable(fileno: int, timeout: float) -> bool:
    try:
        ready, _, _ = select.select([fileno], [], [], timeout)
    except (OSError, ValueError):
        return True  # let read() report the problem
    return bool(ready)
