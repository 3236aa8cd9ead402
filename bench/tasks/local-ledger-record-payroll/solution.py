seqs = []
    for slip in payslips:
        cents = int(Decimal(slip["gross"]) * 100)
        if cents == 0:
            continue
        line = ledger.post_entry(
            debit=WAGES,
            credit=PAYROLL_PAYABLE,
            amount_cents=cents,
            memo=f"payroll: {slip['employee']}",
        )
        seqs.append(line.seq)
    return seqs
