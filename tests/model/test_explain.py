"""Steered completions and ``steerlsp/explain``, through the real server.

These drive the real ``steerlsp`` over stdio with the embedded
model and real pylsp on a copy of the example project. At ``return cart``
(Jedi knows ``cart`` is a ``shop.cart.Cart``) the model writes the dot, and
the name after it must be steered along pylsp's completion items; explain
must say so. Each real-model completion costs seconds.
"""

from __future__ import annotations

import shutil

from tests.helpers.session import PATIENT, complete, explain, ready, start, warm_analysis

INVALID_PARAMS = -32602
HEAD = (
    '"""Receipts for a cart."""\n'
    "\n"
    "from shop.cart import Cart\n"
    "\n"
    "\n"
    "def receipt(cart: Cart) -> str:\n"
    '    """The cart\'s total, VAT included, for the receipt."""\n'
)
CHECKOUT = HEAD + "    return cart"
AFTER_DOT = HEAD + "    total = cart.total()\n    return total."
CART_MEMBERS = ("add", "items", "sale", "total")
PRICE_MEMBERS = ("cents", "currency", "format", "with_vat")


# ---- the document snapshot (pure) ------------------------------------------------


# ---- end to end: the real model, pylsp and the analysis instance -----------------


async def test_a_completion_after_a_dot_is_steered_and_explained(start_raw, shop, tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    client = await start(start_raw, root, options={"steerlsp": PATIENT})
    await ready(client)
    analysis = await warm_analysis(client)
    assert analysis["queries"] == 0  # warmed by a throwaway question, not counted

    path = root / "shop" / "checkout.py"
    path.write_text(CHECKOUT, encoding="utf-8")
    uri = path.as_uri()
    client.open(uri, CHECKOUT)
    assert await explain(client, uri) == {
        "uri": uri,
        "completion": None,
        "steered": False,
        "trace": None,
    }

    text = await complete(client, uri, CHECKOUT)
    explained = await explain(client, uri)
    assert explained["uri"] == uri and explained["version"] == 1
    assert explained["completion"] == text
    assert explained["steered"] is True
    timing = explained["timing"]
    assert timing["prefill_ms"] > 0 and timing["decode_ms"] > 0
    assert 0 < timing["steering_ms"] <= timing["decode_ms"]
    assert timing["tokens"] > 0 and 0 <= timing["reused_tokens"] < explained["prompt_tokens"]
    trace = explained["trace"]
    assert trace["triggers"], trace
    completions = [q for q in trace["queries"] if q["query"] == "completions"]
    assert completions and completions[0]["outcome"] == "ok", trace
    assert completions[0]["results"] > 0, trace
    assert trace["walks"], trace
    walk = trace["walks"][0]
    assert walk["candidates"] > 0 and walk["mode"] in ("boost", "mask")
    # The walk wrote one of Cart's members, right after the dot the model wrote.
    assert walk.get("wrote") in CART_MEMBERS, trace
    assert text.startswith("." + walk["wrote"]), (text, trace)

    bad = await client.request("steerlsp/explain", {"textDocument": {}})
    assert bad["error"]["code"] == INVALID_PARAMS
    assert "textDocument" in bad["error"]["message"]
    missing = await client.request("steerlsp/explain")
    assert missing["error"]["code"] == INVALID_PARAMS

    # Steering off: the next completion is unsteered, and explain says so.
    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"steerlsp": {"steering": {"enabled": False}}}},
    )
    again = CHECKOUT + "\n"
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": again}]},
    )
    line = again.split("\n")[-2]
    reply = await client.request(
        "textDocument/inlineCompletion",
        {
            "textDocument": {"uri": uri},
            "position": {"line": again.count("\n") - 1, "character": len(line)},
            "context": {"triggerKind": 1},
        },
        timeout=120,
    )
    assert "result" in reply, reply
    unsteered = await explain(client, uri)
    assert unsteered["version"] == 2
    assert unsteered["steered"] is False and unsteered["trace"] is None
    assert isinstance(unsteered["completion"], str)

    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    closed = await explain(client, uri)
    assert closed["completion"] is None and closed["trace"] is None


async def test_a_dot_the_user_typed_is_steered(start_raw, shop, tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    client = await start(start_raw, root, options={"steerlsp": PATIENT})
    await ready(client)
    await warm_analysis(client)
    path = root / "shop" / "checkout.py"
    path.write_text(AFTER_DOT, encoding="utf-8")
    client.open(path.as_uri(), AFTER_DOT)
    text = await complete(client, path.as_uri(), AFTER_DOT)
    trace = (await explain(client, path.as_uri()))["trace"]
    assert trace["walks"] and trace["walks"][0].get("wrote") in PRICE_MEMBERS, trace
    assert text.startswith(trace["walks"][0]["wrote"]), (text, trace)
