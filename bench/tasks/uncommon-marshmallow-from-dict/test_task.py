import datetime as dt
from unittest.mock import patch

import marshmallow
import pytest
from candidate import load_row
from marshmallow import fields


def _columns():
    return {
        "sku": fields.String(required=True),
        "qty": fields.Integer(required=True),
        "shipped": fields.Date(load_default=None),
    }


def test_output_loads_and_converts():
    row = {"sku": "A1", "qty": "3", "shipped": "2024-05-01"}
    assert load_row(_columns(), row) == {"sku": "A1", "qty": 3, "shipped": dt.date(2024, 5, 1)}


def test_output_drops_unknown_and_applies_defaults():
    row = {"sku": "B2", "qty": "10", "note": "fragile"}
    assert load_row(_columns(), row) == {"sku": "B2", "qty": 10, "shipped": None}


def test_output_invalid_raises():
    with pytest.raises(marshmallow.ValidationError) as info:
        load_row(_columns(), {"sku": "C3", "qty": "many"})
    assert "qty" in info.value.messages
    with pytest.raises(marshmallow.ValidationError):
        load_row(_columns(), {"qty": "1"})


def test_approach_uses_schema_from_dict():
    with patch.object(marshmallow.Schema, "from_dict", wraps=marshmallow.Schema.from_dict) as spy:
        assert load_row({"n": fields.Integer()}, {"n": "1"}) == {"n": 1}
    spy.assert_called()
