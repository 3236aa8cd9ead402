"""A long-lived pylint process for errorReport, as the server sees it: start, ask, kill.

Starting pylint costs about a second and parsing the libraries a file imports
(astroid's cache) more; a warm worker lints a 100-line file in tens of
milliseconds. It runs as a separate process so that a hung or crashed
inference can be killed without taking the server down. The process side is
:mod:`~steerlsp.server.chatlsp.lint_child`; it is started as this module
(``python -I -m steerlsp.server.chatlsp.lint_worker``), so that the process
is named for what it is.

Protocol, one JSON object per line: the worker first writes ``{"ready": true}``,
then answers each ``{"id", "path", "text"}`` on stdin with ``{"id", "problems"}``
or ``{"id", "error"}`` on stdout. Problems are dicts with Problem's fields
(0-based lines, code-point columns) without ``source``.

Nothing here imports pylint: the server imports this module.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

from steerlsp.server.upstream import isolation
from steerlsp.server.upstream.connection import DEFAULT_MEMORY_LIMIT_MB

MODULE = "steerlsp.server.chatlsp.lint_worker"
# The pylint errors that matter in generated code: a wrong member, name, import
# or call. Style and refactoring messages would only distract a repair prompt.
CODES = (
    "E1101",  # no-member
    "E0602",  # undefined-variable
    "E0611",  # no-name-in-module
    "E0401",  # import-error
    "E1120",  # no-value-for-parameter
    "E1121",  # too-many-function-args
    "E1123",  # unexpected-keyword-arg
    "E1102",  # not-callable
    "E1111",  # assignment-from-no-return
    "E1133",  # not-an-iterable
    "E1136",  # unsubscriptable-object
)


class WorkerGone(Exception):
    """The worker exited (crashed, was killed, or never started)."""


class LintFailed(Exception):
    """The worker is alive but pylint raised on this text."""


class LintWorker:
    """One worker process, as the server sees it: start, ask, kill."""

    def __init__(
        self,
        extra_paths: Sequence[str],
        cwd: str,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
    ) -> None:
        """Start the process (``OSError`` if it cannot be started); do not wait for it.
        Past ``memory_limit_mb`` of address space it exits (:class:`WorkerGone`)."""
        env = {key: value for key, value in isolation.child_env().items() if key != "PYLINTRC"}
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-m", MODULE, *extra_paths],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            encoding="utf-8",
            start_new_session=os.name == "posix",  # its own group: kill() reaches all of it
        )
        isolation.limit_memory(self._process.pid, memory_limit_mb)
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._ready = False
        self._ids = itertools.count(1)
        reader = threading.Thread(
            target=_read_replies,
            args=(self._process.stdout, self._replies),
            name="steerlsp-lint-reader",
            daemon=True,
        )
        reader.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    def wait_ready(self, timeout: float) -> None:
        """Block until pylint is loaded; ``WorkerGone`` or ``TimeoutError`` if it is not."""
        if not self._ready:
            self._next_reply(timeout)  # the first line is the ready line
            self._ready = True

    def lint(self, path: str, text: str, timeout: float) -> list[dict[str, Any]]:
        """pylint's problems on ``text`` linted as if it were at ``path``.

        Raises ``TimeoutError`` (the worker may still be busy: kill it),
        ``WorkerGone`` or ``LintFailed``.
        """
        request_id = next(self._ids)
        line = json.dumps({"id": request_id, "path": path, "text": text}) + "\n"
        stdin = self._process.stdin
        try:
            assert stdin is not None
            stdin.write(line)
            stdin.flush()
        except (OSError, ValueError) as error:
            raise WorkerGone(str(error)) from error
        while True:
            reply = self._next_reply(timeout)
            if reply.get("id") == request_id:
                break
        if "error" in reply:
            raise LintFailed(str(reply["error"]))
        problems = reply.get("problems")
        return problems if isinstance(problems, list) else []

    def kill(self) -> None:
        """Kill the worker's whole process group and reap it."""
        if self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if os.name == "posix":
                    os.killpg(self._process.pid, signal.SIGKILL)
                else:
                    self._process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)
        with contextlib.suppress(OSError, ValueError):
            if self._process.stdin is not None:
                self._process.stdin.close()
        # stdout is the reader thread's: it closes it after the end of file.

    def _next_reply(self, timeout: float) -> dict[str, Any]:
        try:
            reply = self._replies.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            raise TimeoutError(f"no reply from the lint worker in {timeout:g} s") from None
        if reply is None:
            raise WorkerGone("the lint worker exited")
        return reply


def _read_replies(stdout: IO[str] | None, replies: queue.Queue[dict[str, Any] | None]) -> None:
    """Reader thread: every JSON line the worker writes, then None at its end."""
    if stdout is None:
        replies.put(None)
        return
    try:
        with stdout:
            for line in stdout:
                try:
                    reply = json.loads(line)
                except ValueError:
                    continue
                if isinstance(reply, dict):
                    replies.put(reply)
    except (OSError, ValueError):
        pass  # a broken pipe is the end of the worker too
    finally:
        replies.put(None)


if __name__ == "__main__":
    from steerlsp.server.chatlsp.lint_child import serve

    serve(sys.argv[1:])
