"""Trade/quote alignment for a market-data notebook."""

import pandas as pd


def attach_quotes(trades: pd.DataFrame, quotes: pd.DataFrame) -> pd.DataFrame:
    """Attach to each trade the most recent quote for the same ``symbol``.

    Both frames have a datetime ``time`` column and a ``symbol`` column and
    are sorted by ``time``; ``quotes`` also has ``bid`` and ``ask``. Return the
    trades (same rows, same order, default index) with ``bid`` and ``ask``
    columns taken from the latest quote at or before the trade's time, or NaN
    if there is none.
    """
    