"""Protocol hardening (issue 9, items 5-9, 11, 19), over stdio against the real process.

Each test drives ``python -m steerlsp`` byte by byte with ``RawClient``: real
pylsp where the answer depends on it, the scripted upstream where the test must
see exactly what steerlsp sent upstream.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from steerlsp.server.lsp.framing import encode_frame
from tests.helpers.rawclient import FAKE_UPSTREAM, RawClient, steerlsp_command

PARSE_ERROR, INVALID_REQUEST, REQUEST_FAILED = -32700, -32600, -32803
WARNING, ERROR = 2, 1
PROXY_ONLY = ("--no-model",)


async def _settle(client: RawClient) -> None:
    """Every byte sent so far has been handled: a later request was answered."""
    reply = await client.request("steerlsp/status", timeout=10)
    assert "result" in reply


def _replies(client: RawClient, msg_id: Any) -> list[dict[str, Any]]:
    return [r for r in client.responses if r.get("id") == msg_id]


def _popups(client: RawClient) -> list[dict[str, Any]]:
    return [n["params"] for n in client.notifications_of("window/showMessage")]


async def _initialize(client: RawClient, root: Path, options: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
    }
    if options is not None:
        params["initializationOptions"] = options
    reply = await client.request("initialize", params, timeout=30)
    assert "result" in reply, reply
    client.notify("initialized", {})
    return reply["result"]


async def _fake_client(start_raw, shop, options: Any = None) -> RawClient:
    client = await start_raw(steerlsp_command(*PROXY_ONLY, upstream=FAKE_UPSTREAM))
    await _initialize(client, shop, options)
    return client


async def _upstream_saw(client: RawClient) -> list[dict[str, Any]]:
    return (await client.request("fake/received", timeout=10))["result"]


# ---- 5. initializationOptions that are not an object -------------------------


@pytest.mark.parametrize("options", ["x", [1, 2]], ids=["string", "array"])
async def test_non_object_initialization_options_do_not_break_pylsp(start_raw, shop, options):
    client = await start_raw(steerlsp_command(*PROXY_ONLY))
    result = await _initialize(client, shop, options)
    assert result["capabilities"]["hoverProvider"] is True  # pylsp's, so its initialize worked
    uri = (shop / "shop" / "cart.py").as_uri()
    client.open(uri, (shop / "shop" / "cart.py").read_text())
    position = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}}
    hover = await client.request("textDocument/hover", position, timeout=20)
    completion = await client.request("textDocument/completion", position, timeout=20)
    assert "result" in hover and "result" in completion, (hover, completion)
    await _settle(client)
    popups = _popups(client)
    assert len(popups) == 1 and popups[0]["type"] == WARNING, popups
    assert "initializationOptions" in popups[0]["message"]
    assert "must be an object" in popups[0]["message"]


async def test_non_object_initialization_options_are_not_forwarded(start_raw, shop):
    client = await _fake_client(start_raw, shop, "x")
    initialize = [m for m in await _upstream_saw(client) if m.get("method") == "initialize"]
    assert "initializationOptions" not in initialize[0]["params"]


async def test_failed_upstream_initialize_fails_requests_instead_of_hanging(start_raw, shop):
    client = await _fake_client(start_raw, shop, {"steerlsp": {}, "fake": {"failInitialize": 1}})
    reply = await client.request("fake/echo", {"n": 1}, timeout=10)
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "initialize" in reply["error"]["message"]
    popups = _popups(client)
    assert len(popups) == 1 and popups[0]["type"] == ERROR, popups
    status = (await client.request("steerlsp/status", timeout=10))["result"]
    assert status["upstream"]["ready"] is False and status["upstream"]["unavailable"]


# ---- 6. a Content-Length that is too long -------------------------------------


async def test_too_long_content_length_then_pause_then_request(start_raw, shop):
    client = await _fake_client(start_raw, shop)
    broken = b'{"jsonrpc": "2.0", "id": 92, "method": "fake/echo"'
    client.send_bytes(b"Content-Length: %d\r\n\r\n" % (len(broken) + 20) + broken)
    await asyncio.sleep(0.8)  # past the reader's idle resync: the pause is the point
    reply = await client.request("fake/echo", {"n": 93}, msg_id=93, timeout=10)
    assert reply["result"] == {"n": 93}
    await _settle(client)
    assert [r["error"]["code"] for r in _replies(client, 92)] == [PARSE_ERROR]


async def test_too_long_content_length_with_a_whole_body_is_served(start_raw, shop):
    client = await _fake_client(start_raw, shop)
    body = json.dumps({"jsonrpc": "2.0", "id": 94, "method": "fake/echo", "params": [1]})
    client.send_bytes(b"Content-Length: 999\r\n\r\n" + body.encode())
    # Nothing follows: the body is delivered after the idle pause, not never.
    assert (await client.response(94, timeout=10))["result"] == [1]
    assert (await client.request("fake/echo", {"n": 95}, timeout=10))["result"] == {"n": 95}
    assert len(_replies(client, 94)) == 1


# ---- 7. line breaks that LSP does not count -----------------------------------

_EOL = re.compile(r"\r\n|\r|\n")


def _offset(text: str, line: int, character: int) -> int:
    """Code-point offset of an LSP position (UTF-16 columns, lines end at EOLs only)."""
    starts = [0] + [m.end() for m in _EOL.finditer(text)]
    start = starts[line]
    end = len(text) if line + 1 >= len(starts) else starts[line + 1]
    units = 0
    for index in range(start, end):
        if units >= character or text[index] in "\r\n":
            return index
        units += 2 if ord(text[index]) > 0xFFFF else 1
    return end


def _apply(text: str, change: dict[str, Any]) -> str:
    start, end = change["range"]["start"], change["range"]["end"]
    a = _offset(text, start["line"], start["character"])
    b = _offset(text, end["line"], end["character"])
    return text[:a] + change["text"] + text[b:]


async def test_incremental_edits_after_unusual_line_separators(start_raw, shop):
    client = await _fake_client(start_raw, shop)
    uri = (shop / "shop" / "separators.py").as_uri()
    text = "a = 1\x0c\nb = '\x1c'\nc = '\x85x'\nd = '\u2028y' + '😋'\ne = 5\r\nf = 6\rg = 7\n"
    client.open(uri, text)
    changes = [
        {"range": _range(4, 0, 4, 1), "text": "E"},
        {"range": _range(3, 6, 3, 7), "text": "Y"},
        {"range": _range(2, 5, 2, 6), "text": "\n"},
        {"range": _range(1, 0, 2, 1), "text": "B = 0\x1d\n"},
        {"range": _range(5, 4, 6, 0), "text": "66\u2029"},
        {"range": _range(7, 0, 7, 0), "text": "h = '\x0b'\n"},
    ]
    for version, change in enumerate(changes, start=2):
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        text = _apply(text, change)
    sent = [
        m["params"]
        for m in await _upstream_saw(client)
        if m.get("method") == "textDocument/didChange"
    ]
    assert sent[-1]["textDocument"]["version"] == len(changes) + 1
    assert sent[-1]["contentChanges"] == [{"text": text}]


def _range(l1: int, c1: int, l2: int, c2: int) -> dict[str, Any]:
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


# ---- 8. requests under notification methods -----------------------------------


async def test_notification_methods_sent_as_requests_get_one_error_and_no_effect(start_raw, shop):
    client = await _fake_client(start_raw, shop)
    uri = (shop / "shop" / "never_opened.py").as_uri()
    calls = {
        "textDocument/didOpen": {
            "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x"}
        },
        "textDocument/didChange": {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": "y"}],
        },
        "initialized": {},
        "$/cancelRequest": {"id": 1},
        "workspace/didChangeConfiguration": {"settings": {}},
        "exit": None,
    }
    ids = {method: client.send_request(method, params) for method, params in calls.items()}
    for method, msg_id in ids.items():
        reply = await client.response(msg_id, timeout=10)
        assert reply["error"]["code"] == INVALID_REQUEST, method
        assert method in reply["error"]["message"] and "notification" in reply["error"]["message"]
    await _settle(client)
    assert client.proc.returncode is None  # "exit" with an id did not exit
    counts = Counter(r.get("id") for r in client.responses)
    assert all(counts[msg_id] == 1 for msg_id in ids.values())
    seen = {m.get("method") for m in await _upstream_saw(client)}
    assert not seen & {"textDocument/didOpen", "textDocument/didChange"}
    assert seen.isdisjoint({"workspace/didChangeConfiguration", "$/cancelRequest"})


# ---- 9. never a second reply under one id ------------------------------------


@pytest.mark.parametrize(
    "malformed",
    [
        encode_frame(b'{"jsonrpc": "2.0", "id": 7, "method": "fake/echo", "params": {'),
        encode_frame(b'{"id": 7, "method": "fake/echo"}'),
        b"Content-Length: 900\r\n\r\n" + b'{"jsonrpc": "2.0", "id": 7, "method"',
    ],
    ids=["bad-json", "invalid-request", "too-long-length"],
)
async def test_malformed_frame_never_reanswers_an_answered_id(start_raw, shop, malformed):
    client = await _fake_client(start_raw, shop)
    assert (await client.request("fake/echo", {"n": 7}, msg_id=7))["result"] == {"n": 7}
    client.send_bytes(malformed)
    assert (await client.request("fake/echo", {"n": 8}, msg_id=8))["result"] == {"n": 8}
    await _settle(client)
    assert len(_replies(client, 7)) == 1, _replies(client, 7)


async def test_malformed_frame_answered_once_and_never_under_an_id_in_flight(start_raw, shop):
    client = await _fake_client(start_raw, shop)
    hanging = client.send_request("fake/hang", {}, msg_id="h")
    bad = encode_frame(b'{"jsonrpc": "2.0", "id": "h", "method": "fake/echo",')
    client.send_bytes(bad)
    client.send_bytes(encode_frame(b'{"jsonrpc": "2.0", "id": 11, "method": "fake/echo",'))
    client.send_bytes(encode_frame(b'{"jsonrpc": "2.0", "id": 11, "method": "fake/echo",'))
    await _settle(client)
    assert _replies(client, hanging) == []
    assert [r["error"]["code"] for r in _replies(client, 11)] == [PARSE_ERROR]
    client.notify("$/cancelRequest", {"id": hanging})
    await client.response(hanging, timeout=10)
    await _settle(client)
    assert len(_replies(client, hanging)) == 1


# ---- 11, 19. invalid settings -------------------------------------------------


async def test_same_invalid_setting_twice_is_shown_once_and_names_the_kept_value(start_raw, shop):
    client = await _fake_client(start_raw, shop)
    bad = {"settings": {"steerlsp": {"completion": {"maxNewTokens": 10**18}}}}
    client.notify("workspace/didChangeConfiguration", bad)
    await client.wait_for(lambda: _popups(client), timeout=10)
    client.notify("workspace/didChangeConfiguration", bad)
    await _settle(client)
    popups = _popups(client)
    assert len(popups) == 1, popups
    message = popups[0]["message"]
    assert "steerlsp.completion.maxNewTokens" in message and "keeping 48" in message
    assert "defaults used" not in message
    assert "1000000000000000000" not in message  # a readable number
    assert len(message) < 300


async def test_unknown_fim_template_is_rejected_with_the_known_names(start_raw, shop):
    client = await _fake_client(
        start_raw, shop, {"steerlsp": {"model": {"fimTemplate": "starcoder3"}}}
    )
    await client.wait_for(lambda: _popups(client), timeout=10)
    message = _popups(client)[0]["message"]
    assert "fimTemplate" in message and "'starcoder3'" in message
    assert "starcoder2" in message and "codegemma" in message and "keeping 'auto'" in message
