"""The Helix menu benchmark's pure parts (tests/helpers/typist.py): the keystrokes retype
each function exactly, and figure (a) counts what a Helix user would see."""

from __future__ import annotations

import pytest

from steerlsp import example
from tests.helpers.typist import Editor, Sample, right, shown_within, targets

SHOP = example.project()


def test_typing_the_keystrokes_back_restores_every_function():
    found = targets(SHOP)
    assert {t.name for t in found} >= {"total", "with_vat", "export_path", "summary"}
    for target in found:
        editor = Editor(target)
        for key in target.keystrokes:
            editor.type(key.insert)
        assert "\n".join(editor.lines) == target.path.read_text(encoding="utf-8"), target.name
        # What is left to type on the line, after each keystroke, ends where the line does.
        assert all("\n" not in key.rest_of_line for key in target.keystrokes)
        assert target.keystrokes[-1].rest_of_line == ""


def test_the_change_of_a_keystroke_is_in_utf16_columns():
    [summary] = [t for t in targets(SHOP) if t.name == "summary"]
    editor = Editor(summary)
    changes = [(key.insert, editor.type(key.insert)) for key in summary.keystrokes]
    plus = next(change for insert, change in changes if insert == "+")  # after `"🛒 " `
    line = summary.path.read_text(encoding="utf-8").split("\n")[plus["range"]["start"]["line"]]
    assert plus["range"]["start"]["character"] == line.index("+") + 1  # 🛒 is two units


def sample(index: int, sent: float, received: float | None, ai: str | None = None) -> Sample:
    return Sample("f", index, sent, received, ai_text=ai)


def test_a_keystroke_shows_an_item_when_a_reply_within_the_window_carries_one():
    samples = [
        sample(0, 0.0, 0.1),
        sample(1, 0.2, 0.3),
        sample(2, 0.4, 0.5, ai="x"),  # seen 0.5 s after keystroke 0
        sample(3, 3.5, 3.6),
        sample(4, 3.7, 6.9, ai="y"),  # arrives 3.2 s after keystroke 4: too late
    ]
    assert shown_within(samples, 3.0) == [0.5, pytest.approx(0.3), pytest.approx(0.1), None, None]


def test_an_item_is_right_when_its_first_line_is_what_is_typed_next():
    assert right(Sample("f", 0, 0, 0, ai_text="items[0]\n    x", rest_of_line="items[0] = 1"))
    assert not right(Sample("f", 0, 0, 0, ai_text="item", rest_of_line="values"))
    assert not right(Sample("f", 0, 0, 0, ai_text="\n", rest_of_line=""))
