import warnings

import pandas as pd
import pandas.testing as pdt

from candidate import LEDGER_COLUMNS, add_transactions


def _ledger():
    return pd.DataFrame(
        {
            "date": ["2024-01-01", "2024-01-02"],
            "account": ["cash", "bank"],
            "amount": [10.0, -2.5],
        },
        index=[10, 11],
    )


NEW = [
    {"account": "bank", "amount": 4.25, "date": "2024-01-03"},
    {"date": "2024-01-04", "account": "cash", "amount": -1.0},
]


def test_output_rows_added_in_order():
    result = add_transactions(_ledger(), NEW)
    expected = pd.DataFrame(
        {
            "date": ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"],
            "account": ["cash", "bank", "bank", "cash"],
            "amount": [10.0, -2.5, 4.25, -1.0],
        }
    )
    pdt.assert_frame_equal(result.reset_index(drop=True), expected)
    assert list(result.index) == [0, 1, 2, 3]
    assert list(result.columns) == LEDGER_COLUMNS


def test_output_input_not_modified():
    ledger = _ledger()
    before = ledger.copy()
    add_transactions(ledger, NEW)
    pdt.assert_frame_equal(ledger, before)


def test_approach_no_deprecated_pandas_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = add_transactions(_ledger(), NEW)
    assert len(result) == 4
