"""stderr stays clean: editors log every line a server writes there (Neovim as ERROR).

No progress bars while the model loads, and no tracebacks or ERROR lines for what
is expected: a request while the model loads (-32803), cancelled and superseded
requests (-32800). Tracebacks appear at ``--log-level debug`` only.
"""

from __future__ import annotations

import re

import pytest

from tests.helpers.session import (
    LOOP,
    REQUEST_FAILED,
    inline,
    opened,
    started_logging,
    stopped_logging,
)


@pytest.mark.parametrize("level", ["warning", "debug"])
async def test_tracebacks_only_at_debug_level(tmp_path, level):
    client, log = await started_logging(tmp_path, level, "--no-model")
    try:
        uri = opened(client, tmp_path, LOOP)
        reply = await client.response(inline(client, uri, LOOP))
        assert reply["error"]["code"] == REQUEST_FAILED and "disabled" in reply["error"]["message"]
    except BaseException:
        await client.close()
        raise
    stderr = await stopped_logging(client, log)
    assert not re.search(r" (ERROR|CRITICAL) ", stderr), stderr
    if level == "warning":
        assert "Traceback" not in stderr and "disabled" not in stderr, stderr
    else:
        assert "Traceback" in stderr and "RequestFailed" in stderr
