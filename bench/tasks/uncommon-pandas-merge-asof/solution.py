return pd.merge_asof(trades, quotes, on="time", by="symbol")
