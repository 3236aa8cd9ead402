manifest = Manifest.from_text(delivery_note)
    rejected = wh.restock_from(manifest, strict=False)
    for line in rejected:
        log.warning("not stocked here: %s x %d (lot %s)", line.sku, line.units, line.lot)
    return sorted({line.sku for line in rejected})
