"""Fraud screening helpers for the order pipeline."""

import numpy as np


def blocked_mask(customer_ids: np.ndarray, blocked: list[int]) -> np.ndarray:
    """Return a boolean array with the same shape as ``customer_ids`` (a 1-D
    array of integer customer ids, one per order) that is True exactly where
    the order's customer id appears in ``blocked``.

    ``blocked`` may be empty and may contain duplicates. The computation is
    vectorised with a NumPy set-membership routine.
    """
    