"""The VS Code extension (editor-configs/vscode): its settings mirror steerlsp's, and,
when npm is on PATH, it installs, compiles, passes its unit tests, packages to a
.vsix, and its LSP wiring works against the real steerlsp.

VS Code itself cannot be downloaded here (@vscode/test-electron fetches it at run
time), so the wiring test is a Node LSP client that sends what the extension sends
(its settings module builds initializationOptions and didChangeConfiguration).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from steerlsp.server import config
from tests.helpers.rawclient import steerlsp_command

EXTENSION = Path(__file__).resolve().parents[2] / "editor-configs" / "vscode"
PACKAGE = json.loads((EXTENSION / "package.json").read_text())
# The extension's own settings; every other `steerlsp.*` setting is the server's.
CLIENT_KEYS = {
    "serverPath",
    "pythonPath",
    "serverArgs",
    "useSelectedInterpreter",
    "pylsp",
    "trace.server",
}
NPM = shutil.which("npm")
NODE = shutil.which("node")


def _node_problem() -> str | None:
    """Why the npm tests cannot run here, or None."""
    if NPM is None or NODE is None:
        return "npm is not on PATH (install Node.js 20+)"
    version = subprocess.run([NODE, "--version"], capture_output=True, text=True, check=False)
    found = version.stdout.strip()
    major = found.lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        return f"Node.js 20+ is needed (vsce 3.9.2, vscode-languageclient 11), found {found}"
    return None


NODE_PROBLEM = _node_problem()
needs_npm = pytest.mark.skipif(NODE_PROBLEM is not None, reason=str(NODE_PROBLEM))


def _properties() -> dict[str, dict[str, Any]]:
    groups = PACKAGE["contributes"]["configuration"]
    return {key: spec for group in groups for key, spec in group["properties"].items()}


def _server_settings(node: Any = None, prefix: str = "") -> dict[str, tuple[Any, dict[str, Any]]]:
    """Every leaf of config.Settings as ``camel.case.key -> (default, metadata)``."""
    node = config.Settings() if node is None else node
    leaves: dict[str, tuple[Any, dict[str, Any]]] = {}
    for spec in dataclasses.fields(node):
        value = getattr(node, spec.name)
        key = prefix + config.camel(spec.name)
        if dataclasses.is_dataclass(value):
            leaves |= _server_settings(value, key + ".")
        else:
            leaves[key] = (value, dict(spec.metadata))
    return leaves


def test_settings_mirror_the_server_configuration():
    """Each server setting is contributed with the server's default, type and bounds,
    and nothing else is (steerlsp would pop up "unknown setting")."""
    contributed = {
        key.removeprefix("steerlsp."): spec
        for key, spec in _properties().items()
        if key.removeprefix("steerlsp.") not in CLIENT_KEYS
    }
    server = _server_settings()
    missing = sorted(set(server) - set(contributed))
    unknown = sorted(set(contributed) - set(server))
    sync = "run .venv/bin/python editor-configs/vscode/sync_settings.py"
    assert not missing, f"not in editor-configs/vscode/package.json: {missing}; {sync}"
    assert not unknown, f"not steerlsp settings: {unknown}"
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string"}
    for key, (default, meta) in server.items():
        spec = contributed[key]
        assert spec["default"] == default, f"{key}; {sync}"
        assert spec["type"] == kinds[type(default)], key
        assert spec.get("enum") == (list(meta["choices"]) if "choices" in meta else None), key
        assert spec.get("minimum") == meta.get("min"), key
        assert spec.get("maximum") == meta.get("max"), key
        assert spec.get("markdownDescription"), key
    for key in CLIENT_KEYS:
        assert f"steerlsp.{key}" in _properties(), key


def test_manifest_is_what_vsce_and_languageclient_need():
    assert PACKAGE["dependencies"] == {"vscode-languageclient": "11.0.0"}
    assert PACKAGE["devDependencies"]["@vscode/vsce"] == "3.9.2"
    # vscode-languageclient 11 requires ^1.91.0, and vsce refuses @types/vscode above engines.
    assert PACKAGE["engines"]["vscode"] == "^1.91.0"
    assert PACKAGE["devDependencies"]["@types/vscode"] == "1.91.0"
    assert PACKAGE["license"] and (EXTENSION / "LICENSE").exists()
    assert (EXTENSION / "package-lock.json").exists()
    commands = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    # The server's own commands (steerlsp.expectedType, ...) are registered by
    # vscode-languageclient from executeCommandProvider; the palette's must not clash.
    assert not commands & {f"steerlsp.{m}" for m in ("expectedType", "relevantTypes", "accepted")}
    restricted = PACKAGE["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert "steerlsp.python.trustWorkspace" in restricted
    assert "steerlsp.model.trustRemoteCode" in restricted


def _npm(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    assert NPM is not None
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    done = subprocess.run(
        [NPM, *args],
        cwd=EXTENSION,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, (
        f"npm {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def built() -> Path:
    """``npm ci`` (registry only; install scripts off: vsce-sign's would fetch a signing
    binary the packaging does not need) and ``npm run compile``."""
    _npm("ci", "--ignore-scripts", "--no-audit", timeout=900)
    _npm("run", "compile")
    return EXTENSION / "out"


@needs_npm
@pytest.mark.timeout(1200)
def test_unit_tests(built):
    done = _npm("test")
    assert "# fail 0" in done.stdout, done.stdout[-3000:]


@needs_npm
@pytest.mark.timeout(1200)
def test_packages_to_a_vsix(built):
    vsix = EXTENSION / "steerlsp.vsix"
    vsix.unlink(missing_ok=True)
    _npm("run", "package")
    names = set(zipfile.ZipFile(vsix).namelist())
    assert "extension/out/src/extension.js" in names
    assert "extension/node_modules/vscode-languageclient/lib/node/main.js" in names
    assert not any(name.startswith("extension/out/test/") for name in names)
    assert not any(name.startswith("extension/src/") for name in names)
    assert not any("/@vscode/vsce" in name or "/typescript/" in name for name in names)


@needs_npm
@pytest.mark.timeout(1200)
def test_wiring_against_steerlsp(built, shop, tmp_path):
    """Capabilities, ChatLSP, status and settings with the extension's
    initializationOptions; then the model loads and an inline completion arrives."""
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    assert NODE is not None
    done = subprocess.run(
        [
            NODE,
            str(built / "test" / "wiring" / "wiring.js"),
            "--command",
            json.dumps(steerlsp_command()),
            "--root",
            str(root),
            "--model",
            "--model-timeout",
            "600",
        ],
        capture_output=True,
        text=True,
        timeout=1100,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, done.stderr[-3000:]
    facts = json.loads(lines[-1])
    assert facts["ok"], facts.get("error", "") + "\n" + facts.get("stderr", "")
    assert facts["capabilities"]["inline"] is True
    assert facts["chatlsp"]["expectedType"] == "Price"
    assert facts["status"]["first"] in ("loading", "ready")
    assert facts["inline"].strip()
