if not new_rows:
        return ledger[LEDGER_COLUMNS].reset_index(drop=True)
    extra = pd.DataFrame(new_rows, columns=LEDGER_COLUMNS)
    return pd.concat([ledger[LEDGER_COLUMNS], extra], ignore_index=True)
