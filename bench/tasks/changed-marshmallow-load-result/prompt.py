"""Validation of sign-up form submissions."""
from marshmallow import Schema, ValidationError, fields, validate


class SignupSchema(Schema):
    email = fields.Email(required=True)
    username = fields.Str(required=True, validate=validate.Length(min=3, max=20))
    age = fields.Int(validate=validate.Range(min=13))
    newsletter = fields.Bool()


def validate_signup(form: dict) -> tuple[dict, dict]:
    """Deserialize ``form`` with ``SignupSchema``.

    Returns ``(data, errors)``. On success ``data`` is the deserialized
    result (e.g. ``"age": "30"`` becomes ``30``) and ``errors`` is ``{}``.
    On failure ``data`` is ``{}`` and ``errors`` maps each bad field name to
    its list of error messages. Never raises for invalid input.
    """
    