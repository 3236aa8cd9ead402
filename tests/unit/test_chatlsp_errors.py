"""errorReport: real pyflakes and a real pylint worker on small projects in tmp dirs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from steerlsp.server.chatlsp import Problem
from steerlsp.server.chatlsp.errors import (
    Checked,
    ErrorChecker,
    feedback,
    needs_repair,
    syntax_problems,
    with_completion,
    worker_paths,
)
from steerlsp.server.chatlsp.lint_worker import MODULE

STEERLSP_VENV = Path(sys.executable).resolve().parent.parent
INVENTORY = """\
from shop import pricing


class Inventory:
    def __init__(self) -> None:
        self.stock: dict[str, int] = {}

    def restock(self, sku: str, qty: int) -> None:
        self.stock[sku] = self.stock.get(sku, 0) + qty

    def count(self, sku: str) -> int:
        return self.stock.get(sku, 0)

    def value(self) -> float:
        return sum(pricing.price_of(sku) * qty for sku, qty in self.stock.items())
"""
PRICING = """\
from shop import inventory


def price_of(sku: str) -> float:
    return 1.0


def worth(inv: "inventory.Inventory") -> float:
    return inv.value()
"""
# The completion goes at line 8, column 4 (the blank line in main's body).
APP = "\n".join(
    [
        "import json",
        "",
        "from shop.inventory import Inventory",
        "from . import pricing",
        "",
        "",
        "def main() -> None:",
        "    inv = Inventory()",
        "    ",
        '    print(inv.count("a"), pricing.worth(inv), json.dumps({}))',
        "",
    ]
)
AT = (8, 4)
FAKELIB = """\
from pathlib import Path

Path(__file__).with_name("IMPORTED").write_text("fakelib was imported")


def greet(name: str) -> str:
    return "hello " + name
"""


def make_project(where: Path) -> Path:
    """A package whose two modules import each other, and the file being edited."""
    (where / "shop").mkdir(parents=True)
    (where / "shop" / "__init__.py").write_text("")
    (where / "shop" / "inventory.py").write_text(INVENTORY)
    (where / "shop" / "pricing.py").write_text(PRICING)
    (where / "shop" / "app.py").write_text(APP)
    return where


def make_venv(where: Path) -> Path:
    """A venv-shaped directory whose site-packages hold a library steerlsp lacks."""
    (where / "pyvenv.cfg").parent.mkdir(parents=True)
    (where / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    site = where / "lib" / "python3.11" / "site-packages" / "fakelib"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(FAKELIB)
    return where


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("errors") / "proj")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("env") / "venv")


@pytest.fixture(scope="module")
def checker(project: Path, venv: Path) -> Iterator[ErrorChecker]:
    checker = ErrorChecker(str(project), str(venv))
    yield checker
    checker.close()


def check(
    checker: ErrorChecker, project: Path, completion: str, source: str = APP
) -> list[Problem]:
    checked = with_completion(source, *AT, completion)
    return checker.check(checked, str(project / "shop" / "app.py"))


def codes(problems: list[Problem]) -> list[str]:
    return [p.code for p in problems]


# ---- the shadow copy ---------------------------------------------------------------


def test_with_completion_inserts_and_spans_the_completion_lines() -> None:
    checked = with_completion("a = 1\nb = \nc = 3\n", 1, 4, "f(\n    2)")
    assert checked.text == "a = 1\nb = f(\n    2)\nc = 3\n"
    assert checked.lines == (1, 2)


def test_with_completion_empty_and_trailing_break_and_clamping() -> None:
    assert with_completion("x\ny\n", 1, 0, "").lines == (1, 1)
    assert with_completion("x\ny\n", 0, 1, "z\n").lines == (0, 0)
    clamped = with_completion("x\r\ny", 9, 9, "!")
    assert clamped.text == "x\r\ny!"
    assert clamped.lines == (1, 1)
    assert with_completion("ab\r\n", 0, 9, "c").text == "abc\r\n"  # never between \r and \n


# ---- pylint through the worker ----------------------------------------------------


def test_missing_method_is_e1101_with_feedback(checker: ErrorChecker, project: Path) -> None:
    problems = check(checker, project, 'inv.restok("a", 5)')
    assert codes(problems) == ["E1101"]
    assert problems[0].line == 8 and problems[0].column == 4 and problems[0].source == "pylint"
    assert "'restok'" in problems[0].message
    checked = with_completion(APP, *AT, 'inv.restok("a", 5)')
    text = feedback(problems, checked)
    assert text.startswith("Line 9: `inv.restok(\"a\", 5)`\n  E1101 Instance of 'Inventory'")
    assert needs_repair(problems)


@pytest.mark.parametrize(
    ("completion", "code"),
    [
        ('inv.restock("a")', "E1120"),
        ('inv.restock("a", 1, 2)', "E1121"),
        ('inv.restock("a", qty=1, colour="red")', "E1123"),
        ("from shop.inventory import Inventroy", "E0611"),
        ('pricing.price_off("a")', "E1101"),  # a relative import resolved as at app.py
        ("json.dumpz({})", "E1101"),
        ("inv()", "E1102"),
    ],
)
def test_pylint_errors_on_the_completion(
    checker: ErrorChecker, project: Path, completion: str, code: str
) -> None:
    assert codes(check(checker, project, completion)) == [code]


TYPED = "\n".join(
    [
        "from typing import TypeVar",
        "",
        "from shop.inventory import Inventory",
        "",
        'T = TypeVar("T")',
        "",
        "",
        "def restock_all(inv: Inventory, skus: list[str], other: T, maybe: Inventory | None):",
        "    ",
        "",
    ]
)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ('inv.restok("a", 1)', ["E1101"]),
        ('inv.restock("a")', ["E1120"]),
        ('skus.appendd("a")', ["E1101"]),
        ("inv()", ["E1102"]),
        ('inv.restock("a", 1)', []),
        ('skus.append("a")', []),
        # Not guessed from the annotation: a TypeVar, a union, a narrowed parameter.
        ("other.anything()", []),
        ("maybe.anything()", []),
        ("if not isinstance(inv, list): inv.anything()", []),
    ],
)
def test_annotated_parameters_are_inferred_from_their_class(
    checker: ErrorChecker, project: Path, completion: str, expected: list[str]
) -> None:
    checked = with_completion(TYPED, 8, 4, completion)
    assert codes(checker.check(checked, str(project / "shop" / "typed.py"))) == expected


@pytest.mark.parametrize(
    "completion",
    ['inv.restock("a", 5)', 'pricing.price_of("a")', "json.dumps({})", "total = inv.value()"],
)
def test_correct_completions_have_no_problems(
    checker: ErrorChecker, project: Path, completion: str
) -> None:
    problems = check(checker, project, completion)
    assert problems == []
    assert not needs_repair(problems)
    assert feedback(problems, with_completion(APP, *AT, completion)) == ""


def test_undefined_name_is_reported_once(checker: ErrorChecker, project: Path) -> None:
    problems = check(checker, project, "print(undefined_thing)")
    assert codes(problems) == ["F821"]  # pylint's E0602 on the same name is dropped
    assert problems[0].source == "pyflakes"
    assert (problems[0].column, problems[0].end_column) == (10, 25)


def test_errors_on_other_lines_are_not_reported(checker: ErrorChecker, project: Path) -> None:
    broken = APP + "\ninv_missing.restock()\nInventory().bogus()\n"
    assert check(checker, project, 'inv.restock("a", 5)', broken) == []
    assert codes(check(checker, project, "inv.bogus()", broken)) == ["E1101"]


def test_installed_library_resolves_through_the_environment(
    checker: ErrorChecker, project: Path, venv: Path
) -> None:
    assert check(checker, project, 'import fakelib; fakelib.greet("x")') == []
    assert codes(check(checker, project, 'import fakelib; fakelib.gret("x")')) == ["E1101"]
    assert codes(check(checker, project, 'import fakelib; fakelib.greet("x", 1)')) == ["E1121"]
    site = next(venv.glob("lib/python*/site-packages"))
    assert not (site / "fakelib" / "IMPORTED").exists()  # read as source, never imported


def test_without_the_environment_the_library_is_missing(project: Path) -> None:
    checker = ErrorChecker(str(project), None)
    try:
        assert codes(check(checker, project, "import fakelib")) == ["E0401"]
        assert codes(check(checker, project, "json.dumpz({})")) == ["E1101"]
    finally:
        checker.close()


def test_steerlsp_venv_as_the_environment(project: Path) -> None:
    checker = ErrorChecker(str(project), str(STEERLSP_VENV))
    try:
        assert codes(check(checker, project, "json.dumpz({})")) == ["E1101"]
        assert check(checker, project, "json.dumps({})") == []
        assert codes(check(checker, project, "from pyflakes import api; api.chek")) == ["E1101"]
    finally:
        checker.close()


def test_unsaved_text_is_not_cached_and_saved_files_are_reread(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    checker = ErrorChecker(str(root), None)
    try:
        # An unsaved pricing.py without price_of must not outlive its own check.
        unsaved = PRICING.replace("def price_of(", "def renamed(")
        pricing = str(root / "shop" / "pricing.py")
        checker.check(with_completion(unsaved, 0, 0, ""), pricing)
        assert check(checker, root, 'pricing.price_of("a")') == []
        assert codes(check(checker, root, "inv.discount()")) == ["E1101"]
        # inventory.py saved with a new method: the next check sees it.
        inventory = root / "shop" / "inventory.py"
        inventory.write_text(INVENTORY + "\n    def discount(self) -> None:\n        pass\n")
        later = inventory.stat().st_mtime_ns + 10**9
        os.utime(inventory, ns=(later, later))
        assert check(checker, root, "inv.discount()") == []
    finally:
        checker.close()


# ---- syntax ------------------------------------------------------------------------


def test_syntax_error_in_the_completion(checker: ErrorChecker, project: Path) -> None:
    problems = check(checker, project, 'inv.restock("a", 5')
    assert codes(problems) == ["syntax-error"]
    assert problems[0].line == 8 and problems[0].source == "python"
    assert "never closed" in problems[0].message


def test_half_written_completion_at_the_end_of_the_file(checker: ErrorChecker) -> None:
    source = "def main() -> None:\n    items = [1]\n    "
    checked = with_completion(source, 2, 4, "for item in items:")
    problems = checker.check(checked, "/nonexistent/tail.py")
    assert codes(problems) == ["syntax-error"]
    assert problems[0].line == 2  # Python points past the end; it is the completion's error


def test_block_opener_without_a_body_mid_file(checker: ErrorChecker) -> None:
    source = "def main() -> None:\n    items = [1]\n    \n    print(items)\n"
    checked = with_completion(source, 2, 4, "for item in items:")
    problems = checker.check(checked, "/nonexistent/mid.py")
    assert [(p.code, p.line, p.column) for p in problems] == [("syntax-error", 2, 4)]
    assert "expected an indented block" in problems[0].message


def test_syntax_error_elsewhere_is_not_reported(checker: ErrorChecker, project: Path) -> None:
    broken = APP + "\ndef oops(:\n"
    assert check(checker, project, 'inv.restok("a", 5)', broken) == []


def test_compile_time_error_and_code_point_columns() -> None:
    problems, tree = syntax_problems('é = "éé"; return 1\n', "m.py")
    assert tree is not None
    assert [(p.code, p.line, p.column, p.end_column) for p in problems] == [
        ("syntax-error", 0, 10, 18)
    ]
    problems, tree = syntax_problems('x = "é" + (1,\n', "m.py")
    assert tree is None and problems[0].column == 10


# ---- the worker: recovery, timeout, isolation ---------------------------------------


def test_killed_worker_is_replaced(project: Path) -> None:
    checker = ErrorChecker(str(project), None)
    try:
        assert codes(check(checker, project, "inv.restok()")) == ["E1101"]
        pid = checker.worker_pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        assert codes(check(checker, project, "inv.restok()")) == ["E1101"]
        assert checker.worker_pid not in (None, pid)
    finally:
        checker.close()
    assert checker.worker_pid is None
    # After close: no worker, but syntax and undefined names are still checked.
    assert codes(check(checker, project, "inv.restok(nowhere)")) == ["F821"]


def test_timeout_drops_pylint_but_keeps_pyflakes(project: Path) -> None:
    checker = ErrorChecker(str(project), None, timeout=0.001)
    try:
        problems = check(checker, project, "inv.restok(nowhere)")
        assert codes(problems) == ["F821"]  # no E1101: pylint did not answer in time
        assert checker.worker_pid is None  # the late worker was killed
    finally:
        checker.close()


def make_hostile_workspace(root: Path, marker: Path) -> Path:
    """A project whose pylint configuration would load a plugin, run a hook and
    disable no-member: none of it may take effect."""
    make_project(root)
    plugin = f"from pathlib import Path\nPath({str(marker)!r}).write_text('loaded')\n"
    (root / "evil_plugin.py").write_text(plugin + "def register(linter):\n    pass\n")
    hook = f"open({str(marker)!r}, 'w').write('hook')"
    rc = f"[MAIN]\nload-plugins=evil_plugin\ninit-hook={hook}\ndisable=no-member\n"
    (root / "pylintrc").write_text(rc)
    (root / ".pylintrc").write_text(rc)
    (root / "pyproject.toml").write_text(
        '[tool.pylint.main]\nload-plugins = ["evil_plugin"]\n'
        "[tool.pylint.'messages control']\ndisable = ['no-member']\n"
    )
    return root


HOSTILE_FILES = [".pylintrc", "evil_plugin.py", "pylintrc", "pyproject.toml", "shop"]


def test_a_worker_that_cannot_start_is_not_restarted_on_every_check(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # exits at once
    checker = ErrorChecker(str(project), None)
    try:
        assert codes(check(checker, project, "inv.restok(nowhere)")) == ["F821"]
        started = []
        monkeypatch.setattr(
            "steerlsp.server.chatlsp.errors.LintWorker", lambda *a: started.append(a)
        )
        assert codes(check(checker, project, "inv.restok(nowhere)")) == ["F821"]
        assert started == []  # backing off, not starting another
    finally:
        checker.close()


def test_workspace_pylint_config_and_plugins_are_not_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "PLUGIN_LOADED"
    root = make_hostile_workspace(tmp_path / "proj", marker)
    checker = ErrorChecker(str(root), None)
    try:
        problems = check(checker, root, "inv.restok()")
    finally:
        checker.close()
    assert codes(problems) == ["E1101"]  # the project's disable=no-member was not read
    assert not marker.exists()
    assert sorted(p.name for p in root.iterdir()) == HOSTILE_FILES  # nothing written there


def test_worker_ignores_the_config_even_when_run_in_the_workspace(tmp_path: Path) -> None:
    """The explicit options alone protect: here the worker's cwd is the workspace."""
    marker = tmp_path / "PLUGIN_LOADED"
    root = make_hostile_workspace(tmp_path / "proj", marker)
    text = APP.replace("    \n", "    inv.restok()\n", 1)
    request = {"id": 7, "path": str(root / "shop" / "app.py"), "text": text}
    done = subprocess.run(
        [sys.executable, "-I", "-m", MODULE],
        input=json.dumps(request) + "\n",
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    ready, reply = (json.loads(line) for line in done.stdout.splitlines())
    assert ready == {"ready": True}
    assert reply["id"] == 7
    assert [(p["code"], p["line"], p["column"]) for p in reply["problems"]] == [("E1101", 8, 4)]
    assert not marker.exists()
    assert sorted(p.name for p in root.iterdir()) == HOSTILE_FILES


def test_import_guard_refuses_workspace_modules(tmp_path: Path) -> None:
    marker = tmp_path / "IMPORTED"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    code = textwrap.dedent(f"""
        import sys
        from steerlsp.server.chatlsp.lint_child import install_import_guard
        install_import_guard()
        sys.path.append({str(tmp_path)!r})
        import textwrap  # the worker's own environment still imports
        try:
            import evil
        except ImportError as error:
            print("refused:", error)
    """)
    done = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert "refused:" in done.stdout, done.stderr
    assert not marker.exists()


def test_worker_paths_put_the_workspace_and_environment_site_packages(
    project: Path, venv: Path
) -> None:
    paths = worker_paths(str(project), str(venv))
    assert paths[0] == str(project)
    assert str(next(venv.glob("lib/python*/site-packages"))) in paths
    assert worker_paths(str(project), None) == [str(project)]


def test_checks_reuse_one_warm_worker(checker: ErrorChecker, project: Path) -> None:
    """pylint is started once and kept: every later check goes to the same process (how
    fast that is, bench/chatlsp/errors_bench.py measures: 37 ms at p50)."""
    source = APP + "".join(
        f"\n\ndef helper_{i}(inv: Inventory) -> int:\n"
        f"    inv.restock('s{i}', {i})\n    return inv.count('s{i}')\n"
        for i in range(18)
    )
    assert len(source.splitlines()) >= 100
    check(checker, project, "inv.restok()", source)  # parse the libraries once
    pid = checker.worker_pid
    assert pid is not None
    for i in range(5):
        assert codes(check(checker, project, f"inv.restok({i})", source)) == ["E1101"]
    assert checker.worker_pid == pid


def test_feedback_groups_problems_by_line() -> None:
    checked = Checked("a = 1\nx = inv.restok(y)\n", (1, 1))
    problems = [
        Problem(1, 4, 1, 14, "E1101", "Instance of 'Inventory' has no 'restok' member", "pylint"),
        Problem(1, 15, 1, 16, "F821", "undefined name 'y'", "pyflakes"),
    ]
    assert feedback(problems, checked) == (
        "Line 2: `x = inv.restok(y)`\n"
        "  E1101 Instance of 'Inventory' has no 'restok' member\n"
        "  F821 undefined name 'y'"
    )


ROWS = (
    "from typing import NamedTuple\n"
    "\n"
    "\n"
    "class Row(NamedTuple):\n"
    "    sku: str\n"
    "    price: int\n"
    "\n"
    "\n"
    "def total(row: Row) -> int:\n"
    "    \n"
)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("return row.price_x", ["E1101"]),
        ("return row.price", []),
        ("return row._replace(price=1).count(row.sku)", []),  # a tuple's own members
    ],
)
def test_a_named_tuple_annotation_is_inferred_too(
    checker: ErrorChecker, project: Path, completion: str, expected: list[str]
) -> None:
    checked = with_completion(ROWS, 9, 4, completion)
    assert codes(checker.check(checked, str(project / "shop" / "rows.py"))) == expected
