"""An upstream connection with no editor attached: the shape of the private analysis instance."""

import asyncio
import logging

import pytest

from steerlsp.server.upstream.connection import UpstreamConnection, UpstreamOptions
from steerlsp.server.upstream.listener import Headless
from tests.helpers.rawclient import FAKE_UPSTREAM as FAKE

OPEN = {
    "jsonrpc": "2.0",
    "method": "textDocument/didOpen",
    "params": {
        "textDocument": {"uri": "file:///a.py", "languageId": "python", "version": 1, "text": "x"}
    },
}


async def test_a_headless_connection_initializes_answers_and_survives_a_crash():
    conn: UpstreamConnection[object] = UpstreamConnection(
        UpstreamOptions(FAKE, backoff=(0.05,)),
        Headless(),
        replay=lambda: [OPEN],
        settings=lambda: {"settings": {"pylsp": {"plugins": {}}}},
    )
    await conn.start()
    result = await conn.initialize({"processId": None, "rootUri": None, "capabilities": {}})
    assert result["capabilities"]["hoverProvider"] is True
    assert await conn.request("fake/echo", {"a": 1}, 5.0) == {"a": 1}

    # A request from the upstream is answered at once (there is no editor to ask).
    answer = await conn.request(
        "fake/serverRequest", {"method": "workspace/configuration", "params": {}, "id": 7}, 5.0
    )
    assert answer is None

    first = conn.process
    conn.send({"jsonrpc": "2.0", "method": "fake/crash", "id": 99})
    for _ in range(200):
        if conn.process is not first and conn.ready:
            break
        await asyncio.sleep(0.05)
    assert conn.status()["state"] == "running" and conn.restarts == 1
    received = await conn.request("fake/received", None, 5.0)
    methods = [entry.get("method") for entry in received]
    assert methods[:4] == [
        "initialize",
        "initialized",
        "workspace/didChangeConfiguration",
        "textDocument/didOpen",
    ]
    await conn.stop()
    assert conn.process is not None and not conn.process.alive


async def test_a_cancelled_request_is_cancelled_upstream_too():
    conn: UpstreamConnection[object] = UpstreamConnection(UpstreamOptions(FAKE), Headless())
    await conn.start()
    await conn.initialize({"processId": None, "rootUri": None, "capabilities": {}})
    conn.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    asking = asyncio.ensure_future(conn.request("fake/hang", None, 30.0))
    await asyncio.sleep(0.2)
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    received = await conn.request("fake/received", None, 5.0)
    hang = next(entry for entry in received if entry.get("method") == "fake/hang")
    cancels = [entry for entry in received if entry.get("method") == "$/cancelRequest"]
    assert [entry["params"] for entry in cancels] == [{"id": hang["id"]}]
    await conn.stop()


async def test_a_late_answer_to_a_cancelled_request_is_no_warning(caplog):
    conn: UpstreamConnection[object] = UpstreamConnection(UpstreamOptions(FAKE), Headless())
    await conn.start()
    await conn.initialize({"processId": None, "rootUri": None, "capabilities": {}})
    caplog.set_level(logging.DEBUG, logger="steerlsp.server.upstream.connection")
    asking = asyncio.ensure_future(conn.request("fake/hang", None, 30.0))
    await asyncio.sleep(0.2)
    asking.cancel()  # the fake answers the cancelled request with an error, late
    with pytest.raises(asyncio.CancelledError):
        await asking
    await conn.request("fake/echo", None, 5.0)  # the late answer came before this one
    late = [r for r in caplog.records if "given up on" in r.getMessage()]
    assert [r.levelno for r in late] == [logging.DEBUG]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    await conn.stop()
