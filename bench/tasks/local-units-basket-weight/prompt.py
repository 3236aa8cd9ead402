"""Shipping: estimate the weight of a customer's basket."""

from units import IncompatibleUnits, convert_quantity


def basket_weight(
    basket: list[tuple[str, float, str]], unit: str = "kg"
) -> tuple[float, list[str]]:
    """Add up the weight of a basket of (item name, quantity, unit symbol) entries.

    Quantities may be given in any mass unit the units package knows (g, kg, lb,
    oz, ...); the total is expressed in `unit` and rounded to 2 decimals. Items
    measured by volume cannot be weighed: leave them out of the total and return
    their names, in basket order, as the second element.
    """
    