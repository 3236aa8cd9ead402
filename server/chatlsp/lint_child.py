"""The lint worker's own side: the process that keeps pylint imported and astroid warm.

It is started as ``python -I -m steerlsp.server.chatlsp.lint_worker``, whose
main calls :func:`serve`; the protocol is described there
(:mod:`~steerlsp.server.chatlsp.lint_worker`).

The worker never imports workspace code, and reads only regular files
(:mod:`steerlsp.guard`): astroid parses what the project imports. pylint runs with explicit options
only (an empty rcfile of its own, no plugins, no init-hook), from a private
temporary cwd; the workspace and the project's site-packages go at the end of
``sys.path``, where astroid reads them as source and they cannot shadow pylint;
and an import guard refuses any module from outside the worker's own
environment (astroid imports C extensions it is allowed to, and pylint imports
some of its parts lazily). pylint itself is imported only inside the worker,
never at module level.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from steerlsp import guard
from steerlsp.server.chatlsp.lint_worker import CODES
from steerlsp.server.documents.encodings import UTF8, to_code_points
from steerlsp.server.documents.text import bare, split_keepends
from steerlsp.server.upstream import isolation

# astroid's caches grow with every linted text (inference results keyed by its
# nodes); dropping them all now and then bounds the worker's memory.
FLUSH_EVERY = 200


def pylint_args(rcfile: str) -> list[str]:
    """Every option pylint gets: nothing is read from the project."""
    return [
        f"--rcfile={rcfile}",  # empty: no pylintrc, pyproject or setup.cfg is looked for
        "--disable=all",
        f"--enable={','.join(CODES)}",
        "--jobs=1",
        "--persistent=n",
        "--reports=n",
        "--score=n",
        "--unsafe-load-any-extension=n",
        "--from-stdin",
    ]


class ImportGuard(MetaPathFinder):
    """Refuses to import any module whose file lies outside the allowed directories.

    Built-in, frozen and namespace modules have no file and pass.
    """

    def __init__(self, allowed: Sequence[str]) -> None:
        self._allowed = tuple(os.path.join(os.path.realpath(p), "") for p in allowed if p)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            origin = spec.origin
            if spec.has_location and origin and not self.allows(origin):
                raise ImportError(f"the lint worker does not import {fullname} from {origin}")
            return spec
        return None

    def allows(self, origin: str) -> bool:
        return os.path.realpath(origin).startswith(self._allowed)


def install_import_guard() -> ImportGuard:
    """Allow only what the worker's own ``sys.path`` and steerlsp's package hold now."""
    own = str(Path(__file__).resolve().parents[1])  # steerlsp.server's sources
    guard = ImportGuard([*sys.path, own])
    sys.meta_path.insert(0, guard)
    return guard


class Linter:
    """pylint's linter, configured once and reused for every text."""

    def __init__(self, rcfile: str) -> None:
        from pylint.lint import Run
        from pylint.reporters import CollectingReporter

        self._reporter = CollectingReporter()
        # A first lint imports pylint's checkers and parses builtins; the file is never read.
        warmup = os.path.abspath("steerlsp_warmup.py")
        with _stdin_text("import os\n"):
            run = Run([*pylint_args(rcfile), warmup], reporter=self._reporter, exit=False)
        self._linter = run.linter
        self._checks = 0
        self._mtimes: dict[str, int | None] = {}
        self._linted = ""  # the file being linted, as _same_file_key gives it
        self._forget(warmup)
        self._register_annotations()

    def lint(self, path: str, text: str) -> list[dict[str, Any]]:
        """The enabled messages for ``text`` as the module at ``path``."""
        self._drop_changed()
        self._forget(path)  # a copy parsed from disk must not stand in for ``text``
        self._reporter.reset()
        self._linted = _same_file_key(path)
        try:
            with _stdin_text(text):
                self._linter.check([path])
        finally:
            self._linted = ""
            self._forget(path)
            self._checks += 1
            if self._checks % FLUSH_EVERY == 0:
                self._flush()
        lines = [bare(line) for line in split_keepends(text)]
        return [
            problem_dict(message, lines)
            for message in self._reporter.messages
            if message.msg_id in CODES
        ]

    def _forget(self, path: str) -> None:
        """Drop the module at ``path`` from astroid's cache: the next text replaces it."""
        from astroid import MANAGER

        target = _same_file_key(path)
        for name, module in list(MANAGER.astroid_cache.items()):
            if module.file and _same_file_key(module.file) == target:
                MANAGER.astroid_cache.pop(name, None)
                self._mtimes.pop(name, None)

    def _drop_changed(self) -> None:
        """Drop cached modules whose file changed on disk since they were first seen.

        Library modules never change and stay parsed; a workspace module the
        user saved is parsed again.
        """
        from astroid import MANAGER

        for name, module in list(MANAGER.astroid_cache.items()):
            if not module.file:
                continue
            try:
                mtime: int | None = os.stat(module.file).st_mtime_ns
            except OSError:
                mtime = None
            if self._mtimes.setdefault(name, mtime) != mtime:
                MANAGER.astroid_cache.pop(name, None)
                del self._mtimes[name]

    def _flush(self) -> None:
        from astroid import MANAGER
        from pylint.checkers.utils import clear_lru_caches

        MANAGER.clear_cache()  # this drops every transform, ours too
        clear_lru_caches()
        self._mtimes.clear()
        self._linter.stats.by_module.clear()
        self._register_annotations()

    def _register_annotations(self) -> None:
        """Infer the linted file's annotated parameters from their annotations.

        pylint infers a parameter only from its default and call sites, so
        ``def total(cart: Cart): cart.totl()`` passes unnoticed; yet completing
        inside a typed function is errorReport's common case. Only the linted
        module gets this (libraries keep pylint's usual inference), and only
        an annotation that is one plain class is used.
        """
        from astroid import MANAGER, nodes
        from astroid.inference_tip import inference_tip

        def in_linted_file(node: nodes.AssignName) -> bool:
            if not isinstance(node.parent, nodes.Arguments) or not self._linted:
                return False
            file = node.root().file
            return bool(file) and _same_file_key(file) == self._linted

        MANAGER.register_transform(
            nodes.AssignName, inference_tip(infer_from_annotation), in_linted_file
        )


# ---- annotated parameters, in the linted file only ----------------------------


def infer_from_annotation(node: Any, context: Any = None, **_: Any) -> Iterator[Any]:
    """An instance of a parameter's annotation, when it plainly names one real class.

    ``Cart``, ``shop.Cart`` and ``list[Item]`` (as a list) qualify. A union,
    ``Optional``, ``type[...]``, a string, ``Any``, a ``TypeVar`` or
    ``NewType`` (classes astroid makes up), a parameter the function narrows
    with ``isinstance``/``hasattr``, and a call site that knows the argument
    all fall back to pylint's own inference: a wrong guess here would be a
    false error in a repair prompt.
    """
    from astroid import nodes
    from astroid.exceptions import InferenceError, UseInferenceDefault

    if context is not None and context.callcontext is not None:
        raise UseInferenceDefault
    annotation = _annotation_of(node)
    if isinstance(annotation, nodes.Subscript):
        annotation = annotation.value
    if not isinstance(annotation, nodes.Name | nodes.Attribute) or _narrowed(node):
        raise UseInferenceDefault
    try:
        inferred = list(annotation.infer())
    except InferenceError as error:
        raise UseInferenceDefault from error
    if len(inferred) != 1 or not isinstance(inferred[0], nodes.ClassDef):
        raise UseInferenceDefault
    cls = inferred[0]
    # astroid builds a class-syntax NamedTuple as a tuple subclass in a module named "";
    # its made-up TypeVar and NewType classes are no tuples.
    made_up = cls.root().name in _NOT_CLASSES and not _is_tuple(cls)
    if made_up or cls.qname() in _NOT_CLASSES:
        raise UseInferenceDefault
    return iter([cls.instantiate_class()])


# Modules whose "classes" are typing constructs, and classes that say nothing.
_NOT_CLASSES = frozenset(("", "typing", "typing_extensions", "builtins.object", "builtins.type"))


def _is_tuple(cls: Any) -> bool:
    try:
        return bool(cls.is_subtype_of("builtins.tuple"))
    except Exception:  # astroid cannot walk the ancestors: not known to be one
        return False


def _narrowed(node: Any) -> bool:
    """Whether the function tests the parameter's type (``isinstance(x, ...)``)."""
    from astroid import nodes

    function = node.parent.parent
    for call in function.nodes_of_class(nodes.Call):
        if (
            isinstance(call.func, nodes.Name)
            and call.func.name in ("isinstance", "hasattr", "issubclass", "type")
            and call.args
            and isinstance(call.args[0], nodes.Name)
            and call.args[0].name == node.name
        ):
            return True
    return False


def _annotation_of(node: Any) -> Any:
    arguments = node.parent
    for names, annotated in (
        (arguments.posonlyargs, arguments.posonlyargs_annotations),
        (arguments.args or [], arguments.annotations),
        (arguments.kwonlyargs, arguments.kwonlyargs_annotations),
    ):
        for name, annotation in zip(names, annotated, strict=False):
            if name is node:
                return annotation
    return None


def _same_file_key(path: str) -> str:
    """A path as compared with astroid's ``module.file``: no syscalls, it runs per module."""
    return os.path.normcase(os.path.abspath(path))


def problem_dict(message: Any, lines: Sequence[str]) -> dict[str, Any]:
    """A pylint message as Problem's fields: 0-based lines, code-point columns.

    pylint counts lines from 1 and columns in UTF-8 bytes (astroid's
    ``col_offset``).
    """
    line = max(int(message.line or 1) - 1, 0)
    end_line = line if message.end_line is None else max(int(message.end_line) - 1, line)

    def column(at: int, value: int | None) -> int:
        text = lines[at] if at < len(lines) else ""
        return to_code_points(text, max(int(value or 0), 0), UTF8)

    start = column(line, message.column)
    end = column(end_line, message.end_column) if message.end_column is not None else start
    return {
        "line": line,
        "column": start,
        "end_line": end_line,
        "end_column": end,
        "code": message.msg_id,
        "message": message.msg,
    }


@contextlib.contextmanager
def _stdin_text(text: str) -> Iterator[None]:
    """Let pylint's ``--from-stdin`` read ``text``.

    ``--from-stdin`` is pylint's public way to lint a buffer as if it were at
    a path (module name, relative imports and package root all come from the
    path). It reads ``sys.stdin`` through a ``TextIOWrapper`` it re-wraps, so a
    ``TextIOWrapper`` over the text's bytes is all it needs: no private
    function is patched. The worker's own requests come through a separate
    handle on the real stdin, so swapping ``sys.stdin`` is safe here.
    """
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = saved


def _empty_rcfile() -> str:
    """A configuration file with nothing in it, written nowhere near the workspace."""
    if os.name == "posix":
        return os.devnull  # read as an empty ini file
    with tempfile.NamedTemporaryFile("w", suffix=".ini", prefix="steerlsp-", delete=False) as f:
        return f.name


def serve(extra_paths: Sequence[str]) -> None:
    """The worker's main loop: answer requests until stdin closes."""
    # Our protocol owns the real stdin/stdout; anything pylint prints goes to stderr.
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr

    guard.install(process=True)  # astroid reads what the project imports
    guard.exit_on_memory_error(isolation.MEMORY_EXIT)
    install_import_guard()
    sys.path.extend(p for p in extra_paths if p not in sys.path)
    linter = Linter(_empty_rcfile())

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    reply({"ready": True})
    for line in requests:
        request_id = None
        try:
            request = json.loads(line)
            request_id = request.get("id")
            problems = linter.lint(str(request["path"]), str(request["text"]))
        except Exception as error:  # one bad text must not end the worker
            reply({"id": request_id, "error": f"{type(error).__name__}: {error}"})
        else:
            reply({"id": request_id, "problems": problems})
