"""Which Python environment the upstream's Jedi should resolve imports in.

Order: the ``python.environment`` setting, then ``$VIRTUAL_ENV`` (both chosen
by the user), then a ``.venv`` or ``venv`` in the workspace root, but only if
the user marked the workspace trusted (``python.trustWorkspace``): Jedi runs
that interpreter to inspect it, which would execute workspace code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from steerlsp.server.lsp.capabilities import deep_merge

WORKSPACE_VENVS = (".venv", "venv")


def resolve(setting: str, root: str | None, env: Mapping[str, str], *, trusted: bool) -> str | None:
    """The environment path (a venv directory or an interpreter), or None for pylsp's own."""
    if setting:
        return os.path.expanduser(setting)
    if env.get("VIRTUAL_ENV"):
        return env["VIRTUAL_ENV"]
    if root and trusted:
        for name in WORKSPACE_VENVS:
            candidate = Path(root) / name
            if (candidate / "bin" / "python").exists() or (
                candidate / "Scripts" / "python.exe"
            ).exists():
                return str(candidate)
    return None


def interpreter(environment: str | None) -> str | None:
    """The Python executable of an environment as ``resolve`` gives it (a venv directory
    or an interpreter); None (pylsp's own) is this process's. None when a directory
    holds no interpreter."""
    if environment is None:
        return sys.executable or None
    path = Path(environment)
    if not path.is_dir():
        return environment if path.exists() else None
    for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
        if candidate.exists():
            return str(candidate)
    return None


def untrusted_venv(root: str | None) -> str | None:
    """A workspace venv that was not used because the workspace is not trusted."""
    if not root:
        return None
    for name in WORKSPACE_VENVS:
        if (Path(root) / name / "bin" / "python").exists():
            return str(Path(root) / name)
    return None


def overlay(environment: str | None) -> dict[str, Any] | None:
    """pylsp settings that point Jedi at ``environment``."""
    if environment is None:
        return None
    return {"pylsp": {"plugins": {"jedi": {"environment": environment}}}}


def with_overlay(settings: Any, extra: dict[str, Any] | None) -> Any:
    """The client's ``settings`` with ``extra`` merged in (extra wins), not mutated."""
    if extra is None:
        return settings
    base = settings if isinstance(settings, dict) else {}
    return deep_merge(base, extra)
