"""Render numeric report tables as display strings."""

import pandas as pd


def format_table(df: pd.DataFrame, decimals: int = 2) -> pd.DataFrame:
    """Return a copy of ``df`` in which every cell is a display string.

    The same formatting function is applied element-wise to every cell of
    the frame: numbers get ``decimals`` digits after the point and a comma
    thousands separator (``1234.5`` -> ``"1,234.50"``), and missing values
    (None/NaN) become the empty string. Index and columns are unchanged.
    """
    