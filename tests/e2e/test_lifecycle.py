"""Lifecycle rules that pygls alone does not enforce (probed on pygls 2.1.1)."""

from __future__ import annotations

import signal

from tests.helpers.rawclient import FAKE_UPSTREAM, steerlsp_command

SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600


async def test_request_before_initialize_is_refused(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    reply = await client.request(
        "textDocument/hover",
        {
            "textDocument": {"uri": (shop / "shop" / "cart.py").as_uri()},
            "position": {"line": 0, "character": 0},
        },
    )
    assert reply["error"]["code"] == SERVER_NOT_INITIALIZED
    # The session is still usable afterwards.
    result = await client.initialize(shop)
    assert result["capabilities"]["hoverProvider"] is True


async def test_second_initialize_is_invalid(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    reply = await client.request(
        "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
    )
    assert reply["error"]["code"] == INVALID_REQUEST
    assert "result" in await client.request("fake/echo", {"still": "alive"})


async def test_requests_after_shutdown_are_invalid(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    assert (await client.request("shutdown"))["result"] is None
    for method in ("textDocument/hover", "fake/echo", "steerlsp/status", "initialize"):
        reply = await client.request(method, {})
        assert reply["error"]["code"] == INVALID_REQUEST, method
    client.notify("exit")
    assert await client.proc.wait() == 0


async def test_exit_without_shutdown_exits_1_and_stops_pylsp(start_raw, shop):
    client = await start_raw(steerlsp_command())
    await client.initialize(shop)
    status = await client.request("steerlsp/status")
    pid = status["result"]["upstream"]["pid"]
    # The private analysis instance starts on its first question, and nothing asked yet.
    assert status["result"]["analysis"] == {"state": "idle"}
    client.notify("exit")
    assert await client.proc.wait() == 1
    assert not _alive(pid)


async def test_shutdown_then_exit_exits_0_and_stops_pylsp(start_raw, shop):
    client = await start_raw(steerlsp_command())
    await client.initialize(shop)
    pid = (await client.request("steerlsp/status"))["result"]["upstream"]["pid"]
    assert await client.shutdown() == 0
    assert not _alive(pid)


async def test_eof_on_stdin_stops_everything(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    pid = (await client.request("steerlsp/status"))["result"]["upstream"]["pid"]
    assert client.proc.stdin is not None
    client.proc.stdin.close()
    assert await client.proc.wait() == 1
    assert not _alive(pid)


async def test_sigterm_stops_everything_and_leaves_no_directory(
    start_raw, shop, tmp_path, monkeypatch
):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # where its neutral directory goes
    client = await start_raw(steerlsp_command())
    await client.initialize(shop)
    pid = (await client.request("steerlsp/status"))["result"]["upstream"]["pid"]
    (made,) = scratch.iterdir()  # pylsp's working directory, named by steerlsp's pid
    assert made.name.startswith(f"steerlsp-cwd-{client.proc.pid}-")
    client.proc.terminate()
    assert await client.proc.wait() == 128 + signal.SIGTERM
    assert not _alive(pid)
    assert list(scratch.iterdir()) == []


async def test_initialize_merges_capabilities(start_raw, shop):
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    caps = await client.initialize(shop, {"general": {"positionEncodings": ["utf-8", "utf-16"]}})
    caps = caps["capabilities"]
    # the upstream's experimental capabilities, beside steerlsp's own methods
    assert caps["experimental"]["fake"] is True
    assert "textDocument/expectedType" in caps["experimental"]["chatlsp"]["methods"]
    assert "steerlsp/explain" in caps["experimental"]["steerlsp"]["methods"]
    assert caps["textDocumentSync"]["change"] == 2  # steerlsp syncs incrementally
    assert caps["textDocumentSync"]["save"] == {"includeText": False}
    assert caps["positionEncoding"] == "utf-8"
    assert "fake.command" in caps["executeCommandProvider"]["commands"]


def _alive(pid: int) -> bool:
    import os
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:  # reap it if it is our grandchild turned zombie under init
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return False
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return True
