"""The evaluation tasks: loading, their venvs, and grading a completion.

See ``bench/tasks/README.md`` for the task format. Venvs are built once per
distinct ``requirements.txt`` under ``bench/.venvs/<sha>`` from PyPI with the
exact pins, plus pytest and pylint for grading.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"
TASKS = BENCH / "tasks"
VENVS = BENCH / ".venvs"
GRADER_PINS = ("pytest==8.3.3", "pylint==3.3.1")
# pylint: no-member, undefined-variable, no-name-in-module, no-value-for-parameter,
# too-many-function-args, unexpected-keyword-arg: the API-existence errors.
STATIC_CODES = ("E1101", "E0602", "E0611", "E1120", "E1121", "E1123")
OUTCOMES = ("solved", "partial", "not_solved", "error")
# Every deprecation-like warning shown each time (not once per location), so a warning the
# environment filters by default (PendingDeprecationWarning) is still recorded.
WARNING_FLAGS = (
    "-W",
    "always::DeprecationWarning",
    "-W",
    "always::FutureWarning",
    "-W",
    "always::PendingDeprecationWarning",
)
WARNINGS_PLUGIN = BENCH / "warnings_plugin.py"
PLUGIN_MODULE = "_steerlsp_warnings"  # the plugin's name in the task's copy


@dataclass(frozen=True)
class Task:
    id: str
    kind: str
    library: str
    entry: str
    reason: str
    changelog: str
    path: Path

    @property
    def prompt(self) -> str:
        return (self.path / "prompt.py").read_text()

    @property
    def solution(self) -> str:
        return (self.path / "solution.py").read_text()

    @property
    def requirements(self) -> str:
        req = self.path / "requirements.txt"
        return req.read_text().strip() if req.exists() else ""


@dataclass
class Grade:
    outcome: str  # one of OUTCOMES
    detail: str = ""
    tests: dict[str, bool] = field(default_factory=dict)
    # The deprecated APIs the candidate module ran (one line per distinct warning).
    deprecated: list[str] = field(default_factory=list)


def load_tasks(root: Path = TASKS) -> list[Task]:
    """Every task directory under ``root``, sorted by id."""
    tasks = []
    for meta in sorted(root.glob("*/task.toml")):
        data = tomllib.loads(meta.read_text())
        tasks.append(
            Task(
                data["id"],
                data["kind"],
                data["library"],
                data["entry"],
                data.get("reason", ""),
                data.get("changelog", ""),
                meta.parent,
            )
        )
    return tasks


def venv_for(requirements: str, root: Path = VENVS) -> Path:
    """The python of a venv with exactly these pins (built on first use)."""
    key = hashlib.sha256(f"{sys.version_info[:2]}\n{requirements}".encode()).hexdigest()[:16]
    venv = root / key
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pins = [line for line in requirements.splitlines() if line.strip()]
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *GRADER_PINS,
            *pins,
        ],
        check=True,
    )
    (venv / ".complete").write_text(requirements)
    return python


def graded_pytest(python: str | Path, *extra: str) -> list[str]:
    """The command that runs a task's tests with the warnings plugin (in the task's copy)."""
    return [
        str(python),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        PLUGIN_MODULE,
        *WARNING_FLAGS,
        *extra,
        "test_task.py",
    ]


def grade(task: Task, completion: str, python: Path, timeout: float = 120) -> Grade:
    """Run the task's tests on ``prompt.py + completion`` in a copy of the task."""
    candidate = task.prompt + completion
    try:
        ast.parse(candidate)
    except SyntaxError as exc:
        return Grade("error", f"syntax error: {exc.msg} (line {exc.lineno})")
    with tempfile.TemporaryDirectory(prefix=f"{task.id}-") as tmp:
        work = Path(tmp)
        shutil.copytree(task.path, work, dirs_exist_ok=True)
        (work / "candidate.py").write_text(candidate)
        shutil.copyfile(WARNINGS_PLUGIN, work / f"{PLUGIN_MODULE}.py")
        report, warned = work / "report.xml", work / "warnings.json"
        try:
            subprocess.run(
                graded_pytest(python, f"--junitxml={report}"),
                cwd=work,
                env={**os.environ, "STEERLSP_WARNINGS": str(warned)},
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Grade("error", f"tests timed out after {timeout:.0f}s")
        if not report.exists():
            return Grade("error", "the tests did not run")
        graded = outcome_of(_results(report))
        graded.deprecated = deprecated_uses(_warnings(warned), work / "candidate.py")
        return graded


def _warnings(path: Path) -> list[dict[str, Any]]:
    """The plugin's records; none when pytest died before writing them."""
    try:
        records = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return records if isinstance(records, list) else []


def is_deprecation(record: dict[str, Any]) -> bool:
    """A deprecation-like category: any class in its MRO named like ``*Deprecat*``
    (``DeprecationWarning``, pydantic's ``PydanticDeprecatedSince20``) or ``FutureWarning``."""
    names = [record.get("category", ""), *record.get("bases", [])]
    return any("Deprecat" in n or n == "FutureWarning" for n in names if isinstance(n, str))


def deprecated_uses(records: list[dict[str, Any]], candidate: Path) -> list[str]:
    """Distinct deprecation warnings the ``candidate`` module caused, by its line.

    A record counts when the warning names a line of ``candidate`` (a library warning
    with ``stacklevel=2`` pointing at its caller), or when it names the very function that
    warned (``stacklevel=1``, pydantic 2's ``BaseModel.dict()``) and a line of
    ``candidate`` called that function (``callers``, from the plugin's wrapped
    ``warnings.warn``). A library that deliberately names one of its own frames is
    warning about its own internals, and warnings from the tests are the tests'; neither
    counts. The same warning seen by both the wrapper and pytest is counted once.
    """
    target = _resolved(candidate)
    seen: dict[tuple[str, int], str] = {}  # (category, line) -> the first message
    for record in records:
        if not is_deprecation(record):
            continue
        sites = [[record.get("filename"), record.get("lineno")]]
        if record.get("stacklevel") == 1:
            sites += record.get("callers", [])[1:2]
        lines = [
            line
            for filename, line in (s for s in sites if isinstance(s, list) and len(s) == 2)
            if isinstance(filename, str) and _resolved(candidate.parent / filename) == target
        ]
        if lines:
            message = " ".join(str(record.get("message", "")).split())[:160]
            seen.setdefault((str(record.get("category")), lines[0]), message)
    return [f"{category} (line {line}): {message}" for (category, line), message in seen.items()]


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def outcome_of(tests: dict[str, bool]) -> Grade:
    """solved / partial (output passes, approach fails) / not solved / error."""
    if not tests:
        return Grade("error", "no test ran (import failed?)", tests)
    output = {n: ok for n, ok in tests.items() if n.startswith("test_output")}
    if all(tests.values()):
        return Grade("solved", "", tests)
    if output and all(output.values()):
        return Grade("partial", "approach test failed", tests)
    return Grade("not_solved", "output test failed", tests)


def _results(report: Path) -> dict[str, bool]:
    tests: dict[str, bool] = {}
    for case in ET.parse(report).iter("testcase"):
        failed = any(child.tag in ("failure", "error") for child in case)
        skipped = any(child.tag == "skipped" for child in case)
        if not skipped:
            tests[case.get("name", "?")] = not failed
    if not tests and any(ET.parse(report).iter("error")):
        return {}
    return tests


def static_errors(task: Task, completion: str, python: Path) -> list[str]:
    """pylint's API-existence errors on the completion's own lines."""
    first = task.prompt.count("\n") + 1
    with tempfile.TemporaryDirectory(prefix=f"{task.id}-lint-") as tmp:
        work = Path(tmp)
        shutil.copytree(task.path, work, dirs_exist_ok=True)
        (work / "candidate.py").write_text(task.prompt + completion)
        out = subprocess.run(
            [
                str(python),
                "-m",
                "pylint",
                "--disable=all",
                f"--enable={','.join(STATIC_CODES)}",
                "--output-format=parseable",
                "--score=n",
                "candidate.py",
            ],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        ).stdout
    errors = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and int(parts[1]) >= first:
            errors.append(parts[2].strip())
    return errors


def static_deprecations(task: Task, completion: str, python: Path) -> list[str]:
    """Deprecated APIs the completion's own lines name, whether or not they run.

    Jedi (on the task's venv) resolves every attribute and name on those lines;
    a definition counts when steerlsp's static reader (``models/deprecation/static.py``:
    PEP 702, warnings in the body, docstrings) finds it deprecated at its line.
    Nothing is imported or run. -> sorted ``module.name`` strings
    """
    import jedi

    from steerlsp.models.deprecation.static import DeprecationCache

    code = task.prompt + completion
    first = task.prompt.count("\n") + 1
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    environment = jedi.create_environment(str(python), safe=False)
    script = jedi.Script(code, path=task.path / "candidate.py", environment=environment)
    lines = code.split("\n")
    reader = DeprecationCache()
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute | ast.Name) or node.lineno < first:
            continue
        line, end = node.end_lineno or node.lineno, node.end_col_offset or 0
        column = len(lines[line - 1].encode()[:end].decode(errors="ignore")) - 1  # in the name
        try:
            definitions = script.goto(line, column, follow_imports=True)
        except Exception:  # Jedi's own failures: the name is not counted
            continue
        for definition in definitions:
            name = deprecated_definition(definition, reader)
            if name is not None:
                found.add(f"{definition.module_name}.{name}")
    return sorted(found)


def deprecated_definition(definition: Any, reader: Any) -> str | None:
    """The name of Jedi's ``definition`` if steerlsp's static reader (a
    ``DeprecationCache``) finds it deprecated at its line, else None."""
    path, at = definition.module_path, definition.line
    if path is None or at is None or not str(path).endswith((".py", ".pyi")):
        return None
    for deprecated in reader.definitions(path):
        if at - 1 in (deprecated.line, deprecated.first_line):
            return str(deprecated.name)
    return None
