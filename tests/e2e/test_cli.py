"""The command line: version, TCP transport, logging that never leaks document text."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess

import pytest

from steerlsp import __version__
from steerlsp.server.cli import parse_tcp
from steerlsp.server.lsp.framing import FrameDecoder, encode_frame
from tests.helpers.rawclient import steerlsp_command

SECRET = "sekrit_token_4f9a"


def test_version():
    out = subprocess.run([*steerlsp_command("--version")], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"steerlsp {__version__}"


@pytest.mark.parametrize("bad", ["8080", "host:", "host:http", "h:70000"])
def test_bad_tcp_address_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=repr(bad)):
        parse_tcp(bad)
    out = subprocess.run(steerlsp_command("--tcp", bad), capture_output=True, text=True)
    assert out.returncode == 2 and "HOST:PORT" in out.stderr


def test_upstream_needs_a_command():
    out = subprocess.run(steerlsp_command("--upstream"), capture_output=True, text=True)
    assert out.returncode == 2 and "--upstream needs a command" in out.stderr


async def test_tcp_session(shop):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        *steerlsp_command("--tcp", f"127.0.0.1:{port}"), stderr=asyncio.subprocess.DEVNULL
    )
    try:
        for _ in range(100):
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        decoder = FrameDecoder()

        async def call(msg_id: int, method: str, params: dict | None) -> dict:
            writer.write(
                encode_frame(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
                    ).encode()
                )
            )
            while True:
                for body in decoder.feed(await reader.read(65536)):
                    message = json.loads(body)
                    if message.get("id") == msg_id:
                        return message

        init = await call(
            1, "initialize", {"processId": None, "rootUri": shop.as_uri(), "capabilities": {}}
        )
        assert init["result"]["capabilities"]["hoverProvider"] is True
        assert (await call(2, "shutdown", None))["result"] is None
        writer.write(encode_frame(b'{"jsonrpc": "2.0", "method": "exit"}'))
        assert await asyncio.wait_for(proc.wait(), 10) == 0
        writer.close()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _session_log(start_raw, shop, tmp_path, level: str) -> str:
    log_file = tmp_path / f"{level}.log"
    client = await start_raw(steerlsp_command("--log-file", str(log_file), "--log-level", level))
    await client.initialize(shop)
    uri = (shop / "shop" / "secret.py").as_uri()
    client.open(uri, f"{SECRET} = 1\nprint({SECRET})\n")
    reply = await client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 8}},
    )
    assert "result" in reply
    client.send_bytes(encode_frame(f'{{"broken json {SECRET}'.encode()))
    assert await client.shutdown() == 0
    return log_file.read_text()


async def test_logs_hold_no_document_text_below_debug(start_raw, shop, tmp_path):
    info = await _session_log(start_raw, shop, tmp_path, "info")
    assert "upstream started" in info and "invalid JSON" in info
    assert SECRET not in info
    debug = await _session_log(start_raw, shop, tmp_path, "debug")
    assert SECRET in debug  # debug is the explicit opt-in


async def test_the_models_threads_spin_briefly_unless_the_user_chose(start_raw, shop):
    """``share_the_cores``: set before torch loads, so what steerlsp starts inherits it."""
    variables = (b"OMP_WAIT_POLICY=", b"GOMP_SPINCOUNT=")

    async def chosen(*environment: str) -> list[bytes]:
        client = await start_raw(["env", *environment, *steerlsp_command()])
        await client.initialize(shop)
        pid = (await client.request("steerlsp/status"))["result"]["upstream"]["pid"]
        with open(f"/proc/{pid}/environ", "rb") as environ:
            found = [v for v in environ.read().split(b"\0") if v.startswith(variables)]
        assert await client.shutdown() == 0
        return sorted(found)

    unset = ("-u", "OMP_WAIT_POLICY", "-u", "GOMP_SPINCOUNT")
    assert await chosen(*unset) == [b"GOMP_SPINCOUNT=10000"]
    assert await chosen(*unset, "OMP_WAIT_POLICY=ACTIVE") == [b"OMP_WAIT_POLICY=ACTIVE"]
    assert await chosen(*unset, "GOMP_SPINCOUNT=5") == [b"GOMP_SPINCOUNT=5"]
