"""Kitchen and shop units: parse, convert, compare."""

from units.convert import IncompatibleUnits, convert_quantity
from units.measure import Measure, parse_measure
from units.table import FACTORS, Dim

__all__ = [
    "FACTORS",
    "Dim",
    "IncompatibleUnits",
    "Measure",
    "convert_quantity",
    "parse_measure",
]
