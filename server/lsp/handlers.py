"""steerlsp's own LSP handlers: lifecycle, settings, documents, inline completions,
``steerlsp/status`` and ``steerlsp/explain``.

The proxy (``server/upstream/proxy.py``) decides which messages reach pygls; the
handlers here only ever see typed lsprotocol messages. ``register`` puts them on a
server built by ``server/app.py``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from steerlsp import __version__
from steerlsp.server import config
from steerlsp.server.completion.replies import ACCEPTED_COMMAND
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.errors import JsonRpcInvalidParams
from steerlsp.server.lsp.server import SteerServer

if TYPE_CHECKING:
    from steerlsp.server.chatlsp.service import ChatLsp
    from steerlsp.server.completion.host import ModelHost
    from steerlsp.server.completion.policy import Completions

# SteerServer too: the proxy imports it from here for its annotations.
__all__ = [
    "BENCH_BUSY",
    "EXPLAIN",
    "STATUS",
    "SteerServer",
    "register",
    "register_accepted",
    "register_bench",
]

log = logging.getLogger(__name__)

STATUS = "steerlsp/status"
EXPLAIN = "steerlsp/explain"
BENCH_BUSY = "steerlsp/benchBusy"
METHODS = (STATUS, EXPLAIN)


def register(server: SteerServer, host: ModelHost, completions: Completions, chat: ChatLsp) -> None:
    """Register the handlers on ``server``, answering with the given components."""

    @server.feature(STATUS)
    def status(ls: SteerServer, params: Any) -> dict[str, Any]:
        """Report the lifecycle, upstream (pid, restarts), model and analysis instance state."""
        analysis = ls.analysis.status() if ls.analysis is not None else {"state": "idle"}
        return {
            "version": __version__,
            **ls.proxy.status(),
            "model": host.status(),
            "analysis": analysis,
        }

    @server.feature(EXPLAIN)
    def explain(ls: SteerServer, params: Any) -> dict[str, Any]:
        """The last completion of a document and what steered it: ``{"textDocument": {"uri"}}``."""
        uri = explained_uri(params)
        if uri is None:
            raise JsonRpcInvalidParams(f'{EXPLAIN} expects {{"textDocument": {{"uri": string}}}}')
        result = completions.explained.explain(uri)
        log.debug("explain %s: %s", uri, result)
        return result

    @server.feature(types.INITIALIZE)
    def initialize(ls: SteerServer, params: types.InitializeParams) -> None:
        """Read steerlsp's settings from initializationOptions, over the CLI's."""
        ls.settings = ls.base_settings
        options = params.initialization_options
        if options is not None and not isinstance(options, dict):
            # Not forwarded upstream either (see proxy.upstream_init_params).
            ls.report_settings(
                [
                    f"initializationOptions must be an object, got {config.shown(options)}; "
                    "using the defaults and command-line flags"
                ]
            )
            options = None
        elif options is not None and (problem := rpc.unsendable(options)) is not None:
            ls.report_settings([f"initializationOptions ignored: {problem}"])
            options = None
        ls.apply_settings(config.section(options))

    @server.feature(types.INITIALIZED)
    def initialized(ls: SteerServer, params: types.InitializedParams) -> None:
        """Start loading the model in the background; initialize has been answered."""
        host.start_loading()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: SteerServer, params: types.DidChangeConfigurationParams
    ) -> None:
        """Section ``steerlsp``; a changed model setting reloads the model."""
        ls.apply_settings(config.section(params.settings))
        completions.configure()
        host.configure()

    def read_ahead(ls: SteerServer, uri: str, opened: bool) -> None:
        """The analysis instance reads the document in the background while the user
        reads it, so that steering's first question on it is quick."""
        if ls.analysis is None or not ls.settings.steering.enabled:
            return

        def text() -> str | None:
            doc = completions.documents.get(uri)
            return doc.source if doc is not None else None

        ls.analysis.warm_document(uri, text, opened=opened)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SteerServer, params: types.DidOpenTextDocumentParams) -> None:
        """Read the document ahead (see ``AnalysisInstance.warm_document``)."""
        read_ahead(ls, params.text_document.uri, opened=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SteerServer, params: types.DidChangeTextDocumentParams) -> None:
        """A running generation for this document is now stale, and so are its ChatLSP
        answers. (Touched: nothing is read ahead while the user types.)"""
        completions.document_changed(params.text_document.uri)
        chat.document_changed(params.text_document.uri)
        read_ahead(ls, params.text_document.uri, opened=False)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SteerServer, params: types.DidCloseTextDocumentParams) -> None:
        """Forget the document's last completion and its ChatLSP answers."""
        completions.document_closed(params.text_document.uri)
        chat.document_changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(
        ls: SteerServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        """Ghost text at the cursor from the in-process model."""
        if ls.analysis is not None:
            ls.analysis.touch()  # nothing is read ahead while the user types
        return await completions.inline(params)


def register_accepted(server: SteerServer, host: ModelHost) -> None:
    """Register the command the editor runs when it accepts a suggestion (after the
    ChatLSP commands, the order ``executeCommandProvider`` lists them in)."""

    @server.command(ACCEPTED_COMMAND)
    def accepted(ls: SteerServer, *args: Any) -> None:
        """The editor accepted a suggestion; counted locally, never sent anywhere."""
        host.suggestion_accepted()


def explained_uri(params: Any) -> str | None:
    """``params.textDocument.uri`` of untyped params, or None when it is missing or no string."""
    document = param(params, "textDocument", None)
    uri = param(document, "uri", None) if document is not None else None
    return uri if isinstance(uri, str) and uri else None


def param(params: Any, name: str, default: Any) -> Any:
    """A field of untyped params: pygls gives a namedtuple-like ``Object``, or a dict."""
    if isinstance(params, dict):
        return params.get(name, default)
    return getattr(params, name, default)


def register_bench(server: SteerServer) -> None:
    """A deliberately slow request of our own, standing in for model work in benchmarks."""

    @server.thread()
    @server.feature(BENCH_BUSY)
    def bench_busy(ls: SteerServer, params: Any) -> dict[str, Any]:
        seconds = float(param(params, "seconds", 1.0))
        deadline = time.perf_counter() + min(seconds, 60.0)
        spins = 0
        while time.perf_counter() < deadline:
            # Pure-Python work holds the GIL: the worst case for the event loop.
            sum(i * i for i in range(2000))
            spins += 1
        return {"spins": spins}
