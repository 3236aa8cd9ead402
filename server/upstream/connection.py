"""One upstream language server connection: its process, its messages and its supervision.

A connection starts the upstream command, sends it requests of steerlsp's own
(:meth:`UpstreamConnection.request`) and requests it forwards for someone
else (:meth:`UpstreamConnection.forward`, each under a fresh id and a tag the
caller chooses), and translates the ids of requests the upstream sends back.
When the process exits unasked, the requests it was running are reported
lost, the process is restarted with backoff (as ``restarts.py`` decides),
re-initialized with the params it was first initialized with, configured, and
the documents its :class:`~steerlsp.server.upstream.listener.Listener` replays
are reopened. The id tables live in ``pending.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from lsprotocol import types

from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.tasks import BackgroundTasks
from steerlsp.server.upstream import isolation, restarts
from steerlsp.server.upstream.listener import Listener
from steerlsp.server.upstream.pending import Forwarded, PendingRequests, UpstreamError
from steerlsp.server.upstream.process import UpstreamMissing, UpstreamProcess
from steerlsp.server.upstream.restarts import RestartPolicy

log = logging.getLogger(__name__)

Tag = TypeVar("Tag")

# upstream.memoryLimitMb's default: pylsp with Jedi on a large library stays well under.
DEFAULT_MEMORY_LIMIT_MB = 2048


@dataclass
class UpstreamOptions:
    command: list[str]
    max_restarts: int = 5
    backoff: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0, 4.0)
    initialize_timeout: float = 30.0
    memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB  # None: no limit
    background: bool = False  # it yields the CPU to everything else (the analysis instance)


class UpstreamConnection(Generic[Tag]):
    """One supervised upstream: the process of the moment and everything pending on it."""

    def __init__(
        self,
        options: UpstreamOptions,
        listener: Listener[Tag],
        *,
        replay: Callable[[], list[dict[str, Any]]] = list,
        settings: Callable[[], dict[str, Any] | None] = lambda: None,
    ) -> None:
        """``replay``: the didOpen messages that rebuild the upstream's documents after a
        restart; ``settings``: the didChangeConfiguration params sent after a
        re-initialize, or None for none."""
        self.options = options
        self.process: UpstreamProcess | None = None
        self.ready = False
        self.policy = RestartPolicy(options)
        self.unavailable: str | None = None  # why it cannot serve, once final
        self._listener = listener
        self._replay = replay
        self._settings = settings
        self._pending: PendingRequests[Tag] = PendingRequests()
        self._init_params: dict[str, Any] | None = None
        self._retired = False  # shutting down: an exit is no crash
        self._closed = False  # exited: its messages are ignored
        self._tasks = BackgroundTasks()
        self.last_heard = time.monotonic()  # the last message from a process (or its start)

    @property
    def restarts(self) -> int:
        """Unasked exits so far (each restarted, up to ``max_restarts``)."""
        return self.policy.restarts

    # ---- process ---------------------------------------------------------

    async def start(self) -> None:
        """Spawn the upstream. A missing command is reported, not raised."""
        proc = UpstreamProcess(
            self.options.command,
            on_message=self._on_message,
            on_exit=self._exited,
            memory_limit_mb=self.options.memory_limit_mb,
            background=self.options.background,
        )
        self.process = proc
        self.last_heard = time.monotonic()
        try:
            await proc.start()
        except UpstreamMissing as exc:
            self.process = None
            self._give_up(restarts.missing(exc))

    async def initialize(self, params: dict[str, Any]) -> Any:
        """The first initialize; ``params`` are kept for every restart.

        Returns the upstream's result, or None when there is no result: no
        process, it exited (the restart replays ``params``), or it refused or
        timed out (then it is stopped and given up).
        """
        self._init_params = params
        if self.process is None:
            return None
        try:
            result = await self.request(types.INITIALIZE, params, self.options.initialize_timeout)
        except UpstreamError as exc:
            log.error("upstream initialize failed: %s", exc)
            self._initialize_failed(exc)
            return None
        self._up()
        return result

    def limit_memory(self, limit_mb: int | None) -> None:
        """The memory limit of this process and every restart (see ``UpstreamProcess``)."""
        self.options.memory_limit_mb = limit_mb
        if self.process is not None:
            self.process.limit_memory(limit_mb)

    def retire(self) -> None:
        """Shutting down: from now on an exit is expected and never restarted."""
        self._retired = True

    def close(self) -> None:
        """Exiting: its messages are ignored from now on, and its exit is expected."""
        self._retired = self._closed = True

    async def stop(self) -> None:
        """Close, send ``exit``, then stop the process."""
        self.close()
        proc = self.process
        if proc is not None:
            proc.stopping = True
            proc.send(rpc.notification(types.EXIT))
            await proc.stop(grace=2.0)

    # ---- requests --------------------------------------------------------

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        """A request of steerlsp's own, answered within ``timeout`` seconds or raising
        :class:`UpstreamError`."""
        if self.process is None or not self.process.alive:
            raise UpstreamError(self.unavailable or "the upstream server is not running")
        up_id, future = self._pending.internal(method)
        if not self.process.send(rpc.request(up_id, method, params)):
            self._pending.entries.pop(up_id, None)
            raise UpstreamError("the upstream server is not running")
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError as exc:
            self._pending.entries.pop(up_id, None)
            self._pending.abandon(up_id)
            raise UpstreamError(f"{method} timed out after {timeout:.0f}s") from exc
        except asyncio.CancelledError:
            # The asker gave up (an analysis question past its budget): the upstream
            # may drop the work instead of making the next question wait behind it.
            if self._pending.drop(up_id):
                self.cancel(up_id)
            raise

    def forward(self, message: dict[str, Any], tag: Tag) -> int:
        """Send (or hold until ready) a request for someone else under a fresh id.

        Its answer reaches :meth:`Listener.upstream_response` with ``tag``, or
        :meth:`Listener.upstream_lost` if it never comes. Returns the id.
        """
        up_id = self._pending.forwarded(tag)
        message["id"] = up_id
        self.send(message)
        return up_id

    def cancel(self, up_id: int) -> None:
        """Ask the upstream to cancel a forwarded request."""
        self.send(rpc.notification(types.CANCEL_REQUEST, {"id": up_id}))

    def give_up(self, up_id: int) -> bool:
        """The asker cancelled a forwarded request: stop waiting for it (a late answer is
        dropped) and ask the upstream to cancel it. pylsp never answers a request
        cancelled before it started (python-lsp-jsonrpc), so nobody may wait for that.
        False when it is no longer pending (its answer is on its way to the asker)."""
        if not self._pending.drop_forwarded(up_id):
            return False
        if not self._pending.unhold(up_id):  # a held one was never sent: nothing to cancel
            self.cancel(up_id)
        return True

    def send(self, message: dict[str, Any], *, replayable: bool = False) -> None:
        """Send now if ready; otherwise hold it (document sync is replayed instead)."""
        if self.ready and self.process is not None and self.process.send(message):
            entry = self._pending.entries.get(message.get("id"))  # type: ignore[arg-type]
            if isinstance(entry, Forwarded):
                entry.sent = True
            return
        if self.unavailable is not None:
            return
        if not replayable:
            self._pending.held.append(message)

    def answer(self, response: dict[str, Any]) -> bool:
        """Pass the reply to a request the upstream sent; False if its id is not one of ours."""
        target = self._pending.answered(response.get("id"))
        if target is None:
            return False
        proc, original = target
        response["id"] = original
        if self.process is not None and proc is self.process and proc.alive:
            proc.send(response)
        return True

    # ---- from the upstream -----------------------------------------------

    def _on_message(self, proc: UpstreamProcess, message: dict[str, Any]) -> None:
        if proc is not self.process or self._closed:
            return
        self.last_heard = time.monotonic()
        try:
            parsed = rpc.classify(message)
            if isinstance(parsed, rpc.Response):
                entry = self._pending.settle(parsed)
                if entry is not None:
                    self._listener.upstream_response(entry.tag, parsed.raw)
            elif isinstance(parsed, rpc.Request):
                raw = parsed.raw
                raw["id"] = self._pending.client_id(proc, parsed.id)
                reply = self._listener.upstream_request(raw)
                if reply is not None:
                    self.answer(reply)
            elif isinstance(parsed, rpc.Notification):
                # A cancel of the upstream's own request names the id the editor knows.
                if parsed.method != types.CANCEL_REQUEST or self._pending.to_client_cancel(
                    parsed.raw
                ):
                    self._listener.upstream_notification(parsed.raw)
            else:
                log.warning("upstream sent an invalid message: %s", parsed.message)
        except Exception:
            log.exception("error handling an upstream message")

    # ---- supervision -----------------------------------------------------

    def _up(self) -> None:
        self.ready = True
        self._listener.upstream_ready()
        for message in self._pending.take_held():
            self.send(message)

    def _exited(self, proc: UpstreamProcess, code: int | None) -> None:
        stopping, out_of_memory = proc.stopping, proc.out_of_memory
        if proc is not self.process:
            return
        self.ready = False
        self._pending.forget_client_ids()
        if stopping or self._retired:
            self._fail_sent(f"The upstream language server exited (code {code}).")
            return
        how = self.policy.crashed(code, out_of_memory)
        if how is None:
            self._give_up(self.policy.gone())
            return
        self._fail_sent(restarts.lost_while_running(how))
        self._tasks.spawn(self._restart(how))

    def _fail_sent(self, reason: str) -> None:
        for entry in self._pending.fail_sent(reason):
            self._listener.upstream_lost(entry.tag, reason)

    async def _restart(self, how: str) -> None:
        await asyncio.sleep(self.policy.delay())
        if self._retired:
            return
        await self.start()
        if self.process is None:
            return
        if self._init_params is not None:
            try:
                await self._reinitialize(self._init_params)
            except UpstreamError as exc:
                log.error("re-initializing the upstream failed: %s", exc)
                self.process.kill()  # its exit schedules the next attempt
                return
        else:
            self._up()
        notice = self.policy.restarted_notice(how)
        if notice is not None:
            self._listener.show_message(types.MessageType.Warning, notice)

    async def _reinitialize(self, params: dict[str, Any]) -> None:
        await self.request(types.INITIALIZE, params, self.options.initialize_timeout)
        proc = self.process
        assert proc is not None
        proc.send(rpc.notification(types.INITIALIZED, {}))
        settings = self._settings()
        if settings is not None:
            proc.send(rpc.notification(types.WORKSPACE_DID_CHANGE_CONFIGURATION, settings))
        for message in self._replay():
            proc.send(message)
        self._up()

    def _initialize_failed(self, exc: UpstreamError) -> None:
        """It refused or timed out on initialize: fail its requests, never hold them."""
        proc = self.process
        if proc is None or not proc.alive:
            return  # it exited: the restart replays initialize
        proc.stopping = True  # it would refuse the same params again: no restarts
        self._tasks.spawn(proc.stop(grace=1.0))
        self._give_up(restarts.initialize_refused(str(exc)))

    def _give_up(self, reason: str) -> None:
        self.unavailable = reason
        self.ready = False
        log.error("%s", reason)
        self._fail_sent(reason)
        for entry in self._pending.drop_held():
            self._listener.upstream_lost(entry.tag, reason)
        self._listener.show_message(types.MessageType.Error, reason)

    # ---- status ----------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The ``upstream`` section of ``steerlsp/status``."""
        proc = self.process
        alive = proc is not None and proc.alive
        return {
            "command": isolation.shown_command(self.options.command),
            "state": self._state(alive),
            "pid": proc.pid if alive and proc else None,
            "ready": self.ready and alive,
            "restarts": self.policy.restarts,
            "memory_restarts": self.policy.memory_restarts,
            "memory_limit_mb": self.options.memory_limit_mb,
            "unavailable": self.unavailable,
        }

    def _state(self, alive: bool) -> str:
        """``running``, ``starting``, ``restarting`` or ``gone`` (never coming back)."""
        if self.unavailable is not None:
            return "gone"
        if self.ready and alive:
            return "running"
        return "restarting" if self.policy.restarts else "starting"
