import warnings

import pytest
from marshmallow import Schema, ValidationError

from candidate import build_search_schema


def test_output_defaults_filled_in():
    schema = build_search_schema(25)
    assert isinstance(schema, Schema)
    assert schema.load({"q": "shoes"}) == {"q": "shoes", "page": 1, "page_size": 25, "sort": "relevance"}


def test_output_explicit_values_and_unknown_dropped():
    schema = build_search_schema(10)
    loaded = schema.load({"q": "hats", "page": "3", "page_size": "50", "sort": "date", "utm": "x"})
    assert loaded == {"q": "hats", "page": 3, "page_size": 50, "sort": "date"}


def test_output_validation():
    schema = build_search_schema(10)
    with pytest.raises(ValidationError) as info:
        schema.load({"page": 0, "page_size": 500, "sort": "price"})
    assert set(info.value.messages) == {"q", "page", "page_size", "sort"}


def test_output_default_is_per_schema():
    assert build_search_schema(5).load({"q": "a"})["page_size"] == 5
    assert build_search_schema(40).load({"q": "a"})["page_size"] == 40


def test_approach_no_deprecated_marshmallow_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema = build_search_schema(20)
        schema.load({"q": "x"})
