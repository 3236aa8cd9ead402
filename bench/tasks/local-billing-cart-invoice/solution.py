lines = [
        LineItem(
            sku=row["sku"],
            qty=int(row["qty"]),
            unit_price_minor=int(Decimal(row["price"]) * 100),
            band=band_for(row["category"]),
        )
        for row in cart
    ]
    return Invoice.from_lines(customer_ref, lines, currency="GBP")
