"""Document sync toward the upstream, after pygls has applied a change.

The editor syncs incrementally in its position encoding; the upstream is sent
whole texts, so it never has to interpret the editor's columns. Notebook cells
get the same treatment. ``replay`` rebuilds an upstream's view after a restart.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.workspace import Workspace

from steerlsp.server import jsonrpc as rpc
from steerlsp.server.documents import DocumentIndex

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
    method: str, params: dict[str, Any], workspace: Workspace, docs: DocumentIndex
) -> dict[str, Any]:
    """The notification to send upstream for a sync ``method`` pygls just applied.

    Also records the new texts in ``docs`` for position conversion.
    """
    if method in NOTEBOOK_SYNC:
        return _notebook(method, params, workspace, docs)
    uri = params["textDocument"]["uri"]
    if method == types.TEXT_DOCUMENT_DID_CLOSE:
        docs.forget(uri)
        return rpc.notification(method, params)
    doc = workspace.get_text_document(uri)
    docs.update(uri, doc.source)
    if method == types.TEXT_DOCUMENT_DID_OPEN:
        return rpc.notification(method, params)
    return rpc.notification(
        method,
        {
            "textDocument": {"uri": uri, "version": doc.version},
            "contentChanges": [{"text": doc.source}],
        },
    )


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
        docs.update(cell.document, workspace.get_text_document(cell.document).source)
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
