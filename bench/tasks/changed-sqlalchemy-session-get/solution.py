account = session.get(Account, account_id)
    if account is None:
        return None
    account.active = False
    session.flush()
    return account
