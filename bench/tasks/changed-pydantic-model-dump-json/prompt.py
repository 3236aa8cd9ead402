"""Write audit events to a JSON-lines log."""

from datetime import datetime
from typing import Any, Optional
from uuid import UUID

from pydantic import BaseModel


class AuditEvent(BaseModel):
    event_id: UUID
    actor: str
    action: str
    at: datetime
    details: dict[str, Any] = {}
    reason: Optional[str] = None


def to_log_line(event: AuditEvent) -> str:
    """Serialize ``event`` to one compact JSON line (no trailing newline).

    UUIDs and datetimes are rendered as JSON strings (ISO 8601 for the
    timestamp), and fields that were never set explicitly when the event
    was created are omitted.
    """
    