"""Malformed input never crashes, hangs or pops up; framing resynchronises.

Raw bytes are written to the real steerlsp process's stdin.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from steerlsp.server.lsp.framing import encode_frame
from tests.helpers.rawclient import FAKE_UPSTREAM, RawClient, steerlsp_command

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


@pytest.fixture
async def client(start_raw, shop) -> RawClient:
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    return client


async def _still_serving(client: RawClient) -> None:
    reply = await client.request("fake/echo", {"ok": 1}, timeout=10)
    assert reply["result"] == {"ok": 1}


def _errors(client: RawClient, msg_id: object) -> list[int]:
    return [r["error"]["code"] for r in client.responses if r.get("id") == msg_id and "error" in r]


async def _settle(client: RawClient) -> None:
    await _still_serving(client)
    await asyncio.sleep(0.1)


@pytest.mark.parametrize(
    ("body", "msg_id", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 71, "method": "fake/echo", "params": {', 71, PARSE_ERROR),
        (b'{"jsonrpc": "2.0", "method": "fake/echo"', None, None),
        (b"[1, 2, 3]", None, None),
        (b'"a string"', None, None),
        (b"42", None, None),
        (b'{"id": 72, "method": "fake/echo"}', 72, INVALID_REQUEST),
        (b'{"jsonrpc": "1.0", "id": 73, "method": "fake/echo"}', 73, INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 74, "method": 5}', 74, INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 75, "method": "fake/echo", "params": 5}', 75, INVALID_PARAMS),
        (b'{"jsonrpc": "2.0", "id": 76}', 76, INVALID_REQUEST),
        (b'[{"jsonrpc": "2.0", "id": 77, "method": "fake/echo"}]', 77, INVALID_REQUEST),
        (b"", None, None),
    ],
)
async def test_bad_bodies_get_the_right_error(client, body, msg_id, code):
    client.send_bytes(encode_frame(body))
    await _settle(client)
    if msg_id is not None:
        assert _errors(client, msg_id) == [code]
    assert not client.notifications_of("window/showMessage")


@pytest.mark.parametrize(
    "params",
    [
        5,
        {"position": {"line": 0, "character": 0}},
        {"textDocument": {"uri": "file:///x.py"}, "position": {"line": "zero", "character": 0}},
        {"textDocument": {"uri": "file:///x.py"}, "position": {"line": -1, "character": 0}},
        {"textDocument": {"uri": 3}, "position": {"line": 0, "character": 0}},
    ],
)
async def test_bad_params_for_a_forwarded_request(client, params):
    reply = await client.request("textDocument/hover", params)
    assert reply["error"]["code"] == INVALID_PARAMS
    await _still_serving(client)


async def test_bad_params_for_our_own_request_and_sync(client, shop):
    reply = await client.request("steerlsp/status", [1, 2])
    assert "result" in reply  # our status takes no params: anything goes
    client.notify("textDocument/didChange", {"textDocument": {"uri": 5}, "contentChanges": 7})
    client.notify("textDocument/didOpen", {"textDocument": {}})
    await _settle(client)
    assert not client.notifications_of("window/showMessage")
    received = (await client.request("fake/received"))["result"]
    assert not [m for m in received if m.get("method", "").startswith("textDocument/did")]


async def test_unknown_method_without_params_reaches_pylsp(start_raw, shop):
    client = await start_raw(steerlsp_command())
    await client.initialize(shop)
    reply = await client.request("custom/unknownThing")
    assert reply["error"]["code"] == METHOD_NOT_FOUND
    client.notify("custom/unknownNotification")
    reply = await client.request("$/unknownRequest")
    assert reply["error"]["code"] == METHOD_NOT_FOUND
    assert (await client.request("steerlsp/status"))["result"]["upstream"]["ready"]


def _frame(msg_id: int) -> bytes:
    return encode_frame(
        json.dumps(
            {"jsonrpc": "2.0", "id": msg_id, "method": "fake/echo", "params": {"n": msg_id}}
        ).encode()
    )


@pytest.mark.parametrize(
    "broken",
    [
        b"Content-Length: 10\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 90, "method": "fake/echo"}',
        b"Content-Length: 400\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 90, "method": "fake/echo"}',
        b"Content-Type: application/json\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 90}',
        b"Content-Length: many\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 90}',
        b"Content-Length: -5\r\n\r\n{}",
        b"garbage without any header at all\r\n\r\n",
    ],
    ids=["too-short", "too-long", "missing", "non-numeric", "negative", "garbage"],
)
async def test_framing_resynchronises_at_the_next_message(client, broken):
    client.send_bytes(broken + _frame(91))
    reply = await client.response(91, timeout=10)
    assert reply["result"] == {"n": 91}
    await _settle(client)
    assert len(_errors(client, 90)) <= 1  # answered at most once, when its id was readable
    assert not client.notifications_of("window/showMessage")


async def test_too_long_content_length_then_silence_does_not_hang(client):
    # The next message only arrives later: the idle resync must still find it.
    client.send_bytes(b"Content-Length: 5000\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 92')
    await asyncio.sleep(0.2)
    client.send_bytes(_frame(93))
    assert (await client.response(93, timeout=10))["result"] == {"n": 93}


async def test_every_request_gets_exactly_one_reply(client):
    ids = [client.send_request("fake/echo", {"i": i}) for i in range(50)]
    ids += [client.send_request("steerlsp/status") for _ in range(10)]
    client.send_bytes(encode_frame(b'{"jsonrpc": "2.0", "id": 5000, "method": "fake/echo",'))
    dup = client.send_request("fake/hang", {}, msg_id="dup")
    client.send({"jsonrpc": "2.0", "id": "dup", "method": "fake/echo", "params": {}})
    for msg_id in ids:
        await client.response(msg_id)
    await _settle(client)
    client.notify("$/cancelRequest", {"id": dup})
    await client.response(dup)
    await _settle(client)
    counts = Counter(r.get("id") for r in client.responses)
    assert all(counts[i] == 1 for i in ids)
    assert counts[5000] == 1
    assert counts["dup"] == 2  # the duplicate id refused once, the original cancelled once
    assert sorted(_errors(client, "dup")) == sorted([INVALID_REQUEST, -32800])
