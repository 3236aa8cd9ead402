"""An upstream that crashes, hangs or is missing never takes the session down."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tests.helpers.oracle import in_utf16
from tests.helpers.rawclient import FAKE_UPSTREAM, RawClient, steerlsp_command

REQUEST_FAILED = -32803
PYLSP = [sys.executable, "-m", "pylsp"]


async def _status(client: RawClient) -> dict:
    return (await client.request("steerlsp/status"))["result"]


async def _restarted(client: RawClient, old_pid: int) -> dict:
    async def poll() -> dict:
        while True:
            upstream = (await _status(client))["upstream"]
            if upstream["ready"] and upstream["pid"] not in (None, old_pid):
                return upstream
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(poll(), 30)


def _diagnostics(client: RawClient, uri: str) -> list:
    notes = [
        n
        for n in client.notifications_of("textDocument/publishDiagnostics")
        if n["params"]["uri"] == uri
    ]
    return notes[-1]["params"]["diagnostics"] if notes else []


async def test_kill_9_pylsp_restores_the_session(start_raw, shop):
    cart, report = shop / "shop" / "cart.py", shop / "shop" / "report.py"
    # An unsaved edit: replay must send the editor's text, not the file's.
    edited = report.read_text().replace("missing_name", "other_missing")
    line_no, line = next(
        (i, t) for i, t in enumerate(cart.read_text().splitlines()) if "return discount(" in t
    )
    hover_at = {
        "textDocument": {"uri": cart.as_uri()},
        "position": {"line": line_no, "character": line.index("discount") + 2},
    }

    client = await start_raw(steerlsp_command())
    await client.initialize(shop)
    client.open(cart.as_uri(), cart.read_text())
    client.open(report.as_uri(), report.read_text())
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": report.as_uri(), "version": 2},
            "contentChanges": [{"text": edited}],
        },
    )
    before = await client.request("textDocument/hover", hover_at)
    old_pid = (await _status(client))["upstream"]["pid"]

    os.kill(old_pid, signal.SIGKILL)
    await _restarted(client, old_pid)
    shown = await client.wait_for(lambda: client.notifications_of("window/showMessage"))
    assert "restarted" in shown[0]["params"]["message"]
    client.notifications.clear()
    after = await client.request("textDocument/hover", hover_at)
    diagnostics = await client.wait_for(lambda: _diagnostics(client, report.as_uri()))

    fresh = await start_raw(PYLSP)
    await fresh.initialize(shop)
    fresh.open(cart.as_uri(), cart.read_text())
    fresh.open(report.as_uri(), edited, version=2)
    expected = await fresh.request("textDocument/hover", hover_at)
    expected_diagnostics = await fresh.wait_for(lambda: _diagnostics(fresh, report.as_uri()))

    assert after["result"] == expected["result"] == before["result"]
    assert "Take ``percent`` off" in after["result"]["contents"]["value"]
    assert diagnostics == in_utf16(expected_diagnostics, report.as_uri(), {report.as_uri(): edited})
    assert any("other_missing" in d["message"] for d in diagnostics)


async def test_crash_is_reported_once_and_in_flight_requests_fail(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    for round_ in range(2):
        pid = (await _status(client))["upstream"]["pid"]
        hanging = client.send_request("fake/hang", {})
        crash = client.send_request("fake/crash", {})
        for msg_id in (hanging, crash):
            reply = await client.response(msg_id)
            assert reply["error"]["code"] == REQUEST_FAILED
            assert "restarted" in reply["error"]["message"]
        await _restarted(client, pid)
        assert (await client.request("fake/echo", {"round": round_}))["result"] == {"round": round_}
    shown = client.notifications_of("window/showMessage")
    assert len(shown) == 1 and "restarted" in shown[0]["params"]["message"]


async def test_restart_replays_initialize_settings_and_documents(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    uri = (shop / "shop" / "scratch.py").as_uri()
    client.open(uri, "a = 1\n")
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 7}, "contentChanges": [{"text": "a = 2\n"}]},
    )
    settings = {"settings": {"pylsp": {"plugins": {"pycodestyle": {"enabled": False}}}}}
    client.notify("workspace/didChangeConfiguration", settings)
    first = (await client.request("fake/received"))["result"]
    pid = (await _status(client))["upstream"]["pid"]
    client.send_request("fake/crash")
    await _restarted(client, pid)
    replay = (await client.request("fake/received"))["result"]
    methods = [m.get("method") for m in replay]
    assert methods == [
        "initialize",
        "initialized",
        "workspace/didChangeConfiguration",
        "textDocument/didOpen",
    ]
    assert replay[0]["params"] == first[0]["params"]
    assert replay[2]["params"] == settings
    assert replay[3]["params"]["textDocument"] == {
        "uri": uri,
        "languageId": "python",
        "version": 7,
        "text": "a = 2\n",
    }


async def test_requests_during_a_restart_wait_for_the_new_upstream(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    crash = client.send_request("fake/crash")
    await client.response(crash)
    # The upstream is down now; this is held and sent after the replay.
    reply = await client.request("fake/echo", {"held": True})
    assert reply["result"] == {"held": True}


async def test_restarts_are_bounded(start_raw, shop):
    client = await start_raw(steerlsp_command("--max-restarts", "2", upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    for _ in range(3):
        pid = (await _status(client))["upstream"]["pid"]
        await client.response(client.send_request("fake/crash"))
        if _ < 2:
            await _restarted(client, pid)
    await client.wait_for(lambda: len(client.notifications_of("window/showMessage")) == 2)
    reply = await client.request("fake/echo", {})
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "not restarting" in reply["error"]["message"]
    status = await _status(client)
    assert status["upstream"]["restarts"] == 3 and status["upstream"]["unavailable"]
    assert status["state"] == "running"


async def test_missing_upstream_is_reported_and_own_features_work(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=["/nonexistent/bin/pylsp-nowhere"]))
    caps = (await client.initialize(shop))["capabilities"]
    assert caps["textDocumentSync"]["change"] == 2
    shown = await client.wait_for(lambda: client.notifications_of("window/showMessage"))
    assert "pylsp-nowhere" in shown[0]["params"]["message"]
    assert shown[0]["params"]["type"] == 1
    client.open((shop / "shop" / "cart.py").as_uri(), "x = 1\n")
    reply = await client.request(
        "textDocument/hover",
        {
            "textDocument": {"uri": (shop / "shop" / "cart.py").as_uri()},
            "position": {"line": 0, "character": 0},
        },
    )
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "cannot start the upstream" in reply["error"]["message"]
    assert (await _status(client))["upstream"]["pid"] is None
    assert await client.shutdown() == 0
