"""Load product records from a supplier's JSON feed."""

from decimal import Decimal

from pydantic import BaseModel, ValidationError


class Product(BaseModel):
    sku: str
    name: str
    price: Decimal
    in_stock: bool = True


def parse_products(records: list[dict]) -> tuple[list[Product], list[int]]:
    """Validate each raw record (a dict decoded from JSON) into a ``Product``.

    Returns ``(products, bad_indexes)``: the records that validate, in their
    original order, and the indexes in ``records`` of those that fail
    validation. Invalid records are skipped, never raised.
    """
    