import warnings
from decimal import Decimal

from candidate import Product, parse_products

RECORDS = [
    {"sku": "A-1", "name": "Widget", "price": "9.99"},
    {"sku": "A-2", "name": "Gadget", "price": "oops"},
    {"sku": "A-3", "name": "Doohickey", "price": 5, "in_stock": False},
    {"name": "No sku", "price": "1.00"},
]


def test_output_valid_and_invalid():
    products, bad = parse_products(RECORDS)
    assert bad == [1, 3]
    assert [p.sku for p in products] == ["A-1", "A-3"]
    assert all(isinstance(p, Product) for p in products)
    assert products[0].price == Decimal("9.99")
    assert products[0].in_stock is True
    assert products[1].in_stock is False


def test_output_empty():
    assert parse_products([]) == ([], [])


def test_approach_no_deprecated_pydantic_v1_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        products, bad = parse_products(RECORDS)
    assert len(products) == 2
