"""Unit tests for the initialize helpers: capability merging and params checks."""

from __future__ import annotations

import copy

import pytest

from steerlsp.server.documents.encodings import UTF16, UTF32
from steerlsp.server.lsp import capabilities as caps

URI = "file:///x.py"


def test_execute_commands_are_unioned_without_duplicates():
    upstream = {"executeCommandProvider": {"commands": ["pylsp.a", "shared"]}}
    ours = {"executeCommandProvider": {"commands": ["shared", "steerlsp.b"]}}
    merged = caps.merge_capabilities(upstream, ours)
    assert merged["executeCommandProvider"]["commands"] == ["pylsp.a", "shared", "steerlsp.b"]


@pytest.mark.parametrize("upstream", [{}, {"executeCommandProvider": None}])
def test_execute_commands_without_upstream_commands(upstream):
    ours = {"executeCommandProvider": {"commands": ["steerlsp.b"], "workDoneProgress": True}}
    merged = caps.merge_capabilities(upstream, ours)
    assert merged["executeCommandProvider"] == {
        "commands": ["steerlsp.b"],
        "workDoneProgress": True,
    }


def test_execute_command_options_keep_upstream_extras():
    upstream = {"executeCommandProvider": {"commands": ["a"], "workDoneProgress": False}}
    merged = caps.merge_capabilities(upstream, {"executeCommandProvider": {"commands": []}})
    assert merged["executeCommandProvider"] == {"commands": ["a"], "workDoneProgress": False}


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_int_text_document_sync_becomes_incremental_options(kind):
    merged = caps.merge_capabilities({"textDocumentSync": kind}, {"textDocumentSync": 1})
    assert merged["textDocumentSync"] == {"openClose": True, "change": caps.INCREMENTAL}


def test_dict_text_document_sync_keeps_upstream_save_options():
    upstream = {
        "textDocumentSync": {
            "openClose": False,
            "change": 1,
            "save": {"includeText": True},
            "willSave": True,
        }
    }
    merged = caps.merge_capabilities(upstream, {"textDocumentSync": {"change": 1}})
    assert merged["textDocumentSync"] == {
        "openClose": True,
        "change": 2,
        "save": {"includeText": True},
        "willSave": True,
    }


def test_text_document_sync_missing_upstream():
    merged = caps.merge_capabilities({"hoverProvider": True}, {"textDocumentSync": 2})
    assert merged == {"hoverProvider": True, "textDocumentSync": {"openClose": True, "change": 2}}


def test_text_document_sync_left_alone_when_we_do_not_set_it():
    merged = caps.merge_capabilities({"textDocumentSync": 1}, {})
    assert merged == {"textDocumentSync": 1}


def test_nested_dicts_merge_with_ours_winning():
    upstream = {
        "completionProvider": {
            "triggerCharacters": ["."],
            "resolveProvider": True,
            "completionItem": {"labelDetailsSupport": False, "other": 1},
        },
        "hoverProvider": True,
    }
    ours = {
        "completionProvider": {
            "triggerCharacters": ["(", " "],
            "completionItem": {"labelDetailsSupport": True},
        },
        "positionEncoding": UTF16,
    }
    merged = caps.merge_capabilities(upstream, ours)
    assert merged == {
        "completionProvider": {
            "triggerCharacters": ["(", " "],
            "resolveProvider": True,
            "completionItem": {"labelDetailsSupport": True, "other": 1},
        },
        "hoverProvider": True,
        "positionEncoding": UTF16,
    }


@pytest.mark.parametrize(
    ("upstream_value", "our_value"),
    [(True, {"resolveProvider": False}), ({"resolveProvider": True}, True), (False, True)],
)
def test_non_dict_values_are_replaced_by_ours(upstream_value, our_value):
    merged = caps.merge_capabilities(
        {"codeLensProvider": upstream_value}, {"codeLensProvider": our_value}
    )
    assert merged["codeLensProvider"] == our_value


def test_upstream_is_not_mutated():
    upstream = {
        "executeCommandProvider": {"commands": ["a"]},
        "textDocumentSync": {"save": {"includeText": True}, "change": 1},
        "completionProvider": {"completionItem": {"x": 1}},
    }
    before = copy.deepcopy(upstream)
    merged = caps.merge_capabilities(
        upstream,
        {
            "executeCommandProvider": {"commands": ["b"]},
            "textDocumentSync": 2,
            "completionProvider": {"completionItem": {"x": 2}},
        },
    )
    assert upstream == before
    merged["textDocumentSync"]["save"]["includeText"] = False
    merged["completionProvider"]["completionItem"]["y"] = 3
    assert upstream == before


@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [
        ({}, UTF32),
        ({"positionEncoding": "utf-16"}, "utf-16"),
        ({"positionEncoding": "utf-8"}, "utf-8"),
        ({"positionEncoding": None}, UTF32),
        ({"positionEncoding": 16}, UTF32),
    ],
)
def test_upstream_encoding(capabilities, expected):
    assert caps.upstream_encoding(capabilities) == expected


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"textDocument": {"uri": URI}}, URI),
        ({"textDocument": {"uri": 3}}, None),
        ({"textDocument": URI}, None),
        ({"textDocument": {}}, None),
        ({}, None),
        (None, None),
        ([{"textDocument": {"uri": URI}}], None),
    ],
)
def test_document_uri(params, expected):
    assert caps.document_uri(params) == expected


def position(line=0, character=0):
    return {"line": line, "character": character}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("textDocument/hover", {"textDocument": {"uri": URI}, "position": position(3, 4)}),
        ("textDocument/documentSymbol", {"textDocument": {"uri": URI}}),
        ("textDocument/formatting", {"textDocument": {"uri": URI}, "options": {}}),
        (
            "textDocument/rangeFormatting",
            {"textDocument": {"uri": URI}, "range": {"start": position(), "end": position(1, 0)}},
        ),
        ("workspace/symbol", 5),
        ("custom/anything", None),
        ("shutdown", None),
    ],
)
def test_shape_error_accepts_good_params(method, params):
    assert caps.shape_error(method, params) is None


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        (5, "params must be an object"),
        (None, "params must be an object"),
        ([], "params must be an object"),
        ({"position": position()}, "textDocument.uri"),
        ({"textDocument": {"uri": 3}, "position": position()}, "textDocument.uri"),
        ({"textDocument": {"uri": URI}, "position": position("0", 0)}, "params.position"),
        ({"textDocument": {"uri": URI}, "position": position(-1, 0)}, "params.position"),
        ({"textDocument": {"uri": URI}, "position": position(0, -1)}, "params.position"),
        ({"textDocument": {"uri": URI}, "position": position(True, 0)}, "params.position"),
        ({"textDocument": {"uri": URI}, "position": position(0, 1.5)}, "params.position"),
        ({"textDocument": {"uri": URI}, "position": []}, "params.position"),
        ({"textDocument": {"uri": URI}, "range": position()}, "params.range"),
        ({"textDocument": {"uri": URI}, "range": {"start": position()}}, "params.range"),
        (
            {"textDocument": {"uri": URI}, "range": {"start": position(), "end": position(-2, 0)}},
            "params.range",
        ),
        ({"textDocument": {"uri": URI}, "range": "0:0-1:0"}, "params.range"),
        ({"textDocument": {"uri": URI}}, "params.position is required"),
    ],
)
def test_shape_error_rejects_bad_params(params, fragment):
    problem = caps.shape_error("textDocument/definition", params)
    assert problem is not None
    assert fragment in problem
