from unittest.mock import patch

from candidate import expense_report
from ledger import Account, AccountKind, Ledger, default_chart


def make_ledger() -> Ledger:
    chart = default_chart()
    chart["5800"] = Account("5800", "Bank fees", AccountKind.DR_EXPENSE)
    chart["6900"] = Account("6900", "Interest received", AccountKind.CR_REVENUE)
    ledger = Ledger(chart)
    ledger.post_entry(debit="6200", credit="1000", amount_cents=120000, memo="rent")
    ledger.post_entry(debit="7350", credit="1000", amount_cents=4999, memo="saas")
    ledger.post_entry(debit="5800", credit="1000", amount_cents=4999, memo="fees")
    ledger.post_entry(debit="1000", credit="6900", amount_cents=700, memo="interest")
    ledger.post_entry(debit="6100", credit="2100", amount_cents=50000, memo="wages")
    ledger.post_entry(debit="2100", credit="6100", amount_cents=50000, memo="reversal")
    ledger.post_entry(debit="1000", credit="4000", amount_cents=999999, memo="sales")
    return ledger


def test_output_report_rows():
    assert expense_report(make_ledger()) == [
        ("Rent", "1200.00"),
        ("Bank fees", "49.99"),
        ("Software subscriptions", "49.99"),
    ]


def test_output_empty_ledger():
    assert expense_report(Ledger()) == []


def test_approach_uses_ledger_balances():
    ledger = make_ledger()
    balance_of, net_debits = Ledger.balance_of, Ledger.net_debits
    with (
        patch.object(Ledger, "balance_of", autospec=True, side_effect=balance_of) as spy1,
        patch.object(Ledger, "net_debits", autospec=True, side_effect=net_debits) as spy2,
    ):
        expense_report(ledger)
    calls = spy1.call_args_list + spy2.call_args_list
    asked = {call.args[1] if len(call.args) > 1 else call.kwargs["code"] for call in calls}
    assert {"6200", "7350", "5800"} <= asked
