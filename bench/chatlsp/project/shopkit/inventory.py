"""Stock levels per SKU, their movements, and syncing them with remote warehouses."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple, Protocol

from shopkit.catalog import Sku, normalise_sku


class StockLevel(NamedTuple):
    sku: Sku
    on_hand: int
    reserved: int = 0

    @property
    def available(self) -> int:
        return max(self.on_hand - self.reserved, 0)


class Warehouse(Protocol):
    """Anything that can report and reserve stock: the local inventory or a 3PL's API client."""

    name: str

    async def stock_of(self, sku: Sku) -> StockLevel: ...

    async def reserve(self, sku: Sku, quantity: int) -> bool: ...


@dataclass(frozen=True)
class Movement:
    sku: Sku
    delta: int
    at: datetime
    reason: str = "adjustment"


class OutOfStock(Exception):
    def __init__(self, sku: Sku, wanted: int, available: int) -> None:
        super().__init__(f"{sku}: wanted {wanted}, {available} available")
        self.sku = sku


class Inventory:
    """The shop's own stock; every change is kept as a movement for the audit trail."""

    name: str
    levels: dict[Sku, StockLevel]
    history: list[Movement]

    def __init__(self, name: str, levels: dict[Sku, StockLevel] | None = None) -> None:
        self.name = name
        self.levels = dict(levels or {})
        self.history = []

    def stock_of(self, sku: Sku) -> StockLevel:
        key = normalise_sku(sku)
        return self.levels.get(key) or empty_level(key)

    def restock(self, sku: Sku, quantity: int, at: datetime | None = None) -> StockLevel:
        level = self.stock_of(sku)
        updated = level._replace(on_hand=level.on_hand + quantity)
        self.levels[level.sku] = updated
        self.history.append(Movement(level.sku, quantity, at or now(), "restock"))
        return updated

    def reserve(self, sku: Sku, quantity: int) -> bool:
        level = self.stock_of(sku)
        if level.available < quantity:
            return False
        self.levels[level.sku] = level._replace(reserved=level.reserved + quantity)
        return True

    def release(self, sku: Sku, quantity: int) -> StockLevel:
        level = self.stock_of(sku)
        released = level._replace(reserved=max(level.reserved - quantity, 0))
        self.levels[level.sku] = released
        return released

    def movements_for(self, sku: Sku) -> Iterator[Movement]:
        key = normalise_sku(sku)
        for movement in self.history:
            if movement.sku == key:
                yield movement

    def low_stock(self, threshold: int = 5) -> list[StockLevel]:
        return [level for level in self.levels.values() if level.available < threshold]


def now() -> datetime:
    return datetime.now(UTC)


def empty_level(sku: Sku) -> StockLevel:
    return StockLevel(sku, 0, 0)


def merge_levels(first: StockLevel, second: StockLevel) -> StockLevel:
    if first.sku != second.sku:
        raise ValueError(f"cannot merge {first.sku} with {second.sku}")
    return StockLevel(first.sku, first.on_hand + second.on_hand, first.reserved + second.reserved)


async def fetch_levels(remote: Warehouse, skus: list[Sku]) -> dict[Sku, StockLevel]:
    levels = await asyncio.gather(*(remote.stock_of(sku) for sku in skus))
    return {level.sku: level for level in levels}


async def sync_inventory(
    inventory: Inventory, remote: Warehouse, skus: list[Sku]
) -> list[Movement]:
    """Bring the local levels to the remote's counts; the movements say what changed."""
    remote_levels = await fetch_levels(remote, skus)
    changes: list[Movement] = []
    for sku, level in remote_levels.items():
        delta = level.on_hand - inventory.stock_of(sku).on_hand
        if delta:
            inventory.restock(sku, delta)
            changes.append(Movement(sku, delta, now(), f"sync from {remote.name}"))
    return changes


def audit(inventory, since=None):
    """Movements since a time, newest first (untyped: old reports pass anything)."""
    moves = [m for m in inventory.history if since is None or m.at >= since]
    return sorted(moves, key=lambda m: m.at, reverse=True)
