"""The code ChatLSP reads: Jedi scripts and parso trees of the document and of the
files its names lead to, cached, and Jedi's name resolution.

Nothing here imports or runs workspace code. Jedi parses; the only modules it may
import are compiled extensions on the environment's own path (the project is
created without ``load_unsafe_extensions``), and never ``jedi.Interpreter``.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jedi
import parso
from parso.tree import BaseNode, Leaf

_MAX_FILE_BYTES = 2_000_000
_SCRIPTS = 8  # Jedi scripts kept: the documents being edited and the files they lead to
_TREES = 48  # parso trees (and file texts) kept: a project's modules and the stubs it uses
_GRAMMAR = parso.load_grammar(version="3.13")  # newer syntax parses; older code still does
_VERSIONED = re.compile(r"python3\.\d+t?")
_KNOWN_MODULES = frozenset(
    {"builtins", "typing", "typing_extensions", "mypy_extensions", "collections.abc", "abc"}
)


class _OwnInterpreter(jedi.InterpreterEnvironment):
    """steerlsp's own interpreter, in process, with the working directory taken off its
    path: ``python -m steerlsp`` started in a workspace must not make that workspace's
    compiled extensions importable."""

    def get_sys_path(self) -> list[str]:
        here = os.getcwd()
        return [p for p in sys.path if p and os.path.abspath(p) != here]


def environment_for(environment: str | None) -> Any:
    """The Jedi environment for a venv directory or interpreter path the caller chose.

    Given one, Jedi inspects it in a subprocess; ``safe=False`` because the caller only
    passes an environment the user chose or a trusted workspace holds. None (or one
    that is not a Python) is steerlsp's own interpreter *in process*
    (``InterpreterEnvironment``): no second process to start and no round trip per
    compiled object, and it can only import what steerlsp's own path holds."""
    if environment:
        try:
            return jedi.create_environment(environment, safe=False)
        except (jedi.InvalidPythonEnvironment, OSError):
            pass
    return _OwnInterpreter()


class Sources:
    """Jedi scripts and parso trees by path, for one workspace and environment.

    Jedi's diff parser updates its cached tree of a path in place when that path is
    parsed again with other text, so an old script of the same path goes stale: one
    script per path is kept, replaced when the text changes."""

    def __init__(self, root: str | None, environment: str | None) -> None:
        self._root = root
        self._environment = environment_for(environment)
        self._projects: dict[str, jedi.Project] = {}
        self._scripts: OrderedDict[str, tuple[str, jedi.Script]] = OrderedDict()
        self._texts: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._trees: OrderedDict[str, tuple[str, BaseNode]] = OrderedDict()
        self._documents: dict[str, str] = {}

    def open(self, path: str, source: str) -> jedi.Script:
        """The script of the document being edited, ``source`` being its text now."""
        self._documents = {path: source}
        return self._script(path, source)

    def script(self, path: str) -> jedi.Script | None:
        """A script of any file: the open document's text, else the file on disk."""
        text = self.text(path)
        return self._script(path, text) if text is not None else None

    def text(self, path: str) -> str | None:
        """The open document's text, or the file's (cached while its mtime holds)."""
        if path in self._documents:
            return self._documents[path]
        try:
            stat = os.stat(path)
            cached = self._texts.get(path)
            if cached is not None and cached[0] == stat.st_mtime:
                return cached[1]
            if stat.st_size > _MAX_FILE_BYTES:
                return None
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        _remember(self._texts, path, (stat.st_mtime, text), _TREES)
        return text

    def tree(self, path: str) -> BaseNode | None:
        """The parso tree of a file's text (our own parse, apart from Jedi's)."""
        text = self.text(path)
        if text is None:
            return None
        cached = self._trees.get(path)
        if cached is not None and cached[0] == text:
            self._trees.move_to_end(path)
            return cached[1]
        if path in self._documents:  # edited a little at a time: parso reparses the change
            found = _GRAMMAR.parse(text, path=path, diff_cache=True, cache=False)
        else:
            found = _GRAMMAR.parse(text, error_recovery=True)
        _remember(self._trees, path, (text, found), _TREES)
        return found

    def leaf(self, path: str, line: int, column: int) -> Leaf | None:
        """The parso leaf at Jedi's 1-based ``line`` and ``column`` of a file."""
        tree = self.tree(path)
        if tree is None:
            return None
        try:
            found = tree.get_leaf_for_position((line, column))
        except ValueError:
            return None
        if isinstance(found, Leaf) and found.start_pos < (line, column) <= found.end_pos:
            found = found.get_next_leaf()  # parso gives the leaf that *ends* there
        return found if isinstance(found, Leaf) and found.start_pos == (line, column) else None

    def goto(self, path: str, line: int, column: int) -> list[Found]:
        """What the name at 0-based ``line`` and ``column`` of ``path`` refers to,
        imports followed."""
        script = self.script(path)
        if script is None:
            return []
        names = _guarded(lambda: script.goto(line + 1, column, follow_imports=True))
        return [_found(name) for name in names]

    def goto_name(self, path: str, dotted: str) -> list[Found]:
        """What ``dotted`` refers to at the top level of ``path``, imports followed: for
        names written where no position leads (inside a string)."""
        script = self.script(path)
        if script is None or not dotted.replace(".", "").isidentifier():
            return []
        last = dotted.rsplit(".", 1)[-1]
        found: list[Any] = []
        for name in _guarded(lambda: script.search(dotted)):
            if name.name == last:
                found.extend(_guarded(lambda name=name: name.goto(follow_imports=True)) or [name])
        return [_found(name) for name in found]

    def signature(self, path: str, line: int, column: int) -> str | None:
        """``(a: int, b=0)``: how Jedi describes calling the name at 0-based ``line`` and
        ``column`` (an inherited constructor, say)."""
        script = self.script(path)
        if script is None:
            return None
        for name in _guarded(lambda: script.goto(line + 1, column, follow_imports=True)):
            for signature in _guarded(name.get_signatures):
                text = signature.to_string()
                if "(" in text and text.endswith(")"):
                    return text[text.index("(") :]
        return None

    def is_known(self, name: Found) -> bool:
        """Whether a name is a type a model knows (builtins, typing, the standard
        library): not printed, not followed."""
        if name.module in _KNOWN_MODULES or name.builtin or name.module_path is None:
            return True
        parts = Path(name.module_path).parts
        if "typeshed" in parts and "stdlib" in parts:
            return True
        return _in_standard_library(parts)

    def is_library(self, path: str) -> bool:
        """Whether a file is installed code rather than the workspace's (a venv inside
        the workspace is installed code too)."""
        parts = Path(path).parts
        return "site-packages" in parts or "dist-packages" in parts or "typeshed" in parts

    def _script(self, path: str, text: str) -> jedi.Script:
        cached = self._scripts.get(path)
        if cached is not None and cached[0] == text:
            self._scripts.move_to_end(path)
            return cached[1]
        script = jedi.Script(
            text, path=path, project=self._project(path), environment=self._environment
        )
        _remember(self._scripts, path, (text, script), _SCRIPTS)
        return script

    def _project(self, path: str) -> jedi.Project:
        root = self._root or os.path.dirname(path) or "."
        project = self._projects.get(root)
        if project is None:
            project = jedi.Project(root, smart_sys_path=True, load_unsafe_extensions=False)
            self._projects[root] = project
        return project


@dataclass(frozen=True)
class Found:
    """A definition Jedi found: what ChatLSP needs of a ``jedi.api.classes.Name``."""

    name: str
    type: str  # "class", "function", "module", "statement", "instance", ...
    module_path: str | None
    module: str
    line: int  # 1-based, as Jedi counts
    column: int
    builtin: bool


def _found(name: Any) -> Found:
    module_path = str(name.module_path) if name.module_path is not None else None
    return Found(
        name=name.name,
        type=name.type,
        module_path=module_path,
        module=name.module_name or "",
        line=name.line or 0,
        column=name.column or 0,
        builtin=bool(name.in_builtin_module()),
    )


def _guarded(call: Any) -> list[Any]:
    """Jedi's answer, or nothing where Jedi fails on odd code (it raises on bad
    positions and, rarely, on its own bugs)."""
    try:
        return list(call())
    except Exception:
        return []


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


def _in_standard_library(parts: tuple[str, ...]) -> bool:
    """``.../lib/python3.X/module.py``, not under site-packages."""
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    for parent, child in itertools.pairwise(parts):
        if parent.lower() in ("lib", "lib64") and _VERSIONED.fullmatch(child):
            return True
    return False
