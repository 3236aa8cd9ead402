"""A byte-level LSP client for tests that need control a typed client hides.

It chooses its own ids (to force collisions), writes arbitrary bytes (to send
malformed frames), and records every message the server sends.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from steerlsp.server.lsp.framing import FrameDecoder, FramingError, encode_frame

REPO = Path(__file__).resolve().parents[2]
SILENT = object()  # an ``answer`` that leaves a server request unanswered
FAKE_UPSTREAM = [sys.executable, str(REPO / "tests" / "doubles" / "fake_upstream.py")]


def steerlsp_command(*extra: str, upstream: list[str] | None = None) -> list[str]:
    """``python -m steerlsp`` with flags, optionally with ``--upstream`` last."""
    cmd = [sys.executable, "-m", "steerlsp", *extra]
    if upstream is not None:
        cmd += ["--upstream", *upstream]
    return cmd


class RawClient:
    """Speaks JSON-RPC over a subprocess's stdio, recording everything."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []  # every message body as the server wrote it
        self.answer: Callable[[dict[str, Any]], Any] = lambda request: None
        self._ids = itertools.count(1000)
        self._waiters: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, command: list[str]) -> RawClient:
        return cls(await spawn(command))

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder = FrameDecoder()
        while data := await self.proc.stdout.read(65536):
            for event in decoder.feed(data):
                assert not isinstance(event, FramingError), event
                self.bodies.append(event)
                self._dispatch(json.loads(event))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:
            self.server_requests.append(msg)
            answer = self.answer(msg)
            if answer is not SILENT:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": answer})
        elif "method" in msg:
            self.notifications.append(msg)
        else:
            self.responses.append(msg)
            waiter = self._waiters.pop(msg.get("id"), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(msg)
        self._changed.set()

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(encode_frame(json.dumps(message).encode()))

    def send_request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        """Send without waiting; returns the id used."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._waiters[msg_id] = asyncio.get_running_loop().create_future()
        self.send(message)
        return msg_id

    async def response(self, msg_id: Any, timeout: float = 30) -> dict[str, Any]:
        """Wait for the response to ``msg_id``."""
        found = [r for r in self.responses if r.get("id") == msg_id]
        if found:
            return found[0]
        waiter = self._waiters.setdefault(msg_id, asyncio.get_running_loop().create_future())
        return await asyncio.wait_for(waiter, timeout)

    async def request(
        self, method: str, params: Any = None, msg_id: Any = None, timeout: float = 30
    ) -> dict[str, Any]:
        return await self.response(self.send_request(method, params, msg_id), timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 30) -> Any:
        """Wait until ``predicate()`` is truthy (re-checked on every message)."""

        async def loop() -> Any:
            while not (value := predicate()):
                self._changed.clear()
                await self._changed.wait()
            return value

        return await asyncio.wait_for(loop(), timeout)

    def notifications_of(self, method: str) -> list[dict[str, Any]]:
        return [n for n in self.notifications if n["method"] == method]

    async def initialize(
        self, root: Path, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        reply = await self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": capabilities or {"general": {"positionEncodings": ["utf-16"]}},
            },
        )
        assert "result" in reply, reply
        self.notify("initialized", {})
        return reply["result"]

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": text,
                }
            },
        )

    async def shutdown(self) -> int:
        await self.request("shutdown")
        self.notify("exit")
        return await asyncio.wait_for(self.proc.wait(), 10)

    async def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()


async def spawn(command: list[str]) -> asyncio.subprocess.Process:
    """A server process talked to over its stdin and stdout (stderr discarded)."""
    return await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
