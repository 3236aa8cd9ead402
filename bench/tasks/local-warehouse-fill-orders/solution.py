shipped: dict[str, int] = {}
    backordered: dict[str, int] = {}
    for order_id, sku, qty in orders:
        try:
            wh.pick(sku, qty)
            shipped[order_id] = qty
        except StockShortage as short:
            if short.on_hand:
                wh.pick(sku, short.on_hand)
            shipped[order_id] = short.on_hand
            backordered[order_id] = qty - short.on_hand
    return shipped, backordered
