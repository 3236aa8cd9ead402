from unittest.mock import patch

from candidate import record_payroll
from ledger import Ledger

SLIPS = [
    {"employee": "Ana Ruiz", "gross": "2150.75"},
    {"employee": "Bo Chen", "gross": "0.00"},
    {"employee": "Cleo Park", "gross": "1800.10"},
]


def test_output_balances_and_memos():
    ledger = Ledger()
    record_payroll(ledger, SLIPS)
    assert ledger.balance_of("2100") == 215075 + 180010
    assert ledger.balance_of("6100") == 215075 + 180010
    assert [line.memo for line in ledger.journal] == ["payroll: Ana Ruiz", "payroll: Cleo Park"]


def test_output_returns_sequence_numbers():
    ledger = Ledger()
    ledger.post_entry(debit="1000", credit="4000", amount_cents=5000, memo="cash sale")
    assert record_payroll(ledger, SLIPS) == [2, 3]
    assert record_payroll(ledger, []) == []


def test_approach_posts_through_ledger_with_keywords():
    original = Ledger.post_entry
    with patch.object(Ledger, "post_entry", autospec=True, side_effect=original) as spy:
        ledger = Ledger()
        record_payroll(ledger, SLIPS)
    assert spy.call_count == 2
    for call in spy.call_args_list:
        assert call.kwargs["debit"] == "6100"
        assert call.kwargs["credit"] == "2100"
    assert [line.amount_cents for line in ledger.journal] == [215075, 180010]
