from candidate import scale_recipe
from units import Dim, Measure, table

RECIPE = {
    "flour": "1 1/2 cup",
    "butter": "240 g",
    "sugar": "2/3 cup",
    "vanilla": "2 tsp",
    "salt": "0.5 tsp",
}


def test_output_scaled_in_recipe_units():
    result = scale_recipe(RECIPE, 4, 6)
    assert result == {
        "flour": Measure(magnitude=2.25, symbol="cup"),
        "butter": Measure(magnitude=360.0, symbol="g"),
        "sugar": Measure(magnitude=1.0, symbol="cup"),
        "vanilla": Measure(magnitude=3.0, symbol="tsp"),
        "salt": Measure(magnitude=0.75, symbol="tsp"),
    }
    assert list(result) == list(RECIPE)


def test_output_preferred_units():
    result = scale_recipe(RECIPE, 4, 2, prefer={"flour": "ml", "butter": "kg", "vanilla": "tbsp"})
    assert result["flour"] == Measure(magnitude=180.0, symbol="ml")
    assert result["butter"] == Measure(magnitude=0.12, symbol="kg")
    assert result["vanilla"] == Measure(magnitude=0.33, symbol="tbsp")
    assert result["sugar"] == Measure(magnitude=0.33, symbol="cup")


def test_approach_uses_project_parsing_and_table(monkeypatch):
    monkeypatch.setitem(table.FACTORS, "dash", (Dim.VOLUME_ML, 0.6))
    monkeypatch.setitem(table.FACTORS, "cup", (Dim.VOLUME_ML, 250.0))
    result = scale_recipe({"bitters": "5 dash", "milk": "1 cup"}, 1, 3, prefer={"milk": "ml"})
    assert result == {
        "bitters": Measure(magnitude=15.0, symbol="dash"),
        "milk": Measure(magnitude=750.0, symbol="ml"),
    }
