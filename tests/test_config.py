"""Settings are validated once at the boundary; bad values never raise."""

from __future__ import annotations

import pytest

from steerlsp.server.config import CompletionSettings, Settings, camel, merge, section


def test_camel_case_keys():
    assert camel("max_new_tokens") == "maxNewTokens" and camel("name") == "name"


@pytest.mark.parametrize(
    "raw",
    [
        {"steerlsp": {"model": {"name": "x"}}},
        {"settings": {"steerlsp": {"model": {"name": "x"}}}},
        {"model": {"name": "x"}},
    ],
)
def test_section_finds_ours(raw):
    assert merge(Settings(), section(raw))[0].model.name == "x"


def test_valid_values_are_applied():
    settings, problems = merge(
        Settings(),
        {
            "model": {
                "name": "Qwen/Qwen2.5-Coder-1.5B",
                "device": "cuda:1",
                "dtype": "bfloat16",
                "allowDownloads": True,
            },
            "completion": {
                "maxNewTokens": 64,
                "temperature": 0.2,
                "debounceMs": 0,
                "fallback": False,
            },
        },
    )
    assert problems == []
    assert settings.model.device == "cuda:1" and settings.model.allow_downloads is True
    assert settings.completion == CompletionSettings(
        max_new_tokens=64, temperature=0.2, debounce_ms=0, fallback=False
    )


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"model": {"device": "gpu"}}, "steerlsp.model.device: 'gpu'"),
        ({"model": {"dtype": "int3"}}, "not one of"),
        ({"model": {"name": ""}}, "non-empty string"),
        ({"model": "big"}, "must be an object"),
        ({"completion": {"maxNewTokens": 0}}, "outside 1..1024"),
        ({"completion": {"maxNewTokens": 2.5}}, "whole number"),
        ({"completion": {"temperature": "hot"}}, "expected a number"),
        ({"completion": {"fallback": "yes"}}, "true or false"),
        ({"completion": {"maxNewTokens": True}}, "expected a number"),
        ({"bogus": 1}, "unknown setting steerlsp.bogus"),
    ],
)
def test_invalid_values_keep_the_previous_value_and_are_reported(raw, fragment):
    base = Settings()
    settings, problems = merge(base, raw)
    assert settings == base
    assert len(problems) == 1 and fragment in problems[0]


def test_one_bad_value_does_not_discard_the_good_ones():
    settings, problems = merge(Settings(), {"completion": {"maxNewTokens": -1, "debounceMs": 10}})
    assert settings.completion.debounce_ms == 10 and settings.completion.max_new_tokens == 48
    assert len(problems) == 1


@pytest.mark.parametrize("raw", [None, {}])
def test_nothing_changes_nothing(raw):
    assert merge(Settings(), raw) == (Settings(), [])


def test_not_an_object():
    assert merge(Settings(), [1, 2])[1] == ["steerlsp settings must be an object, got list"]
