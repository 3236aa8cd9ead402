"""The private instance's documents: one per editor document, under the same uri.

Jedi derives the module's path, package and ``sys.path`` from the uri, which
a private scheme would lose (``from .pricing import`` and the project's own
imports would stop resolving): the process is the isolation, not the uri.
Each text is kept in sync with one ranged ``didChange`` per question that
replaces only what differs from the last text sent (the speculative insertion).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from steerlsp.server.analysis import items as items
from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.upstream.connection import UpstreamConnection

# Private documents kept open; the least recently asked about is closed past it.
MAX_DOCUMENTS = 8


@dataclass
class _Private:
    """A private document: the last text sent and its version (ours, not the editor's)."""

    text: str
    version: int = 1


class PrivateDocuments:
    """The texts last sent to the private instance, least recently asked about first."""

    def __init__(self) -> None:
        self._docs: OrderedDict[str, _Private] = OrderedDict()

    def __len__(self) -> int:
        return len(self._docs)

    def sync(self, connection: UpstreamConnection[object], uri: str, text: str) -> None:
        """Bring the private document to ``text``: didOpen the first time, then one
        ranged didChange of what differs."""
        doc = self._docs.get(uri)
        if doc is None:
            doc = self._docs[uri] = _Private(text)
            connection.send(self._open(uri, doc), replayable=True)
            while len(self._docs) > MAX_DOCUMENTS:
                self.close(connection, next(iter(self._docs)))
            return
        self._docs.move_to_end(uri)
        change = items.ranged_change(doc.text, text)
        if change is None:
            return
        doc.text = text
        doc.version += 1
        params = types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            content_changes=[change],
        )
        connection.send(
            rpc.notification(types.TEXT_DOCUMENT_DID_CHANGE, items.unstructure(params)),
            replayable=True,
        )

    def close(self, connection: UpstreamConnection[object], uri: str) -> None:
        """Close a private document (the least recently asked, or the warm-up's)."""
        if self._docs.pop(uri, None) is None:
            return
        close = types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        connection.send(
            rpc.notification(types.TEXT_DOCUMENT_DID_CLOSE, items.unstructure(close)),
            replayable=True,
        )

    def replay(self) -> list[dict[str, Any]]:
        """didOpen of every private document, for a restarted instance."""
        return [self._open(uri, doc) for uri, doc in self._docs.items()]

    def _open(self, uri: str, doc: _Private) -> dict[str, Any]:
        params = types.DidOpenTextDocumentParams(
            types.TextDocumentItem(
                uri=uri, language_id="python", version=doc.version, text=doc.text
            )
        )
        return rpc.notification(types.TEXT_DOCUMENT_DID_OPEN, items.unstructure(params))
