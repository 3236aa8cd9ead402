"""Event ingestion for the audit log."""

from dataclasses import dataclass
from datetime import datetime

import pydantic


@dataclass
class Event:
    actor: str
    action: str
    at: datetime


def parse_events(payload: str) -> list[Event]:
    """Parse ``payload``, a JSON array of event objects, into a list of
    ``Event`` instances with ``at`` converted to a ``datetime``.

    Raise ``pydantic.ValidationError`` if the JSON is malformed, is not an
    array, or any event is missing a field or has a bad timestamp.
    """
    