"""Hardening of the completion paths, over stdio, with the real embedded model.

Cancels of queued generations must not kill the model thread; the completion
fallback item must be printable (Emacs' JSON parser rejects NUL and drops the
whole reply); positions outside a document (Neovim sends the current window's
cursor for every attached buffer) are answered at once without the model.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.rawclient import RawClient
from tests.helpers.session import CALL, LOOP, REQUEST_CANCELLED, inline, opened, ready, start

pytestmark = pytest.mark.timeout(300)

SHORT = "x = 1\n"
SHORT_TOKENS = {"steerlsp": {"completion": {"maxNewTokens": 12}}}
# Generations may be slow on a busy CI machine; these bound a hang, not speed.
GENERATION_S = 120
# Every C0 and C1 control but the three line/tab characters JSON text may hold.
FORBIDDEN = {chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]} - set("\t\n\r")


async def model_status(client: RawClient) -> dict[str, Any]:
    return (await client.request("steerlsp/status"))["result"]["model"]


def at(uri: str, line: int, character: int) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": 1},
    }


def strings_in(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in [key, *strings_in(value)]]
    if isinstance(node, list):
        return [s for value in node for s in strings_in(value)]
    return []


def assert_one_reply_each(client: RawClient, ids: list[Any]) -> None:
    counts = Counter(r.get("id") for r in client.responses)
    assert {i: counts[i] for i in ids} == dict.fromkeys(ids, 1)


@pytest.fixture
async def fast(start_raw, tmp_path):
    """A session with short generations: these tests are about mechanics under load."""
    client = await start(start_raw, tmp_path, options=SHORT_TOKENS)
    await ready(client)
    return client


async def test_cancelling_queued_completions_never_kills_the_model_thread(fast, tmp_path):
    client = fast
    first = opened(client, tmp_path, LOOP, "first.py")
    second = opened(client, tmp_path, LOOP, "second.py")
    running = inline(client, first, LOOP)
    queued = inline(client, second, LOOP)  # another document: queued, not cancel-previous
    await model_status(client)  # a round trip: both requests have reached the worker
    client.notify("$/cancelRequest", {"id": queued})
    assert (await client.response(queued))["error"]["code"] == REQUEST_CANCELLED
    assert "result" in await client.response(running, timeout=GENERATION_S)

    # A storm: three documents, cancel-previous within each, $/cancelRequest
    # on every third request, queued or running.
    uris = [opened(client, tmp_path, LOOP, f"storm{n}.py") for n in range(3)]
    storm = []
    for n in range(30):
        storm.append(inline(client, uris[n % 3], LOOP))
        if n % 3 == 1:
            client.notify("$/cancelRequest", {"id": storm[-1]})
        if n % 4 == 0:
            await model_status(client)  # let some reach the queue before their cancel
    replies = await asyncio.gather(*(client.response(i, GENERATION_S) for i in storm))
    assert all("result" in r or r["error"]["code"] == REQUEST_CANCELLED for r in replies)

    # Mid-line: a short argument, complete within the token limit.
    call = opened(client, tmp_path, CALL + ")\n", "call.py")
    fresh = await client.response(inline(client, call, CALL), GENERATION_S)
    assert fresh["result"]["items"][0]["insertText"].strip()
    worker = (await model_status(client))["worker"]
    assert worker["alive"] and worker["restarts"] == 0
    assert worker["queued"] == 0 and not worker["running"]
    assert_one_reply_each(client, [running, queued, *storm, fresh["id"]])


async def test_fallback_item_is_printable_and_sorts_first(start_raw, tmp_path):
    client = await start(
        start_raw,
        tmp_path,
        caps={"general": {"positionEncodings": ["utf-16"]}},  # no inlineCompletion: fallback
        options={"steerlsp": {"completion": {"fallbackWaitMs": 30000, "maxNewTokens": 12}}},
    )
    await ready(client)
    uri = opened(client, tmp_path, CALL + ")\n")
    lines = CALL.split("\n")
    position = {"line": len(lines) - 1, "character": len(lines[-1])}
    reply = await client.request(
        "textDocument/completion",
        {"textDocument": {"uri": uri}, "position": position},
        timeout=GENERATION_S,
    )
    assert "\\u0000" not in json.dumps(reply)
    assert not {c for s in strings_in(reply) for c in s} & FORBIDDEN
    items = reply["result"]["items"]
    assert len(items) > 1
    first = min(items, key=lambda i: i.get("sortText", i["label"]))
    assert first["detail"] == "steerlsp AI suggestion"
    assert first["sortText"].isprintable()

    # Out of range (past the last line, past a line's end): pylsp's answer
    # only; the model is not asked.
    submitted = (await model_status(client))["worker"]["submitted"]
    for line, character in [(len(lines) + 5, 0), (0, 99)]:
        reply = await client.request(
            "textDocument/completion",
            {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}},
        )
        result = reply.get("result") or {}
        items = result.get("items", []) if isinstance(result, dict) else result
        assert not [i for i in items if i.get("detail") == "steerlsp AI suggestion"]
    assert (await model_status(client))["worker"]["submitted"] == submitted


async def test_out_of_range_positions_are_answered_without_the_model(fast, tmp_path: Path):
    client = fast
    short = opened(client, tmp_path, SHORT, "short.py")
    long = opened(client, tmp_path, LOOP, "long module.py")  # a quoted uri: %20
    lines = LOOP.split("\n")
    before = await model_status(client)
    cursor = (len(lines) - 1, len(lines[-1]))  # the long document's cursor
    out_of_range = [
        at(short, *cursor),  # Neovim: the current window's cursor, for every buffer
        at(short, 0, len("x = 1") + 1),  # past the end of a line
        at(short, 2, 0),  # past the last line ("x = 1\n" has lines 0 and 1)
        at((tmp_path / "never_opened.py").as_uri(), 0, 0),
    ]
    for params in out_of_range:
        reply = await client.request("textDocument/inlineCompletion", params)
        assert reply["result"] == {"items": []}, params
    after = await model_status(client)
    assert after["worker"]["submitted"] == before["worker"]["submitted"]
    assert after["served"] == before["served"]

    # The end of the last (empty) line is in range, and so is the long document.
    end = await client.request(
        "textDocument/inlineCompletion", at(short, 1, 0), timeout=GENERATION_S
    )
    assert "result" in end
    reply = await client.request(
        "textDocument/inlineCompletion", at(long, *cursor), timeout=GENERATION_S
    )
    assert "result" in reply
    after = await model_status(client)
    assert after["served"] == before["served"] + 2, (end, reply, after)  # both used the model
    assert after["worker"]["submitted"] == before["worker"]["submitted"] + 2


async def test_an_edit_while_queued_cancels_without_running_the_model(start_raw, tmp_path):
    """Change while queued: the queued generation is answered cancelled and never runs."""
    client = await start(
        start_raw, tmp_path, options={"steerlsp": {"completion": {"maxNewTokens": 24}}}
    )
    await ready(client)
    first = opened(client, tmp_path, LOOP, "first.py")
    second = opened(client, tmp_path, LOOP, "second.py")
    before = await model_status(client)
    running = inline(client, first, LOOP)
    queued = inline(client, second, LOOP)
    await model_status(client)  # a round trip: both jobs are with the worker
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": second, "version": 2},
            "contentChanges": [{"text": LOOP + "pass\n"}],
        },
    )
    assert (await client.response(queued, GENERATION_S))["error"]["code"] == REQUEST_CANCELLED
    assert "result" in await client.response(running, timeout=GENERATION_S)
    after = await model_status(client)
    assert after["served"] - before["served"] == 1  # only the running one produced text
    assert after["worker"]["alive"] and after["worker"]["restarts"] == 0
    assert_one_reply_each(client, [running, queued])


async def test_the_loaded_models_heap_is_frozen_so_full_collections_skip_it(fast, tmp_path):
    """Torch, transformers, the tokenizer and steering's tables are some 400,000
    objects that a full collection would scan in the middle of a completion; after
    the load they are frozen, and a completion neither thaws them nor adds to them."""
    client = fast
    frozen = (await model_status(client))["gc"]["frozen"]
    assert frozen > 100_000
    uri = opened(client, tmp_path, CALL + ")\n", "call.py")
    reply = await client.response(inline(client, uri, CALL), GENERATION_S)
    assert reply["result"]["items"]
    after = (await model_status(client))["gc"]
    # Frozen objects freed by their reference count leave the count; none join it.
    assert 100_000 < after["frozen"] <= frozen
    assert set(after) == {"frozen", "gen0", "gen1", "gen2"}
    assert after["gen2"]["longest_ms"] <= after["gen2"]["total_ms"]
