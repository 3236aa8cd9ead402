"""The expected type, for a field of the document's own class, through the real server.

Jedi documents a field (``total: float``) with nothing, so the analysis gives no type
for it, while a method's signature gives its return type. The real ``steerlsp``, with
the embedded model and real pylsp, completes ``return order.`` in a function that
returns a ``float``: the ranking must know the field's declared type, give it the
expected-type bonus and none to the method returning ``str``, and write the field;
a field whose class declares a ``float`` (``order.customer.balance``) gets half of it.
"""

from __future__ import annotations

from tests.helpers.session import PATIENT, complete, explain, ready, start, warm_analysis

ORDERS = (
    '"""Orders and what they cost."""\n'
    "\n"
    "\n"
    "class Customer:\n"
    '    """Who orders."""\n'
    "\n"
    "    balance: float\n"
    "\n"
    "\n"
    "class Order:\n"
    '    """An order of goods."""\n'
    "\n"
    "    total: float\n"
    "    currency: str\n"
    "    notes: list[str]\n"
    "    customer: Customer\n"
    "\n"
    "    def describe(self) -> str:\n"
    '        return f"{self.total} {self.currency}"\n'
    "\n"
    "\n"
    "def amount(order: Order) -> float:\n"
    '    """What the order comes to."""\n'
    "    return order."
)


async def test_a_field_of_the_documents_class_is_ranked_by_its_declared_type(start_raw, tmp_path):
    root = tmp_path / "orders"
    root.mkdir()
    client = await start(start_raw, root, options={"steerlsp": PATIENT})
    await ready(client)
    await warm_analysis(client)
    path = root / "orders.py"
    path.write_text(ORDERS, encoding="utf-8")
    uri = path.as_uri()
    client.open(uri, ORDERS)

    text = await complete(client, uri, ORDERS)
    trace = (await explain(client, uri))["trace"]
    ranking = trace["rankings"][0]
    assert ranking["expected"] == "float", trace
    top = {entry["name"]: entry for entry in ranking["top"]}
    assert top["total"]["expected"] > 0, ranking  # declared ``total: float``
    assert top["notes"]["expected"] == 0 and top["currency"]["expected"] == 0, ranking
    assert top["describe"]["expected"] == 0, ranking  # it returns a ``str``
    # ``order.customer.balance``: one member step more, half the bonus.
    assert 0 < top["customer"]["expected"] < top["total"]["expected"], ranking
    assert ranking["top"][0]["name"] == "total", ranking
    assert text.startswith("total"), (text, trace)
