return pd.json_normalize(orders, record_path="items", meta=["id", ["customer", "name"]])
