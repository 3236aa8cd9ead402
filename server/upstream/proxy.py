"""The router between the editor, steerlsp's own handlers and the upstream server.

Everything here runs on the event loop thread. Messages arrive as decoded
dicts; the ones steerlsp serves are typed and handed to pygls, the rest are
forwarded to the upstream connection (``server/upstream/connection.py``), which re-mints
their ids for the other side:

- client request ``id`` -> upstream id (``_client_to_upstream``, for cancels);
- upstream request ``id`` -> client-side id ``steerlsp:N`` (in the connection).

Each direction has its own table, so client request 5 and upstream request 5
never meet. ``_inflight`` holds every client request not yet answered; a reply
is written only if it removes its id from there, which makes "exactly one
reply" a property of one dict.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

from steerlsp.server.documents import sync, workspace
from steerlsp.server.documents.positions import DocumentIndex
from steerlsp.server.documents.workspace import open_document
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp import pygls_adapter
from steerlsp.server.lsp.answered import AnsweredIds
from steerlsp.server.lsp.capabilities import (
    deep_merge,
    document_uri,
    incremental_sync,
    merge_capabilities,
    shape_error,
    upstream_encoding,
)
from steerlsp.server.lsp.framing import FramingError
from steerlsp.server.lsp.tasks import BackgroundTasks
from steerlsp.server.upstream import environment
from steerlsp.server.upstream.connection import UpstreamConnection, UpstreamError, UpstreamOptions
from steerlsp.server.upstream.pylsp_quirks import fix_pyflakes_columns

if TYPE_CHECKING:
    from steerlsp.server.lsp.handlers import SteerServer

log = logging.getLogger(__name__)

# Methods the protocol defines as notifications: a message under one of these
# names that carries an id is refused, never acted on (item 8 of issue 9).
NOTIFICATION_METHODS = frozenset(
    method
    for method, (message_type, *_) in types.METHOD_TO_TYPES.items()
    if message_type.__name__.endswith("Notification")
)


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


class ResultRewriter(Protocol):
    """A component that may change the results of forwarded requests (the AI item
    added to pylsp's completion list). The router asks it; it never reaches in."""

    def rewrites(self, method: str) -> bool:
        """True if results of ``method`` go through :meth:`rewrite` (the router then
        keeps what :meth:`prepare` makes of the request); False keeps the direct path."""
        ...

    def prepare(self, method: str, params: Any) -> Any:
        """Called as the request is forwarded, with the client's params (client units,
        not to be kept: they are converted in place next) and the documents as the
        client sent them so far; what it returns is handed to :meth:`rewrite`."""
        ...

    async def rewrite(self, method: str, prepared: Any, result: Any) -> Any:
        """The result to send, from what :meth:`prepare` returned and the result in
        client units."""
        ...


class Lifecycle(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    RUNNING = "running"
    SHUTDOWN = "shutdown"
    EXITED = "exited"


@dataclass
class _Forwarded:
    """A client request the upstream is answering (the connection's tag for it)."""

    client_id: rpc.MsgId
    method: str
    uri: str | None
    prepared: Any = None  # what the rewriter made of the request (ResultRewriter.prepare)


class Proxy:
    """Routes every message between the editor, pygls and the upstream connection;
    owns the lifecycle and the answer to every client request."""

    def __init__(
        self, ls: SteerServer, write_client: Callable[[bytes], None], options: UpstreamOptions
    ) -> None:
        self.ls = ls
        self.protocol = ls.protocol
        self._write_client = write_client
        self.state = Lifecycle.UNINITIALIZED
        self.exit_code: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.docs: DocumentIndex | None = None
        self.upstream: UpstreamConnection[_Forwarded] = UpstreamConnection(
            options, self, replay=self._replay, settings=self._restart_settings
        )
        self.upstream_incremental = False  # it takes ranged didChange events
        self._inflight: dict[rpc.MsgId, str] = {}
        self._answered = AnsweredIds()  # every id replied to, this session
        self._client_to_upstream: dict[rpc.MsgId, int] = {}
        self._settings: dict[str, Any] | None = None
        self._overlay: dict[str, Any] | None = None
        self._notices: list[tuple[types.MessageType, str]] = []
        self._tasks = BackgroundTasks()
        self._rewriter: ResultRewriter | None = None
        # Open documents too large for the upstream (upstream.maxDocumentBytes).
        self.size_limit = sync.SizeLimit(ls.settings.upstream.max_document_bytes)

    # ---- client side ---------------------------------------------------

    def on_client_events(self, events: list[bytes | FramingError]) -> None:
        """Entry point for the reader thread (via ``call_soon_threadsafe``)."""
        for event in events:
            if isinstance(event, FramingError):
                self._framing_error(event)
                continue
            if log.isEnabledFor(logging.DEBUG):  # bodies hold document text: debug only
                log.debug("editor -> %s", event.decode("utf-8", "replace"))
            for message in rpc.decode(event):
                try:
                    self._dispatch_client(message)
                except Exception:  # a bug must not take the session down
                    log.exception("error handling a client message")
                    if isinstance(message, rpc.Request):
                        self.reply(
                            message.id,
                            rpc.error(message.id, rpc.INTERNAL_ERROR, "internal error in steerlsp"),
                        )

    def on_client_eof(self) -> None:
        """The editor closed our stdin: stop as if told to exit."""
        log.info("client closed the connection")
        self._exit()

    def _framing_error(self, event: FramingError) -> None:
        msg_id = rpc.salvage_id(event.discarded)
        log.warning("framing error: %s (%d bytes discarded)", event.reason, len(event.discarded))
        if msg_id is not None:
            self._error_once(msg_id, rpc.PARSE_ERROR, f"Parse error: {event.reason}")

    def _dispatch_client(self, message: rpc.Message) -> None:
        if isinstance(message, rpc.Request):
            self._client_request(message)
        elif isinstance(message, rpc.Notification):
            self._client_notification(message)
        elif isinstance(message, rpc.Response):
            self._client_response(message)
        else:
            self._invalid(message)

    def _invalid(self, message: rpc.Invalid) -> None:
        log.warning("invalid message: %s", message.message)
        if message.id is not None:
            self._error_once(message.id, message.code, message.message)

    def _error_once(self, msg_id: rpc.MsgId, code: int, text: str) -> None:
        """Answer a message that is not a request we accepted, unless its id is taken.

        Its id may be a guess (salvaged from broken bytes) or reused: an id in
        flight will be answered by its request, and one already answered must
        not get a second reply, so neither gets this error.
        """
        if msg_id in self._inflight or msg_id in self._answered:
            log.info("no error reply to %r: that id is in flight or already answered", msg_id)
            return
        self._answered_now(msg_id)
        self._write(rpc.error(msg_id, code, text))

    def _answered_now(self, msg_id: rpc.MsgId) -> None:
        self._answered.add(msg_id)

    def _client_request(self, request: rpc.Request) -> None:
        method, msg_id = request.method, request.id
        refusal = self._refusal(request)
        if refusal is None and method in NOTIFICATION_METHODS:
            # Acting on it and replying would be one effect the sender did not
            # ask for (a notification has no reply) and one it cannot rely on:
            # refuse it whole, so the id still gets its one reply.
            refusal = (
                rpc.INVALID_REQUEST,
                f"Invalid Request: {method} is a notification and must not carry an id",
            )
        if refusal is not None:
            code, text = refusal
            log.info("refused %s (%s): %s", method, msg_id, text)
            if msg_id not in self._inflight:  # an id in use keeps its own answer pending
                self._answered_now(msg_id)
            self._write(rpc.error(msg_id, code, text))
            return
        self._inflight[msg_id] = method
        if method == types.INITIALIZE:
            self._tasks.spawn(self._initialize(request))
        elif method == types.SHUTDOWN:
            self._tasks.spawn(self._shutdown(request))
        elif pygls_adapter.serves(self.protocol, method, request.raw.get("params")):
            self._to_pygls(request.raw, msg_id)
        else:
            self._forward_request(request)

    def _refusal(self, request: rpc.Request) -> tuple[int, str] | None:
        if request.id in self._inflight:
            return rpc.INVALID_REQUEST, f"Invalid Request: id {request.id!r} is already in use"
        if self.state is Lifecycle.UNINITIALIZED and request.method != types.INITIALIZE:
            return rpc.SERVER_NOT_INITIALIZED, "Server not initialized"
        if self.state in (Lifecycle.SHUTDOWN, Lifecycle.EXITED):
            return rpc.INVALID_REQUEST, "Invalid Request: the server is shutting down"
        if request.method == types.INITIALIZE and self.state is not Lifecycle.UNINITIALIZED:
            return rpc.INVALID_REQUEST, "Invalid Request: initialize was already received"
        return None

    def _to_pygls(self, raw: dict[str, Any], msg_id: rpc.MsgId | None = None) -> bool:
        """Type a message with lsprotocol and let pygls dispatch it."""
        if "method" in raw:
            raw.setdefault("params", None)  # pygls' untyped fallback requires the key
        try:
            typed = self.protocol.structure_message(raw)
        except Exception as exc:  # pygls raises JsonRpcInvalidParams / InternalError
            log.warning("invalid params for %s: %s", raw.get("method"), type(exc).__name__)
            if msg_id is not None:
                self.reply(
                    msg_id,
                    rpc.error(
                        msg_id, rpc.INVALID_PARAMS, f"Invalid params for {raw.get('method')}"
                    ),
                )
            return False
        self.protocol.handle_message(typed)
        return True

    def _forward_request(self, request: rpc.Request) -> None:
        params = request.raw.get("params")
        problem = shape_error(request.method, params) or rpc.unsendable(params)
        if problem is not None:
            self.reply(
                request.id, rpc.error(request.id, rpc.INVALID_PARAMS, f"Invalid params: {problem}")
            )
            return
        unavailable = self.upstream.unavailable
        if unavailable is not None:
            self.reply(request.id, rpc.error(request.id, rpc.REQUEST_FAILED, unavailable))
            return
        uri = document_uri(params)
        special = self._special_file(uri)
        if special is not None:
            # The upstream would read it: a FIFO blocks pylsp for good, /dev/stdin is
            # its own LSP input, /dev/zero grows it without bound.
            log.info("refused %s: %s", request.method, special)
            self.reply(
                request.id,
                rpc.error(request.id, rpc.INVALID_PARAMS, f"Invalid params: {special}"),
            )
            return
        entry = _Forwarded(request.id, request.method, uri, prepared=self._prepare(request, params))
        self._convert(params, uri, toward_upstream=True)
        self._client_to_upstream[request.id] = self.upstream.forward(request.raw, entry)

    def _special_file(self, uri: str | None) -> str | None:
        """Why the upstream must not be asked about ``uri``: a file the client did not
        open that is not a regular file (symlinks followed). None when it may be."""
        if uri is None or not uri.startswith("file:"):
            return None
        if open_document(self.protocol.workspace, uri) is not None:
            return None
        return sync.special_file(uri)

    def _client_notification(self, note: rpc.Notification) -> None:
        method, raw = note.method, note.raw
        if method == types.EXIT:
            self._exit()
            return
        if method == types.CANCEL_REQUEST:
            self._client_cancel(raw.get("params"))
            return
        if self.state is Lifecycle.UNINITIALIZED or self.state is Lifecycle.EXITED:
            log.info("dropped %s before initialize", method)
            return
        if method in sync.SYNC:
            self._sync(method, raw)
            return
        problem = rpc.unsendable(raw.get("params"))
        if problem is not None and method == types.WORKSPACE_DID_CHANGE_CONFIGURATION:
            # Kept, they would be sent to every restarted upstream, and fail each time.
            self.ls.report_settings([f"settings ignored: {problem}"])
            return
        if problem is not None:
            log.warning("dropped %s: %s", method, problem)
            return
        if pygls_adapter.handles_notification(self.protocol, method):
            self._to_pygls(dict(raw))
        if method == types.WORKSPACE_DID_CHANGE_CONFIGURATION:
            self._settings = raw.get("params")
            raw = rpc.notification(method, self._upstream_settings())
        self.upstream.send(raw)

    def rewrite_results_with(self, rewriter: ResultRewriter) -> None:
        """Let ``rewriter`` change the results of the methods it asks for."""
        self._rewriter = rewriter

    def _rewrites(self, method: str) -> bool:
        return self._rewriter is not None and self._rewriter.rewrites(method)

    def _prepare(self, request: rpc.Request, params: Any) -> Any:
        """What the rewriter makes of a request it rewrites the result of; None when it
        fails (the result then goes out as the upstream sent it)."""
        if self._rewriter is None or not self._rewriter.rewrites(request.method):
            return None
        try:
            return self._rewriter.prepare(request.method, params)
        except Exception:
            log.exception("preparing to rewrite the result of %s failed", request.method)
            return None

    def set_settings_overlay(self, overlay: dict[str, Any] | None) -> None:
        """Settings merged into every configuration sent upstream (e.g. Jedi's environment).

        Only stored: settings change at initialize (sent once the upstream is
        up) or with didChangeConfiguration (forwarded right after, merged).
        """
        self._overlay = overlay

    def _upstream_settings(self) -> dict[str, Any]:
        client = (
            (self._settings or {}).get("settings") if isinstance(self._settings, dict) else None
        )
        return {"settings": environment.with_overlay(client, self._overlay)}

    def _restart_settings(self) -> dict[str, Any] | None:
        """The configuration a restarted upstream gets, if there is any to give."""
        if self._settings is None and self._overlay is None:
            return None
        return self._upstream_settings()

    def _replay(self) -> list[dict[str, Any]]:
        """didOpen for every open document, for a restarted upstream."""
        return sync.replay(self.protocol.workspace, self._unstructure, self.size_limit)

    def _sync(self, method: str, raw: dict[str, Any]) -> None:
        if not self._to_pygls(raw):
            return  # invalid: neither side's copy changes
        assert self.docs is not None
        message = sync.toward_upstream(
            method,
            raw["params"],
            self.protocol.workspace,
            self.docs,
            self.size_limit,
            incremental=self.upstream_incremental,
        )
        if message is not None:
            self.upstream.send(message, replayable=True)

    def _client_cancel(self, params: Any) -> None:
        msg_id = params.get("id") if isinstance(params, dict) else None
        if msg_id is None or msg_id not in self._inflight:
            return
        up_id = self._client_to_upstream.get(msg_id)
        if up_id is None:
            pygls_adapter.cancel_request(self.protocol, msg_id)
        elif self.upstream.give_up(up_id):
            # Answered now: the upstream may never answer a request it did not start.
            self._client_to_upstream.pop(msg_id, None)
            self.reply(msg_id, rpc.error(msg_id, rpc.REQUEST_CANCELLED, "Request cancelled"))

    def _client_response(self, response: rpc.Response) -> None:
        msg_id = response.id
        if self.upstream.answer(response.raw):
            return
        if self.protocol.owns_request(msg_id):
            self._to_pygls(response.raw)
            return
        log.warning("response to an unknown request id %r", msg_id)

    # ---- replies -------------------------------------------------------

    def claim(self, msg_id: rpc.MsgId) -> bool:
        """Take the right to answer ``msg_id``. True exactly once per request."""
        if self._inflight.pop(msg_id, None) is None:
            return False
        self._answered_now(msg_id)
        return True

    def reply(self, msg_id: rpc.MsgId, message: dict[str, Any]) -> None:
        """Send ``message`` as the one reply to client request ``msg_id``."""
        if self.claim(msg_id):
            self._write(message)
        else:
            log.warning("dropped a second reply to %r", msg_id)

    def _write(self, message: dict[str, Any]) -> None:
        frame = rpc.frame(message)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("-> editor %s", frame.decode("utf-8", "replace"))
        self._write_client(frame)

    # ---- upstream side (the connection's listener) ---------------------

    def upstream_response(self, entry: _Forwarded, raw: dict[str, Any]) -> None:
        """The upstream answered a forwarded request: convert it and reply."""
        self._client_to_upstream.pop(entry.client_id, None)
        raw["id"] = entry.client_id
        if "result" in raw and self._result_may_move(entry):
            unread = self._unread_files(raw["result"], entry)
            if unread:
                self._tasks.spawn(self._reply_after_reading(entry, raw, unread))
                return
            self._convert(raw["result"], entry.uri, toward_upstream=False)
        self._send_result(entry, raw)

    def upstream_lost(self, entry: _Forwarded, reason: str) -> None:
        """A forwarded request will never be answered: the client gets ``reason``."""
        self._client_to_upstream.pop(entry.client_id, None)
        self.reply(entry.client_id, rpc.error(entry.client_id, rpc.REQUEST_FAILED, reason))

    def _unread_files(self, result: Any, entry: _Forwarded) -> list[str]:
        assert self.docs is not None
        return self.docs.unread(result, entry.method, entry.uri)

    async def _reply_after_reading(
        self, entry: _Forwarded, raw: dict[str, Any], uris: list[str]
    ) -> None:
        """Read files off the event loop, then convert and send the one reply.

        Nothing else can answer the request meanwhile: the connection no
        longer holds it, so neither a cancel nor an upstream crash reaches it.
        """
        try:
            assert self.docs is not None
            known = await self.docs.load(uris)
            self._convert(raw["result"], entry.uri, toward_upstream=False, known=known)
        except Exception:  # the upstream's answer still goes out, unconverted
            log.exception("reading files for %s failed", entry.method)
        self._send_result(entry, raw)

    def _send_result(self, entry: _Forwarded, raw: dict[str, Any]) -> None:
        if self._rewriter is not None and self._rewrites(entry.method) and "result" in raw:
            self._tasks.spawn(self._rewritten_reply(self._rewriter, entry, raw))
        else:
            self.reply(entry.client_id, raw)

    async def _rewritten_reply(
        self, rewriter: ResultRewriter, entry: _Forwarded, raw: dict[str, Any]
    ) -> None:
        try:
            raw["result"] = await rewriter.rewrite(entry.method, entry.prepared, raw["result"])
        except Exception:  # the upstream's answer still goes out
            log.exception("rewriting the result of %s failed", entry.method)
        self.reply(entry.client_id, raw)

    def _result_may_move(self, entry: _Forwarded) -> bool:
        return self.docs is not None and self.docs.result_may_move(entry.method, entry.uri)

    def upstream_request(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The upstream asks the editor something; the editor's reply goes back later."""
        if raw.get("method") == types.WORKSPACE_APPLY_EDIT:
            self._convert(raw.get("params"), None, toward_upstream=False)
        self._write(raw)
        return None

    def upstream_notification(self, raw: dict[str, Any]) -> None:
        """Diagnostics get their columns fixed and converted; everything goes to the editor."""
        params = raw.get("params")
        if raw.get("method") == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and isinstance(
            params, dict
        ):
            uri = params.get("uri")
            lines = self.docs.non_ascii_lines(uri) if self.docs and isinstance(uri, str) else None
            if lines is not None:
                fix_pyflakes_columns(params.get("diagnostics"), lines)
            self._convert(params, None, toward_upstream=False)
        self._write(raw)

    def upstream_ready(self) -> None:
        """A first configuration for an upstream the editor has not configured."""
        if self._overlay is not None and self._settings is None:
            self.upstream.send(
                rpc.notification(
                    types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._upstream_settings()
                )
            )

    def _convert(
        self,
        node: Any,
        uri: str | None,
        *,
        toward_upstream: bool,
        known: dict[str, Any] | None = None,  # lines already read, by uri
    ) -> None:
        if self.docs is not None:
            self.docs.convert(node, uri, toward_upstream=toward_upstream, known=known)

    # ---- lifecycle -----------------------------------------------------

    async def _initialize(self, request: rpc.Request) -> None:
        try:
            typed = self.protocol.structure_message(request.raw)
        except Exception:
            self.reply(
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
        self.docs = DocumentIndex(encoding, upstream_encoding({}))
        up = await self.upstream.initialize(init_params)
        upstream_caps: dict[str, Any] = (up or {}).get("capabilities") or {}
        self.docs.upstream_encoding = upstream_encoding(upstream_caps)
        self.upstream_incremental = incremental_sync(upstream_caps)
        own = self._unstructure(ours.capabilities)
        own["experimental"] = deep_merge(
            own.get("experimental") or {}, self.ls.experimental_capabilities()
        )
        capabilities = merge_capabilities(upstream_caps, own)
        capabilities["positionEncoding"] = encoding
        self.state = Lifecycle.RUNNING
        self.reply(
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

    def _unstructure(self, value: Any) -> Any:
        return pygls_adapter.unstructure(self.protocol, value)

    async def _shutdown(self, request: rpc.Request) -> None:
        self.state = Lifecycle.SHUTDOWN
        self.upstream.retire()
        pygls_adapter.cancel_all_requests(self.protocol)
        if self.upstream.ready:
            try:
                await self.upstream.request(types.SHUTDOWN, None, 5.0)
            except UpstreamError as exc:
                log.warning("upstream shutdown: %s", exc)
        self.reply(request.id, rpc.result(request.id, None))

    def _exit(self) -> None:
        if self.state is Lifecycle.EXITED:
            return
        code = 0 if self.state is Lifecycle.SHUTDOWN else 1
        self.state = Lifecycle.EXITED
        self.upstream.close()
        self._tasks.spawn(self._stop_upstream(code))

    async def start_upstream(self) -> None:
        """Spawn the upstream (a missing command is reported, not raised)."""
        await self.upstream.start()

    async def _stop_upstream(self, code: int) -> None:
        await self.upstream.stop()
        if not self.exit_code.done():
            self.exit_code.set_result(code)

    def status(self) -> dict[str, Any]:
        """What ``steerlsp/status`` reports."""
        return {"state": self.state.value, "upstream": self.upstream.status()}

    def show_message(self, kind: types.MessageType, text: str) -> None:
        """One ``window/showMessage`` to the editor (held until initialize is answered)."""
        if self.state in (Lifecycle.UNINITIALIZED, Lifecycle.INITIALIZING):
            self._notices.append((kind, text))
            return
        self._write(
            rpc.notification(types.WINDOW_SHOW_MESSAGE, {"type": int(kind), "message": text})
        )
