"""When an upstream that exited unasked comes back, how soon, and what the user is told.

A crashed upstream is restarted with backoff a bounded number of times; past
that, it is given up for the session, and so is one that cannot be started
or refuses to initialize (it would refuse the same params again). The
messages here are the ones the user sees in the editor.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steerlsp.server.upstream.connection import UpstreamOptions

# The connection's logger: these lines were always the connection's, and users filter on it.
log = logging.getLogger("steerlsp.server.upstream.connection")

# How a user gets a given-up upstream back: a new steerlsp, from the editor.
RESTART_HINT = (
    "restart the language server from the editor (:LspRestart in Neovim, "
    "M-x eglot-reconnect or lsp-workspace-restart in Emacs, :lsp-restart in Helix, "
    "or reload the window in VS Code)"
)


class RestartPolicy:
    """Counts the unasked exits of one connection and decides whether each is restarted."""

    def __init__(self, options: UpstreamOptions) -> None:
        self.options = options  # shared with the connection: its memory limit changes
        self.restarts = 0
        self.memory_restarts = 0  # of ``restarts``: the process reached its memory limit
        self._told_crash = False

    def crashed(self, code: int | None, out_of_memory: bool) -> str | None:
        """Count an unasked exit: how it exited (``exited (code 1)``), or None when no
        restart is left.

        Decided at the exit, so that no request is told of a restart that never comes.
        """
        self.restarts += 1
        if out_of_memory:
            self.memory_restarts += 1
            log.warning(
                "the upstream reached its memory limit (%s MiB)", self.options.memory_limit_mb
            )
        if self.restarts > self.options.max_restarts:
            return None
        if out_of_memory:
            return f"reached its memory limit ({self.options.memory_limit_mb} MiB)"
        return f"exited (code {code})"

    def delay(self) -> float:
        """Seconds to wait before the restart of the latest exit."""
        backoff = self.options.backoff
        return backoff[min(self.restarts - 1, len(backoff) - 1)]

    def restarted_notice(self, how: str) -> str | None:
        """What the user is told of a restart: the first one only."""
        if self._told_crash:
            return None
        self._told_crash = True
        return (
            f"steerlsp: the upstream language server {how} "
            "and was restarted; open documents were restored."
        )

    def gone(self) -> str:
        """Why the upstream is given up after too many crashes."""
        return (
            f"steerlsp: the upstream language server crashed {self.restarts} times "
            "and is gone; not restarting it again. steerlsp's own features keep "
            f"working. To get it back, {RESTART_HINT}."
        )


def lost_while_running(how: str) -> str:
    """What a request that was running when the upstream crashed is answered with."""
    return (
        f"The upstream language server {how} while this request was running; it is being restarted."
    )


def missing(problem: object) -> str:
    """Why the upstream is given up when its command cannot be started."""
    return (
        f"steerlsp: cannot start the upstream language server {problem}. "
        "Install python-lsp-server or pass --upstream CMD; "
        "steerlsp's own features keep working."
    )


def initialize_refused(problem: str) -> str:
    """Why the upstream is given up when it refused or timed out on initialize."""
    return (
        f"steerlsp: the upstream language server failed to initialize ({brief(problem)}). "
        "Its features are unavailable; steerlsp's own features keep working. "
        f"To retry, {RESTART_HINT}."
    )


def brief(text: str, limit: int = 200) -> str:
    """``text`` on one line, without control characters, cut to ``limit`` characters."""
    text = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
