"""Unit tests for column conversion between position encodings."""

from __future__ import annotations

import copy

import pytest

from steerlsp.server.documents import encodings as positions
from steerlsp.server.documents.encodings import UTF8, UTF16, UTF32

EMOJI = "x = '😋🛒'"  # 😋 and 🛒 are astral: 2 UTF-16 units, 4 UTF-8 bytes
CJK = "名前 = 1"
COMBINING = "cafe\u0301 = 2"  # e + COMBINING ACUTE ACCENT: two code points


@pytest.mark.parametrize(
    ("char", "utf8", "utf16", "utf32"),
    [("a", 1, 1, 1), ("é", 2, 1, 1), ("\u0301", 2, 1, 1), ("名", 3, 1, 1), ("😋", 4, 2, 1)],
)
def test_units_of(char, utf8, utf16, utf32):
    assert positions.units_of(char, UTF8) == utf8
    assert positions.units_of(char, UTF16) == utf16
    assert positions.units_of(char, UTF32) == utf32


@pytest.mark.parametrize(
    ("line", "encoding", "units", "code_points"),
    [
        (EMOJI, UTF16, 5, 5),  # before 😋
        (EMOJI, UTF16, 7, 6),  # between 😋 and 🛒
        (EMOJI, UTF16, 9, 7),  # after 🛒
        (EMOJI, UTF16, 10, 8),
        (EMOJI, UTF8, 9, 6),
        (EMOJI, UTF8, 13, 7),
        (EMOJI, UTF32, 6, 6),
        (CJK, UTF16, 2, 2),
        (CJK, UTF8, 6, 2),
        (CJK, UTF8, 7, 3),
        (COMBINING, UTF16, 5, 5),
        (COMBINING, UTF8, 6, 5),
        ("", UTF16, 0, 0),
    ],
)
def test_round_trip_at_character_boundaries(line, encoding, units, code_points):
    assert positions.to_code_points(line, units, encoding) == code_points
    assert positions.from_code_points(line, code_points, encoding) == units


@pytest.mark.parametrize(("encoding", "end"), [(UTF8, 14), (UTF16, 10), (UTF32, 8)])
def test_columns_past_line_end_keep_their_overshoot(encoding, end):
    # Transparent: the receiver may clamp, the proxy must not.
    assert positions.to_code_points(EMOJI, end + 3, encoding) == len(EMOJI) + 3
    assert positions.from_code_points(EMOJI, len(EMOJI) + 3, encoding) == end + 3


def test_column_inside_a_surrogate_pair_moves_past_the_character():
    assert positions.to_code_points(EMOJI, 6, UTF16) == 6
    assert positions.to_code_points(EMOJI, 7, UTF8) == 6


@pytest.mark.parametrize(
    ("text", "client", "upstream", "expected"),
    [
        ("plain ascii", UTF16, UTF32, False),
        (EMOJI, UTF16, UTF16, False),
        (EMOJI, UTF16, UTF32, True),
        (EMOJI, UTF32, UTF16, True),
        (CJK, UTF16, UTF32, False),
        (COMBINING, UTF16, UTF32, False),
        (CJK, UTF8, UTF32, True),
        ("é", UTF16, UTF8, True),
        ("plain ascii", UTF8, UTF32, False),
    ],
)
def test_needs_conversion(text, client, upstream, expected):
    assert positions.needs_conversion(text, client, upstream) is expected


def pos(line, character):
    return {"line": line, "character": character}


def rng(a, b, c, d):
    return {"start": pos(a, b), "end": pos(c, d)}


DOCS = {
    "file:///a.py": ["a = 1", EMOJI, CJK],
    "file:///b.py": [EMOJI, "😋" * 8],
}


def lines_of(uri):
    return DOCS.get(uri)


def to_utf16(line, col):
    return positions.from_code_points(line, col, UTF16)


def test_range_in_params_uses_the_text_document_uri():
    params = {"textDocument": {"uri": "file:///a.py"}, "range": rng(1, 7, 1, 8)}
    positions.convert_columns(params, None, lines_of, to_utf16)
    assert params["range"] == rng(1, 9, 1, 10)


def test_explicit_uri_argument_applies_to_bare_positions():
    node = {"position": pos(1, 6)}
    positions.convert_columns(node, "file:///a.py", lines_of, to_utf16)
    assert node == {"position": pos(1, 7)}


def test_location_list_with_different_uris():
    result = [
        {"uri": "file:///a.py", "range": rng(0, 2, 1, 7)},
        {"uri": "file:///b.py", "range": rng(1, 6, 1, 7)},
        {"uri": "file:///missing.py", "range": rng(1, 6, 1, 7)},
    ]
    positions.convert_columns(result, "file:///a.py", lines_of, to_utf16)
    assert result[0]["range"] == rng(0, 2, 1, 9)
    assert result[1]["range"] == rng(1, 12, 1, 14)
    assert result[2]["range"] == rng(1, 6, 1, 7)


def test_location_link_uses_request_uri_for_origin():
    lines = {"file:///origin.py": ["a"], "file:///target.py": ["b"]}
    seen = []

    def column(line, col):
        seen.append(line)
        return col + 1

    link = {
        "originSelectionRange": rng(0, 0, 0, 1),
        "targetUri": "file:///target.py",
        "targetRange": rng(0, 0, 0, 1),
        "targetSelectionRange": rng(0, 0, 0, 1),
    }
    positions.convert_columns([link], "file:///origin.py", lines.get, column)
    assert seen == ["a", "a", "b", "b", "b", "b"]
    assert link["originSelectionRange"] == rng(0, 1, 0, 2)
    assert link["targetSelectionRange"] == rng(0, 1, 0, 2)


def test_workspace_edit_changes_keyed_by_uri():
    edit = {
        "changes": {
            "file:///a.py": [{"range": rng(1, 6, 1, 7), "newText": "x"}],
            "file:///b.py": [{"range": rng(0, 7, 0, 8), "newText": "y"}],
            "file:///plain.py": [{"range": rng(0, 7, 0, 8), "newText": "z"}],
        }
    }
    positions.convert_columns(edit, "file:///b.py", lines_of, to_utf16)
    assert edit["changes"]["file:///a.py"][0]["range"] == rng(1, 7, 1, 9)
    assert edit["changes"]["file:///b.py"][0]["range"] == rng(0, 9, 0, 10)
    assert edit["changes"]["file:///plain.py"][0]["range"] == rng(0, 7, 0, 8)


def test_document_changes_use_text_document_uri():
    edit = {
        "documentChanges": [
            {
                "textDocument": {"uri": "file:///b.py", "version": 3},
                "edits": [{"range": rng(1, 6, 1, 7), "newText": ""}],
            },
            {"kind": "rename", "oldUri": "file:///a.py", "newUri": "file:///c.py"},
            {
                "textDocument": {"uri": "file:///a.py", "version": None},
                "edits": [{"range": rng(1, 6, 1, 7), "newText": ""}],
            },
        ]
    }
    positions.convert_columns(edit, None, lines_of, to_utf16)
    assert edit["documentChanges"][0]["edits"][0]["range"] == rng(1, 12, 1, 14)
    assert edit["documentChanges"][1] == {
        "kind": "rename",
        "oldUri": "file:///a.py",
        "newUri": "file:///c.py",
    }
    assert edit["documentChanges"][2]["edits"][0]["range"] == rng(1, 7, 1, 9)


def test_publish_diagnostics_related_information_in_another_file():
    params = {
        "uri": "file:///a.py",
        "diagnostics": [
            {
                "range": rng(1, 6, 1, 7),
                "message": "m",
                "relatedInformation": [
                    {"location": {"uri": "file:///b.py", "range": rng(0, 7, 0, 8)}, "message": "r"}
                ],
            }
        ],
    }
    positions.convert_columns(params, None, lines_of, to_utf16)
    diagnostic = params["diagnostics"][0]
    assert diagnostic["range"] == rng(1, 7, 1, 9)
    assert diagnostic["relatedInformation"][0]["location"]["range"] == rng(0, 9, 0, 10)


def test_documents_without_lines_are_untouched():
    params = {"textDocument": {"uri": "file:///ascii.py"}, "range": rng(1, 7, 1, 8)}
    before = copy.deepcopy(params)
    positions.convert_columns(params, None, lambda uri: None, lambda line, col: 99)
    assert params == before


def test_positions_without_a_uri_are_untouched():
    node = {"range": rng(1, 7, 1, 8)}
    positions.convert_columns(node, None, lines_of, lambda line, col: 99)
    assert node == {"range": rng(1, 7, 1, 8)}


def test_out_of_range_lines_are_untouched():
    node = {"uri": "file:///a.py", "range": rng(3, 1, 99, 2)}
    positions.convert_columns(node, None, lines_of, lambda line, col: 99)
    assert node["range"] == rng(3, 1, 99, 2)


@pytest.mark.parametrize(
    "node",
    [
        {"line": 1, "character": 2, "extra": 3},
        {"line": True, "character": 2},
        {"line": 1, "character": "2"},
        {"line": 1.0, "character": 2},
    ],
)
def test_only_exact_positions_are_rewritten(node):
    wrapper = {"uri": "file:///a.py", "value": dict(node)}
    positions.convert_columns(wrapper, None, lines_of, lambda line, col: 99)
    assert wrapper["value"] == node


def test_column_map_receives_the_line_text():
    seen = []
    node = {"uri": "file:///a.py", "position": pos(2, 3)}
    positions.convert_columns(
        node, None, lines_of, lambda line, col: seen.append((line, col)) or col
    )
    assert seen == [(CJK, 3)]


@pytest.mark.parametrize("node", [None, 5, "text", [1, "a", None]])
def test_scalars_are_ignored(node):
    before = copy.deepcopy(node)
    positions.convert_columns(node, "file:///a.py", lines_of, lambda line, col: 99)
    assert node == before


@pytest.mark.parametrize("encoding", [UTF8, UTF16, UTF32])
@pytest.mark.parametrize("line", [EMOJI, CJK, COMBINING, "😋" * 3 + "中ü", ""])
def test_every_code_point_column_round_trips(line, encoding):
    for column in range(len(line) + 1):
        units = positions.from_code_points(line, column, encoding)
        assert positions.to_code_points(line, units, encoding) == column
