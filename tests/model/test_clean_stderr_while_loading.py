"""A clean stderr while the model loads and serves."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.helpers.rawclient import RawClient, steerlsp_command
from tests.helpers.session import (
    CALL,
    CAPS,
    LOOP,
    REQUEST_CANCELLED,
    REQUEST_FAILED,
    generating,
    inline,
    opened,
    ready,
)

pytestmark = pytest.mark.timeout(900)

PROGRESS_BAR = re.compile(r"\d+/\d+ \[|it/s\]|s/it\]|%\|")


async def started(tmp_path: Path, level: str, *flags: str) -> tuple[RawClient, Path]:
    """A server whose stderr goes to a file; initialized, with a Python file open."""
    log = tmp_path / f"stderr-{level}.txt"
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            *steerlsp_command("--log-level", level, *flags),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
        )
    client = RawClient(proc)
    reply = await client.request(
        "initialize",
        {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": CAPS},
        timeout=60,
    )
    assert "result" in reply, reply
    client.notify("initialized", {})
    return client, log


async def stopped(client: RawClient, log: Path) -> str:
    """The whole of stderr, once the server has exited."""
    try:
        assert await client.shutdown() == 0
    finally:
        await client.close()
    return log.read_text(encoding="utf-8", errors="replace")


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "\r" not in stderr, "a progress bar (carriage returns) on stderr"
    assert not PROGRESS_BAR.search(stderr), stderr
    assert not re.search(r" (ERROR|CRITICAL) ", stderr), stderr


async def test_expected_conditions_leave_stderr_clean(tmp_path):
    client, log = await started(tmp_path, "info")
    try:
        uri = opened(client, tmp_path, LOOP)
        early = await client.response(inline(client, uri, LOOP))
        assert early["error"]["code"] == REQUEST_FAILED  # the model is still loading
        await ready(client)

        first, second = inline(client, uri, LOOP), inline(client, uri, LOOP)  # cancel-previous
        assert (await client.response(first, 120))["error"]["code"] == REQUEST_CANCELLED
        assert "result" in await client.response(second, 120)

        asked = inline(client, uri, LOOP)
        client.notify("$/cancelRequest", {"id": asked})
        assert (await client.response(asked, 120))["error"]["code"] == REQUEST_CANCELLED

        running = inline(client, uri, CALL)
        await generating(client)
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": CALL}]},
        )
        assert (await client.response(running, 120))["error"]["code"] == REQUEST_CANCELLED

        superseded = inline(client, uri, CALL, trigger=2)  # debounced, then superseded
        latest = inline(client, uri, CALL, trigger=2)
        assert (await client.response(superseded, 120))["error"]["code"] == REQUEST_CANCELLED
        assert "result" in await client.response(latest, 120)
    except BaseException:
        await client.close()
        raise
    stderr = await stopped(client, log)
    assert_clean(stderr)
    # The expected conditions are logged at their level, without a traceback.
    assert re.search(r" INFO .*-32803: steerlsp: the model is still loading", stderr), stderr
    assert " INFO steerlsp.server.completion.policy: model ready" in stderr
