import warnings
from unittest.mock import patch

from candidate import SignupSchema, validate_signup


def test_output_valid_form():
    data, errors = validate_signup(
        {"email": "ada@example.org", "username": "ada", "age": "30", "newsletter": "true"}
    )
    assert errors == {}
    assert data == {"email": "ada@example.org", "username": "ada", "age": 30, "newsletter": True}


def test_output_two_field_form():
    data, errors = validate_signup({"email": "bob@example.org", "username": "bobby"})
    assert (data, errors) == ({"email": "bob@example.org", "username": "bobby"}, {})


def test_output_invalid_form():
    data, errors = validate_signup({"email": "not-an-email", "age": 5})
    assert data == {}
    assert set(errors) == {"email", "username", "age"}
    assert all(isinstance(m, list) and m for m in errors.values())
    assert errors["username"] == ["Missing data for required field."]


def test_approach_deserializes_with_schema_load():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with patch.object(SignupSchema, "load", autospec=True, side_effect=SignupSchema.load) as spy:
            data, errors = validate_signup({"email": "c@example.org", "username": "cee", "age": "41"})
    spy.assert_called()
    assert data["age"] == 41 and errors == {}
