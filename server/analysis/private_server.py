"""The private pylsp process: tuned, started on the first question, restarted when stuck.

It is built from the same :class:`UpstreamConnection` as the editor's upstream
but with a :class:`Headless` listener: its diagnostics and requests are
dropped, and it is restarted like the main one after a crash. Its linters
are off and Jedi's completion is tuned for speed (:data:`TUNED_SETTINGS`).
Questions past their budget in a row, with nothing heard from the process,
mean it is stuck (a read that never returns): it is then killed, and its
exit restarts it like a crash.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from steerlsp.server.analysis import items as items
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.upstream.connection import UpstreamConnection, UpstreamOptions
from steerlsp.server.upstream.listener import Headless

# The instance's logger: these lines were always the analysis instance's.
log = logging.getLogger("steerlsp.server.analysis.instance")

# Every plugin that lints, formats or indexes is off; only Jedi's completion,
# signature help and definition answer. ``resolve_at_most: 0`` skips the
# labels and snippets (a signature computation per item) that
# ``include_params: false`` makes useless. ``eager`` documentation is off: it
# resolves every item, dunders included, and took the median at ``obj.`` in
# the example project from 17.8 ms to 99 ms (p90 321 ms); the public items'
# documentation is resolved instead (36 ms; see RESOLVE_AT_MOST in instance.py).
TUNED_SETTINGS: dict[str, Any] = {
    "pylsp": {
        "plugins": {
            "jedi_completion": {
                "enabled": True,
                "include_params": False,
                "include_class_objects": False,
                "include_function_objects": False,
                "resolve_at_most": 0,
                "eager": False,
                "fuzzy": False,
            },
            "jedi_signature_help": {"enabled": True},
            "jedi_definition": {"enabled": True, "follow_imports": True},
            **{
                name: {"enabled": False}
                for name in (
                    "autopep8",
                    "black",
                    "flake8",
                    "jedi_highlight",
                    "jedi_hover",
                    "jedi_references",
                    "jedi_symbols",
                    "mccabe",
                    "preload",
                    "pycodestyle",
                    "pydocstyle",
                    "pyflakes",
                    "pylint",
                    "pylsp_mypy",
                    "rope_autoimport",
                    "rope_completion",
                    "ruff",
                    "yapf",
                )
            },
        }
    }
}

# What the instance is told the client can do: plain-text documentation (its
# first line is read as is), no snippets.
CLIENT_CAPABILITIES = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(
        completion=types.CompletionClientCapabilities(
            completion_item=types.ClientCompletionItemOptions(
                snippet_support=False,
                documentation_format=[types.MarkupKind.PlainText],
                deprecated_support=True,
                tag_support=types.CompletionItemTagOptions(
                    value_set=[types.CompletionItemTag.Deprecated]
                ),
            )
        ),
        signature_help=types.SignatureHelpClientCapabilities(
            signature_information=types.ClientSignatureInformationOptions(
                documentation_format=[types.MarkupKind.PlainText],
                parameter_information=types.ClientSignatureParameterInformationOptions(
                    label_offset_support=True
                ),
            )
        ),
    )
)

# Questions past their budget in a row, with nothing heard from the process for
# STUCK_SECONDS, mean it is stuck: it is restarted like a crashed one. A cold
# Jedi answers late but keeps answering; a stuck one never does.
STUCK_TIMEOUTS = 3
STUCK_SECONDS = 10.0
# The file the warm-up question is asked about (never written).
WARM_NAME = ".steerlsp-warm.py"


class PrivateServer:
    """Starts, configures, watches and stops the private pylsp's connection."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        options: UpstreamOptions,
        *,
        root_uri: Callable[[], str | None],
        settings: Callable[[], dict[str, Any]],
        replay: Callable[[], list[dict[str, Any]]],
        stuck_after: float = STUCK_SECONDS,
    ) -> None:
        """``settings``: the didChangeConfiguration params, read at each (re)start;
        ``replay``: the didOpens that rebuild its documents after a restart."""
        self.loop = loop
        self.options = options
        self._root_uri = root_uri
        self._settings = settings
        self._replay = replay
        self._stuck_after = stuck_after
        self.connection: UpstreamConnection[object] | None = None
        self._starting: asyncio.Task[UpstreamConnection[object]] | None = None
        self.stuck_restarts = 0
        self.timeouts_in_a_row = 0

    def ensure_started(self) -> asyncio.Task[UpstreamConnection[object]]:
        """The start, begun by the first caller (on the loop)."""
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        return self._starting

    async def _start(self) -> UpstreamConnection[object]:
        connection: UpstreamConnection[object] = UpstreamConnection(
            self.options, Headless(), replay=self._replay, settings=self._settings
        )
        self.connection = connection
        await connection.start()
        params = types.InitializeParams(
            process_id=None,
            root_uri=self._root_uri(),
            capabilities=CLIENT_CAPABILITIES,
            client_info=types.ClientInfo(name="steerlsp-analysis"),
        )
        if await connection.initialize(items.unstructure(params)) is not None:
            connection.send(rpc.notification(types.INITIALIZED, {}))
            connection.send(
                rpc.notification(types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._settings())
            )
        return connection

    def configure(self) -> None:
        """Resend the settings to a running instance (a restart reads them anyway)."""
        connection = self.connection
        if connection is not None and connection.ready:
            connection.send(
                rpc.notification(types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._settings())
            )

    def root_uri(self) -> str | None:
        """The workspace root the instance is (or will be) started with."""
        return self._root_uri()

    def warm_uri(self) -> str:
        """A file in the workspace root (Jedi then sees the project), never written."""
        root = self._root_uri()
        folder = to_fs_path(root) if root else None
        if not folder or not os.path.isdir(folder):
            folder = tempfile.gettempdir()
        return from_fs_path(os.path.join(folder, WARM_NAME)) or f"file:///{WARM_NAME}"

    def limit_memory(self, memory_limit_mb: int | None) -> None:
        """The memory limit of the next start and, from any thread, of the running one."""
        self.options.memory_limit_mb = memory_limit_mb
        if self.connection is not None:
            self.loop.call_soon_threadsafe(self.connection.limit_memory, memory_limit_mb)

    def answered(self) -> None:
        """A question was answered in time (any thread): the process is not stuck."""
        self.timeouts_in_a_row = 0

    def timed_out(self) -> None:
        """A question missed its budget (any thread): enough in a row check for a stuck
        process on the loop."""
        self.timeouts_in_a_row += 1
        if self.timeouts_in_a_row >= STUCK_TIMEOUTS:
            self.loop.call_soon_threadsafe(self._restart_if_stuck)

    def _restart_if_stuck(self) -> None:
        """Kill the process if it has said nothing for ``stuck_after`` seconds while
        questions kept timing out: its exit restarts it, like a crash."""
        connection = self.connection
        process = connection.process if connection is not None else None
        if connection is None or process is None or not process.alive:
            return
        if self.timeouts_in_a_row < STUCK_TIMEOUTS:
            return
        if time.monotonic() - connection.last_heard < self._stuck_after:
            return
        log.warning(
            "the analysis instance answered nothing for %.0f s; restarting it",
            time.monotonic() - connection.last_heard,
        )
        self.timeouts_in_a_row = 0
        self.stuck_restarts += 1
        process.kill()

    async def stop(self) -> None:
        """Stop the process, if it was ever started."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        if self.connection is not None:
            await self.connection.stop()
