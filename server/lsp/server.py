"""The steerlsp language server: pygls' server with the session's settings.

``server/app.py`` builds it and wires its components; the handlers that answer
on it are registered there, per area (``server/lsp/handlers.py``,
``server/chatlsp/handlers.py``).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import Workspace

from steerlsp.server import config
from steerlsp.server.lsp.pygls_adapter import GatedProtocol, has_workspace
from steerlsp.server.upstream import environment, isolation

if TYPE_CHECKING:
    from steerlsp.server.analysis.instance import AnalysisInstance
    from steerlsp.server.upstream.proxy import Proxy

# The logger these lines have always been written under (editors' logs are read by it).
log = logging.getLogger("steerlsp.server.lsp.handlers")


class SteerServer(LanguageServer):
    """The steerlsp language server.

    ``experimental``: what ``capabilities.experimental`` advertises (the methods and
    commands of steerlsp's own handlers). ``proxy`` and ``analysis`` are set by
    ``build_server`` once they are built: the proxy is built on the server.
    """

    protocol: GatedProtocol  # built from protocol_cls=GatedProtocol (build_server)
    proxy: Proxy
    analysis: AnalysisInstance | None = None  # the private pylsp steering asks (lazy)
    base_settings: config.Settings = config.Settings()
    settings: config.Settings = config.Settings()

    def __init__(self, *args: Any, experimental: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.experimental = experimental
        self.shown_problems: set[str] = set()  # settings problems already popped up

    def apply_settings(self, raw: Any) -> None:
        """Merge settings from the editor; invalid values are ignored and reported."""
        self.settings, problems = config.merge(self.settings, raw)
        self.proxy.set_settings_overlay(environment.overlay(self.python_environment()))
        isolation.set_trusted(self.settings.python.trust_workspace)
        bounds = self.settings.upstream
        self.proxy.size_limit.max_bytes = bounds.max_document_bytes
        self.proxy.upstream.limit_memory(bounds.memory_limit())
        if self.analysis is not None:
            self.analysis.configure()  # the same Jedi environment as the main upstream
            self.analysis.limit(bounds.memory_limit(), bounds.max_document_bytes)
        self.report_settings(problems)

    def experimental_capabilities(self) -> dict[str, Any]:
        """What ``capabilities.experimental`` advertises: the ChatLSP methods and the
        commands that run them (``executeCommandProvider`` lists those too)."""
        return self.experimental

    def report_settings(self, problems: list[str]) -> None:
        """Log every problem; pop up each distinct one once a session (editors resend settings)."""
        if not problems:
            return
        log.warning("invalid settings: %s", "; ".join(problems))
        new = [problem for problem in problems if problem not in self.shown_problems]
        if new:
            self.shown_problems.update(new)
            self.proxy.show_message(
                types.MessageType.Warning, "steerlsp: invalid settings ignored: " + "; ".join(new)
            )

    def python_environment(self) -> str | None:
        """The environment pylsp's Jedi resolves imports in (see server/upstream/environment.py)."""
        python = self.settings.python
        root = self.workspace.root_path if has_workspace(self.protocol) else None
        found = environment.resolve(
            python.environment, root, os.environ, trusted=python.trust_workspace
        )
        if found is None and (skipped := environment.untrusted_venv(root)):
            log.info("not using %s: the workspace is not trusted (python.trustWorkspace)", skipped)
        return found

    def root_uri(self) -> str | None:
        """The workspace root the editor gave at initialize, or None."""
        return self.workspace.root_uri if has_workspace(self.protocol) else None

    def open_workspace(self) -> Workspace | None:
        """pygls' workspace, or None before ``initialize`` built one."""
        return self.workspace if has_workspace(self.protocol) else None

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls pops up a message per failure; a malformed message must not.
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
