"""Deprecation read at runtime: opt-in, in a sandboxed child of the project's interpreter.

The static reader (``models.deprecation``) misses what only running code
shows: a ``__deprecated__`` set by a decorator it does not know (PEP 702's
attribute), a module ``__getattr__`` that warns for old names, a class body
built by a metaclass. This module asks the project's own interpreter instead:
a child imports the definition's module, reads each name under
``warnings.catch_warnings`` and reports what is deprecated.

Importing runs project code, so the check is off unless the user asks for it
(``steering.runtimeDeprecation``) and trusts the workspace
(``python.trustWorkspace``); the server decides that. The child runs isolated
(``-I``: no user site, no ``PYTHONPATH``, no working directory on the path) in
a fresh temporary directory, with a reduced environment, the network disabled,
a timeout and bounded output. Any failure means "nothing found".

Lines are 0-based, as in LSP; ``ast`` counts from 1.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import signal
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from steerlsp.models.deprecation.static import Deprecation, read_source
from steerlsp.models.deprecation.text import replacement_in

log = logging.getLogger(__name__)

# What one probe may ask about and print: a class's items, each message cut short.
MAX_NAMES = 256
MAX_OUTPUT = 256 * 1024
_MAX_REASON = 300
# Probes whose answers are kept (least recently used go first).
MAX_CACHED = 512
# The environment the child keeps (Windows needs SYSTEMROOT to start at all).
_KEPT_ENVIRONMENT = ("PATH", "HOME", "LANG", "SYSTEMROOT")


class Located(NamedTuple):
    """Where a definition lives, as an import sees it."""

    module: str  # dotted module name: ``pkg.sub.mod``
    owner: str | None  # qualified name of the class whose body holds it; None: module level
    root: str  # the directory to import ``module`` from (the first parent without __init__.py)


def locate(path: str | os.PathLike[str], line: int) -> Located | None:
    """The module of a ``.py`` file and the class holding its definition at 0-based ``line``.

    The module name comes from the parents that hold an ``__init__.py``; the
    first one that does not is the import root. None for anything else: a
    stub, an unreadable, oversized or unparseable file, a name that is no
    identifier.
    """
    file = Path(path)
    if file.suffix != ".py":
        return None
    data = read_source(file)
    if data is None:
        return None
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    parts = [] if file.stem == "__init__" else [file.stem]
    folder = file.absolute().parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    owner = _owner(tree.body, line)
    return Located(".".join(parts), ".".join(owner) or None, str(folder))


def _owner(body: list[ast.stmt], line: int) -> list[str]:
    """The names of the classes, outermost first, whose bodies hold 0-based ``line``."""
    for statement in _scope(body):
        end = (statement.end_lineno or statement.lineno) - 1
        if not _first_line(statement) <= line <= end:
            continue
        if isinstance(statement, ast.ClassDef) and line >= _first_line(statement.body[0]):
            return [statement.name, *_owner(statement.body, line)]
        return []  # the ``class`` line itself, or inside a function
    return []


def _first_line(statement: ast.stmt) -> int:
    """The 0-based line a statement starts on, its decorators included."""
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(d.lineno for d in decorators)]) - 1


def _scope(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """A scope's statements, including those under ``if``/``try``/``with`` at its level."""
    for statement in body:
        if isinstance(statement, ast.If | ast.With):
            yield from _scope([*statement.body, *getattr(statement, "orelse", [])])
        elif isinstance(statement, ast.Try):
            blocks = [*statement.body, *statement.orelse, *statement.finalbody]
            yield from _scope(blocks + [s for h in statement.handlers for s in h.body])
        else:
            yield statement


# The child: reads the request, shuts the network and its own stdout, imports the
# module, reads each name and prints {name: message} for the deprecated ones. Every
# module it needs is imported before the import root goes on the path, so a project
# file named ``json.py`` cannot take their place.
CHILD = r"""
import json, os, socket, sys, types, warnings, importlib

request = json.loads(sys.stdin.read())
out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # what the project prints goes nowhere

def _refuse(*args, **kwargs):
    raise OSError("network access is disabled in steerlsp's runtime deprecation check")

class _NoSocket(socket.socket):  # a class, so that ``class SSLSocket(socket)`` still imports
    def __init__(self, *args, **kwargs):
        _refuse()

socket.socket = socket.SocketType = _NoSocket
socket.create_connection = socket.getaddrinfo = _refuse

CATEGORIES = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
MISSING = object()

def marked(value):
    # PEP 702's __deprecated__, set on the object itself (not inherited from a base
    # class, and not made up by a permissive __getattr__).
    for obj in (value, getattr(value, "__func__", None), getattr(value, "fget", None)):
        if obj is None:
            continue
        try:
            own = vars(obj)
        except TypeError:
            continue
        if type(own) in (dict, types.MappingProxyType) and own.get("__deprecated__"):
            mark = own["__deprecated__"]
            return mark if isinstance(mark, str) else "deprecated"
    return None

root = request.get("root")
if root and root not in sys.path:
    sys.path.insert(0, root)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    target = importlib.import_module(request["module"])
    for part in (request.get("owner") or "").split("."):
        if part:
            target = getattr(target, part)
found = {}
for name in request["names"]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = getattr(target, name)
        except Exception:
            value = MISSING
    message = next(
        (str(w.message) for w in caught if issubclass(w.category, CATEGORIES)), None
    )
    if message is None and value is not MISSING:
        message = marked(value)
    if message is not None:
        found[name] = message[:1000]
out.write(json.dumps(found))
out.flush()
os._exit(0)
"""


class RuntimeDeprecations:
    """Probes a Python interpreter for deprecated names (see the module docstring).

    Answers are kept per (module, owner, name) while the module file's mtime is
    unchanged; a probe that failed counts as "none deprecated" for the names it
    asked about, so a module that hangs at import costs one timeout, not one per
    completion. Safe to share between threads.
    """

    def __init__(self, python: str, timeout: float = 5.0) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        self.python = python
        self.timeout = timeout
        self._cache: OrderedDict[
            tuple[str | None, str, str | None], tuple[int | None, dict[str, Deprecation | None]]
        ] = OrderedDict()
        self._lock = threading.Lock()

    def probe(
        self,
        module: str,
        owner: str | None,
        names: Iterable[str],
        *,
        root: str | None = None,
        path: str | os.PathLike[str] | None = None,
    ) -> dict[str, Deprecation]:
        """The deprecated ones among ``names`` of ``module`` (or its class ``owner``).

        ``root`` is put on the child's ``sys.path`` (``-I`` ignores
        ``PYTHONPATH``); ``path``, the module's file, dates the cached answers.
        """
        wanted = [n for n in dict.fromkeys(names) if n.isidentifier()][:MAX_NAMES]
        key = (root, module, owner)
        mtime = _mtime(path)
        with self._lock:
            cached = self._cache.get(key)
            known = cached[1] if cached is not None and cached[0] == mtime else {}
            missing = [n for n in wanted if n not in known]
        if missing:
            messages = self._run({"module": module, "owner": owner, "names": missing, "root": root})
            fresh = {n: _deprecation(n, messages[n]) if n in messages else None for n in missing}
            with self._lock:
                known = {**known, **fresh}
                self._cache[key] = (mtime, known)
                self._cache.move_to_end(key)
                while len(self._cache) > MAX_CACHED:
                    self._cache.popitem(last=False)
        return {n: d for n in wanted if (d := known.get(n)) is not None}

    def _run(self, request: dict[str, object]) -> dict[str, str]:
        """The child's answer ``{name: message}``; {} on a timeout, a crash or odd output."""
        try:
            with tempfile.TemporaryDirectory(prefix="steerlsp-runtime-") as cwd:
                output = _sandboxed(
                    [self.python, "-I", "-B", "-c", CHILD],
                    json.dumps(request).encode(),
                    cwd,
                    self.timeout,
                )
        except OSError as exc:
            log.debug("runtime deprecation check of %s failed: %s", request["module"], exc)
            return {}
        if output is None:
            log.debug("runtime deprecation check of %s gave no answer", request["module"])
            return {}
        try:
            answer = json.loads(output)
        except ValueError:
            log.debug("runtime deprecation check of %s: unreadable answer", request["module"])
            return {}
        if not isinstance(answer, dict):
            return {}
        return {k: v for k, v in answer.items() if isinstance(k, str) and isinstance(v, str)}


def _sandboxed(command: list[str], stdin: bytes, cwd: str, timeout: float) -> bytes | None:
    """Run ``command`` isolated; its stdout (at most :data:`MAX_OUTPUT` bytes) if it
    exited 0 within ``timeout`` seconds, else None. Killed, with its process group,
    on a timeout. Raises OSError when it cannot be started."""
    env = {k: os.environ[k] for k in _KEPT_ENVIRONMENT if k in os.environ}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # for the record: -I ignores it, -B does the work
    env["PYTHONSAFEPATH"] = "1"  # what it starts in turn keeps the working directory off too
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
        start_new_session=os.name == "posix",  # its own group: killed with what it started
    )
    chunks: list[bytes] = []
    assert process.stdout is not None and process.stdin is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: chunks.append(stdout.read(MAX_OUTPUT + 1)))
    reader.daemon = True
    reader.start()
    try:
        try:
            process.stdin.write(stdin)
            process.stdin.close()
        except OSError:  # it exited before reading: its exit status tells
            pass
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        return None
    finally:
        reader.join(1.0)
        if reader.is_alive():  # something it started still holds the pipe open
            _kill(process)
            reader.join(1.0)
        if not reader.is_alive():
            stdout.close()
    output = b"".join(chunks)
    if process.returncode != 0 or len(output) > MAX_OUTPUT:
        return None
    return output


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the child and (on POSIX) every process of its session's group."""
    try:
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except OSError:
        pass
    process.wait()


def _mtime(path: str | os.PathLike[str] | None) -> int | None:
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return None


def _deprecation(name: str, message: str) -> Deprecation:
    reason = " ".join(message.split())[:_MAX_REASON] or "deprecated"
    return Deprecation(reason, replacement_in(reason, avoid=name), "runtime")
