"""Checkout: turn a web-shop cart into an invoice."""

from decimal import Decimal

from billing import Invoice, LineItem
from billing.tax import band_for


def invoice_for_cart(customer_ref: str, cart: list[dict[str, str]]) -> Invoice:
    """Build the invoice, in pounds sterling ("GBP"), for a customer's cart.

    Each cart row looks like {"sku": "BK-101", "qty": "2", "price": "12.99",
    "category": "books"}: quantity and unit price (in pounds) arrive as strings.
    Every row becomes one invoice line, in cart order, priced in pence and placed
    in the tax band that the billing package assigns to its category.
    """
    