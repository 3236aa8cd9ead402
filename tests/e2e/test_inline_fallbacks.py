"""Inline completion without a model: a bad model path, invalid settings."""

from __future__ import annotations

from tests.helpers.session import (
    LOOP,
    REQUEST_FAILED,
    inline,
    opened,
    start,
)


async def test_a_bad_model_path_is_reported_once_and_the_proxy_works(start_raw, tmp_path):
    client = await start(start_raw, tmp_path, "--model", str(tmp_path / "missing.gguf"))
    shown = await client.wait_for(lambda: client.notifications_of("window/showMessage"), 60)
    assert "missing.gguf" in shown[0]["params"]["message"] and shown[0]["params"]["type"] == 1
    uri = opened(client, tmp_path, LOOP)
    reply = await client.response(inline(client, uri, LOOP))
    assert reply["error"]["code"] == REQUEST_FAILED and "missing.gguf" in reply["error"]["message"]
    hover = await client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 8}},
    )
    assert "result" in hover
    assert len(client.notifications_of("window/showMessage")) == 1


async def test_invalid_settings_fall_back_to_defaults_with_one_message(start_raw, tmp_path):
    client = await start(
        start_raw,
        tmp_path,
        "--no-model",
        options={"steerlsp": {"completion": {"maxNewTokens": "many", "enabled": False}}},
    )
    shown = await client.wait_for(lambda: client.notifications_of("window/showMessage"))
    assert "maxNewTokens" in shown[0]["params"]["message"]
    status = (await client.request("steerlsp/status"))["result"]["model"]
    assert status["state"] == "disabled"
    uri = opened(client, tmp_path, LOOP)
    reply = await client.response(inline(client, uri, LOOP))
    assert reply["error"]["code"] == REQUEST_FAILED and "disabled" in reply["error"]["message"]
