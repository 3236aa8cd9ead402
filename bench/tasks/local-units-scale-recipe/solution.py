prefer = prefer or {}
    scaled = {}
    for ingredient, text in recipe.items():
        measure = parse_measure(text)
        amount = measure.magnitude * wanted / serves
        symbol = prefer.get(ingredient, measure.symbol)
        if symbol != measure.symbol:
            amount = convert_quantity(amount, measure.symbol, symbol)
        scaled[ingredient] = Measure(magnitude=round(amount, 2), symbol=symbol)
    return scaled
