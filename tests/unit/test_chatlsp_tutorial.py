"""aiTutorial: the facts and style of small projects in tmp dirs, read from files only."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from steerlsp.server.chatlsp.project_facts import (
    Project,
    dependency_names,
    editorconfig_for_python,
    inferred_indentation,
    read_small,
    requirement_name,
)
from steerlsp.server.chatlsp.tutorial import (
    installed_versions,
    python_version,
    site_packages,
    tutorial,
)

PYPROJECT = """\
[project]
name = "shop"
requires-python = ">=3.10"
dependencies = ["fakedep>=1.0", "missingdep", "Other_Dep[extra]==2.0 ; python_version>'3'"]

[tool.ruff]
line-length = 120

[tool.ruff.format]
quote-style = "single"

[tool.mypy]
strict = true
"""
SOURCE = "def f():\n  if True:\n    return 1\n"


def make_venv(where: Path, version_line: str = "version = 3.12.4") -> Path:
    """A venv-shaped directory: pyvenv.cfg and two dist-infos; nothing runnable."""
    where.mkdir(parents=True)
    (where / "pyvenv.cfg").write_text(f"home = /nowhere/bin\n{version_line}\n")
    (where / "bin").mkdir()
    (where / "bin" / "python").write_text("not an interpreter: running it would fail\n")
    site = where / "lib" / "python3.12" / "site-packages"
    for dirname, name, version in [
        ("fakedep-1.2.3.dist-info", "fakedep", "1.2.3"),
        ("other_dep-2.0.dist-info", "Other-Dep", "2.0"),
    ]:
        (site / dirname).mkdir(parents=True)
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nVersion: 9.9\n"
        (site / dirname / "METADATA").write_text(metadata)
    return where


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def test_tutorial_shows_versions_dependencies_and_style(project: Path, tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    text = tutorial(str(project), str(venv), SOURCE)
    assert "Language: Python 3.12.4 (project environment); requires-python >=3.10" in text
    assert "fakedep 1.2.3" in text
    assert "missingdep (not installed)" in text
    assert "Other_Dep 2.0" in text
    assert "Indentation: 2 spaces (inferred from this file)" in text
    assert "Line length: 120 (ruff)" in text
    assert "Quotes: single (ruff format)" in text
    assert "Formatter: ruff format" in text
    assert "Linters and checkers: ruff, mypy" in text
    assert 5 <= len(text.splitlines()) <= 20


def test_interpreter_inside_a_venv_is_read_not_run(project: Path, tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", "version_info = 3.13.1.final.0")
    interpreter = venv / "bin" / "python"  # a text file: running it would fail
    assert python_version(str(interpreter)) == "3.13.1"
    assert "fakedep 1.2.3" in tutorial(str(project), str(interpreter), "")


def test_explicit_interpreter_outside_a_venv_is_asked() -> None:
    base = getattr(sys, "_base_executable", sys.executable)
    if Path(base).resolve().parent.parent.joinpath("pyvenv.cfg").exists():
        pytest.skip("the base interpreter is itself in a venv")
    assert python_version(base) == sys.version.split()[0]
    assert any(p.endswith("lib-dynload") for p in site_packages(base))


def test_no_environment_is_steerlsps_own_interpreter(project: Path) -> None:
    text = tutorial(str(project), None, "")
    assert f"Language: Python {sys.version.split()[0]} (steerlsp's interpreter" in text
    assert "missingdep (not installed)" in text


def test_editorconfig_and_flake8_style(tmp_path: Path) -> None:
    (tmp_path / ".editorconfig").write_text(
        "root = true\n[*]\nindent_style = space\nindent_size = 2\n"
        "[*.{py,pyi}]\nindent_style = tab\n[*.md]\nmax_line_length = 10\n"
    )
    (tmp_path / "setup.cfg").write_text(
        "[options]\ninstall_requires =\n    zzq-attrs>=22\n    zzq_click\n"
        "[flake8]\nmax-line-length = 99\n"
    )
    (tmp_path / "requirements.txt").write_text(
        "# pinned\nzzq-requests==2.31.0  # http\n-r other.txt\n-e .\nhttps://x.org/a.whl\nzzq.attrs\n"
    )
    text = tutorial(str(tmp_path), None, "def f():\n    pass\n")
    assert "Indentation: tabs (.editorconfig)" in text
    assert "Line length: 99 (flake8 in setup.cfg)" in text
    assert (
        "zzq-requests (not installed), zzq.attrs (not installed), zzq_click (not installed)" in text
    )
    assert "Linters and checkers: flake8" in text
    assert "Quotes" not in text  # no formatter says anything about them


def test_poetry_and_black(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry.dependencies]\npython = "^3.9"\nhttpx = "^0.27"\n'
        "[tool.black]\nskip-string-normalization = true\n"
    )
    text = tutorial(str(tmp_path), None, "")
    assert "requires-python ^3.9" in text
    assert "httpx (not installed)" in text
    assert "Line length: 88 (black's default)" in text
    assert "Quotes: keep as written (black skip-string-normalization)" in text
    assert "Formatter: black" in text


def test_fifo_named_pyproject_is_skipped_without_hanging(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tmp_path / "pyproject.toml")
    os.mkfifo(tmp_path / ".editorconfig")
    result: list[str] = []
    worker = threading.Thread(target=lambda: result.append(tutorial(str(tmp_path), None, "")))
    worker.daemon = True
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "tutorial blocked on a FIFO"
    assert "Language: Python" in result[0]
    assert "Dependencies" not in result[0]


def test_huge_pyproject_is_skipped(tmp_path: Path) -> None:
    big = '[project]\ndependencies = ["hugedep"]\n' + "#" * (2 << 20) + "\n"
    (tmp_path / "pyproject.toml").write_text(big)
    assert read_small(tmp_path / "pyproject.toml") is None
    assert "hugedep" not in tutorial(str(tmp_path), None, "")


def test_read_small_refuses_directories_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").mkdir()
    assert read_small(tmp_path / "pyproject.toml") is None
    assert read_small(tmp_path / "absent") is None
    (tmp_path / "ok.txt").write_text("fine")
    assert read_small(tmp_path / "ok.txt") == "fine"


def test_requirement_names() -> None:
    assert requirement_name("Other_Dep[extra]==2.0 ; python_version>'3'") == "Other_Dep"
    assert requirement_name("pkg @ https://x.org/pkg.whl") == "pkg"
    for line in ("", "# c", "-r base.txt", "--index-url x", "./local", "git+https://x/y.git"):
        assert requirement_name(line) is None


def test_dependency_names_are_deduplicated_in_order(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "requirements-dev.txt").write_text("Fakedep\npytest\n")
    names = dependency_names(Project.read(str(tmp_path)))
    assert names == ["fakedep", "missingdep", "Other_Dep", "pytest"]


def test_installed_versions_reads_only_metadata(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    dirs = site_packages(str(venv))
    assert installed_versions(["FAKEDEP", "other.dep", "absent"], dirs) == {
        "fakedep": "1.2.3",
        "other-dep": "2.0",
    }


def test_editorconfig_sections_and_inferred_indentation() -> None:
    settings = editorconfig_for_python("[*.js]\nindent_size = 8\n[**.py]\nindent_size = 3\n")
    assert settings == {"indent_size": "3"}
    assert inferred_indentation("class A:\n\tdef f(self):\n\t\tpass\n") == (
        "tabs",
        "inferred from this file",
    )
    assert inferred_indentation("x = 1\n") == ("4 spaces", "PEP 8 default")
