"""Pure parts of the completion replies: positions, merging, printable text."""

from __future__ import annotations

import pytest
from lsprotocol import types

from steerlsp.server.completion.replies import (
    ACCEPTED_COMMAND,
    FIRST,
    Explained,
    completion_item,
    inline_list,
    merged_completions,
    printable,
    relative_path,
    typed_ahead,
)
from steerlsp.server.documents.cursor import text_around
from steerlsp.server.documents.text import split_keepends

ITEM = {"label": "✨ x", "sortText": FIRST}


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def offset_at(text: str, position: types.Position, encoding: str) -> int | None:
    """The cursor's code-point offset, from an unbounded window around it."""
    around = text_around(
        split_keepends(text), position.line, position.character, encoding, before=10**9, after=10**9
    )
    if around is None:
        return None
    assert around.prefix + around.suffix == text
    return len(around.prefix)


@pytest.mark.parametrize(
    ("text", "line", "character", "offset"),
    [
        ("x = 1\n", 0, 5, 5),  # the end of a line is in range
        ("x = 1\n", 1, 0, 6),  # so is the empty last line after a final newline
        ("", 0, 0, 0),
        ("a\r\nb\rc\nd", 3, 1, 8),  # \r\n, \r and \n end lines
        ("a\x0cb\x85c\u2028d\ne", 1, 1, 9),  # these do not (str.splitlines splits there)
        ('s = "😋"\nt', 0, 8, 7),  # UTF-16: the emoji is two units
    ],
)
def test_offset_at_in_range(text, line, character, offset):
    assert offset_at(text, pos(line, character), "utf-16") == offset


@pytest.mark.parametrize(
    ("text", "line", "character"),
    [
        ("x = 1\n", 2, 0),  # past the last line
        ("x = 1\n", 0, 6),  # past the end of the line
        ("x = 1", 1, 0),
        ("", 0, 1),
        ('s = "😋"', 0, 9),  # 8 UTF-16 units long
        ("a\x0cb\nc", 2, 0),  # one line, not two, before the \n
    ],
)
def test_offset_at_out_of_range(text, line, character):
    assert offset_at(text, pos(line, character), "utf-16") is None


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_offset_at_across_a_large_text(newline):
    line = "x = f(a, b)  # forty characters or so" + newline
    text = line * 5000  # past the 64 KiB chunks lines are counted in
    assert offset_at(text, pos(4321, 2), "utf-16") == 4321 * len(line) + 2
    assert offset_at(text, pos(5000, 0), "utf-16") == len(text)
    assert offset_at(text, pos(5000, 1), "utf-16") is None
    assert offset_at(text, pos(5001, 0), "utf-16") is None


def test_the_window_is_whole_lines_within_its_budget():
    lines = [f"line_{i} = {i}\n" for i in range(10_000)]  # ~14 characters each
    around = text_around(lines, 5000, 4, "utf-16", before=100, after=50)
    assert around is not None
    assert around.prefix.endswith("line")
    assert around.prefix.startswith("line_")  # cut at a line start
    assert 100 <= len(around.prefix) < 100 + 20
    assert around.suffix.startswith("_5000 = 5000\n")
    assert 50 <= len(around.suffix) < 50 + 20
    assert around.suffix.endswith("\n")


def test_offset_at_counts_the_negotiated_encoding():
    line = 'é = "😋"'
    assert offset_at(line, pos(0, 11), "utf-8") == 7  # 11 UTF-8 bytes, 8 UTF-16 units
    assert offset_at(line, pos(0, 12), "utf-8") is None
    assert offset_at(line, pos(0, 8), "utf-16") == 7
    assert offset_at(line, pos(0, 9), "utf-16") is None
    assert offset_at(line, pos(0, 7), "utf-32") == 7
    assert offset_at(line, pos(0, 8), "utf-32") is None


def test_merge_keeps_item_defaults_and_other_keys():
    result = {
        "isIncomplete": False,
        "itemDefaults": {"editRange": {"start": {}, "end": {}}, "insertTextFormat": 2},
        "items": [{"label": "a"}],
        "x-custom": 1,
    }
    merged = merged_completions(result, ITEM, still_working=False)
    assert merged == {**result, "items": [ITEM, {"label": "a"}]}
    assert result["items"] == [{"label": "a"}]  # the upstream's result is not mutated


@pytest.mark.parametrize(
    ("result", "items"),
    [(None, []), ([{"label": "a"}], [{"label": "a"}]), ({"items": None}, [])],
)
def test_merge_lists_and_null(result, items):
    assert merged_completions(result, ITEM, still_working=True) == {
        "isIncomplete": True,
        "items": [ITEM, *items],
    }


def test_merge_without_an_item_keeps_incompleteness():
    result = {"isIncomplete": True, "items": []}
    assert merged_completions(result, None, still_working=False)["isIncomplete"] is True


def test_printable_drops_c0_c1_and_del_but_not_tab_or_line_ends():
    assert printable("a\x00b\x1bc\x7fd\x85e\x9ff\tg\nh\r\ni\x0cj") == "abcdef\tg\nh\r\nij"
    assert printable("ünïcode ✨ 😋") == "ünïcode ✨ 😋"


def test_explain_results_hold_no_control_characters():
    """The trace quotes token texts, library docstrings and error messages: any of them
    can hold a control character, and some editors' JSON parsers reject the reply."""
    trace = {
        "changed": [{"before": "\x00", "after": "\x1b[0m", "p_before": 0.5}],
        "notes": ["deprecated here: x\x0b"],
        "hints": [{"text\x07": "# note\x85: use y"}],
    }
    explained = Explained("file:///a.py", 3, "x = 1\x00\n", True, trace).as_dict()
    assert explained == {
        "uri": "file:///a.py",
        "version": 3,
        "completion": "x = 1\n",
        "steered": True,
        "trace": {
            "changed": [{"before": "", "after": "[0m", "p_before": 0.5}],
            "notes": ["deprecated here: x"],
            "hints": [{"text": "# note: use y"}],
        },
        "prompt_tokens": 0,
        "context": [],
        "rounds": 0,
        "timing": {},
    }


def test_fallback_item_is_printable_plain_text_and_sorts_first():
    item = completion_item("print(\x00'$HOME')\nx = 1", pos(3, 4))
    assert item.sort_text == FIRST and FIRST.isprintable() and not FIRST.isspace()
    assert sorted([*"az_0A", FIRST])[0] == FIRST  # pylsp's sortText prefixes, and others
    assert item.insert_text_format == types.InsertTextFormat.PlainText
    assert item.text_edit.new_text == "print('$HOME')\nx = 1"
    assert item.label == "✨ print('$HOME')"


@pytest.mark.parametrize(
    ("root", "path", "relative"),
    [
        ("/a/b", "/a/b/c.py", "c.py"),
        ("/a/b/", "/a/b/pkg/c.py", "pkg/c.py"),
        ("/a/b", "/a/bc/d.py", "d.py"),  # a sibling with the same prefix is outside
        (None, "/a/b/c.py", "c.py"),
    ],
)
def test_relative_needs_real_containment(root, path, relative):
    assert relative_path("file://" + path, root) == relative


def test_inline_list_has_one_item_per_text_in_order_and_none_for_empties():
    reply = inline_list(["a\x00b", "", "c"], pos(1, 2), pos(1, 4), None)
    assert [i.insert_text for i in reply.items] == ["ab", "c"]
    assert all(i.range == types.Range(start=pos(1, 2), end=pos(1, 4)) for i in reply.items)
    ids = [i.command.arguments[0] for i in reply.items]
    assert len(set(ids)) == 2 and {i.command.command for i in reply.items} == {ACCEPTED_COMMAND}
    assert inline_list([""], pos(0, 0), pos(0, 0), None).items == []


def test_inline_list_leads_with_the_selected_menu_item():
    selected = types.SelectedCompletionInfo(range=types.Range(pos(0, 3), pos(0, 5)), text="join")
    reply = inline_list(["(a)", "(b, c)"], pos(0, 3), pos(0, 5), selected)
    assert [i.insert_text for i in reply.items] == ["join(a)", "join(b, c)"]


@pytest.mark.parametrize(
    ("now_prefix", "now_suffix", "rests"),
    [
        ("x = fo", "\n", ("o(1)", "rmat()")),  # both begin with what was typed, in order
        ("x = foo", "\n", ("(1)",)),  # only one does
        ("x = foo(1)", "\n", ()),  # all of it typed: nothing left to show
        ("x = ", "\n", ()),  # nothing typed: not an answer from the cache
        ("x = b", "\n", ()),  # typed away from every suggestion
        ("x = fo", ")\n", ()),  # the text after the cursor changed
        ("y = fo", "\n", ()),  # the text before the suggestion changed
    ],
)
def test_typed_ahead_rests(now_prefix, now_suffix, rests):
    texts = ("foo(1)", "format()", "foo(1)  ", "")
    assert typed_ahead("x = ", "\n", texts, now_prefix, now_suffix) == rests


def test_typed_ahead_drops_repeated_and_blank_rests():
    assert typed_ahead("", "", ("ab", "ab", "a  "), "a", "") == ("b",)
