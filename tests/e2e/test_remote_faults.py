"""The real steerlsp process against a model server that misbehaves: every request is
answered, in time, saying what happened, and the session goes on.

The server is a scripted stand-in (``tests/helpers/openai_stub.py``) for the shapes a
real engine seldom produces on cue: 503 for ever, a stream that stalls, an answer
that is not JSON. The real engine's faults (killed mid-stream, restarted, a refused
key) are in ``tests/model/test_remote.py``.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.helpers.openai_stub import Answer, Stub, completion, events, ok
from tests.helpers.session import REQUEST_FAILED, cursor, opened, start

pytestmark = pytest.mark.timeout(120)

LOOP = "def total(prices):\n    result = 0\n    for price in prices:\n        "
TOP = {"choices": [{"text": " b", "logprobs": {"top_logprobs": [{" b": -0.1, " a": -2.0}]}}]}


def server(streams: Answer) -> Stub:
    """A server that probes as llama.cpp's does and answers every stream with ``streams``."""

    def answer(method: str, path: str, body: dict) -> Answer:
        if path.endswith("/models"):
            return ok({"data": [{"id": "team-model"}]})
        if body.get("stream"):
            return streams
        if body.get("logprobs"):
            return ok(TOP)
        if "grammar" in body:
            return ok(completion(" zebra"))
        return ok(completion(" x"))

    return Stub(answer)


async def started(start_raw, tmp_path, stub: Stub, timeout_ms: int = 1500):
    options = {
        "model": {"backend": "openai", "endpoint": stub.url, "timeoutMs": timeout_ms},
        "steering": {"enabled": False},
    }
    client = await start(start_raw, tmp_path, options=options)
    deadline = time.monotonic() + 30
    while (await client.request("steerlsp/status"))["result"]["model"]["state"] != "ready":
        assert time.monotonic() < deadline
    return client


async def inline_failure(client, tmp_path) -> tuple[dict, float]:
    uri = opened(client, tmp_path, LOOP)
    started_at = time.monotonic()
    reply = await client.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": cursor(LOOP), "context": {"triggerKind": 1}},
        timeout=30,
    )
    return reply, time.monotonic() - started_at


async def test_an_overloaded_server_is_retried_then_reported(start_raw, tmp_path):
    stub = server((503, {"Retry-After": "0.2"}, [b'{"error": {"message": "queue full"}}'], 0))
    client = await started(start_raw, tmp_path, stub)
    reply, took = await inline_failure(client, tmp_path)
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "overloaded (HTTP 503)" in reply["error"]["message"]
    assert "queue full" in reply["error"]["message"]
    assert took < 25  # the retries stop within the 1.5 s budget, not at the request's 30 s
    streamed = [s for s in stub.seen if s[2].get("stream")]
    assert len(streamed) >= 3  # retried with backoff within the 1.5 s
    status = (await client.request("steerlsp/status"))["result"]["model"]["remote"]
    assert status["retries"] >= 2
    assert status["state"] == "connected" and "overloaded" in status["error"]  # not gone


async def test_a_stalled_stream_is_answered_at_the_deadline(start_raw, tmp_path):
    stub = server(events(["    ", "result"], pause=600.0))
    client = await started(start_raw, tmp_path, stub, timeout_ms=1000)
    reply, took = await inline_failure(client, tmp_path)
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "did not answer within 1 s" in reply["error"]["message"]
    assert took < 25  # not the 600 s the stream would take
    assert "result" in await client.request("steerlsp/status")  # the session goes on


async def test_an_answer_that_is_not_json_is_reported(start_raw, tmp_path):
    garbage = (200, {"Content-Type": "text/event-stream"}, [b"data: {not json\n\n"], 0.0)
    client = await started(start_raw, tmp_path, server(garbage))
    reply, _ = await inline_failure(client, tmp_path)
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "not JSON" in reply["error"]["message"]


async def test_the_prompt_goes_to_the_endpoint_only_and_the_log_never_holds_it(start_raw, tmp_path):
    stub = server(events([" result", " += price\n"]))
    client = await started(start_raw, tmp_path, stub)
    uri = opened(client, tmp_path, LOOP)
    reply = await client.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": cursor(LOOP), "context": {"triggerKind": 1}},
        timeout=30,
    )
    assert reply["result"]["items"][0]["insertText"] == "result += price"
    streamed = [s for s in stub.seen if s[2].get("stream")]
    assert streamed and streamed[0][2]["prompt"].endswith(LOOP)
    assert streamed[0][2]["model"] == "team-model" and streamed[0][2]["temperature"] == 0.0
    assert "Authorization" not in streamed[0][3]  # no key configured, none sent
    json.dumps(reply)  # plain JSON, nothing else
