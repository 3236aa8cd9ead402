"""pylsp's Jedi resolves imports in the project's environment (real pylsp, real venvs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.rawclient import RawClient, steerlsp_command

SOURCE = "import zzq_vendored\n\nzzq_vendored.special_thing()\n"


def make_venv(where: Path) -> Path:
    """A venv holding a package that steerlsp's own environment does not have."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next(where.glob("lib/python*/site-packages"))
    (site / "zzq_vendored").mkdir()
    (site / "zzq_vendored" / "__init__.py").write_text(
        'def special_thing():\n    """Only installed in the project venv."""\n'
    )
    return where


async def _hover(root: Path, options: dict, env: dict | None = None) -> str:
    command = steerlsp_command("--no-model")
    client = RawClient(await _spawn(command, env))
    try:
        await client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {},
                "initializationOptions": options,
            },
        )
        client.notify("initialized", {})
        uri = (root / "main.py").as_uri()
        client.open(uri, SOURCE)
        reply = await client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 16}},
        )
        result = reply.get("result") or {}
        return (result.get("contents") or {}).get("value", "") if isinstance(result, dict) else ""
    finally:
        await client.close()


async def _spawn(command, env):
    import asyncio

    return await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def test_without_an_environment_the_import_does_not_resolve(project):
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    assert "Only installed in the project venv" not in await _hover(project, {}, env)


async def test_the_setting_points_jedi_at_the_venv(project, tmp_path):
    venv = make_venv(tmp_path / "elsewhere")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    options = {"steerlsp": {"python": {"environment": str(venv)}}, "pylsp": {"plugins": {}}}
    assert "Only installed in the project venv" in await _hover(project, options, env)


async def test_virtual_env_is_detected(project, tmp_path):
    venv = make_venv(tmp_path / "active")
    env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    assert "Only installed in the project venv" in await _hover(project, {}, env)


async def test_a_workspace_venv_is_used_only_when_trusted(project):
    make_venv(project / ".venv")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    assert "Only installed" not in await _hover(project, {}, env)
    trusted = {"steerlsp": {"python": {"trustWorkspace": True}}}
    assert "Only installed in the project venv" in await _hover(project, trusted, env)
