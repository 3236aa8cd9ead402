"""The shipped Helix configuration (editor-configs/helix/languages.toml) parses, and
what Helix would send steerlsp from it is what steerlsp expects. Helix itself
cannot be installed here (no release on the package registries)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from steerlsp.server import config

LANGUAGES = Path(__file__).resolve().parents[2] / "editor-configs" / "helix" / "languages.toml"


def _languages() -> dict:
    return tomllib.loads(LANGUAGES.read_text())


def test_steerlsp_is_the_only_python_server():
    toml = _languages()
    server = toml["language-server"]["steerlsp"]
    assert server["command"] == "steerlsp"
    python = [language for language in toml["language"] if language["name"] == "python"]
    assert len(python) == 1
    assert python[0]["language-servers"] == ["steerlsp"]


def test_config_is_valid_steerlsp_settings_with_pylsp_beside():
    """Helix sends `config` as initializationOptions and as didChangeConfiguration
    settings: steerlsp must find its own table in it and accept every key."""
    sent = _languages()["language-server"]["steerlsp"]["config"]
    assert set(sent) == {"steerlsp", "pylsp"}
    own = config.section(sent)
    assert own is sent["steerlsp"]
    assert config.section({"settings": sent}) is sent["steerlsp"]
    settings, problems = config.merge(config.Settings(), own)
    assert problems == []
    assert settings.completion.fallback is True
    assert settings.python.trust_workspace is False
    assert sent["pylsp"]["plugins"]["pycodestyle"]["enabled"] is True
