from unittest.mock import patch

from billing import Invoice, LineItem, TaxBand
from candidate import apply_loyalty


def make_invoice() -> Invoice:
    return Invoice.from_lines(
        "C-7",
        [
            LineItem("BK-1", 4, 2500, TaxBand.ZERO_RATED),
            LineItem("TV-55", 1, 49900, TaxBand.STANDARD_20),
        ],
        currency="eur",
    )


def test_output_discounted_totals():
    invoice = make_invoice()
    assert apply_loyalty(invoice, 1.9).gross_minor() == 9750 + 48652 + 9730
    assert apply_loyalty(invoice, 3).gross_minor() == 9250 + 46157 + 9231
    assert apply_loyalty(invoice, 12).gross_minor() == 9000 + 44910 + 8982
    assert invoice.gross_minor() == 10000 + 49900 + 9980


def test_output_no_discount_returns_original():
    invoice = make_invoice()
    assert apply_loyalty(invoice, 0.5) is invoice
    assert invoice.discount_bp == 0


def test_approach_uses_invoice_discount():
    invoice = make_invoice()
    original = Invoice.with_discount
    with patch.object(Invoice, "with_discount", autospec=True, side_effect=original) as spy:
        result = apply_loyalty(invoice, 3)
    spy.assert_called_once_with(invoice, percent_bp=750)
    assert result is not invoice
    assert result.discount_bp == 750
    assert result.items == invoice.items
