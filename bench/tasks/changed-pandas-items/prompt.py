"""Data-quality report for incoming CSV extracts."""

import pandas as pd


def column_report(df: pd.DataFrame) -> dict[str, dict]:
    """Summarize every column of ``df``.

    Walk the frame's columns as (name, Series) pairs and return a dict that
    maps each column name, in column order, to::

        {"dtype": str(series.dtype),
         "nulls": number of missing values (int),
         "unique": number of distinct non-missing values (int)}
    """
    