"""pygls' workspace, with documents stored as :class:`~steerlsp.server.documents.text.DocumentText`.

pygls applies an incremental change by re-splitting the whole text with
``str.splitlines`` and rebuilding it line by line: O(document) per keystroke,
and wrong where a line holds ``\\f`` or ``\\u2028``. Our documents splice the
lines an edit touches, and log what they applied (in code points, with the
lines it was counted on) for :mod:`steerlsp.server.documents.sync` to forward upstream.
pygls' private hooks for this are reached through ``server/lsp/pygls_adapter.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

from steerlsp.server.documents.encodings import UTF16
from steerlsp.server.documents.text import DocumentText, Edit
from steerlsp.server.lsp.pygls_adapter import Document, DocumentFactoryWorkspace, replace_workspace

# A change log nobody collects must not grow without bound: past this many
# entries it collapses into "send the full text".
_MAX_LOGGED = 1024


class SteerDocument(Document):
    """A pygls TextDocument whose text is a DocumentText, edited in place."""

    def __init__(self, uri: str, source: str | None, encoding: str, **kwargs: Any) -> None:
        super().__init__(uri, source=source, **kwargs)
        self.encoding = encoding
        # None: a document the editor did not open; pygls reads it from disk.
        self.content = DocumentText(source) if source is not None else None
        if source is not None:
            self.drop_source()  # pygls' copy: the didOpen text would live as long as we do
        self._applied: list[Edit] | None = []

    @property
    def source(self) -> str:
        """The whole text (joined once per edit, on first read)."""
        if self.content is None:
            return super().source
        return self.content.text

    @property
    def lines(self) -> Sequence[str]:
        """LSP lines with terminators (pygls' own splits with ``str.splitlines``)."""
        if self.content is None:
            return super().lines
        return self.content.lines

    def apply_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        """Apply one change (pygls calls this per change, in order) and log it for sync."""
        if self.content is None:
            self.content = DocumentText(super().source)
        if isinstance(change, types.TextDocumentContentChangePartial):
            start, end = change.range.start, change.range.end
            edit = self.content.edit(
                (start.line, start.character), (end.line, end.character), change.text, self.encoding
            )
        else:
            edit = self.content.replace(change.text)
        if self._applied is not None:
            self._applied.append(edit)
            if len(self._applied) > _MAX_LOGGED:
                self._applied = None

    def take_applied(self) -> list[Edit] | None:
        """The changes applied since the last call, or None: "send the full text"."""
        applied, self._applied = self._applied, []
        return applied


class SteerWorkspace(DocumentFactoryWorkspace):
    """Creates :class:`SteerDocument` instead of pygls' TextDocument."""

    def create_document(
        self, uri: str, source: str | None, version: int | None, language_id: str | None
    ) -> TextDocument:
        """A :class:`SteerDocument` in the negotiated encoding."""
        return SteerDocument(
            uri,
            source,
            client_encoding(self),
            version=version,
            language_id=language_id,
            position_codec=self.position_codec,
        )


def client_encoding(workspace: Workspace) -> str:
    """The negotiated position encoding as a plain string (pygls may hold the enum)."""
    negotiated = workspace.position_encoding or types.PositionEncodingKind.Utf16
    return str(getattr(negotiated, "value", negotiated) or UTF16)


def install(protocol: LanguageServerProtocol) -> SteerWorkspace:
    """Swap the workspace pygls built at ``initialize`` for a SteerWorkspace."""
    old = protocol.workspace
    new = SteerWorkspace(
        old.root_uri,
        workspace_folders=list(old.folders.values()),
        position_encoding=old.position_encoding,
    )
    replace_workspace(protocol, new)
    return new


def open_document(workspace: Workspace, uri: str) -> SteerDocument | None:
    """The open document at ``uri``, or None (never a document read from disk)."""
    doc = workspace.text_documents.get(unquote(uri))  # pygls keys by the unquoted uri
    return doc if isinstance(doc, SteerDocument) and doc.content is not None else None


class OpenDocuments:
    """The editor's open documents, read-only, for the components that answer requests.

    ``workspace`` gives pygls' workspace, or None before ``initialize`` built one.
    """

    def __init__(self, workspace: Callable[[], Workspace | None]) -> None:
        self._workspace = workspace

    def get(self, uri: str) -> SteerDocument | None:
        """The open document at ``uri``, or None (never a document read from disk)."""
        workspace = self._workspace()
        return open_document(workspace, uri) if workspace is not None else None

    def version(self, uri: str) -> int | None:
        """The open document's version; None when it is not open."""
        doc = self.get(uri)
        return doc.version if doc is not None else None

    def encoding(self) -> str:
        """The negotiated position encoding (UTF-16 before ``initialize``)."""
        workspace = self._workspace()
        return client_encoding(workspace) if workspace is not None else UTF16

    def root_path(self) -> str | None:
        """The workspace root's path, or None when the editor gave no root."""
        workspace = self._workspace()
        return workspace.root_path if workspace is not None and workspace.root_uri else None
