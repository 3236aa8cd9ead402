"""The evaluation's results and grading rules: steering counts, rates, the report, the plots."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import task_results
from tests.helpers.evaltasks import (
    PLUGIN_MODULE,
    WARNINGS_PLUGIN,
    deprecated_uses,
    graded_pytest,
    is_deprecation,
)

RUNNER = Path(__file__).resolve().parents[2] / "bench" / "run_tasks.py"  # make bench-tasks runs it


def test_two_configurations_are_compared_in_one_report():
    def result(config, task, outcome):
        return task_results.Result(task, "repo-local", config, outcome)

    results = [
        result("a", "t1", "not_solved"),
        result("b", "t1", "solved"),
        result("a", "t2", "error"),
        result("b", "t2", "error"),
    ]
    report = task_results.report(results, ["a", "b"])
    assert "| repo-local | +50 | +0 | -50 | +0 |" in report
    assert "- t1: not_solved → solved" in report and "t2:" not in report.split("changed:")[1]


def test_configs_file_names_are_checked():
    assert set(task_results.load_configs(["baseline", "sampled"])) == {"baseline", "sampled"}
    try:
        task_results.load_configs(["nope"])
    except SystemExit as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("unknown configuration accepted")


def test_runner_module_is_where_make_bench_tasks_expects_it():
    assert (RUNNER.parent / "configs.toml").exists()


def test_percentiles_interpolate_between_ranks():
    values = [400.0, 100.0, 300.0, 200.0]
    assert task_results.percentile(values, 50) == 250.0
    assert task_results.percentile(values, 90) == pytest.approx(370.0)
    assert task_results.percentile([7.0], 90) == 7.0
    assert math.isnan(task_results.percentile([], 50))


def _explained(version, trace, steered=True):
    return {
        "uri": "file:///t.py",
        "version": version,
        "completion": "x",
        "steered": steered,
        "trace": trace,
    }


def test_explain_results_become_per_completion_counts():
    trace = {
        "queries": [{"outcome": "ok"}, {"outcome": "timeout"}, {"outcome": "error"}],
        "interrupts": [{}],
        "hints": [{}, {}],
        "walks": [{}],
        "changed": [{}, {}, {}],
        "waited_ms": 12.5,
    }
    counts = task_results.steering_counts(
        {**_explained(2, trace), "prompt_tokens": 812, "rounds": 1}, 2
    )
    assert counts == {
        "completions": 1,
        "steered": 1,
        "queries": 3,
        "timeouts": 1,
        "query_errors": 1,
        "interrupts": 1,
        "hints": 2,
        "walks": 1,
        "changed": 3,
        "waited_ms": 12.5,
        "prompt_tokens": 812,
        "rounds": 1,
    }
    unsteered = task_results.steering_counts(_explained(3, None, steered=False), 3)
    assert unsteered is not None and unsteered["queries"] == 0 and unsteered["steered"] == 0
    # Another version's completion, no completion yet, or no such method: nothing.
    assert task_results.steering_counts(_explained(1, trace), 2) is None
    assert task_results.steering_counts({"uri": "u", "completion": None, "trace": None}, 1) is None
    assert task_results.steering_counts(None, 1) is None
    total = task_results.add_counts(task_results.add_counts({}, counts), unsteered)
    assert total["completions"] == 2 and total["queries"] == 3 and total["changed"] == 3
    assert task_results.add_counts(total, None) is total


def test_deprecation_warnings_count_only_when_the_candidate_caused_them(tmp_path):
    candidate = tmp_path / "candidate.py"
    site = "/venv/lib/python3.11/site-packages"
    records = [
        # numpy's trapz warns with stacklevel=2: the candidate's own line.
        {
            "category": "DeprecationWarning",
            "bases": ["DeprecationWarning", "Warning"],
            "message": "`trapz` is deprecated.",
            "filename": str(candidate),
            "lineno": 16,
        },
        # pytest's record of the same warning: counted once.
        {
            "category": "DeprecationWarning",
            "bases": ["DeprecationWarning", "Warning"],
            "message": "`trapz` is deprecated. Use `trapezoid`.",
            "filename": str(candidate),
            "lineno": 16,
            "when": "runtest",
        },
        # pydantic names its own main.py; the wrapped warn() saw the candidate call it.
        {
            "category": "PydanticDeprecatedSince20",
            "bases": [
                "PydanticDeprecatedSince20",
                "PydanticDeprecationWarning",
                "DeprecationWarning",
                "Warning",
            ],
            "message": "The `dict` method is deprecated",
            "filename": f"{site}/pydantic/main.py",
            "lineno": 1114,
            "stacklevel": 1,
            "callers": [[f"{site}/pydantic/main.py", 1114], ["candidate.py", 30]],
        },
        # pandas' FutureWarning on the candidate's line (a relative name is the task's).
        {
            "category": "FutureWarning",
            "bases": ["FutureWarning", "Warning"],
            "message": "DataFrame.applymap has been deprecated",
            "filename": "candidate.py",
            "lineno": 21,
        },
        # Not deprecations, or not the candidate's doing:
        {
            "category": "UserWarning",
            "bases": ["UserWarning", "Warning"],
            "message": "m",
            "filename": str(candidate),
            "lineno": 3,
        },
        {
            "category": "DeprecationWarning",
            "bases": ["DeprecationWarning"],
            "message": "deep",
            "filename": f"{site}/lib/a.py",
            "lineno": 5,
            "stacklevel": 1,
            "callers": [[f"{site}/lib/a.py", 5], [f"{site}/lib/b.py", 9]],
        },
        # A library naming its own frame on purpose (stacklevel=2) that the candidate called.
        {
            "category": "DeprecationWarning",
            "bases": ["DeprecationWarning"],
            "message": "internal",
            "filename": f"{site}/lib/a.py",
            "lineno": 7,
            "stacklevel": 2,
            "callers": [[f"{site}/lib/a.py", 7], [str(candidate), 9]],
        },
        {
            "category": "DeprecationWarning",
            "bases": ["DeprecationWarning"],
            "message": "test's",
            "filename": str(tmp_path / "test_task.py"),
            "lineno": 8,
        },
    ]
    uses = deprecated_uses(records, candidate)
    assert uses == [
        "DeprecationWarning (line 16): `trapz` is deprecated.",
        "PydanticDeprecatedSince20 (line 30): The `dict` method is deprecated",
        "FutureWarning (line 21): DataFrame.applymap has been deprecated",
    ]
    assert not is_deprecation({"category": "RuntimeWarning", "bases": ["RuntimeWarning"]})


def test_the_warnings_plugin_records_what_the_grader_reads(tmp_path):
    """The real plugin under a real pytest: a deprecated call the candidate makes is found
    whether the library names the caller (stacklevel=2) or itself (pydantic 2's style), and
    also inside a test that turns warnings into errors; a library function that names
    itself on purpose (``internal``: its own deprecated call) is not the candidate's."""
    (tmp_path / "lib.py").write_text(
        "import warnings\n"
        "class OldWarning(DeprecationWarning):\n    pass\n"
        "def named_caller():\n    warnings.warn('old api', DeprecationWarning, stacklevel=2)\n"
        "def names_itself():\n    warnings.warn('older api', OldWarning)\n"
        "def internal():\n    named_caller()\n"
    )
    (tmp_path / "candidate.py").write_text(
        "import lib\n\ndef f():\n    lib.named_caller()\n    lib.names_itself()\n"
        "    lib.internal()\n    return 1\n"
    )
    (tmp_path / "test_task.py").write_text(
        "import warnings\nfrom candidate import f\n\ndef test_output():\n    assert f() == 1\n\n"
        "def test_approach():\n    with warnings.catch_warnings():\n"
        "        warnings.simplefilter('error')\n        f()\n"
    )
    shutil.copyfile(WARNINGS_PLUGIN, tmp_path / f"{PLUGIN_MODULE}.py")
    out = tmp_path / "warnings.json"
    subprocess.run(
        graded_pytest(sys.executable),
        cwd=tmp_path,
        env={**os.environ, "STEERLSP_WARNINGS": str(out)},
        capture_output=True,
        timeout=120,
        check=False,
    )
    uses = deprecated_uses(json.loads(out.read_text()), tmp_path / "candidate.py")
    assert uses == [
        "DeprecationWarning (line 4): old api",
        "OldWarning (line 5): older api",
    ]


def _result(config, task, outcome, latency, deprecated=(), steering=None, named=()):
    return task_results.Result(
        task,
        "changed-api",
        config,
        outcome,
        latency_ms=list(latency),
        deprecated=list(deprecated),
        steering=steering or {},
        named_deprecated=list(named),
    )


def test_summary_compares_latency_steering_and_deprecated_use_with_baseline():
    steering = {k: 0.0 for k in task_results.STEERING_KEYS}
    steered = {
        **steering,
        "completions": 2,
        "steered": 2,
        "queries": 6,
        "timeouts": 1,
        "interrupts": 1,
        "changed": 4,
    }
    results = [
        _result("baseline", "t1", "partial", [100, 200], ["DeprecationWarning (line 3): x"]),
        _result("baseline", "t2", "solved", [300], [], {**steering, "completions": 1}, ["m.old"]),
        _result("steered", "t1", "solved", [200, 400], [], steered),
        _result(
            "steered",
            "t2",
            "solved",
            [600],
            [],
            {**steered, "completions": 1, "queries": 0, "timeouts": 0},
        ),
    ]
    table = task_results.summary(results, ["baseline", "steered"])
    base, steer = table["baseline"], table["steered"]
    assert base["latency_median_ms"] == 200 and steer["latency_median_ms"] == 400
    assert steer["latency_median_ms_ratio"] == 2.0 and base["latency_median_ms_ratio"] == 1.0
    assert steer["latency_p90_ms_ratio"] == pytest.approx(560 / 280)
    assert steer["queries_per_completion"] == 2.0 and steer["timeouts_per_completion"] == 1 / 3
    assert steer["interrupts_per_completion"] == 2 / 3 and steer["changed_per_completion"] == 8 / 3
    assert base["queries_per_completion"] == 0.0
    assert base["deprecated"] == 50.0 and steer["deprecated"] == 0.0
    assert steer["deprecated_change"] == -1.0 and steer["solved"] == 100.0
    report = task_results.report(results, ["baseline", "steered"])
    assert "| steered | 3 | 400 | 560 | 2.00x | 2.00x |" in report
    assert "| steered | 3 | 2.00 | 0.33 | 0.67 | 2.67 |" in report
    assert base["named_deprecated"] == 50.0 and steer["named_deprecated_change"] == -1.0
    assert "| baseline | 2 | 50% | 0% | 100% | 50% | +0% | 50% | +0% |" in report
    assert "| steered | 2 | 100% | 0% | 100% | 0% | -100% | 0% | -100% |" in report


def test_tests_passed_weighs_each_task_the_same_and_an_unimported_module_passes_none():
    results = [
        task_results.Result("t1", "changed-api", "c", "partial", tests={"a": True, "b": False}),
        task_results.Result("t2", "changed-api", "c", "solved", tests={"a": True}),
        task_results.Result("t3", "changed-api", "c", "error", tests={}),
    ]
    assert task_results.tests_passed(results) == pytest.approx(100 * (0.5 + 1 + 0) / 3)
    assert math.isnan(task_results.tests_passed([]))


def test_latency_ratios_can_be_relative_to_another_configuration():
    results = [
        _result("chat-none", "t1", "solved", [100]),
        _result("chat-types", "t1", "solved", [150]),
    ]
    table = task_results.summary(results, ["chat-none", "chat-types"], base="chat-none")
    assert table["chat-types"]["latency_median_ms_ratio"] == 1.5
    report = task_results.report(results, ["chat-none", "chat-types"], base="chat-none")
    assert "median / chat-none" in report


def test_summary_without_baseline_or_explain_says_not_available(tmp_path):
    results = [_result("steered", "t1", "solved", [250])]
    table = task_results.summary(results, ["steered"])
    assert math.isnan(table["steered"]["latency_median_ms_ratio"])
    assert math.isnan(table["steered"]["queries_per_completion"])
    assert "| steered | 1 | 250 | 250 | n/a | n/a |" in task_results.report(results, ["steered"])
    assert (
        json.loads(json.dumps(task_results.json_safe(table)))["steered"]["deprecated_change"]
        is None
    )
    task_results.plot_summary(results, ["steered"], tmp_path / "latency.png")
    assert (tmp_path / "latency.png").stat().st_size > 5_000


def test_pylints_api_errors_are_counted_per_configuration():
    def result(config, *errors):
        return task_results.Result(
            "t", "changed-api", config, "partial", static_errors=list(errors)
        )

    results = [
        result("baseline", "[E1123(unexpected-keyword-arg), f] Unexpected keyword 'x'"),
        result(
            "baseline",
            "[E1101(no-member), f] Module has no 'y' member",
            "[E1120(no-value-for-parameter), f] No value",
        ),
        result("steered", "[E0602(undefined-variable), f] Undefined 'z'"),
    ]
    table = task_results.summary(results, ["baseline", "steered"])
    assert [table["baseline"][c] for c in task_results.API_CODES] == [1, 1, 1]
    assert [table["steered"][c] for c in task_results.API_CODES] == [0, 0, 0]
    report = "\n".join(task_results.summary_lines(table))
    assert "| E1123 | E1120 | E1101 |" in report
