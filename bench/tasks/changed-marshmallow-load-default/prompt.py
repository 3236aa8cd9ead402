"""Query-string parsing for the search endpoint."""
from marshmallow import EXCLUDE, Schema, fields, validate


def build_search_schema(default_page_size: int) -> Schema:
    """Return a Schema *instance* that loads search query parameters:

    - ``q``: string, required
    - ``page``: int >= 1; when absent from the input it loads as 1
    - ``page_size``: int from 1 to 100; when absent it loads as
      ``default_page_size``
    - ``sort``: ``"relevance"`` or ``"date"``; when absent it loads as
      ``"relevance"``

    Unknown parameters are silently dropped.
    """
    