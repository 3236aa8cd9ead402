"""Conversions between unit symbols of the same dimension."""

from units import table


class IncompatibleUnits(ValueError):
    def __init__(self, from_unit: str, to_unit: str) -> None:
        super().__init__(f"cannot convert {from_unit} to {to_unit}")
        self.from_unit = from_unit
        self.to_unit = to_unit


def convert_quantity(value: float, from_unit: str, to_unit: str) -> float:
    """Return `value` expressed in `to_unit`; raises IncompatibleUnits across dimensions."""
    try:
        from_dim, from_factor = table.FACTORS[from_unit]
        to_dim, to_factor = table.FACTORS[to_unit]
    except KeyError as exc:
        raise ValueError(f"unknown unit {exc.args[0]!r}") from None
    if from_dim is not to_dim:
        raise IncompatibleUnits(from_unit, to_unit)
    return value * from_factor / to_factor
