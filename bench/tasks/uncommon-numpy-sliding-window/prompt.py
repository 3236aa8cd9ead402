"""Signal smoothing for sensor traces."""

import numpy as np


def rolling_max(values: np.ndarray, window: int) -> np.ndarray:
    """Return the maximum of every length-``window`` run of consecutive
    elements of the 1-D array ``values``.

    The result has ``len(values) - window + 1`` elements; element ``i`` is
    ``values[i:i + window].max()``. Build the windows as a read-only view
    (no copy of the data, no Python-level loop).
    """
    