"""Document sync toward the upstream, after pygls has applied a change.

The editor syncs incrementally in its position encoding. When the upstream
syncs incrementally too, each change is forwarded as the range steerlsp
really replaced (clamped, ordered), its columns converted to the upstream's
encoding against the line as it was before that change: a keystroke costs
O(edit + line) whatever the document's size. Otherwise, and for documents
where ``str.splitlines`` (pylsp's line splitter) disagrees with LSP about
where lines end, the upstream gets the whole text, so it never has to
interpret the editor's columns. Notebook cells are always sent whole.
``replay`` rebuilds an upstream's view after a restart.

A document larger than ``upstream.maxDocumentBytes`` reaches the upstream as
an empty text (pylsp peaked at 18 GB linting a 50 MB line), with one logged
warning; it is sent whole again once it is back under the limit. steerlsp
keeps every text for its own features. Only documents the client opened are
ever sent: nothing here reads the disk.
"""

from __future__ import annotations

import logging
import os
import stat
from typing import Any

from lsprotocol import types
from pygls.workspace import Workspace

from steerlsp.server.documents.encodings import from_code_points
from steerlsp.server.documents.positions import DocumentIndex, fs_path
from steerlsp.server.documents.text import DocumentText, Edit
from steerlsp.server.documents.workspace import SteerDocument, open_document
from steerlsp.server.lsp import jsonrpc as rpc

TEXT_SYNC = frozenset(
    {types.TEXT_DOCUMENT_DID_OPEN, types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_DID_CLOSE}
)
NOTEBOOK_SYNC = frozenset(
    {
        types.NOTEBOOK_DOCUMENT_DID_OPEN,
        types.NOTEBOOK_DOCUMENT_DID_CHANGE,
        types.NOTEBOOK_DOCUMENT_DID_CLOSE,
    }
)
SYNC = TEXT_SYNC | NOTEBOOK_SYNC

log = logging.getLogger(__name__)


class SizeLimit:
    """Which open documents the upstream gets as an empty text, being too large."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.withheld: set[str] = set()

    def allows(self, uri: str, content: DocumentText) -> bool:
        """Whether ``uri``'s text may go upstream now; records (and logs once) a
        document that goes over the limit."""
        if content.size <= self.max_bytes:
            self.withheld.discard(uri)
            return True
        if uri not in self.withheld:
            self.withheld.add(uri)
            log.warning(
                "a document of %d bytes is over upstream.maxDocumentBytes (%d): "
                "the upstream gets it empty until it is smaller (%s)",
                content.size,
                self.max_bytes,
                uri,
            )
        return False

    def text(self, uri: str, content: DocumentText) -> str:
        """The text the upstream gets for ``uri``: its own, or "" when too large."""
        return content.text if self.allows(uri, content) else ""

    def forget(self, uri: str) -> None:
        """A closed document."""
        self.withheld.discard(uri)


def special_file(uri: str) -> str | None:
    """Why the file at a ``file:`` uri must not be read: it exists and is not a regular
    file once symlinks are followed (a FIFO, a device, a socket, a directory), or its
    path cannot be one. None for a regular file or nothing at all."""
    path = fs_path(uri)
    if path is None:
        return None
    try:
        mode = os.stat(path).st_mode
    except ValueError:  # a NUL in the path
        return f"{uri} is not a valid file path"
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return f"{uri} is not a regular file"


def toward_upstream(
    method: str,
    params: dict[str, Any],
    workspace: Workspace,
    docs: DocumentIndex,
    limit: SizeLimit,
    *,
    incremental: bool = False,
) -> dict[str, Any] | None:
    """The notification to send upstream for a sync ``method`` pygls just applied, or
    None to send nothing.

    ``incremental``: the upstream accepts ranged changes (sync kind 2). Also
    records open documents in ``docs`` for position conversion.
    """
    if method in NOTEBOOK_SYNC:
        return _notebook(method, params, workspace, docs, limit)
    uri = params["textDocument"]["uri"]
    if method == types.TEXT_DOCUMENT_DID_CLOSE:
        docs.forget(uri)
        limit.forget(uri)
        return rpc.notification(method, params)
    doc = open_document(workspace, uri)
    if doc is None or doc.content is None:
        return rpc.notification(method, params)  # pygls refused it; so will the upstream
    applied = doc.take_applied()
    docs.update(uri, doc.content)
    was_withheld = uri in limit.withheld
    allowed = limit.allows(uri, doc.content)
    if method == types.TEXT_DOCUMENT_DID_OPEN:
        if not allowed:
            params = {**params, "textDocument": {**params["textDocument"], "text": ""}}
        return rpc.notification(method, params)
    if not allowed and was_withheld:
        return None  # it already has the empty text
    if not allowed or was_withheld:  # over the limit just now, or back under it
        changes = [{"text": limit.text(uri, doc.content)}]
    else:
        encoding = docs.upstream_encoding if incremental else None
        changes = upstream_changes(doc.content, applied, encoding)
    return rpc.notification(
        method,
        {"textDocument": {"uri": uri, "version": doc.version}, "contentChanges": changes},
    )


def upstream_changes(
    content: DocumentText, applied: list[Edit] | None, encoding: str | None
) -> list[dict[str, Any]]:
    """``contentChanges`` that take the upstream to ``content``'s text.

    ``applied``: the edits made since the upstream's last view, in order, or
    None when unknown. ``encoding``: the upstream's position encoding, or None
    when it accepts only full text. Either None means one full-text change.
    """
    if encoding is None or applied is None or content.odd_breaks:
        return [{"text": content.text}]
    return [upstream_change(edit, encoding) for edit in applied]


def upstream_change(edit: Edit, encoding: str) -> dict[str, Any]:
    """One applied edit as a ``TextDocumentContentChangeEvent`` in ``encoding`` columns.

    Lines are 0-based; columns are converted from code points against the
    lines as they were before this edit (later edits in the same
    notification are counted on the text this one produced).
    """
    if edit.span is None:
        return {"text": edit.text}
    start_line, start, end_line, end = edit.span
    return {
        "range": {
            "start": {
                "line": start_line,
                "character": from_code_points(edit.start_line, start, encoding),
            },
            "end": {"line": end_line, "character": from_code_points(edit.end_line, end, encoding)},
        },
        "text": edit.text,
    }


def _notebook(
    method: str,
    params: dict[str, Any],
    workspace: Workspace,
    docs: DocumentIndex,
    limit: SizeLimit,
) -> dict[str, Any]:
    """Cells are sent whole, from the texts the client opened; a cell no client opened
    is never read from disk (its uri may name a FIFO): its change is dropped."""
    if method == types.NOTEBOOK_DOCUMENT_DID_CLOSE:
        for cell in params.get("cellTextDocuments") or []:
            docs.forget(cell["uri"])
            limit.forget(cell["uri"])
        return rpc.notification(method, params)
    if method == types.NOTEBOOK_DOCUMENT_DID_OPEN:
        for item in params.get("cellTextDocuments") or []:
            doc = open_document(workspace, item["uri"])
            if doc is not None and doc.content is not None:
                item["text"] = limit.text(item["uri"], doc.content)
    cells = (params.get("change") or {}).get("cells") or {}
    if cells.get("textContent"):
        kept = []
        for entry in cells["textContent"]:
            uri = entry["document"]["uri"]
            doc = open_document(workspace, uri)
            if doc is None or doc.content is None:
                log.info("dropped a change to a notebook cell that is not open: %s", uri)
                continue
            entry["changes"] = [{"text": limit.text(uri, doc.content)}]
            kept.append(entry)
        cells["textContent"] = kept
    for opened in (cells.get("structure") or {}).get("didOpen") or []:
        doc = open_document(workspace, opened["uri"])
        if doc is not None and doc.content is not None:
            opened["text"] = limit.text(opened["uri"], doc.content)
    for closed in (cells.get("structure") or {}).get("didClose") or []:
        docs.forget(closed["uri"])
        limit.forget(closed["uri"])
    notebook = workspace.get_notebook_document(notebook_uri=params["notebookDocument"]["uri"])
    for cell in notebook.cells if notebook else []:
        doc = open_document(workspace, cell.document)
        if doc is not None and doc.content is not None:
            doc.take_applied()  # cells are sent whole
            docs.update(cell.document, doc.content)
    return rpc.notification(method, params)


def replay(workspace: Workspace, unstructure: Any, limit: SizeLimit) -> list[dict[str, Any]]:
    """didOpen for every open document and notebook, at its current text and version
    (documents over the size limit empty). Only what the client opened: no cell or
    document is read from disk."""
    messages = []
    cells: set[str] = set()
    for notebook in workspace.notebook_documents.values():
        cell_docs = [
            doc for cell in notebook.cells if (doc := open_document(workspace, cell.document))
        ]
        cells.update(doc.uri for doc in cell_docs)
        messages.append(
            rpc.notification(
                types.NOTEBOOK_DOCUMENT_DID_OPEN,
                {
                    "notebookDocument": unstructure(notebook),
                    "cellTextDocuments": [_item(doc, limit) for doc in cell_docs],
                },
            )
        )
    texts = [
        rpc.notification(types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": _item(doc, limit)})
        for doc in list(workspace.text_documents.values())
        if isinstance(doc, SteerDocument) and doc.content is not None and doc.uri not in cells
    ]
    return texts + messages


def _item(doc: SteerDocument, limit: SizeLimit) -> dict[str, Any]:
    assert doc.content is not None
    return {
        "uri": doc.uri,
        "languageId": doc.language_id or "python",
        "version": doc.version or 0,
        "text": limit.text(doc.uri, doc.content),
    }
