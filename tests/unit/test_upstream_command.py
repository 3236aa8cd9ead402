"""The default upstream command isolates pylsp from the workspace."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import site
import subprocess
import sys

from steerlsp import guard
from steerlsp.server.upstream import isolation
from steerlsp.server.upstream.process import default_command

# ---- item 2: no workspace module is imported by the upstream ----------------


# ---- item 3: a Location in a FIFO or /dev/zero neither blocks nor exhausts ---


# ---- item 4: stderr is drained whatever its line length ----------------------


# ---- item 10: past the restart limit, the upstream is said to be gone -------


def test_default_command_isolates_pylsp():
    command = default_command()
    assert command[:3] == [sys.executable, "-I", "-c"]
    # The guard is loaded by path first; pylsp comes from this environment's site-packages.
    assert command[4:] == [isolation.guard_path(), str(guard.DEFAULT_LIMIT), ""]
    assert "from pylsp.__main__ import main" in command[3]


def test_a_user_site_pylsp_is_added_back_explicitly(monkeypatch, tmp_path):
    user_site = tmp_path / "user-site"
    origin = user_site / "pylsp" / "__init__.py"
    spec = importlib.machinery.ModuleSpec("pylsp", None, origin=str(origin))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(user_site))
    command = default_command()
    assert command[:3] == [sys.executable, "-I", "-c"] and command[-1] == str(user_site)
    assert "site.addsitedir(_home)" in command[3]


def test_the_neutral_directories_of_killed_processes_are_swept(tmp_path):
    """A steerlsp killed with SIGKILL leaves its working directory for the children; the
    next one removes it, and nothing that is not a dead process's own directory."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        left = tmp_path / f"steerlsp-cwd-{dead.pid}-a1b2"
        left.mkdir()
        (left / "trusted").touch()
        kept = [
            tmp_path / f"steerlsp-cwd-{running.pid}-c3d4",  # its process lives
            tmp_path / f"steerlsp-cwd-{os.getpid()}-e5f6",  # ours
            tmp_path / "steerlsp-cwd-g7h8",  # no pid in its name
            tmp_path / "project",
        ]
        for path in kept:
            path.mkdir()
        (tmp_path / "project" / "main.py").write_text("x = 1\n")
        link = tmp_path / f"steerlsp-cwd-{dead.pid}-link"
        link.symlink_to(tmp_path / "project")  # never followed
        isolation.sweep_neutral_dirs(str(tmp_path))
        assert not left.exists()
        assert all(path.is_dir() for path in kept)
        assert (tmp_path / "project" / "main.py").read_text() == "x = 1\n"
        assert link.is_symlink()
    finally:
        running.kill()
        running.wait()
