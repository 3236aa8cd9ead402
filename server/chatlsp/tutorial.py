"""aiTutorial: the project's facts and style, in a few lines of markdown for a prompt.

A model writes better code when it knows the Python version, which versions of
the libraries it calls are installed, and how the project indents, wraps and
quotes. Everything is read from files, never by importing or running workspace
code: the project's configuration by :mod:`~steerlsp.server.chatlsp.project_facts`,
versions here from ``pyvenv.cfg`` and the environment's ``*.dist-info``
``METADATA``; only an interpreter the user named explicitly is ever run, to ask
its version and ``sys.path``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from steerlsp.server.chatlsp.project_facts import (
    FORMATTERS,
    Project,
    dependency_names,
    indentation,
    line_length,
    normalized,
    quote_style,
    read_small,
    tools,
)
from steerlsp.server.upstream import isolation

MAX_DEPENDENCIES = 15
RUN_TIMEOUT = 10.0  # seconds for an explicitly given interpreter to say its version


def tutorial(root: str | None, environment: str | None, source: str) -> str:
    """The project's language, versions, key dependencies and style, as markdown."""
    project = Project.read(root)
    dirs = site_packages(environment) if environment else _own_site_packages()
    names = dependency_names(project)
    lines = ["## Project facts", f"- Language: Python {_python_line(environment, project)}"]
    if names:
        lines.append(f"- Dependencies (installed versions): {_dependencies_line(names, dirs)}")
    indent, indent_from = indentation(project.editorconfig, source)
    lines.append(f"- Indentation: {indent} ({indent_from})")
    length = line_length(project)
    if length is not None:
        lines.append(f"- Line length: {length[0]} ({length[1]})")
    quotes = quote_style(project)
    if quotes is not None:
        lines.append(f"- Quotes: {quotes[0]} ({quotes[1]})")
    found = tools(project)
    formatters = [tool for tool in found if tool in FORMATTERS]
    linters = [tool for tool in found if tool not in FORMATTERS]
    if formatters:
        lines.append(f"- Formatter: {', '.join(formatters)}")
    if linters:
        lines.append(f"- Linters and checkers: {', '.join(linters)}")
    return "\n".join(lines) + "\n"


# ---- the environment ------------------------------------------------------------------


def venv_dir(environment: str) -> Path | None:
    """The environment's directory: itself if a directory, or the venv an interpreter is in."""
    path = Path(environment)
    if path.is_dir():
        return path
    home = path.parent.parent
    if path.is_file() and (home / "pyvenv.cfg").is_file():
        return home
    return None


def site_packages(environment: str) -> list[str]:
    """The environment's import directories, read from disk where possible.

    A venv (or an interpreter inside one) is read: ``lib/python*/site-packages``
    and the directories its ``.pth`` files name (editable installs). Any other
    interpreter is asked for its ``sys.path``: the caller named it, so running
    it is the user's choice.
    """
    venv = venv_dir(environment)
    if venv is None:
        return [p for p in _interpreter_facts(environment)[1] if os.path.isdir(p)]
    found = sorted(str(p) for p in venv.glob("lib/python*/site-packages") if p.is_dir())
    found += [str(p) for p in (venv / "Lib" / "site-packages",) if p.is_dir()]
    return list(dict.fromkeys([*found, *(p for d in found for p in _pth_dirs(Path(d)))]))


def _pth_dirs(site: Path) -> list[str]:
    """Directories named by a site-packages' ``.pth`` files (``import`` lines are skipped)."""
    dirs = []
    for pth in sorted(site.glob("*.pth")):
        for line in (read_small(pth) or "").splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            candidate = site / line
            if candidate.is_dir():
                dirs.append(str(candidate.resolve()))
    return dirs


def _own_site_packages() -> list[str]:
    return [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]


@functools.lru_cache(maxsize=8)
def _interpreter_facts(interpreter: str) -> tuple[str | None, tuple[str, ...]]:
    """An explicitly given interpreter's version and ``sys.path``, asked once."""
    code = "import sys,json;print(json.dumps([sys.version, sys.path]))"
    try:
        done = subprocess.run(
            [interpreter, "-I", "-c", code],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
            cwd=isolation.neutral_cwd(),
            env=isolation.child_env(),
        )
        version, path = json.loads(done.stdout)
    except (OSError, ValueError, TypeError, subprocess.SubprocessError):
        return None, ()
    return str(version).split()[0], tuple(p for p in path if isinstance(p, str) and p)


def python_version(environment: str | None) -> str | None:
    """The environment's Python version, e.g. "3.11.7"; None for steerlsp's own."""
    if environment is None:
        return None
    venv = venv_dir(environment)
    if venv is None:
        return _interpreter_facts(environment)[0]
    config = _key_values(read_small(venv / "pyvenv.cfg") or "")
    version = config.get("version") or config.get("version_info")
    if version:
        return ".".join(version.split(".")[:3])
    for lib in sorted(venv.glob("lib/python3*")):  # a conda env has no pyvenv.cfg
        return lib.name.removeprefix("python")
    return None


def installed_versions(names: Iterable[str], dirs: Iterable[str]) -> dict[str, str]:
    """Installed version of each (normalized) name, from ``*.dist-info/METADATA``.

    Only the metadata of the wanted distributions is read; a directory name
    (``name-version.dist-info``) picks the candidates.
    """
    wanted = {normalized(name) for name in names}
    found: dict[str, str] = {}
    for directory in dirs:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            stem, dot, kind = entry.name.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            name, _, version = stem.partition("-")
            key = normalized(name)
            if key not in wanted or key in found:
                continue
            meta = "METADATA" if kind == "dist-info" else "PKG-INFO"
            headers = _metadata(read_small(Path(entry.path) / meta) or "")
            if headers.get("name") and normalized(headers["name"]) != key:
                continue
            version = headers.get("version") or version.split("-")[0]
            if version:
                found[key] = version
    return found


def _python_line(environment: str | None, project: Project) -> str:
    version = python_version(environment)
    if environment is None:
        where = f"{sys.version.split()[0]} (steerlsp's interpreter: no project environment set)"
    else:
        where = f"{version} (project environment)" if version else "(version unknown)"
    requires = project.pyproject.get("project", {}).get("requires-python")
    if not isinstance(requires, str):
        poetry = project.pyproject.get("tool", {}).get("poetry", {}).get("dependencies", {})
        requires = poetry.get("python") if isinstance(poetry, dict) else None
    if isinstance(requires, str):
        return f"{where}; requires-python {requires}"
    return where


def _dependencies_line(names: list[str], dirs: list[str]) -> str:
    versions = installed_versions(names, dirs)
    shown = names[:MAX_DEPENDENCIES]
    parts = [
        f"{name} {versions[normalized(name)]}"
        if normalized(name) in versions
        else f"{name} (not installed)"
        for name in shown
    ]
    if len(names) > len(shown):
        parts.append(f"and {len(names) - len(shown)} more")
    return ", ".join(parts)


def _key_values(text: str) -> dict[str, str]:
    """``key = value`` lines (pyvenv.cfg), keys lowercased."""
    pairs = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            pairs[key.strip().lower()] = value.strip()
    return pairs


def _metadata(text: str) -> dict[str, str]:
    """The Name and Version headers of a METADATA / PKG-INFO text."""
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the description follows the headers
        key, sep, value = line.partition(":")
        if sep and key.lower() in ("name", "version"):
            headers.setdefault(key.lower(), value.strip())
    return headers
