"""Packaging claims that CI checks: the Python floor, and what the package installs."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
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


@pytest.mark.timeout(900)
def test_the_demo_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    """`steerlsp demo` needs no checkout: the wheel ships the example project
    (``steerlsp.example``), and no bare ``server`` or ``models`` module."""
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    run = {"capture_output": True, "text": True, "check": False}
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(wheels)],
        **run,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("steerlsp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {"steerlsp/example/project/shop/cart.py", "steerlsp/example/project/shop/report.py"}
    assert shipped <= set(names)
    assert not [n for n in names if n.split("/")[0] in ("server", "models", "prompts", "tests")]
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        **run,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    # Outside the checkout, the installed copy first on the path (dependencies from
    # this environment).
    env = {**os.environ, "PYTHONPATH": str(target)}
    demo = subprocess.run(
        [sys.executable, "-m", "steerlsp.demo"], cwd=tmp_path, env=env, timeout=600, **run
    )
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-2000:]
    assert re.search(r"\b(\d+)/\1 steps succeeded", demo.stdout), demo.stdout[-3000:]
    assert (
        str(target)
        in subprocess.run(
            [sys.executable, "-c", "import steerlsp.demo as d; print(d.example_project())"],
            cwd=tmp_path,
            env=env,
            **run,
        ).stdout
    )
