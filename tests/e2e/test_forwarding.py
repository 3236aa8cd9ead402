"""Transparent forwarding in both directions, with ids re-minted per direction.

The upstream here is the scripted ``fake_upstream.py``, because pylsp never
sends a server->client request under an id we choose.
"""

from __future__ import annotations

import pytest

from tests.helpers.rawclient import FAKE_UPSTREAM, SILENT, RawClient, steerlsp_command

UNTYPED = {"nested": {"list": [1, "two", None, 3.5], "ünïcödé": "😋"}, "empty": {}}


@pytest.fixture
async def client(start_raw, shop) -> RawClient:
    client = await start_raw(steerlsp_command(upstream=FAKE_UPSTREAM))
    await client.initialize(shop)
    return client


async def _upstream_saw(client: RawClient) -> list[dict]:
    return (await client.request("fake/received"))["result"]


async def test_untyped_request_passes_unchanged(client):
    reply = await client.request("custom/thing", None)
    assert reply["error"]["code"] == -32601
    reply = await client.request("fake/echo", UNTYPED, msg_id="client-id")
    assert reply == {"jsonrpc": "2.0", "id": "client-id", "result": UNTYPED}
    seen = [m for m in await _upstream_saw(client) if m.get("method") == "fake/echo"]
    assert seen[0]["params"] == UNTYPED
    assert isinstance(seen[0]["id"], int)  # the upstream saw an id steerlsp minted


@pytest.mark.parametrize(
    ("method", "params", "answer"),
    [
        ("workspace/configuration", {"items": [{"section": "pylsp"}]}, [{"plugins": {}}]),
        (
            "client/registerCapability",
            {
                "registrations": [
                    {
                        "id": "r1",
                        "method": "workspace/didChangeWatchedFiles",
                        "registerOptions": {"watchers": [{"globPattern": "**/*.py"}]},
                    }
                ]
            },
            None,
        ),
        ("window/workDoneProgress/create", {"token": "tok-1"}, None),
        ("workspace/applyEdit", {"edit": {"changes": {}}}, {"applied": True}),
        (
            "window/showMessageRequest",
            {"type": 3, "message": "Pick", "actions": [{"title": "A"}]},
            {"title": "A"},
        ),
        ("custom/serverAsks", UNTYPED, {"any": "thing"}),
    ],
)
async def test_server_to_client_requests_round_trip(client, method, params, answer):
    client.answer = lambda request: answer
    reply = await client.request(
        "fake/serverRequest", {"method": method, "params": params, "id": 1}
    )
    assert reply["result"] == answer
    request = client.server_requests[-1]
    assert request["method"] == method and request["params"] == params
    assert request["id"] != 1  # re-minted toward the client


async def test_ids_never_collide_between_directions(client):
    # The client's request 1 is pending while the upstream asks the client
    # with its own id 1 and the client answers it.
    pending = client.send_request("fake/hang", {}, msg_id=1)
    client.answer = lambda request: "answer-to-upstream-1"
    reply = await client.request(
        "fake/serverRequest",
        {"method": "workspace/configuration", "params": {"items": []}, "id": 1},
        msg_id=2,
    )
    assert reply["result"] == "answer-to-upstream-1"
    client.notify("$/cancelRequest", {"id": pending})
    assert (await client.response(pending))["error"]["code"] == -32800
    assert sorted(r["id"] for r in client.responses if r["id"] in (1, 2)) == [1, 2]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("$/progress", {"token": "tok-1", "value": {"kind": "begin", "title": "Indexing"}}),
        ("window/logMessage", {"type": 4, "message": "log line"}),
        ("window/showMessage", {"type": 3, "message": "hello"}),
        ("textDocument/publishDiagnostics", {"uri": "file:///nowhere.py", "diagnostics": []}),
        ("telemetry/event", UNTYPED),
        ("custom/serverSays", UNTYPED),
    ],
)
async def test_upstream_notifications_reach_the_client_unchanged(client, method, params):
    await client.request("fake/notify", {"method": method, "params": params})
    received = client.notifications_of(method)
    assert received and received[-1]["params"] == params


async def test_cancel_is_mapped_to_the_upstream_id(client):
    msg_id = client.send_request("fake/hang", {}, msg_id="cancel-me")
    hang = None
    while hang is None:
        hang = next(
            (m for m in await _upstream_saw(client) if m.get("method") == "fake/hang"), None
        )
    client.notify("$/cancelRequest", {"id": msg_id})
    reply = await client.response(msg_id)
    assert reply["error"]["code"] == -32800
    cancels = [m for m in await _upstream_saw(client) if m.get("method") == "$/cancelRequest"]
    assert cancels[-1]["params"] == {"id": hang["id"]}


async def test_upstream_cancel_is_mapped_to_the_client_id(client):
    client.answer = lambda request: SILENT
    asked = client.send_request(
        "fake/serverRequest",
        {"method": "window/showMessageRequest", "params": {"type": 3, "message": "?"}, "id": "s-7"},
    )
    request = await client.wait_for(lambda: client.server_requests)
    await client.request("fake/progressCancel", {"id": "s-7"})
    cancels = await client.wait_for(lambda: client.notifications_of("$/cancelRequest"))
    assert cancels[-1]["params"] == {"id": request[0]["id"]}
    client.send({"jsonrpc": "2.0", "id": request[0]["id"], "result": None})
    assert (await client.response(asked))["result"] is None


async def test_steerlsp_own_upstream_traffic_is_invisible(client):
    sent = {client.send_request("fake/echo", {"i": i}) for i in range(5)}
    for msg_id in sent:
        await client.response(msg_id)
    seen = await _upstream_saw(client)
    initialize = [m for m in seen if m.get("method") == "initialize"]
    assert len(initialize) == 1  # steerlsp's own request, answered to steerlsp
    reply = await client.request("shutdown", msg_id="bye")
    assert reply["result"] is None
    # steerlsp also sent the upstream its own shutdown; the editor saw
    # exactly one reply per request it sent, and nothing else.
    assert sorted(map(str, (r["id"] for r in client.responses))) == sorted(
        map(str, [*sent, initialize_reply_id(client), "bye", *fake_received_ids(client)])
    )
    assert not client.server_requests


def initialize_reply_id(client: RawClient) -> object:
    return client.responses[0]["id"]


def fake_received_ids(client: RawClient) -> list[object]:
    return [r["id"] for r in client.responses[1:] if isinstance(r.get("result"), list)]


async def test_incremental_changes_reach_the_upstream_as_full_text(client, shop):
    uri = (shop / "shop" / "demo_unsaved.py").as_uri()
    client.open(uri, "x = 1\ny = 2\n")
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [
                {
                    "range": {
                        "start": {"line": 1, "character": 4},
                        "end": {"line": 1, "character": 5},
                    },
                    "text": "20",
                }
            ],
        },
    )
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    seen = [
        m for m in await _upstream_saw(client) if m.get("method", "").startswith("textDocument/did")
    ]
    assert [m["method"] for m in seen] == [
        "textDocument/didOpen",
        "textDocument/didChange",
        "textDocument/didClose",
    ]
    assert seen[1]["params"] == {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"text": "x = 1\ny = 20\n"}],
    }
