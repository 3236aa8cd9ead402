"""Sales reports: daily totals, best sellers and CSV export for the accountants."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import TypeAlias, TypedDict

from shopkit.catalog import Catalog, Sku
from shopkit.money import Currency, Money, sum_money, zero
from shopkit.orders import Order, OrderStatus

Ranking: TypeAlias = list[tuple[Sku, int]]


class SalesRow(TypedDict):
    day: str
    sku: Sku
    quantity: int
    revenue: str


REPORT_FIELDS = ("day", "sku", "quantity", "revenue")


def completed(orders: Iterable[Order]) -> Iterator[Order]:
    for order in orders:
        if order.status in (OrderStatus.PAID, OrderStatus.SHIPPED):
            yield order


def daily_sales(orders: Iterable[Order], day: date, currency: Currency = Currency.EUR) -> Money:
    todays = [
        order
        for order in completed(orders)
        if order.placed_at is not None and order.placed_at.date() == day
    ]
    if not todays:
        return zero(currency)
    return sum_money((order.total(currency) for order in todays), currency)


def sales_rows(orders: Iterable[Order], day: date) -> Iterator[SalesRow]:
    for order in completed(orders):
        for line in order.lines:
            yield {
                "day": day.isoformat(),
                "sku": line.sku,
                "quantity": line.quantity,
                "revenue": str(line.total().amount),
            }


def best_sellers(orders: Iterable[Order], top: int = 5) -> Ranking:
    counts: Counter[Sku] = Counter()
    for order in completed(orders):
        for line in order.lines:
            counts[line.sku] += line.quantity
    return counts.most_common(top)


def write_report(rows: Iterable[SalesRow], path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=REPORT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def unsold(catalog: Catalog, orders: Iterable[Order]) -> set[Sku]:
    sold = {line.sku for order in completed(orders) for line in order.lines}
    return set(catalog.skus()) - sold


def summarise(orders):
    """A one-line summary for the ops channel; callers pass lists or query sets."""
    orders = list(orders)
    paid = sum(1 for order in orders if order.status is OrderStatus.PAID)
    return f"{len(orders)} orders, {paid} paid"


def print_summary(orders: list[Order]) -> None:
    text = summarise(orders)
    print(text)
    orders.sort(key=lambda order: order.id)


def top_ranking(orders: list[Order]) -> Ranking:
    ranking: Ranking = best_sellers(orders, top=3)
    leaders: list[Sku] = [sku for sku, _ in ranking]
    return [(sku, count) for sku, count in ranking if sku in leaders]
