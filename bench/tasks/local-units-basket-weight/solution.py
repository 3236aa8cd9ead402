total = 0.0
    unweighed = []
    for name, quantity, symbol in basket:
        try:
            total += convert_quantity(quantity, symbol, unit)
        except IncompatibleUnits:
            unweighed.append(name)
    return round(total, 2), unweighed
