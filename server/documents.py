"""Which documents need position conversion, and their lines when they do.

Open documents are authoritative (pygls' workspace holds their text); files
the editor has not opened (definitions in site-packages, say) are read from
disk, cached by modification time.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict

from pygls.uris import to_fs_path

from steerlsp.server.positions import Lines, needs_conversion

_DISK_CACHE_SIZE = 256
# LSP lines end at \n, \r\n or \r only (str.splitlines also splits on \f, \u2028, ...).
_EOL = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into LSP lines, without their terminators."""
    return _EOL.split(text)


class DocumentIndex:
    """Answers ``lines_of(uri)``: the lines to convert with, or None for identity."""

    def __init__(self, client_encoding: str, upstream_encoding: str) -> None:
        self.client_encoding = client_encoding
        self.upstream_encoding = upstream_encoding
        self._open: dict[str, tuple[str, bool]] = {}
        self._lines: dict[str, Lines] = {}
        self._disk: OrderedDict[str, tuple[tuple[int, int], Lines | None]] = OrderedDict()

    @property
    def identity(self) -> bool:
        """True when the two sides count columns the same way for every text."""
        return self.client_encoding == self.upstream_encoding

    def update(self, uri: str, text: str) -> None:
        """Record the current text of an open document."""
        self._open[uri] = (text, self._needs(text))
        self._lines.pop(uri, None)

    def non_ascii_lines(self, uri: str) -> Lines | None:
        """Lines of an open document with any non-ASCII text, else None."""
        entry = self._open.get(uri)
        if entry is None or entry[0].isascii():
            return None
        lines = self._lines.get(uri)
        if lines is None:
            lines = self._lines[uri] = split_lines(entry[0])
        return lines

    def forget(self, uri: str) -> None:
        """Drop a closed document."""
        self._open.pop(uri, None)
        self._lines.pop(uri, None)

    def lines_of(self, uri: str) -> Lines | None:
        """Lines of ``uri`` when its columns differ between encodings, else None."""
        if self.identity:
            return None
        entry = self._open.get(uri)
        if entry is not None:
            text, needs = entry
            if not needs:
                return None
            lines = self._lines.get(uri)
            if lines is None:
                lines = self._lines[uri] = split_lines(text)
            return lines
        return self._from_disk(uri)

    def _needs(self, text: str) -> bool:
        return needs_conversion(text, self.client_encoding, self.upstream_encoding)

    def _from_disk(self, uri: str) -> Lines | None:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path is None:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._disk.get(path)
        if cached is not None and cached[0] == key:
            self._disk.move_to_end(path)
            return cached[1]
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            return None
        lines = split_lines(text) if self._needs(text) else None
        self._disk[path] = (key, lines)
        if len(self._disk) > _DISK_CACHE_SIZE:
            self._disk.popitem(last=False)
        return lines
