from datetime import datetime
from unittest.mock import patch

import pytest
import sqlalchemy as sa
from candidate import add_user, metadata, users


@pytest.fixture
def engine():
    engine = sa.create_engine("sqlite://")
    metadata.create_all(engine)
    yield engine
    engine.dispose()


def test_output_returns_generated_values(engine):
    with engine.begin() as conn:
        first_id, first_at = add_user(conn, "ada")
        second_id, second_at = add_user(conn, "grace")
        query = sa.select(users.c.id, users.c.name, users.c.created_at).order_by(users.c.id)
        rows = [tuple(row) for row in conn.execute(query)]
    assert (first_id, second_id) == (1, 2)
    assert isinstance(first_at, datetime)
    assert rows == [(1, "ada", first_at), (2, "grace", second_at)]


def test_approach_single_statement_with_returning(engine):
    statements = []

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    real = sa.Insert.returning
    with (
        patch.object(sa.Insert, "returning", autospec=True, side_effect=real) as spy,
        engine.begin() as conn,
    ):
        add_user(conn, "linus")
    spy.assert_called()
    assert len(statements) == 1, statements
    assert "RETURNING" in statements[0].upper()
