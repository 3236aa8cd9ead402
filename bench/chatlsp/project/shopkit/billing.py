"""Invoices for placed orders, tax, and paying them through a payment gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Protocol, TypedDict

from shopkit.money import Money, make_money, percentage
from shopkit.orders import LineItems, Order, OrderId, OrderStatus

DEFAULT_TAX = Decimal("20")


class InvoiceDict(TypedDict):
    number: str
    order_id: OrderId
    total: str
    currency: str
    issued: str


@dataclass(frozen=True)
class Receipt:
    reference: str
    amount: Money
    at: datetime


class PaymentGateway(Protocol):
    name: str

    async def charge(self, amount: Money, reference: str) -> Receipt: ...

    async def refund(self, receipt: Receipt) -> bool: ...


class PaymentDeclined(Exception):
    pass


@dataclass
class Invoice:
    number: str
    order: Order
    issued: date
    due: date
    paid: bool = False
    receipts: list[Receipt] = field(default_factory=list)

    @property
    def lines(self) -> LineItems:
        return self.order.lines

    def subtotal(self) -> Money:
        return self.order.total()

    def tax(self, rate: Decimal = DEFAULT_TAX) -> Money:
        return percentage(self.subtotal(), rate)

    def total(self) -> Money:
        return self.subtotal() + self.tax()

    def overdue(self, today: date) -> bool:
        return not self.paid and today > self.due

    def to_dict(self) -> InvoiceDict:
        total = self.total().rounded()
        return {
            "number": self.number,
            "order_id": self.order.id,
            "total": str(total.amount),
            "currency": total.currency.value,
            "issued": self.issued.isoformat(),
        }


def next_number(last: str | None, year: int) -> str:
    """Invoice numbers run per year: INV-2024-0001, INV-2024-0002, ..."""
    if last is None or not last.startswith(f"INV-{year}-"):
        return f"INV-{year}-0001"
    return f"INV-{year}-{int(last.rsplit('-', 1)[1]) + 1:04d}"


def invoice_for(order: Order, issued: date, number: str, terms_days: int = 30) -> Invoice:
    if order.status is OrderStatus.DRAFT:
        raise ValueError(f"order {order.id} is not placed yet")
    return Invoice(number, order, issued, issued + timedelta(days=terms_days))


def credit_note(invoice: Invoice, amount: Money | None = None) -> Money:
    """A credit against an invoice: the whole total unless an amount is given."""
    credited = amount or invoice.total()
    return make_money(-credited.amount, credited.currency)


async def pay(invoice: Invoice, gateway: PaymentGateway) -> Receipt:
    if invoice.paid:
        raise ValueError(f"{invoice.number} is already paid")
    receipt = await gateway.charge(invoice.total(), reference=invoice.number)
    invoice.receipts.append(receipt)
    invoice.paid = True
    return receipt


async def pay_all(invoices: Iterable[Invoice], gateway: PaymentGateway) -> AsyncIterator[Receipt]:
    """Pay each open invoice in turn, yielding receipts as they come; declines are skipped."""
    for invoice in invoices:
        if invoice.paid:
            continue
        try:
            receipt = await pay(invoice, gateway)
        except PaymentDeclined:
            continue
        yield receipt


def export_invoices(invoices: Iterable[Invoice], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for invoice in invoices:
        target = folder / f"{invoice.number}.json"
        target.write_text(json.dumps(invoice.to_dict(), indent=2), encoding="utf-8")
        written.append(target)
    return written


def invoice_summary(invoice: Invoice) -> tuple[str, Money, bool]:
    return invoice.number, invoice.total(), invoice.paid


def load_invoice_dicts(path: Path) -> list[InvoiceDict]:
    records: list[InvoiceDict] = json.loads(path.read_text(encoding="utf-8"))
    return records
