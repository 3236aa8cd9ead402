import statistics
from unittest.mock import patch

import pytest
from candidate import pearson


def test_output_perfect():
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)
    assert pearson([1, 2, 3, 4], [8, 6, 4, 2]) == pytest.approx(-1.0)


def test_output_value():
    xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    ys = [2.0, 1.0, 4.0, 3.0, 7.0, 5.0]
    assert pearson(xs, ys) == pytest.approx(0.7917946548886297)


def test_output_errors():
    with pytest.raises(statistics.StatisticsError):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(statistics.StatisticsError):
        pearson([1], [1])
    with pytest.raises(statistics.StatisticsError):
        pearson([3, 3, 3], [1, 2, 3])


def test_approach_uses_statistics_correlation():
    with patch.object(statistics, "correlation", wraps=statistics.correlation) as spy:
        assert pearson([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    spy.assert_called()
