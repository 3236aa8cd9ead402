from unittest.mock import patch

import numpy as np
import numpy.lib.stride_tricks as stride_tricks
from candidate import rolling_max


def test_output_basic():
    values = np.array([1, 3, 2, 5, 4, 0, 1])
    np.testing.assert_array_equal(rolling_max(values, 3), [3, 5, 5, 5, 4])


def test_output_window_one_and_full():
    values = np.array([2.5, -1.0, 7.0, 3.0])
    np.testing.assert_array_equal(rolling_max(values, 1), values)
    np.testing.assert_array_equal(rolling_max(values, 4), [7.0])


def test_output_matches_naive():
    rng = np.random.default_rng(0)
    values = rng.normal(size=500)
    expected = np.array([values[i : i + 20].max() for i in range(len(values) - 19)])
    result = rolling_max(values, 20)
    assert result.shape == expected.shape
    np.testing.assert_allclose(result, expected)


def test_approach_uses_sliding_window_view():
    real = stride_tricks.sliding_window_view
    assert np.lib.stride_tricks is stride_tricks
    with patch.object(stride_tricks, "sliding_window_view", wraps=real) as spy:
        np.testing.assert_array_equal(rolling_max(np.arange(5), 2), [1, 2, 3, 4])
    spy.assert_called()
