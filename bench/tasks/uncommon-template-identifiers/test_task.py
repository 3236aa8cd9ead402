import string
from unittest.mock import patch

from candidate import missing_fields


def test_output_basic():
    text = "Hi $first ${last}, your order $order_id ships ${when}. Bye $first!"
    assert missing_fields(text, {"first": "Ada", "when": "today"}) == ["last", "order_id"]


def test_output_escaped_dollar():
    text = "Total: $$${amount} (was $$5) for $name"
    assert missing_fields(text, {}) == ["amount", "name"]


def test_output_nothing_missing():
    assert missing_fields("plain text", {}) == []
    assert missing_fields("$a$b", {"a": 1, "b": 2}) == []


def test_approach_uses_get_identifiers():
    original = string.Template.get_identifiers
    with patch.object(
        string.Template, "get_identifiers", autospec=True, side_effect=original
    ) as spy:
        assert missing_fields("$x and $y", {"x": 1}) == ["y"]
    spy.assert_called()
