"""A clean stderr while the model loads and serves."""

from __future__ import annotations

import re

import pytest

from tests.helpers.session import (
    CALL,
    LOOP,
    REQUEST_CANCELLED,
    REQUEST_FAILED,
    generating,
    inline,
    opened,
    ready,
    started_logging,
    stopped_logging,
)

pytestmark = pytest.mark.timeout(900)

PROGRESS_BAR = re.compile(r"\d+/\d+ \[|it/s\]|s/it\]|%\|")


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "\r" not in stderr, "a progress bar (carriage returns) on stderr"
    assert not PROGRESS_BAR.search(stderr), stderr
    assert not re.search(r" (ERROR|CRITICAL) ", stderr), stderr


async def test_expected_conditions_leave_stderr_clean(tmp_path):
    client, log = await started_logging(tmp_path, "info")
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
    stderr = await stopped_logging(client, log)
    assert_clean(stderr)
    # The expected conditions are logged at their level, without a traceback.
    assert re.search(r" INFO .*-32803: steerlsp: the model is still loading", stderr), stderr
    assert " INFO steerlsp.server.completion.policy: model ready" in stderr
