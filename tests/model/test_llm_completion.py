"""ChatLSP's llmCompletion through the real server with the embedded model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.checkout import HOLE, at, copy_shop, opened
from tests.helpers.session import ready

INVALID_PARAMS, REQUEST_FAILED = -32602, -32803


@pytest.fixture
def project(tmp_path: Path, shop: Path) -> Path:
    return copy_shop(tmp_path, shop)


@pytest.mark.timeout(900)
async def test_llm_completion_uses_the_context_and_reports_it(start_raw, project):
    client, uri = await opened(start_raw, project)
    await ready(client)
    reply = await client.request("textDocument/llmCompletion", at(uri, HOLE), timeout=300)
    result = reply["result"]
    assert result["snippet"].strip(), result
    context = result["context"]
    assert context["expectedType"] == "Price"
    assert "class Price" in context["relevantTypes"]
    assert "def discount(" in context["relevantHeaders"]
    assert context["rounds"] == []
    repaired = await client.request(
        "textDocument/llmCompletionResolveErrors", at(uri, HOLE), timeout=300
    )
    result = repaired["result"]
    assert result["context"]["expectedType"] == "Price"
    assert len(result["context"]["rounds"]) <= 2  # chatlsp.repairRounds' default
    # What the repaired completion leaves is no worse than a static error per round.
    check = await client.request(
        "textDocument/errorReport", at(uri, HOLE, completion=result["snippet"])
    )
    if result["context"]["rounds"] == []:
        assert check["result"]["needsRepair"] is False
