"""What every process of steerlsp loads first: reads of regular files only, of bounded
size, and an exit when memory runs out.

A cloned repository can hold symlinks to ``/dev/stdin``, ``/dev/zero`` or a
FIFO (git stores symlinks as they are), and the analysis libraries open
whatever path they meet: parso's ``FileIO`` for every module Jedi searches,
Jedi's project and ``bin/`` scans, pylsp's config readers. Reading
``/dev/stdin`` in pylsp eats its own LSP input; in steerlsp it would eat the
editor's. ``/dev/zero`` grows the reader without bound, and a FIFO blocks it
for good.

Every read here opens the path with its symlinks resolved, non-blocking (so
opening a FIFO returns at once), then checks the *open descriptor*: anything
but a regular file of at most ``limit`` bytes is refused, and a swap between
a check and the open is harmless. A refused file looks missing
(``FileNotFoundError``), which is what every caller already handles.

A child that reaches its address-space limit (``server/upstream/isolation.py`` sets
it) gets ``MemoryError`` wherever it allocates, and pylsp logs and survives
most of them in a state nobody tested: :func:`exit_on_memory_error` turns the
first one into an exit, which the supervisor restarts like a crash.

This module imports nothing but the standard library: child processes load it
by path, before anything else, through :data:`BOOTSTRAP_LOADER`.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import fcntl
import importlib
import io
import logging
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

# The largest file read; the same bound as ``upstream.maxDocumentBytes``' default.
DEFAULT_LIMIT = 5 * 1024 * 1024

# Modules that open workspace paths with the builtin ``open``, and what they read.
# Each gets a guarded ``open`` in its globals (a global shadows the builtin).
ANALYSIS_MODULES: dict[str, str] = {
    "parso.file_io": "FileIO.read: every module Jedi parses or searches",
    "jedi.api": "Script(path=...) without code",
    "jedi.api.project": ".jedi/project.json and the Django manage.py check",
    "jedi.api.environment": "the interpreter's hash of a configured environment",
    "jedi.inference.sys_path": "buildout's bin/* scripts, read a line each",
}
PYLSP_MODULES: dict[str, str] = {
    "pylsp.workspace": "Document.source of a document the editor did not open",
    "configparser": "pylsp's setup.cfg, tox.ini, .flake8 and pycodestyle readers",
}

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_builtin_open = builtins.open


def _null_device() -> int | None:
    try:
        return os.stat(os.devnull).st_rdev
    except OSError:
        return None


# /dev/null reads empty at once: the one device allowed (an empty config file, say).
_NULL = _null_device()


class Refused(FileNotFoundError):
    """A path that is not a regular file of bounded size: read as missing."""


def open_fd(path: str | os.PathLike[str], limit: int | None = DEFAULT_LIMIT) -> int:
    """A descriptor of ``path`` (symlinks resolved) checked to be a regular file of at
    most ``limit`` bytes, in blocking mode. Raises :class:`Refused` or ``OSError``."""
    real = os.path.realpath(os.fspath(path))
    fd = os.open(real, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(path))
        null = stat.S_ISCHR(info.st_mode) and _NULL is not None and info.st_rdev == _NULL
        if not stat.S_ISREG(info.st_mode) and not null:
            raise Refused(errno.ENOENT, "steerlsp reads regular files only", os.fspath(path))
        if limit is not None and info.st_size > limit:
            raise Refused(errno.ENOENT, f"steerlsp reads files up to {limit} bytes", path)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~getattr(os, "O_NONBLOCK", 0))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_head(path: str | os.PathLike[str], size: int) -> tuple[bytes, os.stat_result] | None:
    """The first ``size`` bytes of ``path`` if it is a regular file (symlinks resolved),
    and its status as read; None for anything else (a FIFO, device, socket, directory,
    missing file). Never blocks on the file's kind."""
    try:
        fd = open_fd(path, limit=None)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        info = os.fstat(fd)
        chunks = []
        left = size
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks), info


def read_regular(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes, else None
    (see :func:`read_head`); never reads more than ``limit + 1`` bytes."""
    read = read_head(path, limit + 1)  # one byte more tells a file at the limit from a longer one
    if read is None or len(read[0]) > limit:
        return None
    return read[0]


def guarded_open(limit: int | None) -> Callable[..., Any]:
    """An ``open`` that refuses to read anything but a regular file of at most ``limit``
    bytes (``None``: any size); other modes and descriptors pass through."""

    def open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        # Descriptors, writes and a caller's own opener (or positional closefd) pass.
        passes = isinstance(file, int) or any(c in mode for c in "wax+")
        if passes or len(args) > 4 or kwargs.get("opener") is not None:
            return _builtin_open(file, mode, *args, **kwargs)
        fd = open_fd(file, limit)
        kwargs["closefd"] = True
        try:
            stream = _builtin_open(fd, mode, *args, **kwargs)
        except BaseException:
            os.close(fd)
            raise
        return stream

    open.steerlsp_guard = True  # type: ignore[attr-defined]
    return open


def guard_modules(modules: Iterable[str], limit: int = DEFAULT_LIMIT) -> list[str]:
    """Give each importable module of ``modules`` a guarded ``open``; the names guarded."""
    done = []
    opener = guarded_open(limit)
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        module.open = opener  # type: ignore[attr-defined]
        done.append(name)
    return done


def guard_process() -> None:
    """Every ``open`` of this process (builtins and ``io``) refuses non-regular files.

    For child processes that only analyse code (pylsp, the lint worker): any
    read site the module lists miss still cannot block on a FIFO or stream a
    device. No size limit here: a library may legitimately read a large file.
    """
    opener = guarded_open(None)
    builtins.open = opener
    io.open = opener


# pylsp's linters that it runs in the workspace root, where each reads the project's
# configuration: pylint's ``init-hook`` and ``load-plugins``, flake8's local plugins.
LINTER_MODULES = ("pylsp.plugins.pylint_lint", "pylsp.plugins.flake8_lint")
# In a child's working directory (steerlsp's private one): the workspace is trusted.
TRUSTED_FLAG = "steerlsp-workspace-trusted"


def trusted() -> bool:
    """Whether steerlsp marked the workspace trusted (a flag in our working directory)."""
    return os.path.exists(TRUSTED_FLAG)


def linters_stay_home() -> list[str]:
    """pylsp's linters run in this process's working directory (steerlsp's private one),
    not the workspace, unless the workspace is trusted: the project's configuration
    can run code. The modules patched."""
    done = []
    for name in LINTER_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        popen = getattr(module, "Popen", None)
        if popen is None:
            continue

        def homebound(*args: Any, _popen: Any = popen, **kwargs: Any) -> Any:
            if "cwd" in kwargs and not trusted():
                kwargs["cwd"] = os.getcwd()
            return _popen(*args, **kwargs)

        module.Popen = homebound  # type: ignore[attr-defined]
        done.append(name)
    return done


def install(limit: int = DEFAULT_LIMIT, *, pylsp: bool = False, process: bool = False) -> None:
    """Guard the analysis libraries' reads and ``compile`` (and pylsp's reads, its
    linters' working directory and the files pylint reads, with ``pylsp``; every
    ``open`` of the process with ``process``)."""
    if process:
        guard_process()
    guard_compile()
    guard_modules(ANALYSIS_MODULES, limit)
    if pylsp:
        guard_modules(PYLSP_MODULES, limit)
        linters_stay_home()
        pylint_reads_regular_files(limit)


# Loads this file by path (``sys.argv[1]``) and removes its argument: what a ``-c``
# bootstrap runs first, so that the guard holds before anything reads a file.
BOOTSTRAP_LOADER = (
    "import sys, importlib.util as _u; "
    "_s = _u.spec_from_file_location('steerlsp_guard', sys.argv.pop(1)); "
    "guard = _u.module_from_spec(_s); _s.loader.exec_module(guard); "
)


def exit_on_memory_error(code: int) -> None:
    """Exit with ``code`` at the first ``MemoryError``: uncaught (in any thread) or
    caught and logged with its traceback, as pylsp and its JSON-RPC endpoint do."""

    def out_of_memory(error: BaseException | None) -> None:
        if isinstance(error, MemoryError):
            with contextlib.suppress(OSError):
                os.write(2, b"steerlsp guard: out of memory (address-space limit); exiting\n")
            os._exit(code)

    class _Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info:
                out_of_memory(record.exc_info[1])

    def except_hook(kind: Any, value: BaseException, tb: Any) -> None:
        out_of_memory(value)
        previous_hook(kind, value, tb)

    def thread_hook(args: Any) -> None:
        out_of_memory(args.exc_value)
        previous_thread_hook(args)

    previous_hook, previous_thread_hook = sys.excepthook, threading.excepthook
    sys.excepthook = except_hook
    threading.excepthook = thread_hook
    # On the logger class, not a handler of the root logger: a library may replace
    # the handlers or raise the level, and its records must still be seen.
    watch = _Watch()
    handle = logging.Logger.handle

    def watched(self: logging.Logger, record: logging.LogRecord) -> None:
        watch.emit(record)
        handle(self, record)

    logging.Logger.handle = watched  # type: ignore[method-assign]


def die_with_parent() -> None:
    """End with the process that started this one (Linux), even when it is killed, and
    take this process's group with it (pylint and black runs, Jedi's subprocess): a
    pylsp busy on a large project would otherwise run on, orphaned. For a group
    leader (started in a process group of its own) only."""
    if not sys.platform.startswith("linux"):
        return
    import signal

    def end_group(signum: int, frame: Any) -> None:
        with contextlib.suppress(OSError):
            os.killpg(0, signal.SIGKILL)
        os._exit(1)

    signal.signal(signal.SIGTERM, end_group)
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before the signal was asked for
        end_group(signal.SIGTERM, None)


def lint_when_idle() -> None:
    """pylsp's lints run only on a core nothing else wants: its ``threading.Timer``
    threads (the debounced lint of each document, and the parent watch) put
    themselves in Linux's idle scheduling class, and so does what they start
    (pylint). Its requests (the completion menu, hover) keep their priority.
    Elsewhere nothing changes: a priority set there would hold for every thread.

    pylsp lints a document half a second after each change, which is when an editor
    asks steerlsp for a completion: a lint of a large file took a core from the
    model's decode loop, whose team of threads then ran at about half its speed.
    Only in steerlsp's session does the class count (Linux's autogroup shares the
    CPU between sessions first): ``UpstreamProcess`` starts the default pylsp there.
    """
    if not hasattr(os, "SCHED_IDLE"):
        return
    run = threading.Timer.run

    def idle_run(self: threading.Timer) -> None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # this thread only
        run(self)

    threading.Timer.run = idle_run  # type: ignore[method-assign, assignment]


def keep_stdio() -> None:
    """This process's protocol streams, kept for ``sys.stdin`` and ``sys.stdout`` alone:
    descriptor 0 becomes ``/dev/null`` and descriptor 1 stderr.

    A child started without its own stdin (pylint, black) would otherwise hold the
    protocol pipe, and a path that leads to ``/dev/stdin`` or ``/dev/stdout`` would
    read the protocol away from the reader. Call before anything reads stdin.
    """
    reading, writing = os.dup(0), os.dup(1)  # not inheritable (PEP 446)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdin = os.fdopen(reading, "r", encoding="utf-8", errors="replace")
    sys.stdout = os.fdopen(writing, "w", encoding="utf-8", errors="replace")


def readable(path: Any, limit: int | None = None) -> bool:
    """Whether ``path`` is a regular file (symlinks followed) of at most ``limit`` bytes,
    or does not exist; a special file, or one too large, is not. Never blocks."""
    try:
        info = os.stat(path)
    except (OSError, ValueError, TypeError):
        return not isinstance(path, (str, bytes, os.PathLike))
    if stat.S_ISREG(info.st_mode):
        return limit is None or info.st_size <= limit
    return False


def safe_filename(filename: Any) -> Any:
    """A filename for ``compile``: the same, unless it names a file that is not regular.

    On a syntax error CPython opens the file named in ``compile``'s ``filename`` to
    quote the line: a FIFO blocks the caller for good and ``/dev/stdin`` reads the
    protocol. pyflakes, mccabe and ``ast.parse`` all pass a document's path there.
    """
    if isinstance(filename, (str, bytes, os.PathLike)):
        name = os.fsdecode(filename)
        if name and not name.startswith("<") and not readable(name):
            return f"<{name}>"
    return filename


def guard_compile() -> None:
    """``compile`` (so ``ast.parse``) in this process quotes no special file."""
    original = builtins.compile

    def compile(source: Any, filename: Any, *args: Any, **kwargs: Any) -> Any:
        return original(source, safe_filename(filename), *args, **kwargs)

    compile.steerlsp_guard = True  # type: ignore[attr-defined]
    if not getattr(builtins.compile, "steerlsp_guard", False):
        builtins.compile = compile


def pylint_reads_regular_files(limit: int) -> bool:
    """pylsp's pylint plugin lints a saved document from its path on disk: skip one
    that is not a regular file of at most ``limit`` bytes (a FIFO would block pylint
    for good, a 50 MB module run it for minutes at 1 GB). True when patched."""
    try:
        module = importlib.import_module("pylsp.plugins.pylint_lint")
    except ImportError:
        return False
    linter = getattr(module, "PylintLinter", None)
    stdio = getattr(module, "_run_pylint_stdio", None)
    if linter is None or stdio is None:
        return False
    lint = linter.lint.__func__

    def guarded_lint(cls: Any, document: Any, is_saved: Any, flags: Any = "") -> Any:
        if not readable(getattr(document, "path", None), limit):
            return []
        return lint(cls, document, is_saved, flags)

    def guarded_stdio(executable: Any, document: Any, flags: Any) -> Any:
        if not readable(getattr(document, "path", None), limit):
            return ""
        return stdio(executable, document, flags)

    linter.lint = classmethod(guarded_lint)
    module._run_pylint_stdio = guarded_stdio  # type: ignore[attr-defined]
    return True
