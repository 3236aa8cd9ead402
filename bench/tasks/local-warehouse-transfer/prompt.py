"""Inter-site transfers between two warehouses."""

from warehouse import Manifest, ManifestLine, StockShortage, UnknownSku, Warehouse


def transfer_stock(src: Warehouse, dst: Warehouse, sku: str, qty: int) -> int:
    """Move `qty` units of `sku` from `src` to `dst` and return how many moved.

    The units arriving at `dst` are booked in as one delivery under the lot
    "XFER-<name of src>". If `src` does not hold enough units, nothing moves and
    0 is returned. If `dst` does not stock the sku at all, nothing is taken out
    of `src` and the warehouse's unknown-sku error is raised.
    """
    