"""The demo from an installed wheel: the example project ships with it, and the model runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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
