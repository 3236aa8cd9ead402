"""A cancel burst against steerlsp with the real model."""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from tests.helpers.rawclient import steerlsp_command

SEED = int(os.environ.get("STEERLSP_FUZZ_SEED", "20261123"))
REQUEST_CANCELLED, REQUEST_FAILED = -32800, -32803


@pytest.mark.timeout(300)
async def test_cancel_burst_with_the_real_model(start_fuzz, tmp_path):
    """inlineCompletions queued, cancelled and superseded, then a completion still answers.

    The client has no inlineCompletion capability, so the completion also
    carries the AI fallback item: no reply may contain a NUL.
    """
    caps = {"general": {"positionEncodings": ["utf-16"]}}
    options = {"completion": {"maxNewTokens": 6, "debounceMs": 0}}
    client = await start_fuzz(steerlsp_command(), tmp_path, caps, options)

    async def ready() -> None:
        n = 0
        while True:
            n += 1
            status = await client.request("steerlsp/status", None, f"setup-status-{n}")
            model = status["result"]["model"]
            assert model["state"] in ("loading", "ready"), model
            if model["state"] == "ready":
                return
            await asyncio.sleep(0.2)

    await asyncio.wait_for(ready(), 240)
    text = (
        "import os\n\n\ndef list_python_files(folder):\n"
        "    for name in os.listdir(folder):\n        "
    )
    uris = [(tmp_path / f"m{i}.py").as_uri() for i in range(3)]
    for uri in uris:
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        client.notify("textDocument/didOpen", {"textDocument": doc})
    end = {"line": 5, "character": 8}
    rng = random.Random(SEED)
    ids: list[str] = []
    for burst in range(8):
        sent = []
        for n in range(rng.randint(2, 6)):
            msg_id = f"burst-{burst}-{n}"
            params = {
                "textDocument": {"uri": rng.choice(uris)},
                "position": end,
                "context": {"triggerKind": rng.choice((1, 2))},
            }
            request = {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/inlineCompletion"}
            client.send({**request, "params": params})
            sent.append(msg_id)
        # Cancel while some are still queued behind the running generation.
        await asyncio.sleep(rng.choice((0.0, 0.02, 0.1)))
        for msg_id in rng.sample(sent, rng.randint(1, len(sent))):
            client.notify("$/cancelRequest", {"id": msg_id})
        ids += sent
    replies = [await client.response(i, timeout=60) for i in ids]
    codes = {r["error"]["code"] for r in replies if "error" in r}
    assert codes <= {REQUEST_CANCELLED}, codes
    at = {"textDocument": {"uri": uris[0]}, "position": end}
    completion = await client.request("textDocument/completion", at, "after-completion", 60)
    assert "result" in completion, completion
    inline = await client.request(
        "textDocument/inlineCompletion", {**at, "context": {"triggerKind": 1}}, "after-inline", 60
    )
    assert "result" in inline, inline
    await asyncio.sleep(0.3)
    assert all(client.replies[f'"{i}"'] == 1 for i in ids)
    assert not client.control_chars, client.control_chars
    assert client.alive
