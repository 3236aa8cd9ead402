import warnings

import numpy as np
import pandas as pd
import pandas.testing as pdt

from candidate import format_table


def _frame():
    return pd.DataFrame(
        {"q1": [1234.5, np.nan], "q2": [0.125, 1_000_000]},
        index=["north", "south"],
    )


def test_output_default_decimals():
    expected = pd.DataFrame(
        {"q1": ["1,234.50", ""], "q2": ["0.12", "1,000,000.00"]},
        index=["north", "south"],
    )
    pdt.assert_frame_equal(format_table(_frame()), expected)


def test_output_custom_decimals_and_input_untouched():
    df = _frame()
    before = df.copy()
    result = format_table(df, decimals=0)
    assert result.loc["north", "q1"] == "1,234"
    assert result.loc["south", "q2"] == "1,000,000"
    pdt.assert_frame_equal(df, before)


def test_approach_no_deprecated_pandas_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        format_table(_frame())
