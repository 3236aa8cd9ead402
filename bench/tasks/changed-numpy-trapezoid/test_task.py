import math
import warnings

import numpy as np

from candidate import energy_kwh


def test_output_constant_power():
    t = np.array([0.0, 1800.0, 3600.0])
    p = np.array([1000.0, 1000.0, 1000.0])
    result = energy_kwh(t, p)
    assert isinstance(result, float)
    assert math.isclose(result, 1.0)


def test_output_uneven_spacing():
    t = np.array([0.0, 60.0, 3600.0, 7200.0])
    p = np.array([0.0, 600.0, 1200.0, 0.0])
    # 0.5*60*600 + 0.5*3540*(600+1200) + 0.5*3600*1200 joules
    expected = (18_000 + 3_186_000 + 2_160_000) / 3_600_000
    assert math.isclose(energy_kwh(t, p), expected)


def test_approach_no_deprecated_numpy_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        energy_kwh(np.array([0.0, 10.0]), np.array([5.0, 5.0]))
