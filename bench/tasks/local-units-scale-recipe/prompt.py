"""Recipe scaling for the meal-planning app."""

from units import Measure, convert_quantity, parse_measure


def scale_recipe(
    recipe: dict[str, str], serves: int, wanted: int, prefer: dict[str, str] | None = None
) -> dict[str, Measure]:
    """Scale a recipe written for `serves` people to `wanted` people.

    `recipe` maps ingredient names to amounts as written in the recipe, e.g.
    "1 1/2 cup" or "250 g". Each amount is scaled proportionally; if `prefer`
    names a unit symbol for an ingredient, the scaled amount is expressed in that
    unit instead of the recipe's. Amounts are rounded to 2 decimals and returned
    as the project's measure objects, keyed by ingredient, in recipe order.
    """
    