"""Every use of pygls' internals, in one module, so that a pygls upgrade touches one file.

steerlsp routes messages itself and lets pygls dispatch only the ones it
serves; that needs a few of pygls' private names (checked against pygls
2.1): the cattrs converter, the table of running request futures, the cancel
handler, the builtin ``initialize``, the workspace slot, the reply method a
gate wraps, the handler-result callback that logs a handler's error, and the
text document factory. Outside this module no code
names any of them; it calls the functions and base classes below instead.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

log = logging.getLogger(__name__)

# RequestCancelled, ContentModified, ServerCancelled: a request ended by the client, a
# newer request or an edit. Nothing went wrong.
CANCELLED_CODES = frozenset({-32800, -32801, -32802})


class GatedProtocol(LanguageServerProtocol):
    """pygls' protocol, with replies gated by the router and ids of our own.

    ``reply_gate(msg_id)`` is asked before pygls answers a request; False
    means that id was already answered, and the reply is dropped.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reply_gate: Callable[[Any], bool] | None = None
        self._own_ids = itertools.count(1)
        self._own_outgoing: set[Any] = set()

    def owns_request(self, msg_id: Any) -> bool:
        """True (once) if ``msg_id`` is a request pygls sent to the client."""
        if msg_id in self._own_outgoing:
            self._own_outgoing.discard(msg_id)
            return True
        return False

    def send_request(self, method, params=None, callback=None, msg_id=None):  # type: ignore[no-untyped-def]
        # A prefix no editor uses, so pygls' single future table never holds
        # one of our requests and a client request under the same id.
        msg_id = msg_id or f"steerlsp:own:{next(self._own_ids)}"
        self._own_outgoing.add(msg_id)
        return super().send_request(method, params, callback, msg_id)

    def _send_handler_result(self, future, *, msg_id):  # type: ignore[no-untyped-def]
        # pygls logs every JsonRpcException a handler raises at ERROR with its traceback,
        # and reports it as a server error. Those are answers (cancelled, the model still
        # loading), not server errors: logged at their level, the traceback at debug only.
        error = None if future.cancelled() else future.exception()
        if not isinstance(error, JsonRpcException):
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        log.log(
            answered_level(error),
            "request %r answered with error %s: %s",
            msg_id,
            error.code,
            error.message,
            exc_info=error if log.isEnabledFor(logging.DEBUG) else None,
        )
        self._send_response(msg_id, error=error.to_response_error())

    def _send_response(self, msg_id, result=None, error=None):  # type: ignore[no-untyped-def]
        if self.reply_gate is not None and not self.reply_gate(msg_id):
            log.warning("dropped a second reply to %r", msg_id)
            return
        super()._send_response(msg_id, result, error)


def answered_level(error: JsonRpcException) -> int:
    """The log level of a handler's error reply: DEBUG for a cancelled request, the
    error's own ``log_level`` if it has one, else WARNING."""
    if error.code in CANCELLED_CODES:
        return logging.DEBUG
    level = getattr(error, "log_level", logging.WARNING)
    return level if isinstance(level, int) else logging.WARNING


def unstructure(protocol: LanguageServerProtocol | Any, value: Any) -> Any:
    """An lsprotocol value as JSON-ready data (camelCase keys), with pygls' converter.

    ``protocol`` is a server's or a client's protocol.
    """
    return protocol._converter.unstructure(value)


def serves(protocol: LanguageServerProtocol, method: str, params: Any) -> bool:
    """True if a handler is registered for request ``method`` (or its command)."""
    fm = protocol.fm
    if method == types.WORKSPACE_EXECUTE_COMMAND:
        return isinstance(params, dict) and params.get("command") in fm.commands
    return method in fm.features


def handles_notification(protocol: LanguageServerProtocol, method: str) -> bool:
    """True if pygls acts on notification ``method`` (a handler or a builtin)."""
    fm = protocol.fm
    return method in fm.features or method in fm.builtin_features


def cancel_request(protocol: LanguageServerProtocol, msg_id: Any) -> None:
    """Cancel the request pygls is running under ``msg_id``, as ``$/cancelRequest`` would."""
    protocol._handle_cancel_notification(msg_id)


def cancel_all_requests(protocol: LanguageServerProtocol) -> None:
    """Cancel every request pygls is still running (at shutdown)."""
    for future in list(protocol._request_futures.values()):
        if not future.done():
            future.cancel()


def initialize_result(
    protocol: LanguageServerProtocol, params: types.InitializeParams
) -> types.InitializeResult:
    """Run pygls' builtin initialize (workspace, capabilities) and return its result."""
    # It is a generator that yields to a user handler; we register none, so it
    # returns at the first step.
    gen = protocol.lsp_initialize(params)
    try:
        while True:
            handler, args, kwargs = next(gen)
            handler(*(args or ()), **(kwargs or {}))
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def has_workspace(protocol: LanguageServerProtocol) -> bool:
    """True once initialize has built a workspace (reading ``protocol.workspace`` raises before)."""
    return protocol._workspace is not None


def replace_workspace(protocol: LanguageServerProtocol, workspace: Workspace) -> None:
    """Make ``workspace`` the one pygls' handlers and getters use."""
    protocol._workspace = workspace


class Document(TextDocument):
    """A pygls text document that may drop pygls' own copy of its text."""

    def drop_source(self) -> None:
        """Forget the text pygls keeps; the subclass serves ``source`` itself."""
        self._source = None


class DocumentFactoryWorkspace(Workspace):
    """A pygls workspace whose text documents come from :meth:`create_document`."""

    def create_document(
        self, uri: str, source: str | None, version: int | None, language_id: str | None
    ) -> TextDocument:
        """The document to store for ``uri``; pygls' own by default."""
        return super()._create_text_document(uri, source, version, language_id)

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return self.create_document(doc_uri, source, version, language_id)


def client_process(client: LanguageClient) -> Any:
    """The server subprocess a pygls client started (an ``asyncio`` process), or None."""
    return client._server
