"""The LSP lifecycle of the editor's session: initialize, shutdown and exit.

Initialize is answered only once the upstream has answered its own (or
failed to): the capabilities the editor gets merge both servers'. Messages
for the user that arise before that answer are held and shown right after
it, since an editor may drop a ``window/showMessage`` that comes earlier.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp.server.documents import workspace
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp import pygls_adapter
from steerlsp.server.lsp.capabilities import deep_merge, merge_capabilities
from steerlsp.server.lsp.tasks import BackgroundTasks
from steerlsp.server.upstream.connection import UpstreamConnection
from steerlsp.server.upstream.mirror import DocumentMirror
from steerlsp.server.upstream.pending import UpstreamError
from steerlsp.server.upstream.replies import ClientReplies

if TYPE_CHECKING:
    from steerlsp.server.lsp.handlers import SteerServer

# The router's logger: these lines were always the proxy's, and users filter on its name.
log = logging.getLogger("steerlsp.server.upstream.proxy")


class Lifecycle(enum.Enum):
    """Where the session is, as ``steerlsp/status`` reports it (``state``)."""

    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    RUNNING = "running"
    SHUTDOWN = "shutdown"
    EXITED = "exited"


def upstream_init_params(params: dict[str, Any]) -> dict[str, Any]:
    """The editor's initialize params as the upstream gets them.

    ``initializationOptions`` must be an object: pylsp's initialize fails on a
    string or an array, and after that nothing it was sent is answered. Such a
    value is dropped here (the initialize handler tells the user once), and so is
    any part nested too deep to be written again.
    """
    options = params.get("initializationOptions")
    if options is not None and (not isinstance(options, dict) or rpc.unsendable(options)):
        params = {key: value for key, value in params.items() if key != "initializationOptions"}
    if rpc.unsendable(params) is None:
        return params
    # Nested past what can be written (orjson: 254 levels): what cannot go, goes.
    return {key: value for key, value in params.items() if rpc.unsendable(value) is None}


class Session:
    """The lifecycle state, the answers to initialize and shutdown, the exit code, and
    the user messages held until initialize is answered."""

    def __init__(
        self,
        ls: SteerServer,
        replies: ClientReplies,
        upstream: UpstreamConnection[Any],
        documents: DocumentMirror,
        tasks: BackgroundTasks,
    ) -> None:
        self.ls = ls
        self.protocol = ls.protocol
        self.state = Lifecycle.UNINITIALIZED
        self.exit_code: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._replies = replies
        self._upstream = upstream
        self._documents = documents
        self._tasks = tasks
        self._notices: list[tuple[types.MessageType, str]] = []

    def refusal(self, request: rpc.Request) -> tuple[int, str] | None:
        """The error code and message ``request`` is refused with, or None to accept it."""
        if self._replies.in_flight(request.id):
            return rpc.INVALID_REQUEST, f"Invalid Request: id {request.id!r} is already in use"
        if self.state is Lifecycle.UNINITIALIZED and request.method != types.INITIALIZE:
            return rpc.SERVER_NOT_INITIALIZED, "Server not initialized"
        if self.state in (Lifecycle.SHUTDOWN, Lifecycle.EXITED):
            return rpc.INVALID_REQUEST, "Invalid Request: the server is shutting down"
        if request.method == types.INITIALIZE and self.state is not Lifecycle.UNINITIALIZED:
            return rpc.INVALID_REQUEST, "Invalid Request: initialize was already received"
        return None

    async def initialize(self, request: rpc.Request) -> None:
        """Initialize our side and the upstream, then answer with both capabilities."""
        try:
            typed = self.protocol.structure_message(request.raw)
        except Exception:
            self._replies.reply(
                request.id,
                rpc.error(request.id, rpc.INVALID_PARAMS, "Invalid params for initialize"),
            )
            return
        self.state = Lifecycle.INITIALIZING
        ours = pygls_adapter.initialize_result(self.protocol, typed.params)
        workspace.install(self.protocol)  # documents edited in O(edit), not O(text)
        init_params = upstream_init_params(request.raw.get("params") or {})
        negotiated = self.protocol.workspace.position_encoding or types.PositionEncodingKind.Utf16
        # pygls hands back the enum when the client offered nothing; str() of it is not "utf-16".
        encoding = getattr(negotiated, "value", negotiated)
        self._documents.negotiated(encoding)
        up = await self._upstream.initialize(init_params)
        upstream_caps: dict[str, Any] = (up or {}).get("capabilities") or {}
        self._documents.upstream_initialized(upstream_caps)
        own = self._documents.unstructure(ours.capabilities)
        own["experimental"] = deep_merge(
            own.get("experimental") or {}, self.ls.experimental_capabilities()
        )
        capabilities = merge_capabilities(upstream_caps, own)
        capabilities["positionEncoding"] = encoding
        self.state = Lifecycle.RUNNING
        self._replies.reply(
            request.id,
            rpc.result(
                request.id,
                {
                    "capabilities": capabilities,
                    "serverInfo": {"name": self.ls.name, "version": self.ls.version},
                },
            ),
        )
        notices, self._notices = self._notices, []
        for kind, text in notices:
            self.show_message(kind, text)

    async def shutdown(self, request: rpc.Request) -> None:
        """Stop serving, shut the upstream down (if it is up), then answer."""
        self.state = Lifecycle.SHUTDOWN
        self._upstream.retire()
        pygls_adapter.cancel_all_requests(self.protocol)
        if self._upstream.ready:
            try:
                await self._upstream.request(types.SHUTDOWN, None, 5.0)
            except UpstreamError as exc:
                log.warning("upstream shutdown: %s", exc)
        self._replies.reply(request.id, rpc.result(request.id, None))

    def exit(self) -> None:
        """Stop the upstream, then settle the exit code: 0 only after a shutdown."""
        if self.state is Lifecycle.EXITED:
            return
        code = 0 if self.state is Lifecycle.SHUTDOWN else 1
        self.state = Lifecycle.EXITED
        self._upstream.close()
        self._tasks.spawn(self._stop_upstream(code))

    async def _stop_upstream(self, code: int) -> None:
        await self._upstream.stop()
        if not self.exit_code.done():
            self.exit_code.set_result(code)

    def show_message(self, kind: types.MessageType, text: str) -> None:
        """One ``window/showMessage`` to the editor (held until initialize is answered)."""
        if self.state in (Lifecycle.UNINITIALIZED, Lifecycle.INITIALIZING):
            self._notices.append((kind, text))
            return
        self._replies.write(
            rpc.notification(types.WINDOW_SHOW_MESSAGE, {"type": int(kind), "message": text})
        )
