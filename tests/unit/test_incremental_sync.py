"""Incremental document sync: edits applied in O(edit + line), forwarded as ranges.

These check ``DocumentText`` and the conversion of applied edits into the
upstream's columns against two independent references: a whole-text model of
LSP's rules, and pylsp's own ``Document.apply_change``. tests/e2e/test_incremental_sync.py
checks what a scripted upstream receives through the real process, and that real
pylsp ends up with the editor's exact text after ranged edits.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from steerlsp.server.documents.sync import upstream_changes
from steerlsp.server.documents.text import DocumentText, split_keepends
from steerlsp.server.lsp.capabilities import incremental_sync
from tests.helpers.sync_reference import (
    LINE_BREAK,
    UTF8,
    UTF16,
    UTF32,
    change,
    pylsp_view,
    reference,
    units,
)


def forward(text: str, events: list[dict[str, Any]], client: str) -> tuple[str, list[dict]]:
    """Apply one didChange's ``events`` as steerlsp does; its text and its upstream changes."""
    content = DocumentText(text)
    applied = []
    for event in events:
        if "range" in event:
            start, end = event["range"]["start"], event["range"]["end"]
            applied.append(
                content.edit(
                    (start["line"], start["character"]),
                    (end["line"], end["character"]),
                    event["text"],
                    client,
                )
            )
        else:
            applied.append(content.replace(event["text"]))
    return content.text, upstream_changes(content, applied, UTF32)


def check(text: str, events: list[dict[str, Any]], client: str = UTF16) -> list[dict]:
    expected = text
    for event in events:
        expected = reference(expected, event, client)
    ours, upstream = forward(text, events, client)
    assert ours == expected
    assert pylsp_view(text, upstream) == expected
    return upstream


# ---- pure: conversion of incremental changes ---------------------------------


def test_ascii_changes_are_forwarded_unchanged():
    text = "def f(x):\n    return x\n"
    upstream = check(text, [change(1, 11, 1, 12, "x + 1")])
    assert upstream == [change(1, 11, 1, 12, "x + 1")]


def test_an_astral_emoji_before_the_edit_point_is_counted_once_upstream():
    line = 'x = "😋"'
    end = units(line, UTF16)  # 8 UTF-16 units, 7 code points
    upstream = check(f"{line}\ny = 1\n", [change(0, end, 0, end, "; z = 2")])
    assert upstream == [change(0, 7, 0, 7, "; z = 2")]


@pytest.mark.parametrize("client", [UTF8, UTF16])
def test_replacing_text_between_emoji(client):
    line = 'pair = "😋🛒" + "名前"'
    start = units(line[: line.index("🛒")], client)
    end = units(line[: line.index("名")], client)
    upstream = check(line + "\n", [change(0, start, 0, end, "é")], client)
    assert upstream == [change(0, line.index("🛒"), 0, line.index("名"), "é")]


def test_changes_in_one_notification_are_counted_on_the_text_before_each():
    text = 'a = "😋"\n'
    events = [
        change(0, 7, 0, 7, "🛒"),  # after the emoji's closing quote: 7 UTF-16 units
        change(0, 9, 0, 9, "!"),  # right after the cart the first change inserted
        change(1, 0, 1, 0, 'b = "🛒"\n'),
        change(1, 7, 1, 8, ""),  # the second line's closing quote, units of the new line
    ]
    upstream = check(text, events)
    assert [c["range"]["start"]["character"] for c in upstream] == [6, 7, 0, 6]


def test_crlf_lines_and_breaks_made_and_unmade_across_them():
    text = 'one = "😋"\r\ntwo\r\nthree'
    check(text, [change(0, 9, 1, 0, "")])  # join two lines: the CRLF goes
    check(text, [change(1, 3, 1, 3, "\r\n2b")])  # split a line
    check(text, [change(0, 9, 0, 9, "\r")])  # a lone CR: a line of its own
    check("a\rb", [change(1, 0, 1, 1, "\n")])  # CR + LF across lines: one break
    check("a\r\nb", [change(0, 1, 1, 0, "")])


def test_positions_past_the_end_are_clamped_before_they_are_forwarded():
    text = 'x = "😋"\ny'
    upstream = check(text, [change(0, 99, 7, 3, "!")])
    assert upstream == [change(0, 7, 1, 1, "!")]
    assert check(text, [change(1, 1, 0, 2, "")]) == [change(0, 2, 1, 1, "")]  # reversed


def test_full_text_changes_stay_full():
    upstream = check("a\n", [{"text": "b = '😋'\n"}, change(0, 8, 0, 8, "  # c")])
    assert upstream == [{"text": "b = '😋'\n"}, change(0, 7, 0, 7, "  # c")]


def _position(rng: random.Random, lines: list[str], client: str) -> tuple[int, int]:
    """A position at a character boundary, now and then past a line's or the text's end."""
    line = rng.randint(0, len(lines))
    content = lines[line] if line < len(lines) else ""
    column = rng.randint(0, len(content) + 1)
    return line, units(content[:column], client) + (column > len(content))


def test_random_edits_agree_with_lsp_and_with_pylsp():
    rng = random.Random(17)
    pieces = ["a", "bc", " ", "é", "名", "😋", "🛒", "\n", "\r\n", "\r"]
    for _ in range(300):
        text = "".join(rng.choices(pieces, k=rng.randint(0, 12)))
        client = rng.choice([UTF8, UTF16, UTF32])
        events, current = [], text
        for _ in range(rng.randint(1, 3)):
            lines = LINE_BREAK.split(current)
            (sl, sc), (el, ec) = _position(rng, lines, client), _position(rng, lines, client)
            event = change(sl, sc, el, ec, "".join(rng.choices(pieces, k=rng.randint(0, 3))))
            events.append(event)
            current = reference(current, event, client)
        check(text, events, client)


def test_lines_split_only_where_lsp_breaks_lines():
    assert split_keepends("a\x0cb\u2028c\r\nd\re\n") == ["a\x0cb\u2028c\r\n", "d\r", "e\n", ""]
    assert split_keepends("") == [""]


def test_form_feeds_make_pylsp_count_other_lines_so_it_gets_the_full_text():
    content = DocumentText("a = 1\x0c\nb = 2\n")
    applied = [content.edit((1, 0), (1, 1), "c", UTF16)]
    assert upstream_changes(content, applied, UTF32) == [{"text": "a = 1\x0c\nc = 2\n"}]


def test_an_upstream_without_incremental_sync_gets_the_full_text():
    content = DocumentText("a\n")
    applied = [content.edit((0, 1), (0, 1), "b", UTF16)]
    assert upstream_changes(content, applied, None) == [{"text": "ab\n"}]
    assert upstream_changes(content, None, UTF32) == [{"text": "ab\n"}]


def test_content_flags_follow_inserted_text():
    content = DocumentText("x = 1\n")
    assert content.ascii and not content.needs_conversion(UTF16, UTF32)
    content.edit((0, 4), (0, 5), "'é'", UTF16)
    assert not content.needs_conversion(UTF16, UTF32) and content.needs_conversion(UTF8, UTF32)
    content.edit((0, 4), (0, 4), "'😋'", UTF16)
    assert content.needs_conversion(UTF16, UTF32)
    assert list(content.bare_lines) == ["x = '😋''é'", ""]


@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [
        ({"textDocumentSync": 2}, True),
        ({"textDocumentSync": {"openClose": True, "change": 2}}, True),
        ({"textDocumentSync": {"change": 1}}, False),
        ({"textDocumentSync": 1}, False),
        ({}, False),
    ],
)
def test_incremental_sync_is_read_from_the_upstreams_capabilities(capabilities, expected):
    assert incremental_sync(capabilities) is expected


# ---- e2e: what the upstream receives ------------------------------------------
