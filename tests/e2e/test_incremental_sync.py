"""Incremental sync through the real steerlsp: ranged changes reach the upstream as ranges."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.helpers.rawclient import FAKE_UPSTREAM, RawClient, steerlsp_command
from tests.helpers.sync_reference import UTF16, change, pylsp_view, reference

# ---- pure: conversion of incremental changes ---------------------------------


# ---- e2e: what the upstream receives ------------------------------------------

EMOJI = 'x = "😋"\ny = 1\n'


async def _received_changes(client: RawClient) -> list[dict[str, Any]]:
    # As JSON text: steerlsp would convert the positions in a result back to UTF-16.
    received = json.loads((await client.request("fake/receivedJson"))["result"])
    return [m["params"] for m in received if m.get("method") == "textDocument/didChange"]


async def _restarted(client: RawClient, old_pid: int) -> None:
    while True:
        upstream = (await client.request("steerlsp/status"))["result"]["upstream"]
        if upstream["ready"] and upstream["pid"] not in (None, old_pid):
            return
        await asyncio.sleep(0.05)


async def test_a_ranged_change_reaches_an_incremental_upstream_as_a_range(start_raw, tmp_path):
    client = await start_raw(
        steerlsp_command("--no-model", upstream=[*FAKE_UPSTREAM, "--incremental"])
    )
    await client.initialize(tmp_path)
    uri = (tmp_path / "a.py").as_uri()
    client.open(uri, EMOJI)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change(0, 8, 0, 8, "!")]},
    )
    [params] = await _received_changes(client)
    assert params == {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [change(0, 7, 0, 7, "!")],  # code points: the emoji counts once
    }


async def test_a_full_sync_upstream_still_gets_the_full_text(start_raw, tmp_path):
    client = await start_raw(steerlsp_command("--no-model", upstream=FAKE_UPSTREAM))
    await client.initialize(tmp_path)
    uri = (tmp_path / "a.py").as_uri()
    client.open(uri, EMOJI)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change(0, 8, 0, 8, "!")]},
    )
    [params] = await _received_changes(client)
    assert params["contentChanges"] == [{"text": 'x = "😋"!\ny = 1\n'}]


async def test_pylsp_sees_the_editors_text_after_ranged_edits(start_raw, tmp_path):
    """UTF-16 client, real pylsp: Jedi's rename returns its whole view of the file."""
    client = await start_raw(steerlsp_command("--no-model"))
    await client.initialize(tmp_path, {"general": {"positionEncodings": [UTF16]}})
    uri = (tmp_path / "emoji.py").as_uri()
    text = 'def greet(name):\r\n    return name\r\n\r\n\r\nx = "😋"\r\n'
    client.open(uri, text)
    notifications = [
        [change(4, 8, 4, 8, "; y = greet(x)")],  # after the emoji: 8 units, 7 code points
        [
            change(5, 0, 5, 0, 'z = "🛒🛒"\r\n'),
            change(5, 10, 5, 10, "; greet(z)"),  # counted on the line just inserted
        ],
        [change(2, 0, 3, 0, "")],  # one blank line less
        [change(1, 11, 1, 15, "name.upper()")],
    ]
    expected = text
    for version, events in enumerate(notifications, start=2):
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": events},
        )
        for event in events:
            expected = reference(expected, event, UTF16)
    assert expected.endswith('x = "😋"; y = greet(x)\r\nz = "🛒🛒"; greet(z)\r\n')
    reply = await client.request(
        "textDocument/rename",
        {
            "textDocument": {"uri": uri},
            "position": {"line": 0, "character": 5},
            "newName": "salute",
        },
    )
    edits = [e for change in reply["result"]["documentChanges"] for e in change["edits"]]
    assert [e["newText"] for e in edits] == [expected.replace("greet", "salute")]


async def test_after_a_restart_the_replayed_text_is_where_ranged_changes_resume(
    start_raw, tmp_path
):
    client = await start_raw(
        steerlsp_command("--no-model", upstream=[*FAKE_UPSTREAM, "--incremental"])
    )
    await client.initialize(tmp_path)
    uri = (tmp_path / "a.py").as_uri()
    client.open(uri, EMOJI)
    edits = [change(0, 8, 0, 8, "!"), change(1, 0, 1, 1, "😋"), change(1, 2, 1, 2, "?")]
    expected = EMOJI
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [edits[0]]},
    )
    pid = (await client.request("steerlsp/status"))["result"]["upstream"]["pid"]
    await client.response(client.send_request("fake/crash"))
    # Sent while the upstream is down or restarting: dropped, then covered by the replay.
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [edits[1]]},
    )
    await asyncio.wait_for(_restarted(client, pid), 30)
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 4}, "contentChanges": [edits[2]]},
    )
    for edit in edits:
        expected = reference(expected, edit, UTF16)
    received = json.loads((await client.request("fake/receivedJson"))["result"])
    [opened] = [m["params"] for m in received if m.get("method") == "textDocument/didOpen"]
    changes = [m["params"] for m in received if m.get("method") == "textDocument/didChange"]
    assert changes and all("range" in c for p in changes for c in p["contentChanges"])
    events = [c for p in changes for c in p["contentChanges"]]
    assert pylsp_view(opened["textDocument"]["text"], events) == expected
