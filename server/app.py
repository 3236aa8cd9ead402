"""The app factory: builds one steerlsp server and wires its components.

A request's path: the proxy (``server/upstream/proxy.py``) hands steerlsp's own
methods to the handlers registered here, per area (``server/lsp/handlers.py``,
``server/chatlsp/handlers.py``); they call the request policy
(``server/completion/policy.py``), which runs jobs on the model host's worker
(``server/completion/host.py``) and asks the ChatLSP component and the private
analysis instance for what steers them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from steerlsp import __version__
from steerlsp.server import config
from steerlsp.server.analysis.instance import AnalysisInstance
from steerlsp.server.chatlsp import handlers as chatlsp_handlers
from steerlsp.server.chatlsp.service import ChatLsp
from steerlsp.server.completion.explained import ExplainStore
from steerlsp.server.completion.host import ModelHost
from steerlsp.server.completion.loading import WorkDone
from steerlsp.server.completion.menu import CompletionMenu
from steerlsp.server.completion.policy import Completions
from steerlsp.server.documents.workspace import OpenDocuments
from steerlsp.server.lsp import handlers, pygls_adapter
from steerlsp.server.lsp.pygls_adapter import GatedProtocol
from steerlsp.server.lsp.server import SteerServer
from steerlsp.server.lsp.transport import ClientWriter
from steerlsp.server.upstream.connection import UpstreamOptions
from steerlsp.server.upstream.proxy import Proxy


@dataclass(frozen=True)
class App:
    """A built server and the components it answers with."""

    server: SteerServer
    proxy: Proxy
    host: ModelHost
    completions: Completions
    chat: ChatLsp
    analysis: AnalysisInstance

    async def close(self) -> None:
        """Stop what runs beside the server once the session is over."""
        await self.analysis.stop()
        self.chat.close()


def build_server(
    writer: ClientWriter,
    options: UpstreamOptions,
    loop: asyncio.AbstractEventLoop,
    *,
    settings: config.Settings | None = None,
    bench_methods: bool = False,
) -> App:
    """A server for one editor session that writes to ``writer``, with ``options``
    for its upstream and ``settings`` (the CLI's; the defaults when None) under the
    editor's."""
    experimental = {
        "chatlsp": chatlsp_handlers.capabilities(),
        "steerlsp": {"methods": list(handlers.METHODS)},
    }
    server = SteerServer(
        "steerlsp",
        __version__,
        protocol_cls=GatedProtocol,
        max_workers=2,
        experimental=experimental,
    )
    server.base_settings = server.settings = settings or config.Settings()
    server.protocol.set_writer(writer, include_headers=True)
    proxy = server.proxy = Proxy(server, writer.write, options)
    server.protocol.reply_gate = proxy.claim
    analysis = server.analysis = AnalysisInstance(
        loop,
        root_uri=server.root_uri,
        python_environment=server.python_environment,
        query_budget=lambda: server.settings.steering.query_timeout_ms / 1000,
        busy=lambda: host.worker.busy(),
    )

    def current() -> config.Settings:
        return server.settings

    def work_done() -> WorkDone | None:
        window = server.client_capabilities.window
        return server.work_done_progress if window and window.work_done_progress else None

    documents = OpenDocuments(server.open_workspace)
    chat = ChatLsp(documents, current, server.python_environment)

    def warm_analysis() -> None:
        # The private pylsp starts now, so that the first steered completion does not
        # wait for it (about 2.4 s) and go unsteered.
        if server.settings.steering.enabled:
            analysis.warm()

    host = ModelHost(
        current,
        notify=proxy.show_message,
        python_environment=server.python_environment,
        work_done=work_done,
        ready_hook=warm_analysis,
    )
    completions = Completions(
        host, documents, current, explained=ExplainStore(), chat=chat, analysis=analysis
    )
    proxy.rewrite_results_with(
        CompletionMenu(
            completions,
            host,
            settings=current,
            client_capabilities=lambda: server.client_capabilities,
            unstructure=lambda item: pygls_adapter.unstructure(server.protocol, item),
        )
    )
    handlers.register(server, host, completions, chat)
    chatlsp_handlers.register(server, chat, completions)
    handlers.register_accepted(server, host)
    if bench_methods:
        handlers.register_bench(server)
    return App(server, proxy, host, completions, chat, analysis)


__all__ = ["App", "build_server"]
