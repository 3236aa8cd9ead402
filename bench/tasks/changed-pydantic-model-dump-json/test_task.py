import json
import warnings
from datetime import datetime, timezone
from uuid import UUID

from candidate import AuditEvent, to_log_line


def _event(**extra):
    return AuditEvent(
        event_id=UUID(int=5),
        actor="bob",
        action="login",
        at=datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        **extra,
    )


def test_output_unset_fields_omitted():
    line = to_log_line(_event())
    assert isinstance(line, str)
    assert "\n" not in line
    assert json.loads(line) == {
        "event_id": "00000000-0000-0000-0000-000000000005",
        "actor": "bob",
        "action": "login",
        "at": "2024-01-02T03:04:05Z",
    }


def test_output_explicit_fields_kept():
    line = to_log_line(_event(details={"ip": "10.0.0.1"}, reason=None))
    assert json.loads(line)["details"] == {"ip": "10.0.0.1"}
    assert "reason" in json.loads(line)
    assert json.loads(line)["reason"] is None


def test_approach_no_deprecated_pydantic_v1_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        to_log_line(_event(reason="audit"))
