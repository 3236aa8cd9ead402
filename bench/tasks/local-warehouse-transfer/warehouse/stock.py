"""The warehouse itself: stock levels, lots and a movement log."""

from collections.abc import Iterable

from warehouse.errors import StockShortage, UnknownSku
from warehouse.manifest import Manifest, ManifestLine


class Warehouse:
    def __init__(self, name: str, catalog: Iterable[str]) -> None:
        self.name = name
        self._on_hand = {sku: 0 for sku in catalog}
        self.lots: dict[str, list[str]] = {sku: [] for sku in self._on_hand}
        self.movements: list[tuple[str, int]] = []

    def on_hand(self, sku: str) -> int:
        if sku not in self._on_hand:
            raise UnknownSku(sku)
        return self._on_hand[sku]

    def restock_from(self, manifest: Manifest, *, strict: bool = False) -> list[ManifestLine]:
        """Book in every manifest line; return the lines for unknown skus (raise if strict)."""
        rejected = []
        for line in manifest.lines:
            if line.sku not in self._on_hand:
                if strict:
                    raise UnknownSku(line.sku)
                rejected.append(line)
                continue
            self._on_hand[line.sku] += line.units
            self.lots[line.sku].append(line.lot)
            self.movements.append((line.sku, line.units))
        return rejected

    def pick(self, sku: str, qty: int) -> int:
        """Take `qty` units out; raises StockShortage (taking nothing) if there are too few."""
        available = self.on_hand(sku)
        if qty > available:
            raise StockShortage(sku, qty, available)
        self._on_hand[sku] = available - qty
        self.movements.append((sku, -qty))
        return self._on_hand[sku]
