report: dict[str, dict] = {}
    for name, series in df.items():
        report[name] = {
            "dtype": str(series.dtype),
            "nulls": int(series.isna().sum()),
            "unique": int(series.nunique()),
        }
    return report
