"""Year-end close for the general ledger."""

from ledger import AccountKind, Ledger

RETAINED_EARNINGS = "3900"


def close_period(ledger: Ledger, year: int) -> int:
    """Close every revenue and expense account into retained earnings; return net income.

    Go through the chart of accounts in order. For each revenue or expense account
    (judged by its kind) whose balance is not zero, record one closing entry with
    the memo "close <year>" that brings that account's balance to zero: a revenue
    account is debited and retained earnings credited, an expense account is
    credited and retained earnings debited (swap the two sides if the balance is
    negative, so the amount recorded is always positive).
    Return net income in cents: revenue balances closed minus expense balances closed.
    """
    