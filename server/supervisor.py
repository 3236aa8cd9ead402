"""Supervising the upstream process: start, internal requests, crash, restart, replay.

Mixed into :class:`~steerlsp.server.proxy.Proxy`, whose routing state it
shares: on a crash the requests in flight are answered with an error, the
process is restarted with backoff (a bounded number of times), re-initialized
with the editor's params and settings, and every open document is replayed.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp.server import jsonrpc as rpc
from steerlsp.server import sync
from steerlsp.server.upstream import UpstreamMissing, UpstreamProcess

if TYPE_CHECKING:
    from steerlsp.server.proxy import Proxy

log = logging.getLogger(__name__)


class Lifecycle(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    RUNNING = "running"
    SHUTDOWN = "shutdown"
    EXITED = "exited"


@dataclass
class _Forwarded:
    client_id: rpc.MsgId
    method: str
    uri: str | None
    sent: bool = False
    params: Any = None  # the client's params, kept only for methods with a result hook


@dataclass
class _Internal:
    method: str
    future: asyncio.Future[Any] = field(repr=False)


# How a user gets a given-up upstream back: a new steerlsp, from the editor.
RESTART_HINT = (
    "restart the language server from the editor (:LspRestart in Neovim, "
    "M-x eglot-reconnect or lsp-workspace-restart in Emacs, :lsp-restart in Helix, "
    "or reload the window in VS Code)"
)


class UpstreamError(Exception):
    """An internal request to the upstream failed (crash, error reply, timeout)."""


class UpstreamSupervisor:
    """The upstream-facing half of the proxy."""

    async def request_upstream(self: Proxy, method: str, params: Any, timeout: float) -> Any:
        """A request of steerlsp's own, invisible to the editor."""
        if self.upstream is None or not self.upstream.alive:
            raise UpstreamError(self.unavailable or "the upstream server is not running")
        up_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._forwarded[up_id] = _Internal(method, future)
        if not self.upstream.send(rpc.request(up_id, method, params)):
            self._forwarded.pop(up_id, None)
            raise UpstreamError("the upstream server is not running")
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError as exc:
            self._forwarded.pop(up_id, None)
            raise UpstreamError(f"{method} timed out after {timeout:.0f}s") from exc

    async def start_upstream(self: Proxy) -> None:
        """Spawn the upstream. A missing command is reported, not raised."""
        proc = UpstreamProcess(
            self.options.command,
            on_message=self.on_upstream_message,
            on_exit=self._upstream_exited,
        )
        self.upstream = proc
        try:
            await proc.start()
        except UpstreamMissing as exc:
            self.upstream = None
            self._give_up(
                f"steerlsp: cannot start the upstream language server {exc}. "
                "Install python-lsp-server or pass --upstream CMD; "
                "steerlsp's own features keep working."
            )

    def _upstream_up(self: Proxy) -> None:
        self.upstream_ready = True
        if self.upstream is not None and self._overlay is not None and self._settings is None:
            self.upstream.send(
                rpc.notification(
                    types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._upstream_settings()
                )
            )
        self._flush_held()

    async def _stop_upstream(self: Proxy, code: int) -> None:
        proc = self.upstream
        if proc is not None:
            proc.stopping = True
            proc.send(rpc.notification(types.EXIT))
            await proc.stop(grace=2.0)
        if not self.exit_code.done():
            self.exit_code.set_result(code)

    def _upstream_exited(self: Proxy, proc: UpstreamProcess, code: int | None) -> None:
        stopping = proc.stopping
        if proc is not self.upstream:
            return
        self.upstream_ready = False
        self._to_client.clear()
        self._upstream_to_client.clear()
        if stopping or self.state in (Lifecycle.SHUTDOWN, Lifecycle.EXITED):
            self._fail_sent(f"The upstream language server exited (code {code}).")
            return
        self.restarts += 1
        if self.restarts > self.options.max_restarts:
            # Decided now, so that no request is told of a restart that never comes.
            self._give_up(
                f"steerlsp: the upstream language server crashed {self.restarts} times "
                "and is gone; not restarting it again. steerlsp's own features keep "
                f"working. To get it back, {RESTART_HINT}."
            )
            return
        self._fail_sent(
            f"The upstream language server exited (code {code}) while this "
            "request was running; it is being restarted."
        )
        self._spawn(self._restart(code))

    def _fail_sent(self: Proxy, reason: str) -> None:
        for up_id, entry in list(self._forwarded.items()):
            if isinstance(entry, _Internal):
                del self._forwarded[up_id]
                if not entry.future.done():
                    entry.future.set_exception(UpstreamError(reason))
            elif entry.sent:
                del self._forwarded[up_id]
                self._client_to_upstream.pop(entry.client_id, None)
                self.reply(entry.client_id, rpc.error(entry.client_id, rpc.REQUEST_FAILED, reason))

    async def _restart(self: Proxy, code: int | None) -> None:
        backoff = self.options.backoff
        await asyncio.sleep(backoff[min(self.restarts - 1, len(backoff) - 1)])
        if self.state in (Lifecycle.SHUTDOWN, Lifecycle.EXITED):
            return
        await self.start_upstream()
        if self.upstream is None:
            return
        if self._init_params is not None:
            try:
                await self._reinitialize()
            except UpstreamError as exc:
                log.error("re-initializing the upstream failed: %s", exc)
                self.upstream.kill()  # its exit schedules the next attempt
                return
        else:
            self._upstream_up()
        if not self._told_crash:
            self._told_crash = True
            self.show_message(
                types.MessageType.Warning,
                f"steerlsp: the upstream language server exited (code {code}) "
                "and was restarted; open documents were restored.",
            )

    async def _reinitialize(self: Proxy) -> None:
        assert self.upstream is not None
        await self.request_upstream(
            types.INITIALIZE, self._init_params, self.options.initialize_timeout
        )
        proc = self.upstream
        proc.send(rpc.notification(types.INITIALIZED, {}))
        if self._settings is not None or self._overlay is not None:
            proc.send(
                rpc.notification(
                    types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._upstream_settings()
                )
            )
        for message in sync.replay(self.protocol.workspace, self._unstructure):
            proc.send(message)
        self._upstream_up()

    def _give_up(self: Proxy, reason: str) -> None:
        self.unavailable = reason
        self.upstream_ready = False
        log.error("%s", reason)
        self._fail_sent(reason)
        held = list(self._held)
        self._held.clear()
        for message in held:
            entry = self._forwarded.pop(message.get("id"), None)  # type: ignore[arg-type]
            if isinstance(entry, _Forwarded):
                self.reply(entry.client_id, rpc.error(entry.client_id, rpc.REQUEST_FAILED, reason))
        self.show_message(types.MessageType.Error, reason)

    def status(self: Proxy) -> dict[str, Any]:
        """What ``steerlsp/status`` reports."""
        alive = self.upstream is not None and self.upstream.alive
        return {
            "state": self.state.value,
            "upstream": {
                "command": self.options.command,
                "state": self._upstream_state(alive),
                "pid": self.upstream.pid if alive and self.upstream else None,
                "ready": self.upstream_ready and alive,
                "restarts": self.restarts,
                "unavailable": self.unavailable,
            },
        }

    def _upstream_state(self: Proxy, alive: bool) -> str:
        """``running``, ``starting``, ``restarting`` or ``gone`` (will not come back)."""
        if self.unavailable is not None:
            return "gone"
        if self.upstream_ready and alive:
            return "running"
        return "restarting" if self.restarts else "starting"
