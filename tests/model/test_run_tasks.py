"""The evaluation runner end to end on the CI subset: real steerlsp, real model, real grading."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.evaltasks import (
    OUTCOMES,
)

# The first model start converts the GGUF and the first task builds its venv.
pytestmark = pytest.mark.timeout(900)
RUNNER = Path(__file__).resolve().parents[2] / "bench" / "run_tasks.py"  # make bench-tasks runs it


def test_ci_subset_produces_a_report_plot_and_results(tmp_path):
    command = [
        sys.executable,
        str(RUNNER),
        "--subset",
        "ci",
        "--rounds",
        "1",
        "--out",
        str(tmp_path),
    ]
    code = subprocess.run(command).returncode
    assert code == 0
    results = json.loads((tmp_path / "tasks_results.json").read_text())["results"]
    assert {r["kind"] for r in results} == {"changed-api", "uncommon-api", "repo-local"}
    assert all(r["outcome"] in OUTCOMES and r["latency_ms"] for r in results)
    report = (tmp_path / "tasks_report.md").read_text()
    assert "| baseline | all | 3 |" in report
    assert (tmp_path / "tasks_report.png").stat().st_size > 10_000
