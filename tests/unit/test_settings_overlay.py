"""The environment overlay merges into the client's pylsp settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from steerlsp.server.upstream import environment


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_overlay_merges_into_the_clients_pylsp_settings():
    client = {
        "pylsp": {"plugins": {"pycodestyle": {"enabled": False}, "jedi": {"extra_paths": []}}}
    }
    merged = environment.with_overlay(client, environment.overlay("/v"))
    assert merged["pylsp"]["plugins"] == {
        "pycodestyle": {"enabled": False},
        "jedi": {"extra_paths": [], "environment": "/v"},
    }
    assert "environment" not in client["pylsp"]["plugins"]["jedi"]
