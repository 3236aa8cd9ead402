products: list[Product] = []
    bad_indexes: list[int] = []
    for index, record in enumerate(records):
        try:
            products.append(Product.model_validate(record))
        except ValidationError:
            bad_indexes.append(index)
    return products, bad_indexes
