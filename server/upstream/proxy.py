"""The router between the editor, steerlsp's own handlers and the upstream server.

Everything here runs on the event loop thread. Messages arrive as decoded
dicts; the ones steerlsp serves are typed and handed to pygls, the rest are
forwarded to the upstream connection (``server/upstream/connection.py``), which re-mints
their ids for the other side:

- client request ``id`` -> upstream id (``_client_to_upstream``, for cancels);
- upstream request ``id`` -> client-side id ``steerlsp:N`` (in the connection).

Each direction has its own table, so client request 5 and upstream request 5
never meet. Each client request gets exactly one reply
(``replies.py``, which also carries forwarded results back). The router's
other helpers each do one job: the lifecycle (``lifecycle.py``) and the
upstream's copy of the documents (``mirror.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp.server.documents import sync
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp import pygls_adapter
from steerlsp.server.lsp.capabilities import document_uri, shape_error
from steerlsp.server.lsp.framing import FramingError
from steerlsp.server.lsp.tasks import BackgroundTasks
from steerlsp.server.upstream import environment
from steerlsp.server.upstream.connection import UpstreamConnection, UpstreamOptions
from steerlsp.server.upstream.lifecycle import Lifecycle, Session
from steerlsp.server.upstream.mirror import DocumentMirror
from steerlsp.server.upstream.pylsp_quirks import fix_pyflakes_columns
from steerlsp.server.upstream.replies import (
    ClientReplies,
    ForwardedRequest,
    ForwardedResults,
    ResultRewriter,
)

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


class Proxy:
    """Routes every message between the editor, pygls and the upstream connection."""

    def __init__(
        self, ls: SteerServer, write_client: Callable[[bytes], None], options: UpstreamOptions
    ) -> None:
        self.ls = ls
        self.protocol = ls.protocol
        self._tasks = BackgroundTasks()
        self._replies = ClientReplies(write_client)
        self.documents = DocumentMirror(ls.protocol, ls.settings.upstream.max_document_bytes)
        # The same object handlers resize when upstream.maxDocumentBytes changes.
        self.size_limit = self.documents.size_limit
        self.upstream: UpstreamConnection[ForwardedRequest] = UpstreamConnection(
            options, self, replay=self.documents.replay, settings=self._restart_settings
        )
        self.session = Session(ls, self._replies, self.upstream, self.documents, self._tasks)
        self.exit_code = self.session.exit_code
        self._results = ForwardedResults(self.documents, self._replies, self._tasks)
        self._client_to_upstream: dict[rpc.MsgId, int] = {}
        self._settings: dict[str, Any] | None = None
        self._overlay: dict[str, Any] | None = None

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
        self.session.exit()

    def _framing_error(self, event: FramingError) -> None:
        msg_id = rpc.salvage_id(event.discarded)
        log.warning("framing error: %s (%d bytes discarded)", event.reason, len(event.discarded))
        if msg_id is not None:
            self._replies.error_once(msg_id, rpc.PARSE_ERROR, f"Parse error: {event.reason}")

    def _dispatch_client(self, message: rpc.Message) -> None:
        if isinstance(message, rpc.Request):
            self._client_request(message)
        elif isinstance(message, rpc.Notification):
            self._client_notification(message)
        elif isinstance(message, rpc.Response):
            self._client_response(message)
        else:
            log.warning("invalid message: %s", message.message)
            if message.id is not None:
                self._replies.error_once(message.id, message.code, message.message)

    def _client_request(self, request: rpc.Request) -> None:
        method, msg_id = request.method, request.id
        refusal = self.session.refusal(request)
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
            self._replies.refuse(msg_id, rpc.error(msg_id, code, text))
            return
        self._replies.accept(msg_id, method)
        if method == types.INITIALIZE:
            self._tasks.spawn(self.session.initialize(request))
        elif method == types.SHUTDOWN:
            self._tasks.spawn(self.session.shutdown(request))
        elif pygls_adapter.serves(self.protocol, method, request.raw.get("params")):
            self._to_pygls(request.raw, msg_id)
        else:
            self._forward_request(request)

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
        special = self.documents.special_file(uri)
        if special is not None:
            # The upstream would read it: a FIFO blocks pylsp for good, /dev/stdin is
            # its own LSP input, /dev/zero grows it without bound.
            log.info("refused %s: %s", request.method, special)
            self.reply(
                request.id,
                rpc.error(request.id, rpc.INVALID_PARAMS, f"Invalid params: {special}"),
            )
            return
        prepared = self._results.prepare(request.method, params)
        entry = ForwardedRequest(request.id, request.method, uri, prepared=prepared)
        self.documents.convert(params, uri, toward_upstream=True)
        self._client_to_upstream[request.id] = self.upstream.forward(request.raw, entry)

    def _client_notification(self, note: rpc.Notification) -> None:
        method, raw = note.method, note.raw
        if method == types.EXIT:
            self.session.exit()
            return
        if method == types.CANCEL_REQUEST:
            self._client_cancel(raw.get("params"))
            return
        if self.session.state in (Lifecycle.UNINITIALIZED, Lifecycle.EXITED):
            log.info("dropped %s before initialize", method)
            return
        if method in sync.SYNC:
            if self._to_pygls(raw):  # invalid: neither side's copy changes
                message = self.documents.toward_upstream(method, raw["params"])
                if message is not None:
                    self.upstream.send(message, replayable=True)
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

    def _client_cancel(self, params: Any) -> None:
        msg_id = params.get("id") if isinstance(params, dict) else None
        if msg_id is None or not self._replies.in_flight(msg_id):
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

    # ---- settings ------------------------------------------------------

    def rewrite_results_with(self, rewriter: ResultRewriter) -> None:
        """Let ``rewriter`` change the results of the methods it asks for."""
        self._results.rewrite_with(rewriter)

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

    # ---- replies -------------------------------------------------------

    def claim(self, msg_id: rpc.MsgId) -> bool:
        """Take the right to answer ``msg_id``. True exactly once per request."""
        return self._replies.claim(msg_id)

    def reply(self, msg_id: rpc.MsgId, message: dict[str, Any]) -> None:
        """Send ``message`` as the one reply to client request ``msg_id``."""
        self._replies.reply(msg_id, message)

    # ---- upstream side (the connection's listener) ---------------------

    def upstream_response(self, entry: ForwardedRequest, raw: dict[str, Any]) -> None:
        """The upstream answered a forwarded request: convert it and reply."""
        self._client_to_upstream.pop(entry.client_id, None)
        raw["id"] = entry.client_id
        self._results.deliver(entry, raw)

    def upstream_lost(self, entry: ForwardedRequest, reason: str) -> None:
        """A forwarded request will never be answered: the client gets ``reason``."""
        self._client_to_upstream.pop(entry.client_id, None)
        self.reply(entry.client_id, rpc.error(entry.client_id, rpc.REQUEST_FAILED, reason))

    def upstream_request(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        """The upstream asks the editor something; the editor's reply goes back later."""
        if raw.get("method") == types.WORKSPACE_APPLY_EDIT:
            self.documents.convert(raw.get("params"), None, toward_upstream=False)
        self._replies.write(raw)
        return None

    def upstream_notification(self, raw: dict[str, Any]) -> None:
        """Diagnostics get their columns fixed and converted; everything goes to the editor."""
        params = raw.get("params")
        if raw.get("method") == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and isinstance(
            params, dict
        ):
            uri = params.get("uri")
            lines = self.documents.non_ascii_lines(uri) if isinstance(uri, str) else None
            if lines is not None:
                fix_pyflakes_columns(params.get("diagnostics"), lines)
            self.documents.convert(params, None, toward_upstream=False)
        self._replies.write(raw)

    def upstream_ready(self) -> None:
        """A first configuration for an upstream the editor has not configured."""
        if self._overlay is not None and self._settings is None:
            self.upstream.send(
                rpc.notification(
                    types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._upstream_settings()
                )
            )

    def show_message(self, kind: types.MessageType, text: str) -> None:
        """One ``window/showMessage`` to the editor (held until initialize is answered)."""
        self.session.show_message(kind, text)

    # ---- lifecycle -----------------------------------------------------

    async def start_upstream(self) -> None:
        """Spawn the upstream (a missing command is reported, not raised)."""
        await self.upstream.start()

    def status(self) -> dict[str, Any]:
        """What ``steerlsp/status`` reports."""
        return {"state": self.session.state.value, "upstream": self.upstream.status()}
