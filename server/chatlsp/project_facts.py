"""The project's configuration files, read bounded, and the style facts they state.

Every file read is a regular file of at most 1 MB, opened without blocking (a
FIFO named ``pyproject.toml`` must not hang the server); nothing here runs or
imports workspace code. Past the reading, the facts (dependencies,
indentation, line length, quotes, tools) are pure functions of a
:class:`Project`.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import re
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steerlsp import guard

MAX_BYTES = 1 << 20
_NAME = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")
_PRECOMMIT_ID = re.compile(r"^\s*-?\s*id:\s*['\"]?([\w.-]+)", re.MULTILINE)
FORMATTERS = ("ruff format", "black", "yapf", "autopep8")
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
