"""A shopping cart."""

from __future__ import annotations

import os

from shop.pricing import Price, discount

LABEL = "🛒 cart"  # an astral character before the cursor tests UTF-16 positions


class Cart:
    """Items and their prices."""

    def __init__(self) -> None:
        self.items: dict[str, Price] = {}

    def add(self, name: str, price: Price) -> None:
        """Add one item."""
        self.items[name] = price

    def total(self) -> Price:
        """Sum of all items, VAT included."""
        cents = sum(p.with_vat().cents for p in self.items.values())
        return Price(cents)

    def sale(self, percent: float) -> Price:
        """Total after a discount."""
        return discount(self.total(), percent)


def export_path(name: str) -> str:
    return os.path.join("exports", name)
