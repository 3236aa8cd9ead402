"""Stock keeping for a single warehouse."""

from warehouse.errors import StockShortage, UnknownSku, WarehouseError
from warehouse.manifest import Manifest, ManifestLine
from warehouse.stock import Warehouse

__all__ = [
    "Manifest",
    "ManifestLine",
    "StockShortage",
    "UnknownSku",
    "Warehouse",
    "WarehouseError",
]
