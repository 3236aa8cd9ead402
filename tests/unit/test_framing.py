"""Unit tests for the Content-Length frame decoder (pure, no I/O)."""

from __future__ import annotations

import json
import random

import pytest

from steerlsp.server.lsp import framing
from steerlsp.server.lsp.framing import FrameDecoder, FramingError, encode_frame

A = b'{"jsonrpc":"2.0","id":1,"method":"a"}'
B = b'{"jsonrpc":"2.0","id":2,"method":"b"}'
C = b'{"jsonrpc":"2.0","method":"c","params":{}}'


def bodies(events: list) -> list[bytes]:
    return [e for e in events if isinstance(e, bytes)]


def errors(events: list) -> list[FramingError]:
    return [e for e in events if isinstance(e, FramingError)]


def test_encode_frame_ascii():
    assert encode_frame(A) == b"Content-Length: %d\r\n\r\n" % len(A) + A


@pytest.mark.parametrize("text", ["héllo", "中文", "😋🛒", "e\u0301", ""])
def test_encode_frame_counts_bytes_and_round_trips(text):
    body = json.dumps({"text": text}, ensure_ascii=False).encode("utf-8")
    frame = encode_frame(body)
    header, _, rest = frame.partition(b"\r\n\r\n")
    assert header == b"Content-Length: %d" % len(body)
    assert rest == body
    assert FrameDecoder().feed(frame) == [body]


def test_single_frame():
    decoder = FrameDecoder()
    assert decoder.feed(encode_frame(A)) == [A]
    assert not decoder.pending


def test_several_frames_in_one_chunk():
    data = encode_frame(A) + encode_frame(B) + encode_frame(C)
    assert FrameDecoder().feed(data) == [A, B, C]


def test_frames_split_byte_by_byte():
    decoder = FrameDecoder()
    data = encode_frame(A) + encode_frame('{"x":"😋"}'.encode()) + encode_frame(B)
    events = []
    for i in range(len(data)):
        events += decoder.feed(data[i : i + 1])
    assert events == [A, '{"x":"😋"}'.encode(), B]
    assert not decoder.pending


@pytest.mark.parametrize("size", [2, 3, 7, 13, 64])
def test_frames_split_at_arbitrary_chunk_sizes(size):
    decoder = FrameDecoder()
    data = encode_frame(A) + encode_frame(B)
    events = []
    for i in range(0, len(data), size):
        events += decoder.feed(data[i : i + size])
    assert events == [A, B]


def test_pending_tracks_partial_input():
    decoder = FrameDecoder()
    frame = encode_frame(A)
    assert decoder.feed(frame[:10]) == []
    assert decoder.pending
    assert decoder.feed(frame[10:25]) == []
    assert decoder.pending
    assert decoder.feed(frame[25:]) == [A]
    assert not decoder.pending


@pytest.mark.parametrize(
    "header",
    [b"content-length: %d", b"CONTENT-LENGTH: %d", b"Content-length:%d", b"Content-Length \t:  %d"],
)
def test_header_name_is_case_insensitive(header):
    data = header % len(A) + b"\r\n\r\n" + A
    assert FrameDecoder().feed(data) == [A]


@pytest.mark.parametrize(
    "headers",
    [
        b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d",
    ],
)
def test_content_type_header_is_accepted(headers):
    data = headers % len(A) + b"\r\n\r\n" + A + encode_frame(B)
    assert FrameDecoder().feed(data) == [A, B]
    decoder = FrameDecoder()
    assert [e for i in range(len(data)) for e in decoder.feed(data[i : i + 1])] == [A, B]


def test_zero_length_body():
    decoder = FrameDecoder()
    assert decoder.feed(b"Content-Length: 0\r\n\r\n" + encode_frame(A)) == [b"", A]
    assert not decoder.pending


def test_garbage_before_header_is_reported_then_resyncs():
    events = FrameDecoder().feed(b"hello world\n" + encode_frame(A))
    assert events == [FramingError("bytes before a header", b"hello world\n"), A]


def test_whitespace_before_header_is_dropped_silently():
    assert FrameDecoder().feed(b"\r\n  \r\n" + encode_frame(A)) == [A]


@pytest.mark.parametrize("value", [b"abc", b"-5", b"", b"1.5", b"0x10", b"%d" % (1 << 40)])
def test_invalid_content_length_value(value):
    data = b"Content-Length: " + value + b"\r\n\r\n{}" + encode_frame(A)
    events = FrameDecoder().feed(data)
    assert errors(events)[0].reason == "invalid Content-Length header"
    assert errors(events)[0].discarded.startswith(b"Content-Length: " + value)
    assert bodies(events) == [A]


def test_malformed_header_line_invalidates_block():
    data = b"Content-Length: 2\r\nno colon here\r\n\r\n{}" + encode_frame(A)
    events = FrameDecoder().feed(data)
    assert errors(events)[0].reason == "invalid Content-Length header"
    assert bodies(events) == [A]


def test_header_block_without_content_length():
    data = b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + B + encode_frame(A)
    events = FrameDecoder().feed(data)
    assert events == [FramingError("bytes before a header", data[: -len(encode_frame(A))]), A]


@pytest.mark.parametrize(
    "broken",
    [b"Content-Length: 5", b"Content-Length: 2\n\n{}", b"Content-Length: 2\r\nbad header\r\n"],
)
def test_broken_header_does_not_swallow_the_next_message(broken):
    events = FrameDecoder().feed(broken + encode_frame(A) + encode_frame(B))
    assert errors(events)
    assert bodies(events)[-2:] == [A, B]


def test_content_length_too_small_then_resync():
    data = b"Content-Length: 10\r\n\r\n" + A + encode_frame(B)
    decoder = FrameDecoder()
    events = decoder.feed(data)
    assert events[0] == A[:10]
    assert events[1] == FramingError("bytes before a header", A[10:])
    assert events[2] == B
    assert not decoder.pending


def test_content_length_too_large_with_next_message_buffered():
    data = b"Content-Length: %d\r\n\r\n" % (len(A) + 20) + A + encode_frame(B) + encode_frame(C)
    decoder = FrameDecoder()
    assert decoder.feed(data) == [A, B, C]
    assert not decoder.pending


def test_content_length_too_large_resolved_by_flush_idle():
    # The next header's line is not complete yet; a pause settles it.
    decoder = FrameDecoder()
    frame = encode_frame(B)
    data = b"Content-Length: %d\r\n\r\n" % (len(A) + 500) + A + frame[:17]
    assert decoder.feed(data) == []
    assert decoder.pending
    assert decoder.flush_idle() == [A]
    assert decoder.feed(frame[17:]) == [B]
    assert not decoder.pending
    assert decoder.feed(encode_frame(C)) == [C]


def test_flush_idle_reports_non_json_prefix():
    decoder = FrameDecoder()
    frame = encode_frame(B)
    decoder.feed(b"Content-Length: 900\r\n\r\n" + A[:-3] + frame[:17])
    events = decoder.flush_idle() + decoder.feed(frame[17:])
    assert events == [FramingError("Content-Length larger than the body", A[:-3]), B]


def test_flush_idle_keeps_waiting_for_a_partial_body():
    decoder = FrameDecoder()
    decoder.feed(b"Content-Length: 900\r\n\r\n" + A[:-3])
    assert decoder.flush_idle() == []
    assert decoder.pending


def test_flush_idle_drops_headerless_bytes():
    decoder = FrameDecoder()
    assert decoder.feed(b"{garbage}") == []
    assert decoder.flush_idle() == [FramingError("bytes without a header", b"{garbage}")]
    assert not decoder.pending
    assert decoder.flush_idle() == []


@pytest.mark.parametrize(
    "start", [b"Content-Len", b"Content-Length: 3", b"Content-Type: x\r\nCont"]
)
def test_flush_idle_keeps_what_may_become_a_header(start):
    decoder = FrameDecoder()
    frame = b"Content-Type: x\r\n" + encode_frame(A) if b"Type" in start else encode_frame(A)
    assert frame.startswith(start)
    assert decoder.feed(start) == []
    assert decoder.flush_idle() == []
    assert decoder.feed(frame[len(start) :]) == [A]


def test_word_kept_at_idle_is_reported_when_a_header_follows():
    decoder = FrameDecoder()
    decoder.feed(b"garbage")
    assert decoder.flush_idle() == []
    assert decoder.feed(encode_frame(A)) == [FramingError("bytes before a header", b"garbage"), A]


def test_flush_idle_keeps_partial_header():
    decoder = FrameDecoder()
    frame = encode_frame(A)
    decoder.feed(frame[:20])
    assert decoder.flush_idle() == []
    assert decoder.feed(frame[20:]) == [A]


def test_json_body_mentioning_content_length_is_not_split():
    body = json.dumps({"jsonrpc": "2.0", "method": "log", "params": "Content-Length: 5"}).encode()
    assert FrameDecoder().feed(encode_frame(body) + encode_frame(A)) == [body, A]


def test_garbage_line_before_header_lines_is_reported():
    data = b"not a header\r\nContent-Type: x\r\n" + encode_frame(A)
    assert FrameDecoder().feed(data) == [
        FramingError("bytes before a header", b"not a header\r\n"),
        A,
    ]


def test_overlong_header_resyncs_at_a_later_header(monkeypatch):
    monkeypatch.setattr(framing, "MAX_HEADER_BYTES", 64)
    frame = encode_frame(A)
    decoder = FrameDecoder()
    events = decoder.feed(b"Content-Length: 5" + b"x" * 100 + frame[:20])
    assert errors(events) == [
        FramingError("header block too long", b"Content-Length: 5" + b"x" * 100)
    ]
    assert decoder.feed(frame[20:]) == [A]


def test_overlong_header_block_is_dropped(monkeypatch):
    monkeypatch.setattr(framing, "MAX_HEADER_BYTES", 64)
    decoder = FrameDecoder()
    events = decoder.feed(b"Content-Length: 5" + b"x" * 100)
    assert [e.reason for e in errors(events)] == ["header block too long"]
    assert decoder.feed(encode_frame(A)) == [A]


def test_huge_garbage_is_dropped(monkeypatch):
    monkeypatch.setattr(framing, "MAX_GARBAGE_BYTES", 16)
    decoder = FrameDecoder()
    events = decoder.feed(b"y" * 40)
    assert events == [FramingError("bytes without a header", b"y" * 40)]
    assert not decoder.pending


@pytest.mark.parametrize("seed", range(20))
def test_never_raises_on_random_input(seed):
    rng = random.Random(seed)
    pieces = [
        encode_frame(A),
        b"Content-Length: ",
        b"\r\n\r\n",
        b"{",
        b"\x00\xff",
        b"9" * 3,
        b"Content-Length: 99999\r\n\r\n",
        b"content-length:x\r\n\r\n",
        b"\n",
        b"}",
    ]
    data = b"".join(rng.choice(pieces) for _ in range(60)) + encode_frame(B)
    decoder = FrameDecoder()
    events = []
    position = 0
    while position < len(data):
        step = rng.randint(1, 40)
        events += decoder.feed(data[position : position + step])
        position += step
        if rng.random() < 0.2:
            events += decoder.flush_idle()
    events += decoder.flush_idle()
    assert all(isinstance(e, (bytes, FramingError)) for e in events)


# ---- a Content-Length that is too long (issue 9, item 6) ---------------------


def test_too_long_length_with_broken_body_does_not_swallow_the_next_message():
    # The broken body is not JSON; the next frame arrives later and overflows
    # the declared length. It used to be eaten as part of the broken body.
    broken = b'{"jsonrpc": "2.0", "id": 92'
    decoder = FrameDecoder()
    assert decoder.feed(b"Content-Length: 60\r\n\r\n" + broken) == []
    assert decoder.flush_idle() == []  # the pause: nothing to cut at yet
    events = decoder.feed(encode_frame(B))
    assert events == [FramingError("Content-Length larger than the body", broken), B]
    assert not decoder.pending


def test_too_long_length_resyncs_as_soon_as_a_header_line_is_complete():
    # No idle wait: a whole "Content-Length: N" line cannot occur inside a
    # valid JSON body (raw CR/LF cannot be in a JSON string), so the declared
    # body is certainly cut short there.
    broken = b'{"jsonrpc": "2.0", "id": 92'
    decoder = FrameDecoder()
    events = decoder.feed(b"Content-Length: 5000\r\n\r\n" + broken + encode_frame(B))
    assert events == [FramingError("Content-Length larger than the body", broken), B]
    assert not decoder.pending


def test_too_long_length_with_json_body_is_delivered_at_the_next_header():
    decoder = FrameDecoder()
    events = decoder.feed(b"Content-Length: 5000\r\n\r\n" + A + encode_frame(B))
    assert events == [A, B]
    assert not decoder.pending


def test_too_long_length_keeps_headers_before_content_length():
    nxt = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + encode_frame(B)
    decoder = FrameDecoder()
    events = decoder.feed(b"Content-Length: 5000\r\n\r\n" + A + b"\r\n" + nxt)
    assert events == [A + b"\r\n", B]


def test_split_header_line_in_a_body_waits_for_its_end():
    decoder = FrameDecoder()
    frame = encode_frame(B)
    assert decoder.feed(b"Content-Length: 5000\r\n\r\n" + A + frame[:16]) == []
    assert decoder.feed(frame[16:]) == [A, B]


def test_body_quoting_a_header_line_is_not_split():
    # Escaped CR/LF inside a JSON string: a legitimate body, read whole.
    text = "Content-Length: 12\r\n\r\n" * 3
    body = json.dumps({"jsonrpc": "2.0", "method": "log", "params": text}).encode()
    data = encode_frame(body) + encode_frame(A)
    decoder = FrameDecoder()
    events = []
    for i in range(0, len(data), 7):  # streamed in small chunks
        events += decoder.feed(data[i : i + 7])
    assert events == [body, A]


def test_flush_idle_delivers_a_complete_json_body_under_a_too_long_length():
    # Only whitespace could legally follow a complete JSON value, so after a
    # pause the body is delivered instead of waiting for the next message.
    decoder = FrameDecoder()
    decoder.feed(b"Content-Length: 900\r\n\r\n" + A)
    assert decoder.flush_idle() == [A]
    assert not decoder.pending
    assert decoder.feed(b"  \r\n" + encode_frame(B)) == [B]


def test_header_line_arriving_across_the_declared_end():
    decoder = FrameDecoder()
    frame = encode_frame(B)
    assert decoder.feed(b"Content-Length: %d\r\n\r\n" % (len(A) + 17) + A + frame[:17]) == [A]
    assert decoder.feed(frame[17:]) == [B]


@pytest.mark.parametrize("seed", range(20))
def test_too_long_lengths_never_cost_a_valid_message(seed):
    rng = random.Random(seed)
    valid = [b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{}}' % i for i in range(30)]
    data = b""
    for body in valid:
        if rng.random() < 0.4:
            broken = b'{"jsonrpc":"2.0","id":"x%d","method":"m"' % rng.randint(0, 99)
            data += b"Content-Length: %d\r\n\r\n" % (len(broken) + rng.randint(1, 400)) + broken
        data += encode_frame(body)
    decoder = FrameDecoder()
    events = []
    position = 0
    while position < len(data):
        step = rng.randint(1, 200)
        events += decoder.feed(data[position : position + step])
        position += step
        if rng.random() < 0.2:  # a pause anywhere, even inside a header
            events += decoder.flush_idle()
    events += decoder.flush_idle()
    assert bodies(events) == valid


def test_slow_body_quoting_a_header_is_not_cut_by_a_pause():
    body = json.dumps({"jsonrpc": "2.0", "method": "log", "params": "Content-Length: 5 ok"})
    frame = encode_frame(body.encode())
    decoder = FrameDecoder()
    cut = frame.index(b"ok") + 1  # "Content-Length: 5 o": no header line
    assert decoder.feed(frame[:cut]) == []
    assert decoder.flush_idle() == []
    assert decoder.feed(frame[cut:]) == [body.encode()]
