if table not in ALLOWED_TABLES:
        raise ValueError(f"unknown table: {table!r}")
    query = sa.text(f"SELECT COUNT(*) FROM {table} WHERE created_at >= :since")
    with engine.connect() as conn:
        return int(conn.execute(query, {"since": since}).scalar_one())
