rate = min(int(years_as_customer) * RATE_PER_YEAR, MAX_RATE)
    if rate <= 0:
        return invoice
    return invoice.with_discount(percent_bp=round(rate * 100))
