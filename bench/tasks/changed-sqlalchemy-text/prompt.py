"""Low-level maintenance queries for the reporting database."""

import sqlalchemy as sa
from sqlalchemy.engine import Engine

ALLOWED_TABLES = {"orders", "refunds", "signups"}


def count_rows_since(engine: Engine, table: str, since: str) -> int:
    """Return how many rows of ``table`` have ``created_at >= since``.

    ``table`` must be one of ``ALLOWED_TABLES`` (raise ``ValueError``
    otherwise) and may then be formatted into the SQL; ``since`` is user
    input (an ISO date string) and must be sent as a bound parameter, never
    pasted into the SQL. Write the query as a literal SQL string and run it
    on a connection from ``engine``. Returns a Python int.
    """
    