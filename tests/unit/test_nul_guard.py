"""The writer guard: no NUL reaches the editor."""

from __future__ import annotations

import pytest

from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.framing import encode_frame
from steerlsp.server.lsp.transport import _without_nul


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"label": "a\x00b", "x\x00": ["\x00"]}},
        {"jsonrpc": "2.0", "method": "window/logMessage", "params": {"message": "\x00"}},
    ],
)
def test_the_writer_guard_replaces_nul_and_keeps_the_rest(message):
    framed = rpc.frame(message)
    assert b"\\u0000" in framed
    cleaned = _without_nul(framed)
    assert b"\\u0000" not in cleaned
    header, body = cleaned.split(b"\r\n\r\n", 1)
    assert header == f"Content-Length: {len(body)}".encode()
    assert rpc.without_nul(rpc.frame(message).split(b"\r\n\r\n", 1)[1]) == body


def test_a_backslash_u0000_in_text_is_not_a_nul():
    framed = rpc.frame({"jsonrpc": "2.0", "id": 1, "result": "\\u0000"})
    assert _without_nul(framed) == framed


def test_a_raw_nul_byte_in_a_body_is_replaced_too():
    """No JSON encoder writes one, but the guard works on bytes: a raw NUL is not let through."""
    body = b'{"jsonrpc":"2.0","id":1,"result":"a\x00b"}'
    cleaned = _without_nul(encode_frame(body))
    assert b"\x00" not in cleaned and "a\ufffdb".encode() in cleaned
