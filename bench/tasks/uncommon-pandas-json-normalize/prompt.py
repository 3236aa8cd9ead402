"""Flatten shop API responses into tables."""

import pandas as pd


def line_items(orders: list[dict]) -> pd.DataFrame:
    """Return one row per line item of the given orders.

    Each order looks like ``{"id": 7, "customer": {"name": "Ada", ...},
    "items": [{"sku": "A1", "qty": 2}, ...]}``. The result has the item's own
    columns (``sku``, ``qty``) plus the order's ``id`` and ``customer.name``
    columns, in order-then-item order with a default index. Orders without
    items contribute no rows.
    """
    