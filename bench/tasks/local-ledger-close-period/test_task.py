from unittest.mock import patch

from candidate import close_period
from ledger import Ledger

TOUCHED = ["4000", "4500", "6100", "6200", "7350"]


def make_ledger() -> Ledger:
    ledger = Ledger()
    ledger.post_entry(debit="1000", credit="4000", amount_cents=900000, memo="sales")
    ledger.post_entry(debit="1200", credit="4500", amount_cents=150000, memo="consulting")
    ledger.post_entry(debit="4500", credit="1200", amount_cents=20000, memo="credit note")
    ledger.post_entry(debit="6100", credit="2100", amount_cents=400000, memo="wages")
    ledger.post_entry(debit="6200", credit="1000", amount_cents=120000, memo="rent")
    ledger.post_entry(debit="1000", credit="7350", amount_cents=3000, memo="saas refund")
    return ledger


def test_output_net_income_and_zero_balances():
    ledger = make_ledger()
    assert close_period(ledger, 2024) == 900000 + 130000 - 400000 - 120000 + 3000
    for code in TOUCHED:
        assert ledger.balance_of(code) == 0, code
    assert ledger.balance_of("3900") == 513000
    assert ledger.balance_of("1000") == 783000


def test_output_closing_entries():
    ledger = make_ledger()
    close_period(ledger, 2024)
    closing = [line for line in ledger.journal if line.memo == "close 2024"]
    assert [(line.debit, line.credit, line.amount_cents) for line in closing] == [
        ("4000", "3900", 900000),
        ("4500", "3900", 130000),
        ("3900", "6100", 400000),
        ("3900", "6200", 120000),
        ("7350", "3900", 3000),
    ]
    assert close_period(ledger, 2024) == 0


def test_approach_posts_through_ledger():
    ledger = make_ledger()
    original = Ledger.post_entry
    with patch.object(Ledger, "post_entry", autospec=True, side_effect=original) as spy:
        close_period(ledger, 2025)
    assert spy.call_count == 5
    assert all(call.kwargs.get("memo") == "close 2025" for call in spy.call_args_list)
    assert len(ledger.journal) == 11
