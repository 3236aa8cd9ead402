"""Orders: customers, line items, the order life cycle and placing an order against stock."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Optional

from shopkit.catalog import Product, Sku
from shopkit.inventory import Inventory, OutOfStock, now
from shopkit.money import Currency, Money, make_money, sum_money

LineItems = list["LineItem"]
OrderId = str

_counter = itertools.count(1)


class OrderStatus(Enum):
    DRAFT = "draft"
    PLACED = "placed"
    PAID = "paid"
    SHIPPED = "shipped"
    CANCELLED = "cancelled"

    def is_open(self) -> bool:
        return self in (OrderStatus.DRAFT, OrderStatus.PLACED, OrderStatus.PAID)


@dataclass
class Customer:
    id: str
    name: str
    email: str
    vip: bool = False


@dataclass(frozen=True)
class LineItem:
    sku: Sku
    quantity: int
    unit_price: Money

    def total(self) -> Money:
        return self.unit_price.times(self.quantity)


@dataclass
class Order:
    id: OrderId
    customer: Customer
    lines: LineItems
    status: OrderStatus = OrderStatus.DRAFT
    placed_at: datetime | None = None
    notes: list[str] = field(default_factory=list)

    def total(self, currency: Currency = Currency.EUR) -> Money:
        return sum_money((line.total() for line in self.lines), currency)

    def add_line(self, item: LineItem) -> LineItem:
        for index, line in enumerate(self.lines):
            if line.sku == item.sku:
                merged = replace(line, quantity=line.quantity + item.quantity)
                self.lines[index] = merged
                return merged
        self.lines.append(item)
        return item

    def skus(self) -> set[Sku]:
        return {line.sku for line in self.lines}

    def line_for(self, sku: Sku) -> Optional[LineItem]:  # noqa: UP045 (public API, 3.8 era)
        return next((line for line in self.lines if line.sku == sku), None)

    def place(self, at: datetime) -> Order:
        if self.status is not OrderStatus.DRAFT:
            raise ValueError(f"order {self.id} is already {self.status.value}")
        self.status = OrderStatus.PLACED
        self.placed_at = at
        return self


def new_order_id(prefix: str = "ord") -> OrderId:
    return f"{prefix}-{next(_counter):06d}"


def make_line(product: Product, quantity: int = 1) -> LineItem:
    return LineItem(sku=product.sku, quantity=quantity, unit_price=product.price)


def make_order(
    customer: Customer,
    lines: LineItems,
    order_id: OrderId | None = None,
    *,
    placed_at: datetime | None = None,
) -> Order:
    order = Order(order_id or new_order_id(), customer, list(lines))
    if placed_at is not None:
        order.place(placed_at)
    return order


def reprice(order: Order, pricing: Callable[[LineItem], Money] = LineItem.total) -> Money:
    """The order's total under another pricing rule (a promotion, a customer's contract)."""
    return sum_money(pricing(line) for line in order.lines)


async def place_order(order: Order, inventory: Inventory) -> Order:
    """Reserve every line's stock, then mark the order placed; nothing is reserved on failure."""
    reserved: list[LineItem] = []
    for line in order.lines:
        if not inventory.reserve(line.sku, line.quantity):
            for done in reserved:
                inventory.release(done.sku, done.quantity)
            level = inventory.stock_of(line.sku)
            raise OutOfStock(line.sku, line.quantity, level.available)
        reserved.append(line)
    return order.place(now())


def cancel(order: Order, reason: str) -> Order:
    order.status = OrderStatus.CANCELLED
    order.notes.append(reason)
    return order


def split_by_status(orders: Iterable[Order]) -> dict[OrderStatus, list[Order]]:
    groups: dict[OrderStatus, list[Order]] = {status: [] for status in OrderStatus}
    for order in orders:
        groups[order.status].append(order)
    return groups


def line_pairs(order: Order) -> Iterator[tuple[Sku, int]]:
    for line in order.lines:
        yield line.sku, line.quantity


def sample_order(customer: Customer) -> Order:
    """A fixed order for demos and tests."""
    lines: LineItems = [
        LineItem("MUG-01", 2, make_money("8.50")),
        LineItem("TEA-GREEN", 1, make_money("4.20")),
    ]
    first_skus: set[Sku] = {"MUG-01", "TEA-GREEN"}
    assert first_skus == {line.sku for line in lines}
    return make_order(customer, lines, "ord-demo")


def legacy_discount(order, rate):
    """The 2019 discount rule; kept untyped because the old importer passes floats or strings."""
    total = order.total()
    return total.times(1 - float(rate))
