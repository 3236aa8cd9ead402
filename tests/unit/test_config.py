"""Settings are validated once at the boundary; bad values never raise."""

from __future__ import annotations

import pytest

from steerlsp.models.options import SteeringOptions
from steerlsp.prompts.fim import load_templates
from steerlsp.server.config import (
    CompletionSettings,
    ModelSettings,
    Settings,
    SteeringSettings,
    camel,
    merge,
    runtime_deprecation,
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


def test_another_servers_settings_are_not_read_as_ours():
    """Eglot and Helix send one object to every server: pylsp's part is not steerlsp's."""
    assert section({"pylsp": {"plugins": {}}}) is None
    assert section({"settings": {"pylsp": {}}}) is None
    assert merge(Settings(), section({"pylsp": {}}))[1] == []
    mixed = {"pylsp": {}, "completion": {"maxNewTokens": 32}}
    assert merge(Settings(), section(mixed))[0].completion.max_new_tokens == 32


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
        ({"completion": {"alternatives": 0}}, "alternatives: 0 is outside 1..8; keeping 3"),
        ({"completion": {"alternatives": 9}}, "alternatives: 9 is outside 1..8; keeping 3"),
        (
            {"completion": {"alternativesBudgetMs": -1}},
            "alternativesBudgetMs: -1 is outside 0..10000; keeping 1500",
        ),
        ({"bogus": 1}, "unknown setting steerlsp.bogus (ignored)"),
        ({"model": {"fimTemplate": "starcoder3"}}, "'starcoder3' is not one of auto, none, "),
        ({"model": {"backend": "vllm"}}, "'vllm' is not one of inprocess, openai"),
        ({"model": {"endpoint": "gpu-box:8000"}}, "endpoint: 'gpu-box:8000' is not a valid value"),
        ({"model": {"endpoint": "http://u:pw@gpu/v1"}}, "is not a valid value"),
        ({"model": {"apiKeyEnv": "sk-123abc"}}, "apiKeyEnv: 'sk-123abc' is not a valid value"),
        ({"model": {"timeoutMs": 50}}, "timeoutMs: 50 is outside 200..120000; keeping 10000"),
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


# ---- steering ---------------------------------------------------------------

# The defaults are the decode loop's own (models/options.py), in milliseconds.
TIMEOUT_MS = round(SteeringOptions().query_timeout * 1000)
BUDGET_MS = round(SteeringOptions().budget * 1000)


def test_steering_defaults_are_the_decode_loops_own():
    assert Settings().steering.options() == SteeringOptions()
    defaults = SteeringOptions()
    assert Settings().steering.query_timeout_ms == round(defaults.query_timeout * 1000)
    assert Settings().steering.budget_ms == round(defaults.budget * 1000)


def test_steering_settings_reach_the_decode_loop_in_seconds():
    settings, problems = merge(
        Settings(),
        {
            "steering": {
                "mode": "mask",
                "follow": 3,
                "escapeMargin": 2,
                "followKind": False,
                "queryTimeoutMs": 400,
                "maxQueries": 0,
                "budgetMs": 2500,
                "rankDunder": -1.5,
                "rankExpectedType": 2,
            }
        },
    )
    assert problems == []
    options = settings.steering.options()
    assert options == SteeringOptions(
        mode="mask",
        follow=3,
        escape_margin=2.0,
        follow_kind=False,
        query_timeout=0.4,
        max_queries=0,
        budget=2.5,
        rank_dunder=-1.5,
        rank_expected_type=2.0,
    )
    assert isinstance(options.escape_margin, float)  # an integer in JSON is still a float


def test_the_runtime_deprecation_check_is_off_by_default_and_needs_a_trusted_workspace():
    assert Settings().steering.runtime_deprecation is False
    assert runtime_deprecation(Settings()) == (False, None)  # not asked for: nothing to say
    asked, problems = merge(Settings(), {"steering": {"runtimeDeprecation": True}})
    assert problems == [] and asked.steering.options().runtime_deprecation is True
    on, why = runtime_deprecation(asked)
    assert on is False and why is not None and "python.trustWorkspace" in why
    trusted, _ = merge(asked, {"python": {"trustWorkspace": True}})
    assert runtime_deprecation(trusted) == (True, None)
    reading_off, _ = merge(trusted, {"steering": {"deprecation": False}})
    assert runtime_deprecation(reading_off) == (False, None)


def test_steering_can_be_turned_off():
    settings, problems = merge(Settings(), {"steering": {"enabled": False}})
    assert problems == [] and settings.steering.options().enabled is False


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"mode": "always"}, "mode: 'always' is not one of auto, boost, mask; keeping 'auto'"),
        ({"follow": 0}, "follow: 0 is outside 1..10; keeping 1"),
        ({"delta": 0}, "delta: 0 is outside 0.1..50.0; keeping 7.0"),
        ({"queryTimeoutMs": 5}, f"queryTimeoutMs: 5 is outside 10..5000; keeping {TIMEOUT_MS}"),
        ({"queryTimeoutMs": 12.5}, f"whole number, got 12.5; keeping {TIMEOUT_MS}"),
        ({"maxQueries": 65}, "maxQueries: 65 is outside 0..64; keeping 6"),
        ({"maxInterrupts": -1}, "maxInterrupts: -1 is outside 0..16; keeping 2"),
        ({"budgetMs": 10**6}, f"budgetMs: 1000000 is outside 0..10000; keeping {BUDGET_MS}"),
        ({"rankDeprecated": 3}, "rankDeprecated: 3 is outside -100.0..0.0; keeping -10.0"),
        ({"hints": "on"}, "hints: expected true or false, got 'on'; keeping false"),
        ({"budget": 1}, "unknown setting steerlsp.steering.budget (ignored)"),
    ],
)
def test_invalid_steering_values_keep_the_defaults(raw, fragment):
    settings, problems = merge(Settings(), {"steering": raw})
    assert settings.steering == SteeringSettings()
    assert len(problems) == 1 and fragment in problems[0], problems


def test_alternatives_are_set_per_editor():
    settings, problems = merge(
        Settings(), {"completion": {"alternatives": 8, "alternativesBudgetMs": 0}}
    )
    assert not problems
    assert settings.completion.alternatives == 8
    assert settings.completion.alternatives_budget_ms == 0


def test_a_team_server_is_configured_by_its_url_and_the_name_of_its_key():
    settings, problems = merge(
        Settings(),
        {
            "model": {
                "backend": "openai",
                "endpoint": "https://gpu-box.internal:8000/v1",
                "apiKeyEnv": "TEAM_LLM_KEY",
                "remoteModel": "qwen2.5-coder-7b",
                "fallback": True,
            }
        },
    )
    assert problems == []
    model = settings.model
    assert (model.backend, model.endpoint, model.api_key_env) == (
        "openai",
        "https://gpu-box.internal:8000/v1",
        "TEAM_LLM_KEY",
    )
    assert model.remote_model == "qwen2.5-coder-7b" and model.fallback is True
    assert ModelSettings().backend == "inprocess" and ModelSettings().fallback is False
