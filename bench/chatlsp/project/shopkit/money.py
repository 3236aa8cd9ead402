"""Money: an amount in a currency, with the arithmetic an order total needs.

Amounts are ``Decimal`` so that sums of prices never pick up binary
floating-point noise; rounding happens once, when a total is shown or charged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from enum import Enum


class Currency(Enum):
    """The currencies the shop prices in."""

    EUR = "EUR"
    USD = "USD"
    GBP = "GBP"

    @property
    def symbol(self) -> str:
        return {"EUR": "€", "USD": "$", "GBP": "£"}[self.value]


ExchangeRates = dict[tuple[Currency, Currency], Decimal]

CENT = Decimal("0.01")


class CurrencyMismatch(ValueError):
    """Two amounts in different currencies were combined."""


@dataclass(frozen=True)
class Money:
    """An amount in one currency."""

    amount: Decimal
    currency: Currency = Currency.EUR

    def __add__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount - other.amount, self.currency)

    def times(self, factor: int | Decimal) -> Money:
        return Money(self.amount * factor, self.currency)

    def rounded(self) -> Money:
        return Money(self.amount.quantize(CENT, rounding=ROUND_HALF_EVEN), self.currency)

    def is_zero(self) -> bool:
        return self.amount == 0

    def format(self) -> str:
        return f"{self.currency.symbol}{self.rounded().amount:,}"

    def _check(self, other: Money) -> None:
        if other.currency is not self.currency:
            raise CurrencyMismatch(f"{self.currency.value} and {other.currency.value}")


def make_money(amount: str | int | Decimal, currency: Currency = Currency.EUR) -> Money:
    """Money from a price as a catalogue or a form writes it ("12.50", 12, Decimal)."""
    return Money(Decimal(str(amount)), currency)


def zero(currency: Currency = Currency.EUR) -> Money:
    return Money(Decimal(0), currency)


def parse_money(text: str) -> Money | None:
    """Parse "EUR 12.50" or "12.50" (euros); None when the text is not an amount."""
    parts = text.split()
    if len(parts) == 2:
        code, number = parts
    elif len(parts) == 1:
        code, number = Currency.EUR.value, parts[0]
    else:
        return None
    try:
        return Money(Decimal(number), Currency(code.upper()))
    except (InvalidOperation, ValueError):
        return None


def sum_money(values: Iterable[Money], currency: Currency = Currency.EUR) -> Money:
    total = zero(currency)
    for value in values:
        total = total + value
    return total


def convert(value: Money, to: Currency, rates: ExchangeRates) -> Money:
    """The amount in another currency; the rate table is keyed (from, to)."""
    if value.currency is to:
        return value
    rate = rates[(value.currency, to)]
    return Money(value.amount * rate, to).rounded()


def percentage(value: Money, percent: Decimal) -> Money:
    return Money(value.amount * percent / 100, value.currency)
