"""stderr stays clean: editors log every line a server writes there (Neovim as ERROR).

No progress bars while the model loads, and no tracebacks or ERROR lines for what
is expected: a request while the model loads (-32803), cancelled and superseded
requests (-32800). Tracebacks appear at ``--log-level debug`` only.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from tests.helpers.rawclient import RawClient, steerlsp_command
from tests.helpers.session import (
    CAPS,
    LOOP,
    REQUEST_FAILED,
    inline,
    opened,
)


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


@pytest.mark.parametrize("level", ["warning", "debug"])
async def test_tracebacks_only_at_debug_level(tmp_path, level):
    client, log = await started(tmp_path, level, "--no-model")
    try:
        uri = opened(client, tmp_path, LOOP)
        reply = await client.response(inline(client, uri, LOOP))
        assert reply["error"]["code"] == REQUEST_FAILED and "disabled" in reply["error"]["message"]
    except BaseException:
        await client.close()
        raise
    stderr = await stopped(client, log)
    assert not re.search(r" (ERROR|CRITICAL) ", stderr), stderr
    if level == "warning":
        assert "Traceback" not in stderr and "disabled" not in stderr, stderr
    else:
        assert "Traceback" in stderr and "RequestFailed" in stderr
