"""Invoices: totals are computed per tax band, rounding half up per band."""

from collections.abc import Iterable

from billing.items import LineItem, TaxBand


class Invoice:
    def __init__(
        self, customer_ref: str, items: tuple[LineItem, ...], currency: str, discount_bp: int
    ) -> None:
        self.customer_ref = customer_ref
        self.items = items
        self.currency = currency
        self.discount_bp = discount_bp

    @classmethod
    def from_lines(
        cls, customer_ref: str, lines: Iterable[LineItem], *, currency: str = "EUR"
    ) -> "Invoice":
        items = tuple(line for line in lines if line.qty)
        if not items:
            raise ValueError("an invoice needs at least one line with a quantity")
        return cls(customer_ref, items, currency.upper(), discount_bp=0)

    def with_discount(self, *, percent_bp: int) -> "Invoice":
        """A copy with a discount of `percent_bp` basis points (250 = 2.5%) on every line."""
        if not 0 <= percent_bp <= 10000:
            raise ValueError("percent_bp must be between 0 and 10000")
        return Invoice(self.customer_ref, self.items, self.currency, percent_bp)

    def net_by_band(self) -> dict[TaxBand, int]:
        totals: dict[TaxBand, int] = {}
        for item in self.items:
            net = item.net_minor * (10000 - self.discount_bp) // 10000
            totals[item.band] = totals.get(item.band, 0) + net
        return totals

    def tax_minor(self) -> int:
        return sum((net * band.value + 5000) // 10000 for band, net in self.net_by_band().items())

    def gross_minor(self) -> int:
        return sum(self.net_by_band().values()) + self.tax_minor()
