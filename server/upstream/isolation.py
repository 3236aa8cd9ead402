"""How every process steerlsp starts is kept away from the workspace.

Editors start language servers in the project root, and a Python process puts
its working directory (``-m``, ``-c``) or its script's directory first on
``sys.path``. ``-I`` keeps that off pylsp's own path, but not off the paths of
what pylsp starts in turn (``python -m black``, pylint's ``-c``), which would
import a ``black.py`` or ``json.py`` in the project. So every child gets:

- ``PYTHONSAFEPATH=1`` in its environment, inherited by its own children:
  no Python process below steerlsp prepends a working or script directory;
- a working directory outside the workspace (:func:`neutral_cwd`, private and
  empty), so no tool finds a project's ``pylintrc``, ``pyproject.toml`` or
  ``setup.cfg`` (an ``init-hook``) by looking where it runs;
- its own stdin pipe (or ``/dev/null``), never the editor's;
- for the default pylsp, :mod:`steerlsp.guard` before anything else
  (:func:`pylsp_command`) and an address-space limit (:func:`limit_memory`).

A process that reaches its memory limit exits with :data:`MEMORY_EXIT`, and
its supervisor restarts it like a crashed one.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import site
import stat
import sys
import tempfile
from collections.abc import Mapping

from steerlsp import guard

log = logging.getLogger(__name__)

# The exit status of a guarded process that ran out of its address space.
MEMORY_EXIT = 86
# glibc reserves 64 MB of address space per malloc arena, up to 8 per core: a pylsp
# with many threads on a large machine would reach an address-space limit unused.
MALLOC_ARENAS = "2"

_CWD_PREFIX = "steerlsp-cwd-"  # then the pid of the steerlsp that made it
_cwd: str | None = None


def neutral_cwd() -> str:
    """A private, empty directory for children to run in (made once per process, named
    by its pid; those of our processes that were killed are removed first)."""
    global _cwd
    if _cwd is None or not os.path.isdir(_cwd):
        sweep_neutral_dirs(tempfile.gettempdir())
        _cwd = tempfile.mkdtemp(prefix=f"{_CWD_PREFIX}{os.getpid()}-")
    return _cwd


def sweep_neutral_dirs(parent: str) -> None:
    """Remove the neutral directories in ``parent`` that processes of this user left
    when they were killed (SIGKILL, the out-of-memory killer): ours, and no process
    with their pid alive."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            pid = _owner_pid(entry.name)
            if pid is None or pid == os.getpid() or _alive(pid):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
                    shutil.rmtree(entry.path, ignore_errors=True)


def _owner_pid(name: str) -> int | None:
    if not name.startswith(_CWD_PREFIX):
        return None
    pid, _, rest = name[len(_CWD_PREFIX) :].partition("-")
    return int(pid) if pid.isdigit() and rest else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: not ours to judge
    return True


def cleanup() -> None:
    """Remove the neutral directory (at exit)."""
    global _cwd
    if _cwd is not None:
        shutil.rmtree(_cwd, ignore_errors=True)
        _cwd = None


def set_trusted(trusted: bool) -> None:
    """Tell the children whether the workspace is trusted (``python.trustWorkspace``):
    a flag file in their working directory, read at each linter run."""
    flag = os.path.join(neutral_cwd(), guard.TRUSTED_FLAG)
    if trusted:
        with open(flag, "w"):
            pass
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(flag)


def child_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child: ``base`` (ours) with ``PYTHONSAFEPATH=1``."""
    env = dict(os.environ if base is None else base)
    env["PYTHONSAFEPATH"] = "1"
    env.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)
    return env


def protect_self(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Make what this process starts without :func:`child_env` safe too (Jedi's
    environment subprocess, a library's helper): they inherit ``PYTHONSAFEPATH``.
    Also drops a working-directory entry from our own ``sys.path`` (``python -m
    steerlsp`` run in the project), before anything imports torch or transformers."""
    environ["PYTHONSAFEPATH"] = "1"
    cwd = os.getcwd() if os.path.isdir(".") else None
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and (cwd is None or p != cwd)]


# Runs pylsp behind the file guard: argv is [-c, guard path, size limit, pylsp home, ...].
# The guard comes first so that nothing pylsp or Jedi reads escapes it; a user-site
# pylsp (hidden by -I) is added back as a site dir before it is imported.
_PYLSP_BOOTSTRAP = (
    guard.BOOTSTRAP_LOADER + "_limit = int(sys.argv.pop(1)); _home = sys.argv.pop(1); "
    "import site; _home and site.addsitedir(_home); "
    "guard.die_with_parent(); guard.keep_stdio(); guard.lint_when_idle(); "
    "guard.install(_limit, pylsp=True, process=True); "
    "guard.exit_on_memory_error(" + str(MEMORY_EXIT) + "); "
    "from pylsp.__main__ import main; sys.exit(main())"
)


def pylsp_command(max_bytes: int = guard.DEFAULT_LIMIT) -> list[str]:
    """pylsp from steerlsp's environment, isolated (``-I``) and behind the file guard.

    ``-I`` keeps the working directory and ``PYTHONPATH`` off ``sys.path``; pylsp
    still gets the editor's root from ``initialize``, and Jedi resolves the
    project's imports in its own subprocess, so isolation changes no completion.
    ``max_bytes``: the largest file Jedi, parso and pylsp's config readers read.
    """
    return [
        sys.executable,
        "-I",
        "-c",
        _PYLSP_BOOTSTRAP,
        guard_path(),
        str(max_bytes),
        _pylsp_home() or "",
    ]


def is_guarded(command: list[str]) -> bool:
    """Whether ``command`` is :func:`pylsp_command`'s (a Python that takes a memory limit)."""
    return len(command) > 3 and command[3] == _PYLSP_BOOTSTRAP


def shown_command(command: list[str]) -> list[str]:
    """``command`` as ``steerlsp/status`` shows it: the bootstrap's code summarised."""
    if not is_guarded(command):
        return command
    return [*command[:3], "<steerlsp.guard, then pylsp>", *command[4:]]


def guard_path() -> str:
    """The file guard's source, which children load by path."""
    return os.path.abspath(guard.__file__)


def limit_memory(pid: int, limit_mb: int | None) -> bool:
    """Cap a running child's address space at ``limit_mb`` (soft limit; None: none).

    Allocations past it fail; the guard then makes the process exit with
    :data:`MEMORY_EXIT`. Linux only (``prlimit``); elsewhere only the
    supervisor's resident-memory check holds. False when it could not be set.
    """
    try:
        import resource
    except ImportError:
        return False
    prlimit = getattr(resource, "prlimit", None)
    if prlimit is None:
        return False
    soft = resource.RLIM_INFINITY if limit_mb is None else limit_mb * 1024 * 1024
    try:
        _, hard = prlimit(pid, resource.RLIMIT_AS)
        prlimit(pid, resource.RLIMIT_AS, (soft, hard))
    except (OSError, ValueError) as exc:
        log.debug("could not limit the memory of pid %s: %s", pid, exc)
        return False
    return True


def yield_cpu(pid: int) -> bool:
    """Run ``pid`` only on a core nothing else wants: Linux's idle scheduling class
    (nice 19 where there is none). What it starts inherits it, and so do its threads
    when it is set before it starts any (just after the spawn).

    The private analysis instance runs so: on a small machine its Jedi work
    otherwise takes a core from the decode loop's team of threads, which then
    runs at half its speed (``bench/decode_contention.py``). False when it could
    not be set.
    """
    try:
        if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_IDLE"):
            os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
        else:
            os.setpriority(os.PRIO_PROCESS, pid, 19)
    except OSError as exc:
        log.debug("could not lower the priority of pid %s: %s", pid, exc)
        return False
    return True


def rss_mb(pid: int | None) -> float | None:
    """Resident memory of ``pid`` in MiB, from ``/proc/<pid>/status``; None if unknown."""
    if pid is None:
        return None
    with (
        contextlib.suppress(OSError, ValueError, IndexError),
        open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status,
    ):
        for line in status:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def _pylsp_home() -> str | None:
    """The directory pylsp is imported from, when only ``-I`` would hide it (a
    user-site or ``PYTHONPATH`` install)."""
    spec = importlib.util.find_spec("pylsp")
    if spec is None or spec.origin is None:
        return None
    home = os.path.dirname(os.path.dirname(os.path.abspath(spec.origin)))
    hidden = [site.getusersitepackages()]
    hidden += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(p)]
    if home in site.getsitepackages() or not any(_within(home, d) for d in hidden):
        return None
    return home


def _within(path: str, directory: str) -> bool:
    directory = os.path.abspath(directory)
    return path == directory or path.startswith(directory + os.sep)
