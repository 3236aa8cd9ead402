"""The analysis instance warmed on an opened document's imports, through the real server
with the embedded model (warming waits for the model worker to be idle), real pylsp."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.session import inline, opened, ready, start

pytestmark = pytest.mark.timeout(900)

DOCUMENT = (
    "import json\nfrom collections import OrderedDict\n\n\ndef dump(value):\n    return json."
)


async def analysis_status(client) -> dict:
    return (await client.request("steerlsp/status"))["result"]["analysis"]


async def test_an_opened_documents_imports_are_asked_about_before_any_completion(
    start_raw, tmp_path
):
    client = await start(start_raw, tmp_path)
    await ready(client)
    uri = opened(client, tmp_path, DOCUMENT)
    status: dict = {}
    for _ in range(300):  # json and OrderedDict, one question each, in the background
        status = await analysis_status(client)
        if status.get("warmed") == 2:
            break
        await asyncio.sleep(0.1)
    assert status.get("warmed") == 2, status
    asked = status["queries"]
    reply = await client.response(inline(client, uri, DOCUMENT))
    assert reply["result"]["items"], reply  # steered as before, the instance warm
    assert (await analysis_status(client))["warmed"] == 2  # each name once
    assert (await analysis_status(client))["queries"] >= asked

    steering_off = await start(start_raw, tmp_path, options={"steering": {"enabled": False}})
    await ready(steering_off)
    opened(steering_off, tmp_path, DOCUMENT, "other.py")
    await asyncio.sleep(3)
    assert (await analysis_status(steering_off)) == {"state": "idle"}  # nothing started
