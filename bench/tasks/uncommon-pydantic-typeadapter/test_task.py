from datetime import datetime, timezone
from unittest.mock import patch

import pydantic
import pytest
from candidate import Event, parse_events


def test_output_parses_events():
    payload = (
        '[{"actor": "ada", "action": "login", "at": "2024-05-01T09:30:00Z"},'
        ' {"actor": "bob", "action": "logout", "at": "2024-05-01T17:05:12+00:00"}]'
    )
    events = parse_events(payload)
    assert events == [
        Event("ada", "login", datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)),
        Event("bob", "logout", datetime(2024, 5, 1, 17, 5, 12, tzinfo=timezone.utc)),
    ]
    assert all(isinstance(e, Event) for e in events)


def test_output_empty_array():
    assert parse_events("[]") == []


@pytest.mark.parametrize(
    "payload",
    [
        '[{"actor": "ada", "action": "login"}]',
        '[{"actor": "ada", "action": "login", "at": "not a date"}]',
        '{"actor": "ada", "action": "login", "at": "2024-05-01T09:30:00Z"}',
        '[{"actor": "ada", ',
    ],
)
def test_output_invalid_raises_validation_error(payload):
    with pytest.raises(pydantic.ValidationError):
        parse_events(payload)


def test_approach_uses_type_adapter():
    with patch.object(pydantic, "TypeAdapter", wraps=pydantic.TypeAdapter) as spy:
        assert parse_events("[]") == []
    spy.assert_called()
