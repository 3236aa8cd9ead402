"""The evaluation runner end to end on the CI subset: real steerlsp, real model, real grading."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench import run_tasks
from bench.evaltasks import OUTCOMES

# The first model start converts the GGUF and the first task builds its venv.
pytestmark = pytest.mark.timeout(900)


def test_ci_subset_produces_a_report_plot_and_results(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["run_tasks"])
    code = run_tasks.main(["--subset", "ci", "--rounds", "1", "--out", str(tmp_path)])
    assert code == 0
    results = json.loads((tmp_path / "tasks_results.json").read_text())["results"]
    assert {r["kind"] for r in results} == {"changed-api", "uncommon-api", "repo-local"}
    assert all(r["outcome"] in OUTCOMES and r["latency_ms"] for r in results)
    report = (tmp_path / "tasks_report.md").read_text()
    assert "| baseline | all | 3 |" in report
    assert (tmp_path / "tasks_report.png").stat().st_size > 10_000


def test_two_configurations_are_compared_in_one_report():
    def result(config, task, outcome):
        return run_tasks.Result(task, "repo-local", config, outcome)

    results = [
        result("a", "t1", "not_solved"),
        result("b", "t1", "solved"),
        result("a", "t2", "error"),
        result("b", "t2", "error"),
    ]
    report = run_tasks.report(results, ["a", "b"])
    assert "| repo-local | +50 | +0 | -50 | +0 |" in report
    assert "- t1: not_solved → solved" in report and "t2:" not in report.split("changed:")[1]


def test_configs_file_names_are_checked():
    assert set(run_tasks.load_configs(["baseline", "sampled"])) == {"baseline", "sampled"}
    try:
        run_tasks.load_configs(["nope"])
    except SystemExit as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("unknown configuration accepted")


def test_runner_module_is_where_make_bench_tasks_expects_it():
    assert (Path(run_tasks.__file__).parent / "configs.toml").exists()
