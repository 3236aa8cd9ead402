"""Known unit symbols: their dimension and their size in the base unit (g or ml)."""

from enum import Enum


class Dim(Enum):
    MASS_G = "g"
    VOLUME_ML = "ml"


FACTORS: dict[str, tuple[Dim, float]] = {
    "mg": (Dim.MASS_G, 0.001),
    "g": (Dim.MASS_G, 1.0),
    "kg": (Dim.MASS_G, 1000.0),
    "oz": (Dim.MASS_G, 28.349523125),
    "lb": (Dim.MASS_G, 453.59237),
    "ml": (Dim.VOLUME_ML, 1.0),
    "l": (Dim.VOLUME_ML, 1000.0),
    "tsp": (Dim.VOLUME_ML, 5.0),
    "tbsp": (Dim.VOLUME_ML, 15.0),
    "cup": (Dim.VOLUME_ML, 240.0),
}
