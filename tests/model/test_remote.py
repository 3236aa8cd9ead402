"""The remote backend against a real engine: steerlsp over stdio, its model on
llama-cpp-python's ``llama_cpp.server`` serving the embedded GGUF on 127.0.0.1.

A team's server in miniature: an inline completion, a steered walk at ``.`` whose
members come from the real pylsp, an editor's cancel, the server killed mid-stream
and started again, a refused key and a wrong model name. Every request gets exactly
one answer, and the session lives on.
"""

from __future__ import annotations

import ast
import asyncio
import re

import pytest

from tests.helpers.llama_server import MODEL, LlamaServer, free_port
from tests.helpers.session import (
    PATIENT,
    REQUEST_CANCELLED,
    REQUEST_FAILED,
    complete,
    cursor,
    explain,
    generating,
    inline,
    opened,
    start,
    warm_analysis,
)

pytestmark = pytest.mark.timeout(600)

# A class pylsp reads from the document itself: its members exist nowhere else, so a
# name among them came from the analysis, not from what the model remembers.
INVENTORY = '''class Inventory:
    """Boxes on shelves."""

    def __init__(self) -> None:
        self.boxes: dict[str, int] = {}

    def stock_level(self, sku: str) -> int:
        """How many boxes of ``sku`` are on the shelves."""
        return self.boxes.get(sku, 0)

    def reorder_point(self) -> int:
        return 10


def needs_reorder(inventory: Inventory, sku: str) -> bool:
    return inventory.'''
MEMBERS = ("stock_level", "reorder_point", "boxes")

LOOP = (
    "def total(prices: list[float]) -> float:\n    result = 0.0\n    for price in prices:\n        "
)
# A long document before the loop: its prefill (about 1,000 tokens) keeps the server
# busy for seconds on 2 cores, so that a cancel or a kill lands while the request is
# with it.
LONG = "".join(f"def scaled_{i}(x: float) -> float:\n    return x * {i}\n\n\n" for i in range(80))
LONG_LOOP = LONG + LOOP
BUSY = {"completion": {"maxNewTokens": 200, "maxLines": 60}}


def remote(url: str, **model: object) -> dict:
    # Patient: llama-cpp-python evaluates a prompt at 200-400 tokens/s on two slow cores,
    # and a busy CI machine is slower still; these tests are about what is answered.
    return {
        "model": {"backend": "openai", "endpoint": url, "timeoutMs": 30000, **model},
        **PATIENT,
    }


@pytest.fixture(scope="module")
def server():
    served = LlamaServer().start()
    yield served
    served.close()


async def connected(client, timeout: float = 120) -> dict:
    """The model status once the remote model is ready (its capabilities probed)."""

    async def poll() -> dict:
        while True:
            model = (await client.request("steerlsp/status"))["result"]["model"]
            assert model["state"] != "failed", model
            if model["state"] == "ready":
                return model
            await asyncio.sleep(0.2)

    return await asyncio.wait_for(poll(), timeout)


async def test_inline_completion_from_the_server(start_raw, tmp_path, server):
    client = await start(start_raw, tmp_path, options=remote(server.url))
    model = await connected(client)
    assert model["backend"] == "openai"
    status = model["remote"]
    assert status["state"] == "connected" and status["model"] == MODEL, status
    # llama-cpp-python evaluates the whole prompt again for logprobs: the model chooses
    # among the listed names under a grammar instead of the ranker ranking them.
    assert status["capabilities"] == {
        "top_logprobs": True,
        "constraint": "grammar",
        "logprobs_cached": False,
        "sampler_top": False,
    }
    assert status["steering"]["members"].startswith("the model's choice among the listed names")
    uri = opened(client, tmp_path, LOOP)
    text = await complete(client, uri, LOOP)
    assert text.strip(), "an empty completion for a loop body"
    ast.parse(LOOP + text + "\n")  # valid Python in place
    assert "price" in text  # it uses the loop variable


async def test_steered_walk_at_a_dot_takes_a_member_pylsp_lists(start_raw, tmp_path, server):
    client = await start(start_raw, tmp_path, options=remote(server.url))
    await connected(client)
    await warm_analysis(client)
    uri = opened(client, tmp_path, INVENTORY)
    text = await complete(client, uri, INVENTORY)
    assert text.startswith(MEMBERS), text
    trace = (await explain(client, uri))["trace"]
    assert trace["backend"] == "openai"
    ranking = trace["rankings"][0]
    assert ranking["offset"] == 0 and ranking["chosen"] in MEMBERS
    assert ranking["by"] == "the model, constrained to the listed names"
    assert ranking["among"] >= len(MEMBERS)  # the class's public members (and object's)
    assert trace["queries"][0]["kind"] == "completions"
    assert trace["queries"][0]["outcome"] == "answered"


CONNECT = (
    "def connect(host: str, port: int = 5432, timeout: float = 10.0) -> None:\n"
    '    """Open a connection to the database at ``host``."""\n\n\n'
    'connect("db.local", '
)


async def test_a_keyword_written_through_the_api_is_one_the_callee_takes(
    start_raw, tmp_path, server
):
    client = await start(start_raw, tmp_path, options=remote(server.url))
    await connected(client)
    await warm_analysis(client)
    uri = opened(client, tmp_path, CONNECT)
    text = await complete(client, uri, CONNECT)
    written = re.findall(r"\b([A-Za-z_]\w*)\s*=(?!=)", text)
    assert set(written) <= {"port", "timeout"}, text
    trace = (await explain(client, uri))["trace"]
    asked = [q["kind"] for q in trace["queries"]]
    if written:  # each keyword checked against pylsp's signature
        assert "signature" in asked


async def test_cancel_closes_the_stream_and_the_next_request_is_served(start_raw, tmp_path, server):
    # This prompt is 2,000 tokens: the next request's own answer may take longer than
    # the default 10 s on two slow cores (``remote`` waits 30 s).
    options = {**remote(server.url), **BUSY}
    client = await start(start_raw, tmp_path, options=options)
    await connected(client)
    uri = opened(client, tmp_path, LONG_LOOP)
    sent = inline(client, uri, LONG_LOOP)
    await generating(client)  # the request is with the server
    client.notify("$/cancelRequest", {"id": sent})
    reply = await client.response(sent, timeout=30)
    assert reply["error"]["code"] == REQUEST_CANCELLED
    text = await complete(client, uri, LONG_LOOP)  # the server is free again
    ast.parse(LONG_LOOP + text + "\n")


async def test_server_killed_while_it_holds_the_request_then_restarted(start_raw, tmp_path):
    served = LlamaServer().start()
    try:
        options = {**remote(served.url, timeoutMs=20000), **BUSY}
        client = await start(start_raw, tmp_path, options=options)
        await connected(client)
        uri = opened(client, tmp_path, LONG_LOOP)
        # Forced: the server holds the request, answering nothing, until it is killed (a
        # fast machine's server would otherwise finish the completion first).
        served.pause()
        sent = inline(client, uri, LONG_LOOP)
        await generating(client)
        served.kill()
        reply = await client.response(sent, timeout=30)
        assert reply["error"]["code"] == REQUEST_FAILED, reply
        assert "model server" in reply["error"]["message"]
        # Nothing listens now: answered at once, saying so.
        again = await client.request(
            "textDocument/inlineCompletion",
            {
                "textDocument": {"uri": uri},
                "position": cursor(LONG_LOOP),
                "context": {"triggerKind": 1},
            },
            timeout=30,
        )
        assert "nothing listens" in again["error"]["message"], again
        status = (await client.request("steerlsp/status"))["result"]["model"]["remote"]
        assert status["state"] == "unreachable"
        served.start()  # the same port: the team's server is back
        text = await complete(client, uri, LONG_LOOP)
        ast.parse(LONG_LOOP + text + "\n")
        status = (await client.request("steerlsp/status"))["result"]["model"]["remote"]
        assert status["state"] == "connected"
    finally:
        served.close()


async def test_a_refused_key_and_a_wrong_model_say_what_to_fix(start_raw, tmp_path, monkeypatch):
    served = LlamaServer(api_key="sesame").start()
    try:
        monkeypatch.setenv("TEAM_KEY", "wrong")
        client = await start(start_raw, tmp_path, options=remote(served.url, apiKeyEnv="TEAM_KEY"))
        model = await failed(client)
        assert "refused the API key" in model["error"] and "apiKeyEnv" in model["error"]
        assert "sesame" not in model["error"] and "wrong" not in model["error"]
        monkeypatch.setenv("TEAM_KEY", "sesame")
        client = await start(
            start_raw,
            tmp_path,
            options=remote(served.url, apiKeyEnv="TEAM_KEY", remoteModel="llama-70b"),
        )
        model = await failed(client)
        assert "does not serve the model 'llama-70b'" in model["error"]
        assert MODEL in model["error"]  # what it does serve
        client = await start(start_raw, tmp_path, options=remote(served.url, apiKeyEnv="TEAM_KEY"))
        assert (await connected(client))["remote"]["model"] == MODEL
    finally:
        served.close()


async def test_nothing_listening_is_answered_at_once(start_raw, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    client = await start(start_raw, tmp_path, options=remote(url))
    model = await connected(client)  # ready: the server may come up later
    assert model["remote"]["state"] == "unreachable"
    uri = opened(client, tmp_path, LOOP)
    reply = await client.request(
        "textDocument/inlineCompletion",
        {
            "textDocument": {"uri": uri},
            "position": {"line": 3, "character": 8},
            "context": {"triggerKind": 1},
        },
        timeout=30,
    )
    assert reply["error"]["code"] == REQUEST_FAILED
    assert f"nothing listens at {url}" in reply["error"]["message"]


async def failed(client, timeout: float = 60) -> dict:
    async def poll() -> dict:
        while True:
            model = (await client.request("steerlsp/status"))["result"]["model"]
            if model["state"] == "failed":
                return model
            assert model["state"] != "ready", model
            await asyncio.sleep(0.2)

    return await asyncio.wait_for(poll(), timeout)


async def test_with_fallback_the_in_process_model_serves_while_the_server_is_gone(
    start_raw, tmp_path
):
    url = f"http://127.0.0.1:{free_port()}/v1"
    client = await start(start_raw, tmp_path, options=remote(url, fallback=True))
    await connected(client)
    uri = opened(client, tmp_path, LOOP)
    text = await complete(client, uri, LOOP)  # loads the embedded model on first need
    ast.parse(LOOP + text + "\n")
    assert "price" in text
    status = (await client.request("steerlsp/status"))["result"]["model"]["remote"]
    assert status["fallbacks"] == 1 and status["state"] == "unreachable"
