from unittest.mock import patch

from billing import Invoice, LineItem, TaxBand, tax
from candidate import invoice_for_cart

CART = [
    {"sku": "BK-101", "qty": "2", "price": "12.99", "category": "books"},
    {"sku": "TEA-7", "qty": "3", "price": "4.10", "category": "Food"},
    {"sku": "LAMP-2", "qty": "1", "price": "39.95", "category": "home"},
    {"sku": "TOY-9", "qty": "1", "price": "15.00", "category": "toys"},
]


def test_output_invoice_lines():
    invoice = invoice_for_cart("C-0042", CART)
    assert isinstance(invoice, Invoice)
    assert invoice.customer_ref == "C-0042"
    assert invoice.currency == "GBP"
    assert invoice.items == (
        LineItem("BK-101", 2, 1299, TaxBand.ZERO_RATED),
        LineItem("TEA-7", 3, 410, TaxBand.REDUCED_5),
        LineItem("LAMP-2", 1, 3995, TaxBand.STANDARD_20),
        LineItem("TOY-9", 1, 1500, TaxBand.STANDARD_20),
    )


def test_output_totals():
    invoice = invoice_for_cart("C-0042", CART)
    assert invoice.tax_minor() == 62 + 799 + 300
    assert invoice.gross_minor() == 2598 + 1230 + 3995 + 1500 + 1161


def test_approach_uses_constructor_and_tax_bands(monkeypatch):
    monkeypatch.setitem(tax.CATEGORY_BANDS, "toys", TaxBand.ZERO_RATED)
    with patch.object(Invoice, "from_lines", wraps=Invoice.from_lines) as spy:
        invoice = invoice_for_cart("C-0042", CART)
    spy.assert_called_once()
    assert invoice.items[3].band is TaxBand.ZERO_RATED
