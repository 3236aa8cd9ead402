"""LSP base-protocol framing: ``Content-Length`` headers around JSON bodies.

The decoder is a pure state machine (bytes in, events out) so that the client
reader thread and the upstream reader share one tested implementation. It
never raises on bad input: anything it cannot frame becomes a
:class:`FramingError` event and the decoder resynchronises at the next
``Content-Length:`` header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

MARKER_RE = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
HEADER_END = b"\r\n\r\n"
# Header names are RFC 7230 tokens: no quotes or braces, so a JSON line never passes.
_HEADER_LINE_RE = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+[ \t]*:[ \t]*(.*)$")
# A whole Content-Length line. It cannot occur inside a valid JSON body: a JSON
# string cannot hold a raw line break, so the string would have to close (with
# a quote) before it, and there is no quote in this line.
_LENGTH_LINE_RE = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_HEADER_LINE_SO_FAR_RE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]*(?:[ \t]*:[^\r\n]*)?\r?")
# What may follow a marker while its line is still arriving.
_LENGTH_LINE_SO_FAR_RE = re.compile(rb"[ \t]*\d*[ \t]*\r?")
# How far back to look again for a marker split between two reads.
_MARKER_TAIL = 64
_MARKER_WORD = b"content-length"
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
        self._scan = 1  # where the search for a header inside the current body resumes
        self._idle_checked = -1  # buffer size at the last idle check of a body

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
        bytes that will never come. If the body ends in the start of a header
        line, we cut the body there and resynchronise; if what arrived is a
        complete JSON value, it is the whole body (only whitespace could follow
        it), so it is delivered now. A body that merely quotes a header, paused
        mid-way, is left alone. Headerless garbage is dropped.
        """
        events: list[Event] = []
        if self._need is None:
            if self._buf and not _header_so_far(self._buf):
                events.append(FramingError("bytes without a header", bytes(self._buf)))
                self._buf.clear()
            return events
        arriving = self._line_arriving(len(self._buf))
        if arriving is not None:  # a header line stopped arriving there
            self._cut_body(self._block_start(arriving), events)
        elif len(self._buf) >= self._need:
            # It waited for a header cut between reads; keep that start for the next read.
            unfinished = _unfinished_marker(self._buf, self._need)
            self._cut_body(self._need if unfinished is None else unfinished, events)
        elif len(self._buf) != self._idle_checked:
            self._idle_checked = len(self._buf)  # a stalled big body is parsed once
            if _is_complete_json(self._buf):
                self._cut_body(len(self._buf), events)
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
        self._scan = 1
        self._idle_checked = -1
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
        # A too-large Content-Length would swallow the start of the next message.
        cut = self._header_in_body(need)
        if cut is not None:
            self._cut_body(cut, events)
            return True
        if len(self._buf) < need:
            return False
        # A header line still arriving across the declared end: no JSON body
        # ends in "Content-Length: 12", so this one is cut short there too.
        if len(self._buf) - need < _MARKER_TAIL:  # near the end of what has arrived
            arriving = self._line_arriving(need)
            if arriving is not None:
                self._cut_body(self._block_start(arriving), events)
                return True
            if _unfinished_marker(self._buf, need) is not None:
                return False  # maybe the next header, cut between reads: wait (flush_idle ends it)
        body = bytes(self._buf[:need])
        del self._buf[:need]
        self._need = None
        events.append(body)
        return True

    def _header_in_body(self, need: int) -> int | None:
        """Where a next message starts inside the declared body, if one certainly does.

        Only a whole ``Content-Length: N`` line counts (see ``_LENGTH_LINE_RE``),
        so a valid body that quotes headers is never split. Each read is
        searched once (the tail again, for a line cut between two reads).
        """
        buf = self._buf
        # Such a line ends in a raw newline, which compact JSON never holds:
        # memchr-speed over most bodies, a short regex window per newline.
        newline = buf.find(b"\n", self._scan)
        while 0 <= newline < need + _MARKER_TAIL:
            window = max(self._scan, newline - _MARKER_TAIL)
            match = _LENGTH_LINE_RE.search(buf, window, newline + 1)
            if match is not None:
                return self._block_start(match.start()) if match.start() < need else None
            newline = buf.find(b"\n", newline + 1)
        self._scan = max(self._scan, min(len(buf), need) - _MARKER_TAIL)
        return None

    def _line_arriving(self, end: int) -> int | None:
        """Start of a ``Content-Length`` line begun before ``end``, cut off by the buffer's end."""
        for match in MARKER_RE.finditer(self._buf, max(1, len(self._buf) - _MARKER_TAIL)):
            if match.start() < end and _LENGTH_LINE_SO_FAR_RE.fullmatch(self._buf, match.end()):
                return match.start()
        return None

    def _block_start(self, marker: int) -> int:
        start = _header_block_start(self._buf, marker)
        return start if start > 0 else marker  # always report the broken part

    def _cut_body(self, cut: int, events: list[Event]) -> None:
        """End the current body at ``cut``: deliver it if it is JSON, else report it."""
        body = bytes(self._buf[:cut])
        del self._buf[:cut]
        self._need = None
        if _is_json(body):
            events.append(body)
        else:
            events.append(FramingError("Content-Length larger than the body", body))


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


def _header_so_far(buf: bytearray) -> bool:
    """True if ``buf`` can still grow into a header block (a read may end anywhere)."""
    *whole, last = bytes(buf).split(b"\r\n")
    lines_ok = all(_HEADER_LINE_RE.match(line) for line in whole)
    return lines_ok and _HEADER_LINE_SO_FAR_RE.fullmatch(last) is not None


def _unfinished_marker(buf: bytearray, need: int) -> int | None:
    """Start of a ``Content-Length:`` marker begun before ``need`` but not yet whole."""
    tail = bytes(buf[max(1, need - _MARKER_TAIL) :]).lower()
    word = tail.rstrip(b" \t")
    for size in range(min(len(word), len(_MARKER_WORD)), 0, -1):
        whole = size == len(_MARKER_WORD)
        if word.endswith(_MARKER_WORD[:size]) and (whole or len(word) == len(tail)):
            start = len(buf) - len(tail) + len(word) - size
            return start if start < need else None
    return None


def _is_json(data: bytes | bytearray) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def _is_complete_json(data: bytearray) -> bool:
    # Bodies are objects (or arrays): skip the parse when they cannot have ended.
    return data.rstrip()[-1:] in (b"}", b"]") and _is_json(data)
