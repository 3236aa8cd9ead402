import warnings

import pytest
import sqlalchemy as sa

from candidate import count_rows_since


@pytest.fixture()
def engine():
    eng = sa.create_engine("sqlite://")
    with eng.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE orders (id INTEGER PRIMARY KEY, created_at TEXT)")
        conn.exec_driver_sql(
            "INSERT INTO orders (created_at) VALUES "
            "('2024-01-01'), ('2024-02-15'), ('2024-03-01'), ('2024-03-20')"
        )
        conn.exec_driver_sql("CREATE TABLE refunds (id INTEGER PRIMARY KEY, created_at TEXT)")
    yield eng
    eng.dispose()


def test_output_counts(engine):
    result = count_rows_since(engine, "orders", "2024-02-15")
    assert result == 3
    assert type(result) is int
    assert count_rows_since(engine, "orders", "2025-01-01") == 0
    assert count_rows_since(engine, "refunds", "2000-01-01") == 0


def test_output_rejects_unknown_table(engine):
    with pytest.raises(ValueError):
        count_rows_since(engine, "users; DROP TABLE orders", "2024-01-01")


def test_output_hostile_since_is_just_data(engine):
    # compared as data this sorts after every date; pasted into the SQL it
    # would turn the filter into "... OR '1'='1'" and count every row
    assert count_rows_since(engine, "orders", "9999' OR '1'='1") == 0


def test_approach_since_is_bound_parameter(engine):
    seen = []

    @sa.event.listens_for(engine, "before_cursor_execute")
    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, parameters))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        count_rows_since(engine, "orders", "2024-03-01")
    assert seen, "no SQL reached the database"
    for statement, parameters in seen:
        assert "2024-03-01" not in statement
    assert any("2024-03-01" in repr(parameters) for _, parameters in seen)
