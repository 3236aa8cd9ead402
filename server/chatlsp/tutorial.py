"""aiTutorial: the project's facts and style, in a few lines of markdown for a prompt.

A model writes better code when it knows the Python version, which versions of
the libraries it calls are installed, and how the project indents, wraps and
quotes. Everything is read from files, never by importing or running workspace
code: versions come from ``pyvenv.cfg`` and the environment's ``*.dist-info``
``METADATA``; only an interpreter the user named explicitly is ever run, to ask
its version and ``sys.path``. Every file read is a regular file of at most
1 MB, opened without blocking (a FIFO named ``pyproject.toml`` must not hang
the server).
"""

from __future__ import annotations

import configparser
import fnmatch
import functools
import json
import os
import re
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steerlsp import guard
from steerlsp.server.upstream import isolation

MAX_BYTES = 1 << 20
MAX_DEPENDENCIES = 15
RUN_TIMEOUT = 10.0  # seconds for an explicitly given interpreter to say its version
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_PRECOMMIT_ID = re.compile(r"^\s*-?\s*id:\s*['\"]?([\w.-]+)", re.MULTILINE)
_FORMATTERS = ("ruff format", "black", "yapf", "autopep8")
_TOOL_FILES = {
    "ruff.toml": "ruff",
    ".ruff.toml": "ruff",
    ".flake8": "flake8",
    "mypy.ini": "mypy",
    ".mypy.ini": "mypy",
    ".pylintrc": "pylint",
    "pylintrc": "pylint",
    ".isort.cfg": "isort",
    "pyrightconfig.json": "pyright",
    ".style.yapf": "yapf",
}
_PYPROJECT_TOOLS = ("black", "isort", "mypy", "pylint", "pyright", "yapf", "autopep8", "flake8")
_PRECOMMIT_TOOLS = {
    "ruff-format": "ruff format",
    "ruff": "ruff",
    "black": "black",
    "flake8": "flake8",
    "mypy": "mypy",
    "isort": "isort",
    "pylint": "pylint",
}


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
    formatters = [tool for tool in found if tool in _FORMATTERS]
    linters = [tool for tool in found if tool not in _FORMATTERS]
    if formatters:
        lines.append(f"- Formatter: {', '.join(formatters)}")
    if linters:
        lines.append(f"- Linters and checkers: {', '.join(linters)}")
    return "\n".join(lines) + "\n"


# ---- reading the project (bounded file reads) ------------------------------------------


def read_small(path: str | Path) -> str | None:
    """A regular file's text if it is at most 1 MB; None for anything else (a FIFO,
    socket or device is never read: :func:`steerlsp.guard.read_regular`)."""
    data = guard.read_regular(path, MAX_BYTES)
    return data.decode("utf-8", errors="replace") if data is not None else None


def _toml(path: Path) -> dict[str, Any]:
    text = read_small(path)
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _ini(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    text = read_small(path)
    if text is not None:
        try:
            parser.read_string(text)
        except configparser.Error:
            return configparser.ConfigParser(interpolation=None)
    return parser


@dataclass(frozen=True)
class Project:
    """The configuration files the tutorial reads, parsed; empty when absent."""

    pyproject: dict[str, Any] = field(default_factory=dict)
    ruff_toml: dict[str, Any] = field(default_factory=dict)  # ruff.toml / .ruff.toml
    ini: dict[str, configparser.ConfigParser] = field(default_factory=dict)  # setup.cfg, ...
    requirements: tuple[str, ...] = ()  # requirements*.txt texts
    editorconfig: dict[str, str] = field(default_factory=dict)  # settings for *.py
    precommit: str = ""
    files: frozenset[str] = frozenset()  # tool configuration files present

    @classmethod
    def read(cls, root: str | None) -> Project:
        if not root or not os.path.isdir(root):
            return cls()
        base = Path(root)
        ruff_toml: dict[str, Any] = {}
        for name in ("ruff.toml", ".ruff.toml"):
            ruff_toml = ruff_toml or _toml(base / name)
        requirements = []
        for path in sorted(base.glob("requirements*.txt")):
            text = read_small(path)
            if text is not None:
                requirements.append(text)
        editorconfig = read_small(base / ".editorconfig")
        return cls(
            pyproject=_toml(base / "pyproject.toml"),
            ruff_toml=ruff_toml,
            ini={name: _ini(base / name) for name in ("setup.cfg", "tox.ini", ".flake8")},
            requirements=tuple(requirements),
            editorconfig=editorconfig_for_python(editorconfig or ""),
            precommit=read_small(base / ".pre-commit-config.yaml") or "",
            files=frozenset(name for name in _TOOL_FILES if (base / name).is_file()),
        )


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


# ---- the facts (pure) --------------------------------------------------------------------


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str | None:
    """The distribution a requirement line or PEP 508 string names; None for options and URLs."""
    spec = spec.split(" #", 1)[0].strip()
    if not spec or spec.startswith(("#", "-", ".", "/")) or "://" in spec.split("@")[0]:
        return None
    match = _NAME.match(spec)
    return match.group(1) if match else None


def dependency_names(project: Project) -> list[str]:
    """Declared runtime dependencies, in declaration order, without duplicates."""
    specs: list[str] = []
    declared = project.pyproject.get("project", {}).get("dependencies", [])
    if isinstance(declared, list):
        specs += [spec for spec in declared if isinstance(spec, str)]
    poetry = project.pyproject.get("tool", {}).get("poetry", {}).get("dependencies", {})
    if isinstance(poetry, dict):
        specs += [name for name in poetry if name.lower() != "python"]
    for text in project.requirements:
        specs += text.splitlines()
    setup_cfg = project.ini.get("setup.cfg")
    if setup_cfg is not None:
        specs += setup_cfg.get("options", "install_requires", fallback="").splitlines()
    names: dict[str, str] = {}
    for spec in specs:
        name = requirement_name(spec)
        if name:
            names.setdefault(normalized(name), name)
    return list(names.values())


def editorconfig_for_python(text: str) -> dict[str, str]:
    """The ``.editorconfig`` settings that apply to a ``.py`` file (later sections win)."""
    settings: dict[str, str] = {}
    applies = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            applies = _glob_matches_python(line[1:-1])
        elif applies and "=" in line:
            key, _, value = line.partition("=")
            settings[key.strip().lower()] = value.strip().lower()
    return settings


def _glob_matches_python(pattern: str) -> bool:
    pattern = pattern.split("/")[-1].replace("**", "*")
    braces = re.fullmatch(r"(.*)\{([^{}]*)\}(.*)", pattern)
    options = [pattern]
    if braces:
        options = [braces[1] + choice + braces[3] for choice in braces[2].split(",")]
    return any(fnmatch.fnmatchcase("x.py", option) for option in options)


def indentation(editorconfig: Mapping[str, str], source: str) -> tuple[str, str]:
    """How the project indents, and where that comes from."""
    style = editorconfig.get("indent_style")
    if style == "tab":
        return "tabs", ".editorconfig"
    if style == "space":
        size = editorconfig.get("indent_size", "")
        size = size if size.isdigit() else "4"
        return f"{size} spaces", ".editorconfig"
    return inferred_indentation(source)


def inferred_indentation(source: str) -> tuple[str, str]:
    """The indentation most lines of ``source`` use; 4 spaces when it has none."""
    tabs = steps = 0
    widths: Counter[int] = Counter()
    previous = 0
    for line in source.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("\t"):
            tabs += 1
            continue
        width = len(line) - len(line.lstrip(" "))
        if width > previous:
            widths[width - previous] += 1
            steps += 1
        previous = width
    if tabs > steps:
        return "tabs", "inferred from this file"
    if widths:
        return f"{widths.most_common(1)[0][0]} spaces", "inferred from this file"
    return "4 spaces", "PEP 8 default"


def _ruff(project: Project) -> dict[str, Any] | None:
    """ruff's settings: ruff.toml wins over pyproject's [tool.ruff], as in ruff."""
    if project.ruff_toml or "ruff.toml" in project.files or ".ruff.toml" in project.files:
        return project.ruff_toml
    ruff = project.pyproject.get("tool", {}).get("ruff")
    return ruff if isinstance(ruff, dict) else None


def _black(project: Project) -> dict[str, Any] | None:
    black = project.pyproject.get("tool", {}).get("black")
    return black if isinstance(black, dict) else None


def line_length(project: Project) -> tuple[int, str] | None:
    """The configured line length and who configures it; None when nobody does."""
    ruff, black = _ruff(project), _black(project)
    if ruff is not None and isinstance(ruff.get("line-length"), int):
        return ruff["line-length"], "ruff"
    if black is not None and isinstance(black.get("line-length"), int):
        return black["line-length"], "black"
    for name in ("setup.cfg", "tox.ini", ".flake8"):
        parser = project.ini.get(name)
        for key in ("max-line-length", "max_line_length"):
            value = parser.get("flake8", key, fallback="") if parser is not None else ""
            if value.strip().isdigit():
                return int(value), f"flake8 in {name}"
    value = project.editorconfig.get("max_line_length", "")
    if value.isdigit():
        return int(value), ".editorconfig"
    if ruff is not None or black is not None:
        return 88, "ruff's default" if ruff is not None else "black's default"
    return None


def quote_style(project: Project) -> tuple[str, str] | None:
    """The string quotes the formatter enforces, when a formatter is configured."""
    ruff, black = _ruff(project), _black(project)
    ruff_format = (ruff or {}).get("format")
    if isinstance(ruff_format, dict) and isinstance(ruff_format.get("quote-style"), str):
        return ruff_format["quote-style"], "ruff format"
    if black is not None:
        if black.get("skip-string-normalization") or black.get("skip_string_normalization"):
            return "keep as written", "black skip-string-normalization"
        return "double", "black"
    if "ruff format" in tools(project):
        return "double", "ruff format"
    return None


def tools(project: Project) -> list[str]:
    """The formatters and linters the project configures, in a stable order."""
    found: list[str] = []
    ruff = _ruff(project)
    if ruff is not None:
        if isinstance(ruff.get("format"), dict):
            found.append("ruff format")
        found.append("ruff")
    configured = project.pyproject.get("tool", {})
    found += [tool for tool in _PYPROJECT_TOOLS if isinstance(configured.get(tool), dict)]
    found += [_TOOL_FILES[name] for name in sorted(project.files)]
    for parser in project.ini.values():
        found += [tool for tool in ("flake8", "mypy", "isort") if parser.has_section(tool)]
        found += ["pylint" for section in parser.sections() if section.startswith("pylint.")]
    for hook in _PRECOMMIT_ID.findall(project.precommit):
        if hook in _PRECOMMIT_TOOLS:
            found.append(_PRECOMMIT_TOOLS[hook])
    return list(dict.fromkeys(found))


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
