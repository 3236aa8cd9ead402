return np.isin(customer_ids, np.asarray(blocked, dtype=customer_ids.dtype))
