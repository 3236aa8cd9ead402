"""Connecting to the configured server at load: what is an error, and what is not yet."""

from __future__ import annotations

import pytest

from steerlsp.server.completion.loading import load_configured
from steerlsp.server.config import Settings, merge


def remote(**model: object) -> Settings:
    settings, problems = merge(Settings(), {"model": {"backend": "openai", **model}})
    assert problems == []
    return settings


def quiet(message: str, percent: int) -> None:
    pass


def test_the_openai_backend_needs_an_endpoint():
    with pytest.raises(ValueError, match=r"model.endpoint is not set"):
        load_configured(remote(), quiet)


def test_a_key_variable_that_is_not_set_is_named(monkeypatch):
    monkeypatch.delenv("TEAM_LLM_KEY", raising=False)
    settings = remote(endpoint="http://127.0.0.1:9/v1", apiKeyEnv="TEAM_LLM_KEY")
    with pytest.raises(ValueError, match=r"apiKeyEnv names TEAM_LLM_KEY, which is not set"):
        load_configured(settings, quiet)


def test_a_server_not_up_yet_is_asked_again_later_not_a_failed_load(monkeypatch):
    monkeypatch.setenv("TEAM_LLM_KEY", "sk-team-7f3a")
    settings = remote(endpoint="http://127.0.0.1:9/v1", apiKeyEnv="TEAM_LLM_KEY")
    completer = load_configured(settings, quiet)
    status = completer.status()
    assert status["state"] == "unreachable" and "nothing listens" in status["error"]
    assert completer.endpoint.api_key == "sk-team-7f3a"
    assert "sk-team" not in str(status)
