"""Month-end payroll: turn payslips into ledger entries."""

from decimal import Decimal

from ledger import Ledger

WAGES = "6100"
PAYROLL_PAYABLE = "2100"


def record_payroll(ledger: Ledger, payslips: list[dict[str, str]]) -> list[int]:
    """Record each payslip in `ledger` and return the new journal sequence numbers.

    A payslip looks like {"employee": "Ana Ruiz", "gross": "2150.75"}: the gross pay
    is a decimal string in euros. Each payslip becomes one journal entry, in the
    order given, that debits the wages account and credits payroll payable for the
    gross amount in whole cents, with the memo "payroll: <employee>".
    Payslips whose gross is zero are skipped.
    """
    