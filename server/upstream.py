"""The upstream language server process: spawn, framed I/O, exit detection.

This class knows nothing of LSP semantics; the proxy decides what to send and
what a crash means. Its stderr is drained into our log at DEBUG level only,
because pylsp's log lines can quote document text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable
from typing import Any

import orjson

from steerlsp.server.framing import FrameDecoder, FramingError, encode_frame

log = logging.getLogger(__name__)

_READ_CHUNK = 1 << 16


class UpstreamMissing(Exception):
    """The upstream command could not be started."""


class UpstreamProcess:
    """One run of the upstream command. A restart makes a new instance."""

    def __init__(
        self,
        command: list[str],
        on_message: Callable[[UpstreamProcess, dict[str, Any]], None],
        on_exit: Callable[[UpstreamProcess, int | None], None],
    ) -> None:
        self.command = command
        self._on_message = on_message
        self._on_exit = on_exit
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.stopping = False

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        """Spawn the process. Raises :class:`UpstreamMissing` when it cannot start."""
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=_READ_CHUNK,
                # Its own process group: a Ctrl-C in the editor's terminal
                # reaches steerlsp, which then stops the upstream in order.
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            raise UpstreamMissing(f"{self.command[0]!r}: {exc.strerror or exc}") from exc
        except OSError as exc:
            raise UpstreamMissing(f"{self.command[0]!r}: {exc}") from exc
        log.info("upstream started: pid %s", self._proc.pid)
        self._tasks = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._drain_stderr()),
            asyncio.create_task(self._wait()),
        ]

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
        except asyncio.TimeoutError:
            log.warning("upstream did not exit in %.1fs; killing it", grace)
            self.kill()
            await proc.wait()

    def kill(self) -> None:
        """Kill the process immediately (used at interpreter exit)."""
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        decoder = FrameDecoder()
        while True:
            data = await stdout.read(_READ_CHUNK)
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
                    self._on_message(self, message)

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while line := await self._proc.stderr.readline():
            log.debug("upstream stderr: %s", line.decode("utf-8", "replace").rstrip())

    async def _wait(self) -> None:
        assert self._proc is not None
        code = await self._proc.wait()
        # Let the reader deliver what the process wrote before it died.
        await asyncio.gather(*self._tasks[:2], return_exceptions=True)
        log.log(
            logging.INFO if self.stopping else logging.WARNING,
            "upstream pid %s exited with %s",
            self._proc.pid,
            code,
        )
        self._on_exit(self, code)


def default_command() -> list[str]:
    """pylsp from the same environment as steerlsp."""
    return [sys.executable, "-m", "pylsp"]
