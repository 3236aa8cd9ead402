"""Customer loyalty scheme."""

from billing import Invoice

RATE_PER_YEAR = 2.5  # percent
MAX_RATE = 10.0  # percent


def apply_loyalty(invoice: Invoice, years_as_customer: float) -> Invoice:
    """Return the invoice the customer pays after their loyalty discount.

    Customers get 2.5% off for each full year they have been with us, capped at
    10%. The discount applies to every line of the invoice. The original invoice
    must not be changed; with no discount due, return the original invoice itself.
    """
    