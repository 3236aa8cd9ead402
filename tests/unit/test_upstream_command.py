"""The default upstream command isolates pylsp from the workspace."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import site
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
