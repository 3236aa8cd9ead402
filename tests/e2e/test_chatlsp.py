"""The ChatLSP methods through the real steerlsp over stdio, with real pylsp upstream.

A copy of the example project gets a half-written ``checkout.py``: the cursor
sits at ``return `` in a function annotated ``-> Price``. Each method answers
about that hole, as a request and as the ``steerlsp.*`` command an editor
keybinding would run. llmCompletion, which needs the embedded model, is tested in
tests/model/test_llm_completion.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.checkout import CHECKOUT, HOLE, at, copy_shop, opened
from tests.helpers.rawclient import steerlsp_command

INVALID_PARAMS, REQUEST_FAILED = -32602, -32803
METHODS = (
    "textDocument/expectedType",
    "textDocument/relevantTypes",
    "textDocument/relevantHeaders",
    "textDocument/aiTutorial",
    "textDocument/errorReport",
    "textDocument/llmCompletion",
    "textDocument/llmCompletionResolveErrors",
)


@pytest.fixture
def project(tmp_path: Path, shop: Path) -> Path:
    return copy_shop(tmp_path, shop)


async def test_every_method_is_advertised_with_its_command(start_raw, project):
    client = await start_raw(steerlsp_command())
    reply = await client.request(
        "initialize", {"processId": None, "rootUri": project.as_uri(), "capabilities": {}}
    )
    capabilities = reply["result"]["capabilities"]
    assert capabilities["experimental"]["chatlsp"]["methods"] == list(METHODS)
    commands = capabilities["executeCommandProvider"]["commands"]
    for method in METHODS:
        assert "steerlsp." + method.split("/")[1] in commands


async def test_expected_type_at_a_return_and_where_it_is_written(start_raw, project):
    client, uri = await opened(start_raw, project)
    result = (await client.request("textDocument/expectedType", at(uri, HOLE)))["result"]
    assert result["content"] == {"kind": "plaintext", "value": "Price"}
    assert result["location"]["uri"] == uri
    assert result["location"]["range"]["start"]["line"] == 6  # the ``-> Price`` line


async def test_nothing_known_is_said_plainly(start_raw, project):
    text = CHECKOUT.replace("-> Price:", ":")
    client, uri = await opened(start_raw, project, text)
    result = (await client.request("textDocument/expectedType", at(uri, HOLE)))["result"]
    assert result["content"]["value"].startswith("unknown")
    assert result["location"]["range"]["start"] == HOLE


async def test_relevant_types_and_headers(start_raw, project):
    client, uri = await opened(start_raw, project)
    types_ = (await client.request("textDocument/relevantTypes", at(uri, HOLE)))["result"]
    printed = [c["value"] for c in types_["contents"]]
    assert any("class Price" in p and "def with_vat(" in p for p in printed), printed
    assert all("return Price(round" not in p for p in printed)  # no bodies
    assert types_["locations"][0]["uri"].endswith("/shop/pricing.py")
    headers = (await client.request("textDocument/relevantHeaders", at(uri, HOLE)))["result"]
    printed = "\n".join(c["value"] for c in headers["contents"])
    assert "def discount(price: Price, percent: float) -> Price: ..." in printed
    assert "export_path" not in printed  # returns str, not a target
    assert len(headers["contents"]) == len(headers["locations"]) <= 10


async def test_ai_tutorial_names_the_language_and_version(start_raw, project):
    client, uri = await opened(start_raw, project)
    result = (await client.request("textDocument/aiTutorial", at(uri, HOLE)))["result"]
    text = result["content"]["value"]
    assert "Python 3." in text
    assert "4 spaces" in text


async def test_error_report_checks_a_completion_on_a_shadow_copy(start_raw, project):
    client, uri = await opened(start_raw, project)
    bad = (
        await client.request(
            "textDocument/errorReport", at(uri, HOLE, completion="discount(cart.totl(), percent)")
        )
    )["result"]
    assert bad["needsRepair"] is True
    codes = {d["code"] for d in bad["diagnostics"]}
    assert "E1101" in codes, bad
    assert all(d["range"]["start"]["line"] == 9 for d in bad["diagnostics"])
    assert "totl" in bad["content"]["value"]
    good = (
        await client.request(
            "textDocument/errorReport", at(uri, HOLE, completion="discount(cart.total(), percent)")
        )
    )["result"]
    assert good == {
        "needsRepair": False,
        "diagnostics": [],
        "content": {"kind": "plaintext", "value": "No static errors on the completion's lines."},
    }
    # The buffer itself was never changed: its own diagnostics do not mention the check.
    assert not (project / "shop" / "checkout.py").exists()


async def test_each_method_is_also_a_command(start_raw, project):
    client, uri = await opened(start_raw, project)
    reply = await client.request(
        "workspace/executeCommand",
        {"command": "steerlsp.expectedType", "arguments": [at(uri, HOLE)]},
    )
    assert reply["result"]["content"]["value"] == "Price"
    wrong = await client.request(
        "workspace/executeCommand", {"command": "steerlsp.expectedType", "arguments": []}
    )
    assert wrong["error"]["code"] == INVALID_PARAMS


async def test_bad_requests_get_one_clear_error_each(start_raw, project):
    client, uri = await opened(start_raw, project)
    missing = await client.request("textDocument/expectedType", {"position": HOLE})
    assert missing["error"]["code"] == INVALID_PARAMS
    assert "textDocument" in missing["error"]["message"]
    closed = await client.request(
        "textDocument/relevantTypes", at(uri.replace("checkout", "nowhere"), HOLE)
    )
    assert closed["error"]["code"] == REQUEST_FAILED
    assert "not open" in closed["error"]["message"]
    past = await client.request("textDocument/expectedType", at(uri, {"line": 99, "character": 0}))
    assert past["error"]["code"] == REQUEST_FAILED
    # The session is alive and answers the next question.
    ok = await client.request("textDocument/expectedType", at(uri, HOLE))
    assert ok["result"]["content"]["value"] == "Price"


async def test_chatlsp_can_be_switched_off(start_raw, project):
    client, uri = await opened(start_raw, project, options={"chatlsp": {"enabled": False}})
    reply = await client.request("textDocument/expectedType", at(uri, HOLE))
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "chatlsp.enabled" in reply["error"]["message"]
