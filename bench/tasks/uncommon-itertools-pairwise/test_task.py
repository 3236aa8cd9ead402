import itertools
from unittest.mock import patch

from candidate import trip_distances


def test_output_list():
    assert trip_distances([100.0, 112.5, 130.0, 130.0]) == [12.5, 17.5, 0.0]


def test_output_generator():
    readings = (float(x) for x in [5, 8, 20])
    assert trip_distances(readings) == [3.0, 12.0]


def test_output_short_inputs():
    assert trip_distances([]) == []
    assert trip_distances([42.0]) == []
    assert trip_distances(iter([])) == []


def test_approach_uses_pairwise():
    with patch.object(itertools, "pairwise", wraps=itertools.pairwise) as spy:
        assert trip_distances([1.0, 3.0]) == [2.0]
    spy.assert_called()
