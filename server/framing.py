"""LSP base-protocol framing: ``Content-Length`` headers around JSON bodies.

The decoder is a pure state machine (bytes in, events out) so that the client
reader thread and the upstream reader share one tested implementation. It
never raises on bad input: anything it cannot frame becomes a
:class:`FramingError` event and the decoder resynchronises at the next
``Content-Length:`` header.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MARKER_RE = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
HEADER_END = b"\r\n\r\n"
_HEADER_LINE_RE = re.compile(rb"^[!-9;-~]+[ \t]*:[ \t]*(.*)$")
# A header block longer than this is garbage, not headers.
MAX_HEADER_BYTES = 8 * 1024
# Bytes without any header marker are dropped past this size.
MAX_GARBAGE_BYTES = 1024 * 1024
MAX_BODY_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class FramingError:
    """Bytes that could not be framed. ``discarded`` may still hold a readable id."""

    reason: str
    discarded: bytes


Event = bytes | FramingError


def encode_frame(body: bytes) -> bytes:
    """Wrap a UTF-8 JSON body in a ``Content-Length`` header (length in bytes)."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class FrameDecoder:
    """Incremental decoder. ``feed`` bytes, get complete bodies and errors back."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._need: int | None = None  # body length still expected, once headers are read

    @property
    def pending(self) -> bool:
        """True while a partial header or body is buffered."""
        return bool(self._buf) or self._need is not None

    def feed(self, data: bytes) -> list[Event]:
        """Append ``data`` and return every event that is now complete."""
        self._buf += data
        events: list[Event] = []
        while self._step(events):
            pass
        return events

    def flush_idle(self) -> list[Event]:
        """Called when no bytes arrived for a while with data still buffered.

        A ``Content-Length`` that is too large leaves the decoder waiting for
        bytes that will never come; if a later header is already buffered we
        cut the body there and resynchronise. Headerless garbage is dropped.
        """
        events: list[Event] = []
        if self._need is None:
            if self._buf and not MARKER_RE.match(self._buf):
                events.append(FramingError("bytes without a header", bytes(self._buf)))
                self._buf.clear()
            return events
        match = MARKER_RE.search(self._buf, 1)
        if match is None:
            return events
        cut = match.start()
        body, rest = bytes(self._buf[:cut]), bytes(self._buf[cut:])
        self._need = None
        self._buf = bytearray(rest)
        if _is_json(body):
            events.append(body)
        else:
            events.append(FramingError("Content-Length larger than the body", body))
        while self._step(events):
            pass
        return events

    def _step(self, events: list[Event]) -> bool:
        if self._need is not None:
            return self._take_body(events)
        if not self._buf:
            return False
        match = MARKER_RE.search(self._buf)
        if match is None:
            if len(self._buf) > MAX_GARBAGE_BYTES:
                events.append(FramingError("bytes without a header", bytes(self._buf)))
                self._buf.clear()
            return False
        start = _header_block_start(self._buf, match.start())
        if start > 0:
            garbage = bytes(self._buf[:start])
            del self._buf[:start]
            if garbage.strip():
                events.append(FramingError("bytes before a header", garbage))
            return True
        end = self._buf.find(HEADER_END)
        if end < 0:
            if len(self._buf) > MAX_HEADER_BYTES:
                return self._skip_header("header block too long", events)
            return False
        length = _content_length(bytes(self._buf[:end]))
        if length is None:
            return self._skip_header("invalid Content-Length header", events, end + 4)
        del self._buf[: end + 4]
        self._need = length
        return True

    def _skip_header(self, reason: str, events: list[Event], upto: int | None = None) -> bool:
        upto = upto if upto is not None else len(self._buf)
        # Resynchronise at a later header rather than swallow the next message.
        later = MARKER_RE.search(self._buf, 1, upto)
        if later is not None:
            upto = later.start()
        events.append(FramingError(reason, bytes(self._buf[:upto])))
        del self._buf[:upto]
        return True

    def _take_body(self, events: list[Event]) -> bool:
        need = self._need
        assert need is not None
        if len(self._buf) < need:
            return False
        body = bytes(self._buf[:need])
        del self._buf[:need]
        self._need = None
        # A too-large Content-Length swallows the start of the next message.
        # Cheap check first; only a body that embeds a header is parsed here.
        match = MARKER_RE.search(body, 1)
        if match is not None and not _is_json(body) and _is_json(body[: match.start()]):
            self._buf[:0] = body[match.start() :]
            body = body[: match.start()]
        events.append(body)
        return True


def _header_block_start(buf: bytearray, marker: int) -> int:
    """Start of the header block holding the marker: other header lines may precede it."""
    start = marker
    while start >= 2 and buf[start - 2 : start] == b"\r\n":
        previous = buf.rfind(b"\r\n", 0, start - 2)
        line_start = previous + 2 if previous >= 0 else 0
        if _HEADER_LINE_RE.match(bytes(buf[line_start : start - 2])) is None:
            break
        start = line_start
    return start


def _content_length(header_block: bytes) -> int | None:
    length: int | None = None
    for line in header_block.split(b"\r\n"):
        parsed = _HEADER_LINE_RE.match(line)
        if parsed is None:
            return None
        if MARKER_RE.match(line):
            value = parsed.group(1).strip()
            if not value.isdigit() or int(value) > MAX_BODY_BYTES:
                return None
            length = int(value)
    return length


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True
