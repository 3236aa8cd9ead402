"""Management reporting on top of the general ledger."""

from decimal import Decimal

from ledger import AccountKind, Ledger


def format_eur(cents: int) -> str:
    return f"{Decimal(cents) / 100:.2f}"


def expense_report(ledger: Ledger) -> list[tuple[str, str]]:
    """Return (account title, balance) for every expense account with a non-zero balance.

    Which accounts are expense accounts is decided by their kind in the ledger's
    chart of accounts, not by their codes. Balances are formatted with
    `format_eur`. The largest expense comes first; ties are ordered by title.
    """
    