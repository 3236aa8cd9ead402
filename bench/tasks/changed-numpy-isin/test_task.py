import warnings

import numpy as np

from candidate import blocked_mask


def test_output_basic():
    ids = np.array([5, 7, 5, 9, 11, 7])
    result = blocked_mask(ids, [7, 11, 11])
    assert result.dtype == bool
    assert result.shape == ids.shape
    assert result.tolist() == [False, True, False, False, True, True]


def test_output_empty_blocklist():
    ids = np.array([1, 2, 3])
    assert blocked_mask(ids, []).tolist() == [False, False, False]


def test_approach_no_deprecated_numpy_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = blocked_mask(np.array([1, 2, 3]), [2])
    assert result.tolist() == [False, True, False]
