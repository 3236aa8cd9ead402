"""Pricing rules shared by the cart and the reports."""

from __future__ import annotations

from dataclasses import dataclass

VAT_RATE = 0.2


@dataclass
class Price:
    """An amount in cents and its currency."""

    cents: int
    currency: str = "EUR"

    def with_vat(self, rate: float = VAT_RATE) -> Price:
        """Return this price with value-added tax applied."""
        return Price(round(self.cents * (1 + rate)), self.currency)

    def format(self) -> str:
        """Human-readable amount, e.g. ``12.50 EUR``."""
        return f"{self.cents / 100:.2f} {self.currency}"


def discount(price: Price, percent: float) -> Price:
    """Take ``percent`` off ``price``."""
    return Price(round(price.cents * (1 - percent / 100)), price.currency)
