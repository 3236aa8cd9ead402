"""One upstream language server connection: its process, ids, restarts and pending requests.

A connection starts the upstream command, sends it requests of steerlsp's own
(:meth:`UpstreamConnection.request`) and requests it forwards for someone
else (:meth:`UpstreamConnection.forward`, each under a fresh id and a tag the
caller chooses), and translates the ids of requests the upstream sends back.
When the process exits unasked, the requests it was running are reported
lost, the process is restarted with backoff (a bounded number of times),
re-initialized with the params it was first initialized with, configured, and
the documents its :class:`Listener` replays are reopened.

It talks to whoever owns it only through the :class:`Listener` calls, so the
same class serves the editor's upstream (the router is its listener) and a
private instance with no editor attached (:class:`Headless`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from lsprotocol import types

from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.tasks import BackgroundTasks
from steerlsp.server.upstream import isolation
from steerlsp.server.upstream.process import UpstreamMissing, UpstreamProcess

log = logging.getLogger(__name__)

Tag = TypeVar("Tag")
Tag_contra = TypeVar("Tag_contra", contravariant=True)

# Our given-up request ids remembered, so that their late answers are logged quietly.
MAX_ABANDONED = 256
# How a user gets a given-up upstream back: a new steerlsp, from the editor.
RESTART_HINT = (
    "restart the language server from the editor (:LspRestart in Neovim, "
    "M-x eglot-reconnect or lsp-workspace-restart in Emacs, :lsp-restart in Helix, "
    "or reload the window in VS Code)"
)


class UpstreamError(Exception):
    """An internal request to the upstream failed (crash, error reply, timeout)."""


# upstream.memoryLimitMb's default: pylsp with Jedi on a large library stays well under.
DEFAULT_MEMORY_LIMIT_MB = 2048


@dataclass
class UpstreamOptions:
    command: list[str]
    max_restarts: int = 5
    backoff: tuple[float, ...] = (0.2, 0.5, 1.0, 2.0, 4.0)
    initialize_timeout: float = 30.0
    memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB  # None: no limit


class Listener(Protocol[Tag_contra]):
    """What a connection tells its owner. Every call happens on the event loop."""

    def upstream_response(self, tag: Tag_contra, raw: dict[str, Any]) -> None:
        """A forwarded request was answered (``raw`` still carries the upstream's id)."""

    def upstream_lost(self, tag: Tag_contra, reason: str) -> None:
        """A forwarded request will never be answered."""

    def upstream_request(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The upstream asks something, under an id from :meth:`UpstreamConnection.client_id`.

        Return the reply to send now, or None to send it later with
        :meth:`UpstreamConnection.answer`.
        """

    def upstream_notification(self, raw: dict[str, Any]) -> None:
        """A notification from the upstream (a cancel already names our id)."""

    def upstream_ready(self) -> None:
        """The upstream is initialized; held messages are sent right after this call."""

    def show_message(self, kind: types.MessageType, text: str) -> None:
        """Something the user should know: a restart, or that the upstream is gone."""


class Headless:
    """The listener of a connection no editor sees: nothing is forwarded, nothing shown."""

    def upstream_response(self, tag: object, raw: dict[str, Any]) -> None:
        """Never called: a headless connection forwards nothing."""

    def upstream_lost(self, tag: object, reason: str) -> None:
        """Never called: a headless connection forwards nothing."""

    def upstream_request(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """Answer at once with an empty result (there is no editor to ask)."""
        return rpc.result(raw["id"], None)

    def upstream_notification(self, raw: dict[str, Any]) -> None:
        """Dropped: diagnostics of a private document concern nobody."""

    def upstream_ready(self) -> None:
        """Nothing to add before the held messages."""

    def show_message(self, kind: types.MessageType, text: str) -> None:
        """Logged only."""
        log.log(logging.ERROR if kind == types.MessageType.Error else logging.INFO, "%s", text)


@dataclass
class _Forwarded(Generic[Tag]):
    tag: Tag
    sent: bool = False


@dataclass
class _Internal:
    method: str
    future: asyncio.Future[Any] = field(repr=False)


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
        self.restarts = 0
        self.memory_restarts = 0  # of ``restarts``: the process reached its memory limit
        self.unavailable: str | None = None  # why it cannot serve, once final
        self._listener = listener
        self._replay = replay
        self._settings = settings
        self._ids = itertools.count(1)
        self._pending: dict[int, _Forwarded[Tag] | _Internal] = {}
        # Ids of our own requests given up on (timed out or cancelled): their late
        # answers are expected, not a protocol fault.
        self._abandoned: OrderedDict[int, None] = OrderedDict()
        self._held: list[dict[str, Any]] = []
        self._to_client: dict[str, tuple[UpstreamProcess, rpc.MsgId]] = {}
        self._upstream_to_client: dict[rpc.MsgId, str] = {}
        self._init_params: dict[str, Any] | None = None
        self._retired = False  # shutting down: an exit is no crash
        self._closed = False  # exited: its messages are ignored
        self._told_crash = False
        self._tasks = BackgroundTasks()
        self.last_heard = time.monotonic()  # the last message from a process (or its start)

    # ---- process ---------------------------------------------------------

    async def start(self) -> None:
        """Spawn the upstream. A missing command is reported, not raised."""
        proc = UpstreamProcess(
            self.options.command,
            on_message=self._on_message,
            on_exit=self._exited,
            memory_limit_mb=self.options.memory_limit_mb,
        )
        self.process = proc
        self.last_heard = time.monotonic()
        try:
            await proc.start()
        except UpstreamMissing as exc:
            self.process = None
            self._give_up(
                f"steerlsp: cannot start the upstream language server {exc}. "
                "Install python-lsp-server or pass --upstream CMD; "
                "steerlsp's own features keep working."
            )

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
        up_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[up_id] = _Internal(method, future)
        if not self.process.send(rpc.request(up_id, method, params)):
            self._pending.pop(up_id, None)
            raise UpstreamError("the upstream server is not running")
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError as exc:
            self._pending.pop(up_id, None)
            self._abandon(up_id)
            raise UpstreamError(f"{method} timed out after {timeout:.0f}s") from exc
        except asyncio.CancelledError:
            # The asker gave up (an analysis question past its budget): the upstream
            # may drop the work instead of making the next question wait behind it.
            if self._pending.pop(up_id, None) is not None:
                self._abandon(up_id)
                self.cancel(up_id)
            raise

    def _abandon(self, up_id: int) -> None:
        self._abandoned[up_id] = None
        while len(self._abandoned) > MAX_ABANDONED:
            self._abandoned.popitem(last=False)

    def forward(self, message: dict[str, Any], tag: Tag) -> int:
        """Send (or hold until ready) a request for someone else under a fresh id.

        Its answer reaches :meth:`Listener.upstream_response` with ``tag``, or
        :meth:`Listener.upstream_lost` if it never comes. Returns the id.
        """
        up_id = next(self._ids)
        self._pending[up_id] = _Forwarded(tag)
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
        entry = self._pending.get(up_id)
        if not isinstance(entry, _Forwarded):
            return False
        del self._pending[up_id]
        self._abandon(up_id)
        held = [m for m in self._held if m.get("id") == up_id]
        if held:  # never sent: nothing to cancel
            self._held = [m for m in self._held if m.get("id") != up_id]
        else:
            self.cancel(up_id)
        return True

    def send(self, message: dict[str, Any], *, replayable: bool = False) -> None:
        """Send now if ready; otherwise hold it (document sync is replayed instead)."""
        if self.ready and self.process is not None and self.process.send(message):
            entry = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if isinstance(entry, _Forwarded):
                entry.sent = True
            return
        if self.unavailable is not None:
            return
        if not replayable:
            self._held.append(message)

    def answer(self, response: dict[str, Any]) -> bool:
        """Pass the reply to a request the upstream sent; False if its id is not one of ours."""
        msg_id = response.get("id")
        target = self._to_client.pop(msg_id, None) if isinstance(msg_id, str) else None
        if target is None:
            return False
        proc, original = target
        self._upstream_to_client.pop(original, None)
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
                self._response(parsed)
            elif isinstance(parsed, rpc.Request):
                self._request(proc, parsed)
            elif isinstance(parsed, rpc.Notification):
                self._notification(parsed)
            else:
                log.warning("upstream sent an invalid message: %s", parsed.message)
        except Exception:
            log.exception("error handling an upstream message")

    def _response(self, response: rpc.Response) -> None:
        up_id = response.id
        entry = self._pending.pop(up_id, None) if isinstance(up_id, int) else None
        if entry is None:
            if up_id in self._abandoned:
                del self._abandoned[up_id]
                log.debug("upstream answered %r, a request given up on", up_id)
            else:
                log.warning("upstream answered an unknown id %r", up_id)
            return
        raw = response.raw
        if isinstance(entry, _Internal):
            if not entry.future.done():
                if "error" in raw:
                    entry.future.set_exception(UpstreamError(str(raw["error"].get("message"))))
                else:
                    entry.future.set_result(raw.get("result"))
            return
        self._listener.upstream_response(entry.tag, raw)

    def _request(self, proc: UpstreamProcess, request: rpc.Request) -> None:
        client_id = f"steerlsp:{next(self._ids)}"
        self._to_client[client_id] = (proc, request.id)
        self._upstream_to_client[request.id] = client_id
        raw = request.raw
        raw["id"] = client_id
        reply = self._listener.upstream_request(raw)
        if reply is not None:
            self.answer(reply)

    def _notification(self, note: rpc.Notification) -> None:
        raw = note.raw
        if note.method == types.CANCEL_REQUEST:
            params = raw.get("params")
            original = params.get("id") if isinstance(params, dict) else None
            client_id = self._upstream_to_client.get(original) if original is not None else None
            if client_id is None:
                return
            raw["params"] = {"id": client_id}
        self._listener.upstream_notification(raw)

    # ---- supervision -----------------------------------------------------

    def _up(self) -> None:
        self.ready = True
        self._listener.upstream_ready()
        held, self._held = self._held, []
        for message in held:
            self.send(message)

    def _exited(self, proc: UpstreamProcess, code: int | None) -> None:
        stopping, out_of_memory = proc.stopping, proc.out_of_memory
        if proc is not self.process:
            return
        self.ready = False
        self._to_client.clear()
        self._upstream_to_client.clear()
        if stopping or self._retired:
            self._fail_sent(f"The upstream language server exited (code {code}).")
            return
        self.restarts += 1
        if out_of_memory:
            self.memory_restarts += 1
            log.warning(
                "the upstream reached its memory limit (%s MiB)", self.options.memory_limit_mb
            )
        if self.restarts > self.options.max_restarts:
            # Decided now, so that no request is told of a restart that never comes.
            self._give_up(
                f"steerlsp: the upstream language server crashed {self.restarts} times "
                "and is gone; not restarting it again. steerlsp's own features keep "
                f"working. To get it back, {RESTART_HINT}."
            )
            return
        how = (
            f"reached its memory limit ({self.options.memory_limit_mb} MiB)"
            if out_of_memory
            else f"exited (code {code})"
        )
        self._fail_sent(
            f"The upstream language server {how} while this request was running; "
            "it is being restarted."
        )
        self._tasks.spawn(self._restart(how))

    def _fail_sent(self, reason: str) -> None:
        for up_id, entry in list(self._pending.items()):
            if isinstance(entry, _Internal):
                del self._pending[up_id]
                if not entry.future.done():
                    entry.future.set_exception(UpstreamError(reason))
            elif entry.sent:
                del self._pending[up_id]
                self._listener.upstream_lost(entry.tag, reason)

    async def _restart(self, how: str) -> None:
        backoff = self.options.backoff
        await asyncio.sleep(backoff[min(self.restarts - 1, len(backoff) - 1)])
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
        if not self._told_crash:
            self._told_crash = True
            self._listener.show_message(
                types.MessageType.Warning,
                f"steerlsp: the upstream language server {how} "
                "and was restarted; open documents were restored.",
            )

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
        self._give_up(
            f"steerlsp: the upstream language server failed to initialize ({brief(str(exc))}). "
            "Its features are unavailable; steerlsp's own features keep working. "
            f"To retry, {RESTART_HINT}."
        )

    def _give_up(self, reason: str) -> None:
        self.unavailable = reason
        self.ready = False
        log.error("%s", reason)
        self._fail_sent(reason)
        held, self._held = self._held, []
        for message in held:
            entry = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if isinstance(entry, _Forwarded):
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
            "restarts": self.restarts,
            "memory_restarts": self.memory_restarts,
            "memory_limit_mb": self.options.memory_limit_mb,
            "unavailable": self.unavailable,
        }

    def _state(self, alive: bool) -> str:
        """``running``, ``starting``, ``restarting`` or ``gone`` (will not come back)."""
        if self.unavailable is not None:
            return "gone"
        if self.ready and alive:
            return "running"
        return "restarting" if self.restarts else "starting"


def brief(text: str, limit: int = 200) -> str:
    """``text`` on one line, without control characters, cut to ``limit`` characters."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
