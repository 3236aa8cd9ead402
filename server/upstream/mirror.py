"""The upstream's copy of the editor's open documents, and the position units of each side.

The router hands pygls every document notification first (pygls keeps the
editor's text); this mirror then says what the upstream gets for it: the
same change, a ranged one when the upstream syncs incrementally, or nothing
for a document over ``upstream.maxDocumentBytes``. After a restart it names
the didOpens that rebuild the upstream's documents. Positions cross between
the editor's encoding and the upstream's here, in both directions.
"""

from __future__ import annotations

from typing import Any

from pygls.protocol import LanguageServerProtocol

from steerlsp.server.documents import sync
from steerlsp.server.documents.positions import DocumentIndex
from steerlsp.server.documents.workspace import open_document
from steerlsp.server.lsp import pygls_adapter
from steerlsp.server.lsp.capabilities import incremental_sync, upstream_encoding


class DocumentMirror:
    """What the upstream knows of the open documents, and in which position units."""

    def __init__(self, protocol: LanguageServerProtocol, max_document_bytes: int) -> None:
        self.protocol = protocol
        self.docs: DocumentIndex | None = None  # from initialize on
        self.incremental = False  # the upstream takes ranged didChange events
        # Open documents too large for the upstream (upstream.maxDocumentBytes).
        self.size_limit = sync.SizeLimit(max_document_bytes)

    def negotiated(self, encoding: str) -> None:
        """The editor's position encoding is settled (initialize); the upstream's is not yet."""
        self.docs = DocumentIndex(encoding, upstream_encoding({}))

    def upstream_initialized(self, capabilities: dict[str, Any]) -> None:
        """The upstream said how it counts columns and whether it takes ranged changes."""
        assert self.docs is not None
        self.docs.upstream_encoding = upstream_encoding(capabilities)
        self.incremental = incremental_sync(capabilities)

    def toward_upstream(self, method: str, params: Any) -> dict[str, Any] | None:
        """The notification the upstream gets for a document notification pygls took."""
        assert self.docs is not None
        return sync.toward_upstream(
            method,
            params,
            self.protocol.workspace,
            self.docs,
            self.size_limit,
            incremental=self.incremental,
        )

    def replay(self) -> list[dict[str, Any]]:
        """didOpen for every open document, for a restarted upstream."""
        return sync.replay(self.protocol.workspace, self.unstructure, self.size_limit)

    def special_file(self, uri: str | None) -> str | None:
        """Why the upstream must not be asked about ``uri``: a file the client did not
        open that is not a regular file (symlinks followed). None when it may be."""
        if uri is None or not uri.startswith("file:"):
            return None
        if open_document(self.protocol.workspace, uri) is not None:
            return None
        return sync.special_file(uri)

    def convert(
        self,
        node: Any,
        uri: str | None,
        *,
        toward_upstream: bool,
        known: dict[str, Any] | None = None,  # lines already read, by uri
    ) -> None:
        """Rewrite the positions in ``node`` in place into the other side's units."""
        if self.docs is not None:
            self.docs.convert(node, uri, toward_upstream=toward_upstream, known=known)

    def non_ascii_lines(self, uri: str) -> Any:
        """The open document's lines where columns differ by unit; None when none do."""
        return self.docs.non_ascii_lines(uri) if self.docs is not None else None

    def unstructure(self, value: Any) -> Any:
        """An lsprotocol value as the JSON the wire carries."""
        return pygls_adapter.unstructure(self.protocol, value)
