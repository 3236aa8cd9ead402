"""Every evaluation task is solvable: its reference solution passes its own tests.

Also checks the suite's shape (>= 40 tasks, >= 10 of each kind) and that a stub
body fails, so a task cannot be passed by doing nothing. The venvs are built
from PyPI with the tasks' exact pins on first use (bench/.venvs, git-ignored).
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.helpers.evaltasks import grade as grade_completion
from tests.helpers.evaltasks import load_tasks, outcome_of, static_deprecations, venv_for

# The first model start converts the GGUF and the first task builds its venv.
pytestmark = pytest.mark.timeout(900)

TASKS = load_tasks()


def test_the_suite_has_enough_tasks_of_every_kind():
    kinds = Counter(task.kind for task in TASKS)
    assert len(TASKS) >= 40, kinds
    assert all(kinds[kind] >= 10 for kind in ("changed-api", "uncommon-api", "repo-local")), kinds


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_reference_solution_passes_and_a_stub_does_not(task):
    python = venv_for(task.requirements)
    grade = grade_completion(task, task.solution, python)
    assert grade.outcome == "solved", (grade.detail, grade.tests)
    stub = grade_completion(task, "pass\n", python)
    assert stub.outcome in ("not_solved", "error"), stub.tests
    assert task.prompt.endswith("\n    "), "prompt.py must end where the body starts"


def test_grading_rules():
    assert outcome_of({"test_output_a": True, "test_approach_b": True}).outcome == "solved"
    assert outcome_of({"test_output_a": True, "test_approach_b": False}).outcome == "partial"
    assert outcome_of({"test_output_a": False, "test_approach_b": True}).outcome == "not_solved"
    assert outcome_of({}).outcome == "error"


def test_static_deprecations_name_what_a_completion_calls_without_running_it():
    """Jedi on the task's venv resolves the completion's names; pydantic's ``dict`` is
    deprecated at its definition, ``model_dump`` is not, and a name in the prompt
    (above the completion) does not count."""
    task = {t.id: t for t in load_tasks()}["changed-pydantic-model-dump"]
    python = venv_for(task.requirements)
    old = "return profile.dict(by_alias=True, exclude_none=True)\n"
    assert static_deprecations(task, old, python) == ["pydantic.main.dict"]
    new = "return profile.model_dump(by_alias=True, exclude_none=True)\n"
    assert static_deprecations(task, new, python) == []
    assert static_deprecations(task, "return profile.dict(\n", python) == []  # not Python
