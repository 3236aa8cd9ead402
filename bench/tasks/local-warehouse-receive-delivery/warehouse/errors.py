"""Errors raised by warehouse operations."""


class WarehouseError(Exception):
    pass


class UnknownSku(WarehouseError):
    def __init__(self, sku: str) -> None:
        super().__init__(f"unknown sku {sku!r}")
        self.sku = sku


class StockShortage(WarehouseError):
    """Raised when more units are picked than the warehouse holds; nothing is picked."""

    def __init__(self, sku: str, requested: int, on_hand: int) -> None:
        super().__init__(f"{sku}: requested {requested}, only {on_hand} on hand")
        self.sku = sku
        self.requested = requested
        self.on_hand = on_hand
