"""Invoicing: line items, tax bands and invoices in minor currency units."""

from billing.invoice import Invoice
from billing.items import LineItem, TaxBand
from billing.tax import band_for

__all__ = ["Invoice", "LineItem", "TaxBand", "band_for"]
