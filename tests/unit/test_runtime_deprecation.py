"""The opt-in runtime deprecation check (``models/deprecation/runtime.py``).

``locate`` is pure (a file and a line in, a module and a class out). ``probe``
runs the real interpreter (``sys.executable``) on temporary packages: the child
is isolated (``-I``), so the package's import root travels in the request.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from steerlsp.models.deprecation.runtime import Located, RuntimeDeprecations, locate
from steerlsp.models.deprecation.static import Deprecation
from steerlsp.server.completion.host import ModelHost
from steerlsp.server.config import Settings, merge
from steerlsp.server.upstream import environment

PYTHON = sys.executable


def write(root: Path, relative: str, source: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def line_of(path: Path, text: str) -> int:
    """The 0-based line of the first line of ``path`` that contains ``text``."""
    return next(i for i, line in enumerate(path.read_text().splitlines()) if text in line)


# --- locate: which module, which class -----------------------------------------------

NESTED = """\
    import functools

    def helper():
        pass

    class Outer:
        '''Docstring.'''

        @functools.cache
        def method(self):
            pass

        class Inner:
            value = 1

            def deep(self):
                x = 1
                return x

    if True:
        class Guarded:
            def inside(self):
                pass
    """


def test_locate_names_the_module_from_its_packages_and_the_class_around_the_line(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/sub/__init__.py", "")
    mod = write(tmp_path, "pkg/sub/mod.py", NESTED)
    root = str(tmp_path)

    def at(text: str) -> Located | None:
        return locate(mod, line_of(mod, text))

    assert at("def helper") == Located("pkg.sub.mod", None, root)
    assert at("class Outer") == Located("pkg.sub.mod", None, root)  # the class itself
    assert at("def method") == Located("pkg.sub.mod", "Outer", root)
    assert at("@functools.cache") == Located("pkg.sub.mod", "Outer", root)  # its decorator
    assert at("value = 1") == Located("pkg.sub.mod", "Outer.Inner", root)
    assert at("def deep") == Located("pkg.sub.mod", "Outer.Inner", root)
    assert at("x = 1") == Located("pkg.sub.mod", "Outer.Inner", root)  # in a function there
    assert at("def inside") == Located("pkg.sub.mod", "Guarded", root)  # under an ``if``
    # A package's __init__.py is the package; a file outside any package is a top module.
    init = write(tmp_path, "pkg/sub/__init__.py", "class Api:\n    def go(self): pass\n")
    assert locate(init, 1) == Located("pkg.sub", "Api", root)
    loose = write(tmp_path, "scripts/tool.py", "def main(): pass\n")
    assert locate(loose, 0) == Located("tool", None, str(tmp_path / "scripts"))


def test_locate_gives_up_on_stubs_broken_or_unimportable_files(tmp_path):
    assert locate(write(tmp_path, "stub.pyi", "def f() -> int: ...\n"), 0) is None
    assert locate(write(tmp_path, "broken.py", "def f(:\n"), 0) is None
    assert locate(write(tmp_path, "my-tool.py", "def f(): pass\n"), 0) is None  # no identifier
    assert locate(tmp_path / "missing.py", 0) is None
    (tmp_path / "folder.py").mkdir()
    assert locate(tmp_path / "folder.py", 0) is None


# --- probe: the sandboxed child --------------------------------------------------------

PEP702 = """\
    from typing_extensions import deprecated

    print("the project prints at import")  # must not spoil the child's answer

    def _mark(message):  # a decorator the static reader does not know
        def wrap(function):
            function.__deprecated__ = message
            return function
        return wrap

    class Model:
        @_mark("Use `model_dump` instead")
        def dict(self):
            return {}

        @deprecated("use model_dump_json instead")
        def json(self):
            return ""

        @property
        @_mark("use fields")
        def schema(self):
            return {}

        def model_dump(self):
            return {}

    @deprecated("use Model instead")
    class OldModel:
        pass

    class Child(OldModel):  # inherits __deprecated__, but is not deprecated itself
        pass
    """


@pytest.fixture
def runtime() -> RuntimeDeprecations:
    return RuntimeDeprecations(PYTHON, timeout=20.0)


def test_a_pep_702_deprecated_attribute_is_found_with_its_replacement(tmp_path, runtime):
    write(tmp_path, "lib/__init__.py", "")
    path = write(tmp_path, "lib/models.py", PEP702)
    located = locate(path, line_of(path, "def dict"))
    assert located == Located("lib.models", "Model", str(tmp_path))
    names = ["dict", "json", "schema", "model_dump", "missing"]
    found = runtime.probe(*located[:2], names, root=located.root, path=path)
    assert found == {
        "dict": Deprecation("Use `model_dump` instead", "model_dump", "runtime"),
        "json": Deprecation("use model_dump_json instead", "model_dump_json", "runtime"),
        "schema": Deprecation("use fields", "fields", "runtime"),  # a property's getter
    }
    module = runtime.probe("lib.models", None, ["OldModel", "Child", "Model"], root=str(tmp_path))
    assert module == {"OldModel": Deprecation("use Model instead", "Model", "runtime")}


def test_a_module_getattr_that_warns_is_deprecated_and_a_plain_name_is_not(tmp_path, runtime):
    path = write(
        tmp_path,
        "compat.py",
        """\
        import warnings

        def modern():
            pass

        def __getattr__(name):
            if name == "legacy":
                warnings.warn("legacy is deprecated, use modern()", DeprecationWarning, 2)
                return modern
            if name == "soon":
                warnings.warn("soon goes away; switch to modern", FutureWarning, 2)
                return modern
            if name == "noisy":
                warnings.warn("just a user warning", UserWarning, 2)
                return modern
            raise AttributeError(name)
        """,
    )
    assert locate(path, line_of(path, "def modern")) == Located("compat", None, str(tmp_path))
    found = runtime.probe("compat", None, ["legacy", "soon", "noisy", "modern"], root=str(tmp_path))
    assert found == {
        "legacy": Deprecation("legacy is deprecated, use modern()", "modern", "runtime"),
        "soon": Deprecation("soon goes away; switch to modern", "modern", "runtime"),
    }


def test_the_child_is_isolated_in_a_temporary_directory_with_a_reduced_environment(
    tmp_path, runtime, monkeypatch
):
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("STEERLSP_SECRET", "x")
    monkeypatch.chdir(tmp_path)
    write(
        tmp_path,
        "probe_env.py",
        """\
        import os, sys, warnings

        # LC_CTYPE: set by Python itself when it coerces a C locale (PEP 538).
        KEPT = {"PATH", "HOME", "LANG", "SYSTEMROOT", "PYTHONDONTWRITEBYTECODE", "LC_CTYPE",
                "PYTHONSAFEPATH"}

        def __getattr__(name):
            here = "steerlsp-runtime-" in os.getcwd()
            extra = sorted(set(os.environ) - KEPT)
            warnings.warn(
                f"deprecated: isolated={sys.flags.isolated} temp={here} "
                f"bytecode={not sys.dont_write_bytecode} extra={extra}",
                DeprecationWarning,
            )
        """,
    )
    (found,) = runtime.probe("probe_env", None, ["anything"], root=str(tmp_path)).values()
    assert found.reason == "deprecated: isolated=1 temp=True bytecode=False extra=[]"
    assert not (tmp_path / "__pycache__").exists()


def test_answers_are_cached_while_the_module_file_is_unchanged(tmp_path, runtime):
    source = "def old(): pass\nold.__deprecated__ = 'use new'\ndef new(): pass\n"
    path = write(tmp_path, "cached_mod.py", source)
    ask = dict(root=str(tmp_path), path=path)
    assert set(runtime.probe("cached_mod", None, ["old", "new"], **ask)) == {"old"}
    stamp = path.stat().st_mtime_ns
    path.write_text(source.replace("'use new'", "None"))  # no longer deprecated...
    os.utime(path, ns=(stamp, stamp))
    assert set(runtime.probe("cached_mod", None, ["old", "new"], **ask)) == {"old"}  # cached
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))  # ...and now the file says so
    assert runtime.probe("cached_mod", None, ["old", "new"], **ask) == {}


def test_a_module_that_hangs_at_import_is_killed_at_the_timeout(tmp_path):
    marker = tmp_path / "pid"
    write(
        tmp_path,
        "sleepy.py",
        f"""\
        import os, time
        open({str(marker)!r}, "w").write(str(os.getpid()))
        time.sleep(600)
        def old(): pass
        old.__deprecated__ = "use new"
        """,
    )
    runtime = RuntimeDeprecations(PYTHON, timeout=1.0)
    started = time.monotonic()
    assert runtime.probe("sleepy", None, ["old"], root=str(tmp_path)) == {}
    assert time.monotonic() - started < 30  # killed at the 1 s timeout, not after the 600 s sleep
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped, not left sleeping


def test_the_child_cannot_reach_the_network(tmp_path, runtime):
    """Unroutable addresses would hang for the socket's own 600 s timeout: the probe ends
    at once instead, reporting nothing; a module that catches the error shows its text."""
    write(
        tmp_path,
        "phones_home.py",
        """\
        import socket
        socket.create_connection(("192.0.2.1", 9), timeout=600)
        def old(): pass
        old.__deprecated__ = "use new"
        """,
    )
    started = time.monotonic()
    assert runtime.probe("phones_home", None, ["old"], root=str(tmp_path)) == {}
    assert time.monotonic() - started < 15  # refused at once: not the probe's 20 s limit
    write(
        tmp_path,
        "tries_hard.py",
        """\
        import socket, warnings
        errors = []
        for attempt in (
            lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM),
            lambda: socket.create_connection(("192.0.2.1", 9), timeout=600),
            lambda: socket.getaddrinfo("example.com", 443),
        ):
            try:
                attempt()
                errors.append("connected")
            except OSError as exc:
                errors.append(str(exc))

        def __getattr__(name):
            warnings.warn(f"deprecated: {'; '.join(errors)}", DeprecationWarning)
        """,
    )
    (found,) = runtime.probe("tries_hard", None, ["result"], root=str(tmp_path)).values()
    refused = "network access is disabled in steerlsp's runtime deprecation check"
    assert found.reason == f"deprecated: {refused}; {refused}; {refused}"


def test_failures_report_nothing(tmp_path, runtime):
    write(tmp_path, "raises.py", "raise RuntimeError('broken at import')\n")
    write(tmp_path, "exits.py", "import sys\nsys.exit(0)\n")
    assert runtime.probe("raises", None, ["x"], root=str(tmp_path)) == {}
    assert runtime.probe("exits", None, ["x"], root=str(tmp_path)) == {}
    assert runtime.probe("not_there", None, ["x"], root=str(tmp_path)) == {}
    missing = RuntimeDeprecations(str(tmp_path / "no-python"))
    assert missing.probe("os", None, ["getcwd"]) == {}
    with pytest.raises(ValueError, match="timeout must be positive, got 0"):
        RuntimeDeprecations(PYTHON, timeout=0)


# --- the server: opt-in, and only in a trusted workspace -------------------------------


class Session:
    """The server's current settings, which didChangeConfiguration replaces."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings


def host_with(raw: dict) -> tuple[ModelHost, Session]:
    settings, problems = merge(Settings(), raw)
    assert problems == []
    session = Session(settings)
    host = ModelHost(
        lambda: session.settings, notify=lambda kind, text: None, python_environment=lambda: None
    )
    return host, session


def test_the_server_builds_the_check_only_when_asked_for_in_a_trusted_workspace(caplog):
    assert host_with({})[0].runtime_check() is None  # off by default
    trusted, _ = host_with(
        {"steering": {"runtimeDeprecation": True}, "python": {"trustWorkspace": True}}
    )
    checker = trusted.runtime_check()
    assert isinstance(checker, RuntimeDeprecations) and checker.python == PYTHON
    assert trusted.runtime_check() is checker  # kept, with its cache
    untrusted, session = host_with({"steering": {"runtimeDeprecation": True}})
    with caplog.at_level(logging.INFO, logger="steerlsp.server.completion.policy"):
        assert untrusted.runtime_check() is None
        assert untrusted.runtime_check() is None  # asked again: not logged again
    (record,) = [r for r in caplog.records if "runtimeDeprecation" in r.getMessage()]
    assert record.levelno == logging.INFO and "python.trustWorkspace" in record.getMessage()
    session.settings = dataclasses.replace(session.settings, python=trusted.settings.python)
    assert untrusted.runtime_check() is not None  # trusted now


def test_the_projects_interpreter_is_the_one_its_environment_names(tmp_path):
    assert environment.interpreter(None) == sys.executable  # pylsp's own: this process's
    venv = tmp_path / "venv"
    write(venv, "bin/python", "")
    assert environment.interpreter(str(venv)) == str(venv / "bin" / "python")
    assert environment.interpreter(str(venv / "bin" / "python")) == str(venv / "bin" / "python")
    (tmp_path / "empty").mkdir()
    assert environment.interpreter(str(tmp_path / "empty")) is None
    assert environment.interpreter(str(tmp_path / "missing")) is None
