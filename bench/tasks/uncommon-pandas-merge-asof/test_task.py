import math
from unittest.mock import patch

import pandas as pd
from candidate import attach_quotes


def _frames():
    t = pd.Timestamp("2024-05-01 09:30:00")
    s = pd.Timedelta(seconds=1)
    quotes = pd.DataFrame(
        {
            "time": [t, t + 1 * s, t + 2 * s, t + 4 * s, t + 6 * s],
            "symbol": ["AAPL", "MSFT", "AAPL", "MSFT", "AAPL"],
            "bid": [189.0, 410.0, 189.5, 410.5, 190.0],
            "ask": [189.2, 410.3, 189.7, 410.8, 190.1],
        }
    )
    trades = pd.DataFrame(
        {
            "time": [t + 0 * s, t + 3 * s, t + 3 * s, t + 4 * s, t + 7 * s],
            "symbol": ["MSFT", "AAPL", "MSFT", "MSFT", "AAPL"],
            "qty": [100, 50, 25, 10, 5],
        }
    )
    return trades, quotes


def test_output_values():
    trades, quotes = _frames()
    out = attach_quotes(trades, quotes)
    assert list(out["qty"]) == [100, 50, 25, 10, 5]
    assert list(out["symbol"]) == ["MSFT", "AAPL", "MSFT", "MSFT", "AAPL"]
    bids = list(out["bid"])
    asks = list(out["ask"])
    assert math.isnan(bids[0]) and math.isnan(asks[0])
    assert bids[1:] == [189.5, 410.0, 410.5, 190.0]
    assert asks[1:] == [189.7, 410.3, 410.8, 190.1]


def test_output_shape_and_columns():
    trades, quotes = _frames()
    out = attach_quotes(trades, quotes)
    assert len(out) == len(trades)
    assert {"time", "symbol", "qty", "bid", "ask"} <= set(out.columns)
    assert list(out.index) == list(range(len(trades)))
    pd.testing.assert_series_equal(out["time"], trades["time"])


def test_approach_uses_merge_asof():
    trades, quotes = _frames()
    with patch.object(pd, "merge_asof", wraps=pd.merge_asof) as spy:
        attach_quotes(trades, quotes)
    spy.assert_called()
