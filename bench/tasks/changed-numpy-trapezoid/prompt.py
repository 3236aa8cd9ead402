"""Energy accounting from smart-meter power samples."""

import numpy as np

JOULES_PER_KWH = 3_600_000.0


def energy_kwh(timestamps_s: np.ndarray, power_w: np.ndarray) -> float:
    """Total energy in kWh consumed between the first and last sample.

    ``power_w[i]`` is the power in watts measured at ``timestamps_s[i]``
    (seconds, strictly increasing, not evenly spaced). Integrate power over
    time with NumPy's trapezoidal-rule integration, using the timestamps as
    the sample points, and convert joules to kWh. Returns a Python float.
    """
    