"""ChatLSP's llmCompletion through the real server with the embedded model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.session import ready, start

INVALID_PARAMS, REQUEST_FAILED = -32602, -32803
CHECKOUT = (
    '"""Checkout. 🛒"""\n'
    "\n"
    "from shop.cart import Cart, export_path\n"
    "from shop.pricing import Price, discount\n"
    "\n"
    "\n"
    "def checkout_total(cart: Cart, percent: float) -> Price:\n"
    '    """The cart\'s total after the discount."""\n'
    "    label = '🛒'\n"
    "    return "
)
HOLE = {"line": 9, "character": 11}


@pytest.fixture
def project(tmp_path: Path, shop: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    return root


async def opened(start_raw, project: Path, text: str = CHECKOUT, **kwargs):
    client = await start(start_raw, project, **kwargs)
    uri = (project / "shop" / "checkout.py").as_uri()
    client.open(uri, text)
    return client, uri


def at(uri: str, position: dict, **extra) -> dict:
    return {"textDocument": {"uri": uri}, "position": position, **extra}


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
