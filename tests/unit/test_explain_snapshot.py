"""The explain snapshot and its params."""

from __future__ import annotations

import pytest
from lsprotocol import types

from steerlsp.server.completion.replies import document_with
from steerlsp.server.lsp.handlers import explained_uri


def at(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


# ---- the document snapshot (pure) ------------------------------------------------


# ---- end to end: the real model, pylsp and the analysis instance -----------------


def test_the_snapshot_keeps_the_lines_and_puts_the_cursor_in_code_points():
    lines = ["x = '🛒'\n", "y = x.\r\n", "z"]
    document = document_with(lines, at(1, 6), at(1, 6), "", "utf-16")
    assert document is not None
    assert document.lines == tuple(lines) and (document.line, document.column) == (1, 6)
    assert document.split() == ("x = '🛒'\ny = x.", "\r\nz")
    astral = document_with(lines, at(0, 7), at(0, 7), "", "utf-16")  # after the 2-unit 🛒
    assert astral is not None and astral.column == 6


def test_a_selected_item_replaces_what_was_typed_and_the_cursor_follows_it():
    lines = ["import os\n", "os.path.jo\n", "print()"]
    document = document_with(lines, at(1, 8), at(1, 10), "join", "utf-16")
    assert document is not None
    assert document.lines == ("import os\n", "os.path.join\n", "print()")
    assert document.split() == ("import os\nos.path.join", "\nprint()")


@pytest.mark.parametrize(
    ("start", "end", "insert"),
    [
        (at(0, 1), at(1, 0), ""),  # over two lines
        (at(0, 0), at(0, 0), "a\nb"),  # a multi-line insert
        (at(0, 3), at(0, 1), ""),  # backwards
        (at(0, 9), at(0, 9), ""),  # past the line's end
        (at(5, 0), at(5, 0), ""),  # past the last line
    ],
)
def test_what_the_snapshot_does_not_model_is_none(start, end, insert):
    assert document_with(["abc\n", "def"], start, end, insert, "utf-16") is None


@pytest.mark.parametrize(
    ("params", "uri"),
    [
        ({"textDocument": {"uri": "file:///a.py"}}, "file:///a.py"),
        (None, None),
        ({}, None),
        ({"textDocument": "file:///a.py"}, None),
        ({"textDocument": {"uri": 3}}, None),
        ({"textDocument": {"uri": ""}}, None),
        ([1], None),
    ],
)
def test_the_explained_uri_is_read_from_untyped_params(params, uri):
    assert explained_uri(params) == uri
