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
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.workspace import Workspace

from steerlsp.server import jsonrpc as rpc
from steerlsp.server.documents import DocumentIndex
from steerlsp.server.positions import from_code_points
from steerlsp.server.text import DocumentText, Edit
from steerlsp.server.workspace import open_document

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


def toward_upstream(
    method: str,
    params: dict[str, Any],
    workspace: Workspace,
    docs: DocumentIndex,
    *,
    incremental: bool = False,
) -> dict[str, Any]:
    """The notification to send upstream for a sync ``method`` pygls just applied.

    ``incremental``: the upstream accepts ranged changes (sync kind 2). Also
    records open documents in ``docs`` for position conversion.
    """
    if method in NOTEBOOK_SYNC:
        return _notebook(method, params, workspace, docs)
    uri = params["textDocument"]["uri"]
    if method == types.TEXT_DOCUMENT_DID_CLOSE:
        docs.forget(uri)
        return rpc.notification(method, params)
    doc = open_document(workspace, uri)
    if doc is None or doc.content is None:
        return rpc.notification(method, params)  # pygls refused it; so will the upstream
    applied = doc.take_applied()
    docs.update(uri, doc.content)
    if method == types.TEXT_DOCUMENT_DID_OPEN:
        return rpc.notification(method, params)
    encoding = docs.upstream_encoding if incremental else None
    return rpc.notification(
        method,
        {
            "textDocument": {"uri": uri, "version": doc.version},
            "contentChanges": upstream_changes(doc.content, applied, encoding),
        },
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
    method: str, params: dict[str, Any], workspace: Workspace, docs: DocumentIndex
) -> dict[str, Any]:
    if method == types.NOTEBOOK_DOCUMENT_DID_CLOSE:
        for cell in params.get("cellTextDocuments") or []:
            docs.forget(cell["uri"])
        return rpc.notification(method, params)
    cells = (params.get("change") or {}).get("cells") or {}
    for entry in cells.get("textContent") or []:
        uri = entry["document"]["uri"]
        entry["changes"] = [{"text": workspace.get_text_document(uri).source}]
    for closed in (cells.get("structure") or {}).get("didClose") or []:
        docs.forget(closed["uri"])
    notebook = workspace.get_notebook_document(notebook_uri=params["notebookDocument"]["uri"])
    for cell in notebook.cells if notebook else []:
        doc = open_document(workspace, cell.document)
        if doc is not None and doc.content is not None:
            doc.take_applied()  # cells are sent whole
            docs.update(cell.document, doc.content)
    return rpc.notification(method, params)


def replay(workspace: Workspace, unstructure: Any) -> list[dict[str, Any]]:
    """didOpen for every open document and notebook, at its current text and version."""
    messages = []
    cells: set[str] = set()
    for notebook in workspace.notebook_documents.values():
        cell_docs = [workspace.get_text_document(cell.document) for cell in notebook.cells]
        cells.update(doc.uri for doc in cell_docs)
        messages.append(
            rpc.notification(
                types.NOTEBOOK_DOCUMENT_DID_OPEN,
                {
                    "notebookDocument": unstructure(notebook),
                    "cellTextDocuments": [_item(doc) for doc in cell_docs],
                },
            )
        )
    texts = [
        rpc.notification(types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": _item(doc)})
        for doc in workspace.text_documents.values()
        if doc.uri not in cells
    ]
    return texts + messages


def _item(doc: Any) -> dict[str, Any]:
    return {
        "uri": doc.uri,
        "languageId": doc.language_id or "python",
        "version": doc.version or 0,
        "text": doc.source,
    }
