from candidate import basket_weight
from units import Dim, table

BASKET = [
    ("flour", 1.5, "kg"),
    ("butter", 250, "g"),
    ("olive oil", 0.75, "l"),
    ("coffee", 1, "lb"),
    ("saffron", 500, "mg"),
    ("vanilla", 2, "tsp"),
    ("cheese", 8, "oz"),
]


def test_output_total_in_kg():
    assert basket_weight(BASKET) == (2.43, ["olive oil", "vanilla"])


def test_output_total_in_other_units():
    assert basket_weight(BASKET, "g") == (2430.89, ["olive oil", "vanilla"])
    assert basket_weight([("coffee", 2, "lb")], "oz") == (32.0, [])
    assert basket_weight([]) == (0.0, [])


def test_approach_uses_project_conversion_table(monkeypatch):
    # A basket weighed with the project's own table follows that table.
    monkeypatch.setitem(table.FACTORS, "lb", (Dim.MASS_G, 500.0))
    monkeypatch.setitem(table.FACTORS, "tsp", (Dim.MASS_G, 4.0))
    assert basket_weight(BASKET, "g") == (2485.3, ["olive oil"])
