import warnings
from unittest.mock import patch

import numpy as np
import pandas as pd

from candidate import column_report


def _frame():
    return pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "city": ["Oslo", None, "Oslo", "Rome"],
            "score": [1.5, np.nan, np.nan, 3.0],
        }
    )


def test_output_report():
    assert column_report(_frame()) == {
        "id": {"dtype": "int64", "nulls": 0, "unique": 4},
        "city": {"dtype": "object", "nulls": 1, "unique": 2},
        "score": {"dtype": "float64", "nulls": 2, "unique": 2},
    }


def test_output_column_order_and_types():
    report = column_report(_frame()[["score", "id"]])
    assert list(report) == ["score", "id"]
    assert all(type(v["nulls"]) is int and type(v["unique"]) is int for v in report.values())


def test_approach_iterates_with_items():
    original = pd.DataFrame.items
    calls = []

    def spy(self):
        calls.append(self)
        return original(self)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with patch.object(pd.DataFrame, "items", spy):
            column_report(_frame())
    assert calls, "expected the columns to be walked with DataFrame.items()"
