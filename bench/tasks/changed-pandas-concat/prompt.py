"""Maintain a running ledger of account transactions."""

import pandas as pd

LEDGER_COLUMNS = ["date", "account", "amount"]


def add_transactions(ledger: pd.DataFrame, new_rows: list[dict]) -> pd.DataFrame:
    """Return a new ledger with ``new_rows`` added after the existing rows.

    ``ledger`` has the columns in ``LEDGER_COLUMNS``; ``new_rows`` are dicts
    keyed by those column names. The result keeps the ``LEDGER_COLUMNS``
    column order and has a fresh 0..n-1 integer index. ``ledger`` itself is
    not modified.
    """
    