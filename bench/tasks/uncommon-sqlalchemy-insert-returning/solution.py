stmt = sa.insert(users).values(name=name).returning(users.c.id, users.c.created_at)
    user_id, created_at = conn.execute(stmt).one()
    return user_id, created_at
