"""Invoice line items and the tax bands they fall in."""

from dataclasses import dataclass
from enum import Enum


class TaxBand(Enum):
    """VAT bands; the value is the rate in basis points."""

    ZERO_RATED = 0
    REDUCED_5 = 500
    STANDARD_20 = 2000


@dataclass(frozen=True)
class LineItem:
    sku: str
    qty: int
    unit_price_minor: int
    band: TaxBand = TaxBand.STANDARD_20

    @property
    def net_minor(self) -> int:
        return self.qty * self.unit_price_minor
