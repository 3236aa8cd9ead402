net_income = 0
    for code, account in ledger.chart.items():
        if account.kind not in (AccountKind.CR_REVENUE, AccountKind.DR_EXPENSE):
            continue
        balance = ledger.balance_of(code)
        if balance == 0:
            continue
        if account.kind is AccountKind.CR_REVENUE:
            debit, credit, net_income = code, RETAINED_EARNINGS, net_income + balance
        else:
            debit, credit, net_income = RETAINED_EARNINGS, code, net_income - balance
        if balance < 0:
            debit, credit = credit, debit
        ledger.post_entry(
            debit=debit, credit=credit, amount_cents=abs(balance), memo=f"close {year}"
        )
    return net_income
