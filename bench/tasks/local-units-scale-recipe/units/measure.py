"""Measures written the way recipes write them: "2 kg", "1 1/2 cup", "3/4 tsp"."""

from dataclasses import dataclass
from fractions import Fraction

from units import table


@dataclass(frozen=True)
class Measure:
    magnitude: float
    symbol: str


def parse_measure(text: str) -> Measure:
    """Parse "<number> <symbol>" where number may be "2", "0.5", "3/4" or "1 1/2"."""
    *numbers, symbol = text.split()
    if not numbers or symbol not in table.FACTORS:
        raise ValueError(f"not a measure: {text!r}")
    magnitude = sum(Fraction(number) for number in numbers)
    return Measure(magnitude=float(magnitude), symbol=symbol)
