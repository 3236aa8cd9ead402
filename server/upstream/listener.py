"""Who hears what an upstream connection says: the router, or nobody (:class:`Headless`).

A connection talks to its owner only through these calls, so the same
connection class serves the editor's upstream (the router is its listener)
and a private instance with no editor attached.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol, TypeVar

from lsprotocol import types

from steerlsp.server.lsp import jsonrpc as rpc

# The connection's logger: these lines were always the connection's, and users filter on it.
log = logging.getLogger("steerlsp.server.upstream.connection")

Tag_contra = TypeVar("Tag_contra", contravariant=True)


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
