rows = []
    for code, account in ledger.chart.items():
        if account.kind is not AccountKind.DR_EXPENSE:
            continue
        balance = ledger.balance_of(code)
        if balance:
            rows.append((balance, account.title))
    rows.sort(key=lambda row: (-row[0], row[1]))
    return [(title, format_eur(balance)) for balance, title in rows]
