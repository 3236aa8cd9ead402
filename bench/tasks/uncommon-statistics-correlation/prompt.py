"""Quick stats for A/B experiment dashboards (no numpy on this box)."""

import statistics


def pearson(xs: list[float], ys: list[float]) -> float:
    """Return Pearson's correlation coefficient between ``xs`` and ``ys``.

    Raise ``statistics.StatisticsError`` if the inputs have different lengths,
    have fewer than two points, or if either input is constant.
    """
    