import warnings
from datetime import date

from candidate import Address, Profile, profile_to_payload


def _full():
    return Profile(
        user_id=7,
        displayName="Ada",
        birthday=date(1990, 12, 10),
        address=Address(city="London"),
        tags=["admin"],
    )


def test_output_full_profile():
    assert profile_to_payload(_full()) == {
        "user_id": 7,
        "displayName": "Ada",
        "birthday": date(1990, 12, 10),
        "address": {"city": "London"},
        "tags": ["admin"],
    }


def test_output_minimal_profile_drops_none():
    payload = profile_to_payload(Profile(user_id=1, displayName="Bob"))
    assert payload == {"user_id": 1, "displayName": "Bob", "tags": []}


def test_output_nested_is_plain_dict():
    payload = profile_to_payload(_full())
    assert type(payload) is dict
    assert type(payload["address"]) is dict


def test_approach_no_deprecated_pydantic_v1_api():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profile_to_payload(_full())
