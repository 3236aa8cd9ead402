"""A busy worker pool never starves the stdin reader (pygls 2.1.1 shares them)."""

from __future__ import annotations

from tests.helpers.rawclient import steerlsp_command

REQUEST_CANCELLED = -32800


async def test_cancel_and_forwarding_while_every_worker_is_busy(start_raw, shop):
    client = await start_raw(steerlsp_command("--bench-methods"))
    await client.initialize(shop)
    cart = shop / "shop" / "cart.py"
    client.open(cart.as_uri(), cart.read_text())
    # Two workers in the pool: two requests run, two more wait in its queue.
    busy = [client.send_request("steerlsp/benchBusy", {"seconds": 4}) for _ in range(4)]
    hover = await client.request(
        "textDocument/hover",
        {"textDocument": {"uri": cart.as_uri()}, "position": {"line": 28, "character": 17}},
    )
    assert "discount" in hover["result"]["contents"]["value"]
    status = await client.request("steerlsp/status")
    assert status["result"]["state"] == "running"
    client.notify("$/cancelRequest", {"id": busy[3]})
    cancelled = await client.response(busy[3])
    assert cancelled["error"]["code"] == REQUEST_CANCELLED
    # All of that was answered while the pool was still busy.
    answered = {r["id"] for r in client.responses}
    assert not answered & set(busy[:3])
    for msg_id in busy[:3]:
        assert "spins" in (await client.response(msg_id, timeout=60))["result"]
