"""Validation of CSV rows whose columns are configured at runtime."""

import marshmallow
from marshmallow import fields


def load_row(columns: dict[str, fields.Field], row: dict[str, str]) -> dict:
    """Validate and deserialize ``row`` with a schema whose fields are given
    by ``columns`` (column name -> marshmallow field instance), and return
    the loaded dict.

    Keys of ``row`` that are not in ``columns`` are dropped silently; invalid
    values raise ``marshmallow.ValidationError``.
    """
    