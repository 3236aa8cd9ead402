"""Accounts and the chart of accounts."""

from dataclasses import dataclass
from enum import Enum


class AccountKind(Enum):
    """What an account holds; the prefix says which side increases it."""

    DR_ASSET = "asset"
    CR_LIABILITY = "liability"
    CR_EQUITY = "equity"
    CR_REVENUE = "revenue"
    DR_EXPENSE = "expense"


@dataclass(frozen=True)
class Account:
    code: str
    title: str
    kind: AccountKind

    @property
    def debit_normal(self) -> bool:
        return self.kind in (AccountKind.DR_ASSET, AccountKind.DR_EXPENSE)


def default_chart() -> dict[str, Account]:
    accounts = [
        Account("1000", "Cash", AccountKind.DR_ASSET),
        Account("1200", "Receivables", AccountKind.DR_ASSET),
        Account("2100", "Payroll payable", AccountKind.CR_LIABILITY),
        Account("3900", "Retained earnings", AccountKind.CR_EQUITY),
        Account("4000", "Sales", AccountKind.CR_REVENUE),
        Account("4500", "Consulting income", AccountKind.CR_REVENUE),
        Account("6100", "Wages", AccountKind.DR_EXPENSE),
        Account("6200", "Rent", AccountKind.DR_EXPENSE),
        Account("7350", "Software subscriptions", AccountKind.DR_EXPENSE),
    ]
    return {account.code: account for account in accounts}
