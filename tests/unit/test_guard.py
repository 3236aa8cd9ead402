"""steerlsp.guard against the pinned Jedi, parso, pylsp and configparser.

Each read site the guard patches is driven for real on a FIFO (which would
block for good), ``/dev/zero`` (which would grow without bound) and
``/dev/stdin``, in a child process with a timeout, so that a regression fails
instead of hanging the suite.
"""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from steerlsp import guard
from steerlsp.server.upstream import isolation

GUARD = isolation.guard_path()


@pytest.fixture
def specials(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "stdin.py").symlink_to("/dev/stdin")
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "big.py").write_bytes(b"x = 1\n" * 2000)
    (tmp_path / "ok.py").write_text("x = 1\n")
    return {p.stem: p for p in tmp_path.iterdir()}


def _run(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with the guard loaded as children load it."""
    boot = guard.BOOTSTRAP_LOADER + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-I", "-c", boot, GUARD],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.PIPE,  # its own pipe: reading /dev/stdin would block, not see EOF
        check=False,
    )


def test_read_regular_reads_regular_files_only(specials):
    assert guard.read_regular(specials["ok"]) == b"x = 1\n"
    for name in ("fifo", "zero", "dir"):
        assert guard.read_regular(specials[name]) is None, name
    # pytest's stdin is /dev/null, which reads empty at once (a pipe is refused below).
    assert guard.read_regular(specials["stdin"]) in (None, b"")
    assert guard.read_regular(specials["big"], limit=100) is None
    assert guard.read_regular(specials["big"]) == b"x = 1\n" * 2000
    assert guard.read_regular(str(specials["ok"]) + "\0x") is None
    assert guard.read_regular(specials["ok"].parent / "missing.py") is None


def test_the_guarded_open_refuses_as_missing_and_lets_writes_pass(specials, tmp_path):
    opener = guard.guarded_open(limit=100)
    with pytest.raises(FileNotFoundError):
        opener(specials["fifo"])
    with pytest.raises(FileNotFoundError):
        opener(specials["zero"], "rb")
    with pytest.raises(FileNotFoundError):
        opener(specials["big"])  # over the limit
    with pytest.raises(IsADirectoryError):
        opener(specials["dir"])
    with opener(specials["ok"], encoding="utf-8") as f:
        assert f.read() == "x = 1\n"
    with opener(os.devnull) as f:  # reads empty at once: the one device allowed
        assert f.read() == ""
    with opener(tmp_path / "new.txt", "w") as f:
        f.write("written")
    assert (tmp_path / "new.txt").read_text() == "written"


@pytest.mark.parametrize("name", [*guard.ANALYSIS_MODULES, *guard.PYLSP_MODULES])
def test_every_patched_module_reads_with_the_builtin_open(name):
    """The patch replaces the builtin ``open`` in these modules' globals: each must still
    read with it in the pinned version, or the patch would guard nothing."""
    module = importlib.import_module(name)
    assert "open(" in inspect.getsource(module), name


@pytest.mark.parametrize("kind", ["fifo", "zero", "stdin"])
def test_parso_jedi_and_configparser_never_read_a_special_file(specials, tmp_path, kind):
    target = specials[kind]
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    (project / "buildout.cfg").write_text("[buildout]\n")
    (project / "bin" / "x").symlink_to(os.path.realpath(target) if kind != "fifo" else target)
    (project / "manage.py").symlink_to(target)
    (project / "main.py").write_text("import os\n")
    code = f"""
        guard.install(pylsp=True)
        import configparser
        from pathlib import Path
        import parso.file_io, jedi
        from jedi.api import project as jedi_project
        from jedi.inference import sys_path
        target, root = {str(target)!r}, Path({str(project)!r})
        try:
            parso.file_io.FileIO(target).read()
            print("read")
        except FileNotFoundError:
            print("refused")
        print(list(sys_path._get_buildout_script_paths(root / "main.py")))
        print(jedi_project._is_django_path(root))
        print(configparser.RawConfigParser().read([target]))
        print(len(jedi.Script(path=str(root / "main.py")).complete(1, 7)) > 0)
    """
    done = _run(code)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines == ["refused", "[]", "False", "[]", "True"], done.stdout


def test_pylsp_reads_no_special_document(specials):
    code = f"""
        guard.install(pylsp=True)
        from pylsp.workspace import Document, Workspace
        from pylsp.uris import from_fs_path
        workspace = Workspace(from_fs_path({str(specials["ok"].parent)!r}), None)
        try:
            Document(from_fs_path({str(specials["fifo"])!r}), workspace).source
        except FileNotFoundError:
            print("refused")
    """
    done = _run(code)
    assert done.stdout.strip() == "refused", done.stderr[-2000:]


def test_pylsps_linters_run_in_the_private_directory_unless_trusted(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    home.mkdir()
    workspace.mkdir()
    code = f"""
        import os
        os.chdir({str(home)!r})
        guard.install(pylsp=True)
        from pylsp.plugins import pylint_lint
        where = "import os; print(os.getcwd())"
        for trusted in (False, True):
            if trusted:
                open(guard.TRUSTED_FLAG, "w").close()
            with pylint_lint.Popen([sys.executable, "-c", where], stdout=-1,
                                   cwd={str(workspace)!r}, text=True) as p:
                print(p.communicate()[0].strip())
    """
    done = _run(code)
    assert done.stdout.splitlines() == [str(home), str(workspace)], done.stderr[-2000:]


def test_a_memory_error_ends_the_process_even_when_caught_and_logged():
    code = f"""
        import logging, resource, threading
        guard.exit_on_memory_error({isolation.MEMORY_EXIT})
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))

        def handler():
            try:
                bytearray(4 << 30)
            except Exception:  # as pylsp's endpoint does
                logging.getLogger("pylsp_jsonrpc").exception("Failed to handle request")
            print("survived")

        worker = threading.Thread(target=handler)
        worker.start()
        worker.join()
    """
    done = _run(code)
    assert done.returncode == isolation.MEMORY_EXIT, (done.stdout, done.stderr[-2000:])
    assert "survived" not in done.stdout and "out of memory" in done.stderr


def test_compile_quotes_no_special_file(specials):
    """On a syntax error CPython opens the file named after it to quote the bad line."""
    code = f"""
        guard.install()
        import ast
        for name in ({str(specials["fifo"])!r}, {str(specials["zero"])!r}):
            try:
                ast.parse("os.\\n", filename=name)
            except SyntaxError as error:
                print(error.filename)
        try:
            compile("os.\\n", {str(specials["ok"])!r}, "exec")
        except SyntaxError as error:
            print(error.filename, error.text.strip())
    """
    done = _run(code, timeout=30)
    fifo, zero, ok = done.stdout.splitlines()
    assert fifo == f"<{specials['fifo']}>" and zero == f"<{specials['zero']}>"
    assert ok == f"{specials['ok']} x = 1"  # a regular file is quoted as before


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's idle scheduling class")
def test_pylsps_lint_timers_run_in_the_idle_class_and_its_requests_do_not():
    """pylsp lints in debounced ``threading.Timer`` threads: those, and what they
    start, yield the CPU; the thread that answers requests keeps its class."""
    done = _run(
        """
        import os, subprocess, threading
        guard.lint_when_idle()
        seen = {}
        def lint():
            seen["timer"] = os.sched_getscheduler(0)
            child = subprocess.run(
                [sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
                capture_output=True, text=True, check=True,
            )
            seen["its child"] = int(child.stdout)
        timer = threading.Timer(0.0, lint)
        timer.start()
        timer.join()
        mine = lambda: seen.setdefault("thread", os.sched_getscheduler(0))
        worker = threading.Thread(target=mine)
        worker.start()
        worker.join()
        seen["main"] = os.sched_getscheduler(0)
        print(seen == {
            "timer": os.SCHED_IDLE, "its child": os.SCHED_IDLE,
            "thread": os.SCHED_OTHER, "main": os.SCHED_OTHER,
        }, seen)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("True"), done.stdout
