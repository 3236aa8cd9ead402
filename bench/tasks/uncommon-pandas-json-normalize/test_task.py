from unittest.mock import patch

import pandas as pd
from candidate import line_items

ORDERS = [
    {
        "id": 7,
        "customer": {"name": "Ada", "email": "ada@example.com"},
        "items": [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}],
    },
    {"id": 8, "customer": {"name": "Grace", "email": "grace@example.com"}, "items": []},
    {
        "id": 9,
        "customer": {"name": "Linus", "email": "linus@example.com"},
        "items": [{"sku": "C3", "qty": 5}],
    },
]


def test_output_rows():
    df = line_items(ORDERS)
    assert {"sku", "qty", "id", "customer.name"} <= set(df.columns)
    rows = df[["id", "customer.name", "sku", "qty"]].to_dict("records")
    assert rows == [
        {"id": 7, "customer.name": "Ada", "sku": "A1", "qty": 2},
        {"id": 7, "customer.name": "Ada", "sku": "B2", "qty": 1},
        {"id": 9, "customer.name": "Linus", "sku": "C3", "qty": 5},
    ]
    assert list(df.index) == [0, 1, 2]


def test_output_no_email_column():
    df = line_items(ORDERS)
    assert "customer.email" not in df.columns
    assert "items" not in df.columns


def test_approach_uses_json_normalize():
    with patch.object(pd, "json_normalize", wraps=pd.json_normalize) as spy:
        line_items(ORDERS)
    spy.assert_called()
