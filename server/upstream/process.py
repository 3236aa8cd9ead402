"""The upstream language server process: spawn, framed I/O, exit detection.

This class knows nothing of LSP semantics; the proxy decides what to send and
what a crash means. Its stderr is drained into our log at DEBUG level only,
because pylsp's log lines can quote document text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from typing import Any

import orjson

from steerlsp.server.lsp.framing import FrameDecoder, FramingError, encode_frame
from steerlsp.server.upstream import isolation

log = logging.getLogger(__name__)

_READ_CHUNK = 1 << 16
# How often the resident memory of a running upstream is compared with its limit.
MEMORY_CHECK_SECONDS = 1.0
# Longest stderr line logged in full; the rest of a longer one is cut.
_STDERR_LOG_LINE = 4096


class UpstreamMissing(Exception):
    """The upstream command could not be started."""


class UpstreamProcess:
    """One run of the upstream command. A restart makes a new instance."""

    def __init__(
        self,
        command: list[str],
        on_message: Callable[[UpstreamProcess, dict[str, Any]], None],
        on_exit: Callable[[UpstreamProcess, int | None], None],
        *,
        memory_limit_mb: int | None = None,
        background: bool = False,
    ) -> None:
        """``memory_limit_mb``: the most memory it may use (None: no limit); see
        :meth:`limit_memory`. ``background``: it runs only on a core nothing of ours
        wants (see :func:`~steerlsp.server.upstream.isolation.yield_cpu`)."""
        self.command = command
        self._on_message = on_message
        self._on_exit = on_exit
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.stopping = False
        self.memory_limit_mb = memory_limit_mb
        self.background = background
        self.out_of_memory = False  # it exited (or was killed) at its memory limit

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        """Spawn the process. Raises :class:`UpstreamMissing` when it cannot start."""
        # The default pylsp stays in our session too: its lints yield the CPU
        # (``guard.lint_when_idle``), which only counts within one session.
        ours = self.background or isolation.is_guarded(self.command)
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=_READ_CHUNK,
                # Its own process group: a Ctrl-C in the editor's terminal
                # reaches steerlsp, which then stops the upstream in order. A
                # background one and the default pylsp stay in our session:
                # Linux's autogroup shares the CPU between sessions first, which
                # a priority cannot reach. Another command gets a session of its own.
                start_new_session=not ours,
                process_group=0 if ours else None,
                # Not the workspace, and PYTHONSAFEPATH for whatever it starts in turn.
                cwd=isolation.neutral_cwd(),
                env=isolation.child_env(),
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise UpstreamMissing(f"{self.command[0]!r}: {exc.strerror or exc}") from exc
        except OSError as exc:
            raise UpstreamMissing(f"{self.command[0]!r}: {exc}") from exc
        log.info("upstream started: pid %s", self._proc.pid)
        if self.background:
            isolation.yield_cpu(self._proc.pid)
        self.limit_memory(self.memory_limit_mb)
        self._tasks = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._drain_stderr()),
            asyncio.create_task(self._wait()),
            asyncio.create_task(self._watch_memory()),
        ]

    def limit_memory(self, limit_mb: int | None) -> None:
        """Hold the process to ``limit_mb`` MiB from now on (None: no limit).

        Its resident memory is checked every :data:`MEMORY_CHECK_SECONDS`, and a
        process past the limit is killed (then restarted like a crashed one). The
        default pylsp also gets it as its address-space limit, which no allocation
        can pass: it exits with :data:`~steerlsp.server.upstream.isolation.MEMORY_EXIT` at
        the first refused one. Another command may reserve far more address space
        than it uses (a JavaScript engine does), so only its resident memory counts.
        """
        self.memory_limit_mb = limit_mb
        if self._proc is not None and isolation.is_guarded(self.command):
            isolation.limit_memory(self._proc.pid, limit_mb)

    async def _watch_memory(self) -> None:
        assert self._proc is not None
        proc = self._proc
        while proc.returncode is None:
            await asyncio.sleep(MEMORY_CHECK_SECONDS)
            limit = self.memory_limit_mb
            rss = isolation.rss_mb(proc.pid) if limit is not None else None
            if limit is not None and rss is not None and rss > limit and not self.stopping:
                log.warning(
                    "upstream pid %s uses %.0f MiB, over its limit of %d MiB; restarting it",
                    proc.pid,
                    rss,
                    limit,
                )
                self.out_of_memory = True
                self.kill()
                return

    def send(self, message: dict[str, Any]) -> bool:
        """Write one message. Returns False when the process cannot take it."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.returncode is not None:
            return False
        if proc.stdin.is_closing():
            return False
        try:
            proc.stdin.write(encode_frame(orjson.dumps(message)))
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            return False
        return True

    async def stop(self, grace: float = 2.0) -> None:
        """Close stdin, wait ``grace`` seconds, then kill."""
        self.stopping = True
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            log.warning("upstream did not exit in %.1fs; killing it", grace)
            self.kill()
            await proc.wait()

    def kill(self) -> None:
        """Kill the process and its group (what it started: pylint and black runs, Jedi's
        subprocess) at once; it leads a process group of its own."""
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        decoder = FrameDecoder()
        while True:
            try:
                data = await stdout.read(_READ_CHUNK)
            except Exception:  # the pipe broke: the process's exit is handled by _wait
                log.debug("reading the upstream's stdout failed", exc_info=True)
                return
            if not data:
                return
            for event in decoder.feed(data):
                if isinstance(event, FramingError):
                    log.warning(
                        "upstream framing error: %s (%d bytes)", event.reason, len(event.discarded)
                    )
                    continue
                try:
                    message = orjson.loads(event)
                except orjson.JSONDecodeError:
                    log.warning("upstream sent invalid JSON (%d bytes)", len(event))
                    continue
                if isinstance(message, dict):
                    try:
                        self._on_message(self, message)
                    except Exception:  # one bad message must not end the reader
                        log.exception("error handling an upstream message")

    async def _drain_stderr(self) -> None:
        """Read stderr in chunks until EOF, whatever its line lengths.

        A process blocks once its stderr pipe is full, so this must never stop
        early: ``readline`` would raise on a line longer than the stream limit.
        """
        assert self._proc is not None and self._proc.stderr is not None
        stderr = self._proc.stderr
        line = bytearray()  # the current line's first _STDERR_LOG_LINE bytes
        length = 0  # and its full length
        while True:
            try:
                data = await stderr.read(_READ_CHUNK)
            except Exception:  # the pipe broke: nothing more can be read
                log.debug("reading the upstream's stderr failed", exc_info=True)
                return
            if not data:
                break
            if not log.isEnabledFor(logging.DEBUG):
                continue
            *complete, rest = data.split(b"\n")
            for piece in complete:
                line += piece[: _STDERR_LOG_LINE - len(line)]
                log.debug("upstream stderr: %s", stderr_line(bytes(line), length + len(piece)))
                line.clear()
                length = 0
            line += rest[: _STDERR_LOG_LINE - len(line)]
            length += len(rest)
        if length and log.isEnabledFor(logging.DEBUG):
            log.debug("upstream stderr: %s", stderr_line(bytes(line), length))

    async def _wait(self) -> None:
        assert self._proc is not None
        code = await self._proc.wait()
        if code == isolation.MEMORY_EXIT:
            self.out_of_memory = True
        # What it started and left running (a pylint run) goes with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        # Let the reader deliver what the process wrote before it died.
        await asyncio.gather(*self._tasks[:2], return_exceptions=True)
        log.log(
            logging.INFO if self.stopping else logging.WARNING,
            "upstream pid %s exited with %s",
            self._proc.pid,
            code,
        )
        self._on_exit(self, code)


def stderr_line(head: bytes, length: int) -> str:
    """A stderr line for the log, from its first bytes and its full length."""
    text = head.decode("utf-8", "replace").rstrip()
    if length > len(head):
        text += f" ... ({length} bytes)"
    return text


def default_command() -> list[str]:
    """pylsp from the same environment as steerlsp, isolated from the workspace
    (see :func:`steerlsp.server.upstream.isolation.pylsp_command`)."""
    return isolation.pylsp_command()
