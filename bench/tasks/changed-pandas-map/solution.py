def fmt(value) -> str:
        if pd.isna(value):
            return ""
        return f"{value:,.{decimals}f}"

    return df.map(fmt)
