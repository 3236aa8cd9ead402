"""Position conversion between the encodings: which documents need it, their lines, and how.

Open documents are authoritative (pygls' workspace holds their text); files
the editor has not opened (definitions in site-packages, say) are read from
disk: regular files only, at most ``MAX_FILE_BYTES`` of each, off the event
loop for responses, cached by modification time within ``DISK_CACHE_BYTES``.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
import sys
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pygls.uris import to_fs_path

from steerlsp import guard
from steerlsp.server.documents.encodings import (
    Lines,
    convert_columns,
    from_code_points,
    needs_conversion,
    to_code_points,
)
from steerlsp.server.documents.text import DocumentText

# A file the editor has not opened can be anything a result names: a FIFO,
# /dev/zero, a 100 MB generated module. Only regular files are read, and only
# their first MAX_FILE_BYTES.
MAX_FILE_BYTES = 4 << 20
# What the cache of files read from disk may hold, in (estimated) bytes.
DISK_CACHE_BYTES = 32 << 20
_ENTRY_BYTES = 256  # a cache entry's own cost: its path, key and slot
# LSP lines end at \n, \r\n or \r only (str.splitlines also splits on \f, \u2028, ...).
_EOL = re.compile(r"\r\n|\r|\n")

# Results whose positions can only refer to the request's own document.
SAME_DOCUMENT_RESULTS = frozenset(
    {
        "textDocument/completion",
        "textDocument/hover",
        "textDocument/signatureHelp",
        "textDocument/documentHighlight",
        "textDocument/documentSymbol",
        "textDocument/formatting",
        "textDocument/rangeFormatting",
        "textDocument/onTypeFormatting",
        "textDocument/foldingRange",
        "textDocument/selectionRange",
        "textDocument/inlayHint",
        "textDocument/codeLens",
        "textDocument/documentLink",
    }
)


def split_lines(text: str) -> list[str]:
    """Split ``text`` into LSP lines, without their terminators."""
    return _EOL.split(text)


class DocumentIndex:
    """Answers ``lines_of(uri)``: the lines to convert with, or None for identity."""

    def __init__(self, client_encoding: str, upstream_encoding: str) -> None:
        self.client_encoding = client_encoding
        self.upstream_encoding = upstream_encoding
        self._open: dict[str, DocumentText] = {}
        self._disk: OrderedDict[str, DiskLines] = OrderedDict()
        self._disk_bytes = 0

    @property
    def identity(self) -> bool:
        """True when the two sides count columns the same way for every text."""
        return self.client_encoding == self.upstream_encoding

    def update(self, uri: str, text: str | DocumentText) -> None:
        """Record an open document: its live DocumentText (kept, not copied), or a text."""
        self._open[uri] = text if isinstance(text, DocumentText) else DocumentText(text)

    def non_ascii_lines(self, uri: str) -> Lines | None:
        """Lines of an open document with any non-ASCII text, else None."""
        entry = self._open.get(uri)
        if entry is None or entry.ascii:
            return None
        return entry.bare_lines

    def forget(self, uri: str) -> None:
        """Drop a closed document."""
        self._open.pop(uri, None)

    def lines_of(self, uri: str) -> Lines | None:
        """Lines of ``uri`` when its columns differ between encodings, else None."""
        if self.identity:
            return None
        entry = self._open.get(uri)
        if entry is not None:
            if entry.needs_conversion(self.client_encoding, self.upstream_encoding):
                return entry.bare_lines
            return None
        return self._from_disk(uri)

    def convert(
        self,
        node: Any,
        uri: str | None,
        *,
        toward_upstream: bool,
        known: dict[str, Any] | None = None,  # lines already read, by uri
    ) -> None:
        """Convert the columns of every position in ``node`` in place, toward the
        upstream's encoding or back toward the editor's. ``uri``: the document
        that positions without their own uri belong to."""
        if self.identity or node is None:
            return
        client, upstream = self.client_encoding, self.upstream_encoding
        if toward_upstream:
            if uri is None or self.lines_of(uri) is None:
                return

            def column(line: str, col: int) -> int:
                return from_code_points(line, to_code_points(line, col, client), upstream)
        else:

            def column(line: str, col: int) -> int:
                return from_code_points(line, to_code_points(line, col, upstream), client)

        seen: dict[str, Any] = dict(known or {})  # one lookup (and stat) per uri

        def lines_of(doc_uri: str) -> Any:
            if doc_uri not in seen:
                seen[doc_uri] = self.lines_of(doc_uri)
            return seen[doc_uri]

        convert_columns(node, uri, lines_of, column)

    def result_may_move(self, method: str, uri: str | None) -> bool:
        """True if the result of ``method`` on ``uri`` may need converting."""
        if self.identity:
            return False
        if method in SAME_DOCUMENT_RESULTS:
            if uri is None:
                return False
            # An unopened document is read off the loop first, not here.
            return bool(self.unloaded([uri])) or self.lines_of(uri) is not None
        return True

    def unread(self, result: Any, method: str, uri: str | None) -> list[str]:
        """Unopened files the result names whose lines must be read from disk first."""
        if method in SAME_DOCUMENT_RESULTS:
            return self.unloaded([uri] if uri else [])
        named: dict[str, None] = {}

        def record(doc_uri: str) -> None:
            named[doc_uri] = None

        convert_columns(result, uri, record, lambda line, column: column)
        return self.unloaded(named)

    def _from_disk(self, uri: str) -> Lines | None:
        """Lines of an unopened file: from the cache, else read now (bounded).

        The proxy reads the files a response names off the event loop first
        (:meth:`load`); what is left to read here is one file a request or a
        notification names, capped at ``MAX_FILE_BYTES`` and never a FIFO.
        """
        path = fs_path(uri)
        key = disk_key(path) if path is not None else None
        if path is None or key is None:
            return None
        cached = self._disk.get(path)
        if cached is not None and cached.key == key:
            self._disk.move_to_end(path)
            return cached.lines
        read = read_disk_lines(path, self.client_encoding, self.upstream_encoding)
        if read is None:
            return None
        self._store(path, read)
        return read.lines

    def unloaded(self, uris: Iterable[str]) -> list[str]:
        """The unopened files among ``uris`` whose lines are not cached (or stale)."""
        if self.identity:
            return []
        stale = []
        for uri in uris:
            path = fs_path(uri) if uri not in self._open else None
            if path is None:
                continue
            key = disk_key(path)
            cached = self._disk.get(path)
            if key is not None and (cached is None or cached.key != key):
                stale.append(uri)
        return stale

    async def load(self, uris: Iterable[str]) -> dict[str, Lines | None]:
        """Read unopened files on a worker thread, not the event loop; uri -> lines.

        Use the answer to convert: a file too large to cache is in it, not in
        the cache.
        """
        paths = {uri: path for uri in uris if (path := fs_path(uri)) is not None}
        client, upstream = self.client_encoding, self.upstream_encoding

        def read_all() -> dict[str, DiskLines | None]:
            return {uri: read_disk_lines(path, client, upstream) for uri, path in paths.items()}

        lines: dict[str, Lines | None] = {}
        for uri, read in (await asyncio.to_thread(read_all)).items():
            lines[uri] = read.lines if read is not None else None
            if read is not None:
                self._store(paths[uri], read)
        return lines

    def _store(self, path: str, read: DiskLines) -> None:
        old = self._disk.pop(path, None)
        if old is not None:
            self._disk_bytes -= old.cost
        if read.cost > DISK_CACHE_BYTES // 4:
            return  # used once and freed: one file must not flush the whole cache
        self._disk[path] = read
        self._disk_bytes += read.cost
        while self._disk_bytes > DISK_CACHE_BYTES and len(self._disk) > 1:
            _, evicted = self._disk.popitem(last=False)
            self._disk_bytes -= evicted.cost


@dataclass(frozen=True)
class DiskLines:
    """One read of a file on disk."""

    key: tuple[int, int]  # (st_mtime_ns, st_size) of what was read
    lines: Lines | None  # None: no column differs between the two encodings
    cost: int  # estimated bytes this entry keeps alive


def fs_path(uri: str) -> str | None:
    """The local path of a ``file:`` uri, else None."""
    if not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri)
    except ValueError:
        return None


def disk_key(path: str) -> tuple[int, int] | None:
    """(mtime_ns, size) of a regular file; None for anything else or nothing."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return info.st_mtime_ns, info.st_size


def read_disk_lines(path: str, client: str, upstream: str) -> DiskLines | None:
    """Read a regular file's LSP lines for conversion; None if it cannot be read.

    Blocking. Opened non-blocking and checked again with ``fstat``, so a path
    swapped for a FIFO or a device after :func:`disk_key` is not read.

    Past ``MAX_FILE_BYTES`` only the complete lines within the cap are kept:
    positions on later lines are then sent unconverted. Their columns cannot
    be known without reading those lines, and they are exact for every line
    that is pure ASCII (or, between UTF-16 and code points, has no astral
    character), which is nearly every line of a file that large.
    """
    read = guard.read_head(path, MAX_FILE_BYTES + 1)  # one byte more: a file past the cap
    if read is None:
        return None
    data, info = read
    cut = len(data) > MAX_FILE_BYTES
    if cut:
        end = max(data.rfind(b"\n", 0, MAX_FILE_BYTES), data.rfind(b"\r", 0, MAX_FILE_BYTES))
        data = data[: end + 1]
    text = data.decode("utf-8", "replace")
    key = (info.st_mtime_ns, info.st_size)
    if not needs_conversion(text, client, upstream):
        return DiskLines(key, None, _ENTRY_BYTES)
    lines = split_lines(text)
    if cut:
        lines.pop()  # the start of the first line past the cap
    return DiskLines(key, lines, _ENTRY_BYTES + sum(map(sys.getsizeof, lines)) + 8 * len(lines))
