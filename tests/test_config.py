"""Settings are validated once at the boundary; bad values never raise."""

from __future__ import annotations

import pytest

from steerlsp.prompts.fim import load_templates
from steerlsp.server.config import (
    CompletionSettings,
    ModelSettings,
    Settings,
    camel,
    merge,
    section,
    shown,
)


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
        ({"model": {"device": "gpu"}}, "steerlsp.model.device: 'gpu' is not a valid value"),
        ({"model": {"dtype": "int3"}}, "not one of auto, float32"),
        ({"model": {"name": ""}}, "non-empty string, got ''; keeping 'default'"),
        ({"model": "big"}, "must be an object, got 'big'; keeping the current steerlsp.model"),
        ({"completion": {"maxNewTokens": 0}}, "maxNewTokens: 0 is outside 1..1024; keeping 48"),
        ({"completion": {"maxNewTokens": 2.5}}, "whole number, got 2.5; keeping 48"),
        ({"completion": {"temperature": "hot"}}, "expected a number, got 'hot'; keeping 0.0"),
        ({"completion": {"fallback": "yes"}}, "true or false, got 'yes'; keeping true"),
        ({"completion": {"maxNewTokens": True}}, "expected a number, got true"),
        ({"bogus": 1}, "unknown setting steerlsp.bogus (ignored)"),
        ({"model": {"fimTemplate": "starcoder3"}}, "'starcoder3' is not one of auto, none, "),
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
    assert merge(Settings(), [1, 2])[1] == [
        "steerlsp settings must be an object, got [1, 2]; keeping the current settings"
    ]


def test_the_problem_names_the_value_actually_kept():
    current, _ = merge(Settings(), {"completion": {"maxNewTokens": 100}})
    settings, problems = merge(current, {"completion": {"maxNewTokens": 10**50}})
    assert settings == current
    assert problems == ["steerlsp.completion.maxNewTokens: 1e+50 is outside 1..1024; keeping 100"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (10**50, "1e+50"),
        (-(10**20), "-1e+20"),
        (1e300, "1e+300"),
        (10**400, "a number too large for a float"),
        (12345, "12345"),
        (0.25, "0.25"),
        (True, "true"),
        (None, "null"),
        ("x" * 100, "'" + "x" * 38 + "…"),
        ({"a": ["b" * 60]}, "{'a': ['" + "b" * 31 + "…"),
        ("tab\there\x00", "'tab\\there\\x00'"),
    ],
)
def test_values_are_quoted_short_and_readable(value, text):
    assert shown(value) == text
    assert len(shown(value)) <= 40


def test_huge_integers_are_rejected_without_overflow():
    settings, problems = merge(Settings(), {"completion": {"temperature": 10**400}})
    assert settings == Settings() and "outside 0.0..2.0" in problems[0]


def test_fim_template_names_come_from_the_packaged_templates():
    names = list(load_templates())
    assert "starcoder2" in names and "codegemma" in names
    for name in ["auto", "none", *names]:
        expected = Settings(model=ModelSettings(fim_template=name))
        assert merge(Settings(), {"model": {"fimTemplate": name}}) == (expected, [])
    _, problems = merge(Settings(), {"model": {"fimTemplate": "StarCoder2"}})
    assert problems == [
        "steerlsp.model.fimTemplate: 'StarCoder2' is not one of auto, none, "
        + ", ".join(names)
        + "; keeping 'auto'"
    ]
