"""Packaging claims that CI checks: the Python floor, and what the package installs."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _floor() -> tuple[int, int]:
    spec = PYPROJECT["project"]["requires-python"]
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)", spec)
    assert match, f"requires-python should be a plain floor, got {spec!r}"
    return int(match[1]), int(match[2])


def _sources() -> list[Path]:
    folders = ["steerlsp", "server", "models", "prompts", "bench"]
    return [
        path
        for folder in folders
        for path in (REPO / folder).rglob("*.py")
        if ".venvs" not in path.parts and "tasks" not in path.parts
    ]


def test_stdlib_modules_used_exist_at_the_claimed_floor() -> None:
    """tomllib is 3.11+: importing it unguarded means the floor must say 3.11."""
    floor = _floor()
    for path in _sources():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if "tomllib" in names:
                assert floor >= (3, 11), f"{path} imports tomllib but the floor is {floor}"


def test_ci_runs_the_lowest_claimed_python() -> None:
    """CI's interpreter is the floor itself, so a newer-only feature cannot slip in."""
    assert sys.version_info[:2] >= _floor()
    ci_script = (REPO / ".ci" / "run").read_text()
    major, minor = _floor()
    assert f"python{major}.{minor}" in ci_script


def test_tooling_targets_the_floor() -> None:
    major, minor = _floor()
    assert PYPROJECT["tool"]["ruff"]["target-version"] == f"py{major}{minor}"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == f"{major}.{minor}"
