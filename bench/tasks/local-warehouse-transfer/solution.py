dst.on_hand(sku)
    try:
        src.pick(sku, qty)
    except StockShortage:
        return 0
    line = ManifestLine(sku=sku, units=qty, lot=f"XFER-{src.name}")
    dst.restock_from(Manifest([line]), strict=True)
    return qty
