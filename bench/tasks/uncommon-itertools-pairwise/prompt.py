"""Odometer log helpers."""

import itertools
from collections.abc import Iterable


def trip_distances(readings: Iterable[float]) -> list[float]:
    """Return the distance driven between each consecutive pair of odometer
    readings (later reading minus earlier reading).

    ``readings`` may be any iterable, including a one-shot generator. Fewer
    than two readings give an empty list.
    """
    