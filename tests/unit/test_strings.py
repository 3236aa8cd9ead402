"""String literals end where the code can go on: the processors on a toy vocabulary,
the monitor's view of strings and fields, and the stage in the real decode loop with
a scripted model."""

from __future__ import annotations

import ast

import pytest
import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.monitor import MonitorState
from steerlsp.models.steering.processors.strings import (
    AfterString,
    FieldCharacters,
    QuoteAfterName,
    StringTables,
    may_follow_a_string,
)
from tests.doubles.analysis import ScriptedAnalysis
from tests.unit.test_steer import Script, inner, one_thread, pool, steered, unsteered

__all__ = ["inner", "one_thread", "pool"]  # the fixtures, shared with test_steer

TEXTS = [
    "name",
    'name")',
    " name",
    "1",
    "if",
    " in",
    "i",
    "f",
    'f"',
    "format",
    ")",
    " +",
    ",",
    "\n",
    "'",
    '"',
    "\\n",
    " #",
    "x",
    "",
]


@pytest.mark.parametrize(
    ("text", "follows"),
    [
        ("name", False),
        ('name")', False),
        (" name", False),
        ("1", False),
        ("nothing", False),  # not ``not``
        ("iff", False),
        ("format", False),
        ("if", True),
        (" if x", True),
        (" else", True),
        (" for", True),
        (" in", True),
        ("is ", True),
        ("not", True),
        (" and(", True),
        (" async", True),
        (" as", True),  # ``case "a" as x:``
        ("i", True),  # may become ``if``, ``in``, ``is``
        ("f", True),  # may become ``f"``
        ('f"', True),
        ("rb'", True),
        ('F"', True),
        (")", True),
        (" +", True),
        (",", True),
        ("\n", True),
        (".", True),
    ],
)
def test_what_may_follow_a_string(text, follows):
    assert may_follow_a_string(text) is follows
    if not follows and text.strip():
        # It is a syntax error indeed; a follower is one in some statement.
        with pytest.raises(SyntaxError):
            ast.parse('x = "a"' + text)


def _named(ruled_out: torch.Tensor) -> set[str]:
    """The texts of a [V] bool mask's tokens, or of sorted ids'."""
    ids = ruled_out.nonzero().flatten() if ruled_out.dtype == torch.bool else ruled_out
    return {TEXTS[i] for i in ids.tolist()}


def test_the_tables_and_the_masks():
    tables = StringTables(TEXTS)
    glued = {"name", 'name")', " name", "1", "format", "x"}
    assert _named(tables.glued) == glued
    history = torch.zeros(1, 1, dtype=torch.long)
    scores = torch.zeros(1, len(TEXTS))
    masked = AfterString(tables)(history, scores)
    assert {TEXTS[i] for i in torch.isinf(masked[0]).nonzero().flatten().tolist()} == glued
    assert not torch.isinf(scores).any()  # not edited in place
    in_double = FieldCharacters(tables, '"')(history, scores)
    assert {TEXTS[i] for i in torch.isinf(in_double[0]).nonzero().flatten().tolist()} == {
        'name")',
        'f"',
        '"',
        "\\n",
        " #",
    }
    spec = FieldCharacters(tables, '"', spec=True)(history, scores)  # ``f"{n:#x}"``
    assert {TEXTS[i] for i in torch.isinf(spec[0]).nonzero().flatten().tolist()} == {
        'name")',
        'f"',
        '"',
    }
    triple = FieldCharacters(tables, "")(history, scores)
    assert {TEXTS[i] for i in torch.isinf(triple[0]).nonzero().flatten().tolist()} == {"\\n", " #"}
    both = FieldCharacters(tables, "'\"'")(history, scores)
    assert torch.isinf(both[0, TEXTS.index("'")]) and torch.isinf(both[0, TEXTS.index('"')])


def test_a_word_under_way_after_a_string_may_only_become_a_follower():
    tables = StringTables(TEXTS)
    ruled_out = _named(tables.after("i"))
    # ``i`` + ``f`` is ``if``, + ``f"`` is ``if"`` (a string after ``if``): allowed, as
    # is ``i``, which may still become ``in``; everything else ends ``i`` as a name.
    assert ruled_out == set(TEXTS) - {"f", 'f"', ""}
    assert _named(tables.after("if")) == {
        "name",
        'name")',
        "1",
        "if",
        "i",
        "f",
        'f"',
        "format",
        "x",
    }  # ``if`` is whole: a space, a bracket or a quote may follow it, not more letters
    assert _named(tables.after("f")) == set(TEXTS) - {"'", '"', ""}
    assert _named(tables.after("xyz")) == set()  # already no follower: nothing to add


def test_a_name_being_written_does_not_run_into_a_quote():
    tables = StringTables(TEXTS)
    quotes = {'"', "'", 'f"', 'name")'}  # a quote, or a word and then a quote
    assert _named(tables.before_quote("name")) == quotes
    assert _named(tables.before_quote("x")) == quotes
    assert _named(tables.before_quote("f")) == {'f"', 'name")'}  # ``ff"`` is no prefix
    assert _named(tables.before_quote("i")) == {'"', "'", 'name")'}  # ``i`` + ``f"``: ``if"``
    assert _named(tables.before_quote("return")) == {'f"', 'name")'}
    assert _named(tables.before_quote("Rb")) == {'f"', 'name")'}
    for code in ['x = Rb"a"', 'x = 1 if"a" else 2', 'def g():\n    return"a"']:
        ast.parse(code)  # what is allowed parses
    masked = QuoteAfterName(tables, "name")(
        torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, len(TEXTS))
    )
    assert _named(torch.isinf(masked[0])) == quotes


def test_quotes_are_validated_and_a_dead_end_is_left_alone():
    tables = StringTables(TEXTS)
    with pytest.raises(ValueError, match="quote characters"):
        FieldCharacters(tables, "x")
    with pytest.raises(ValueError, match="a word"):
        AfterString(tables, " x")
    with pytest.raises(ValueError, match="a word"):
        QuoteAfterName(tables, "")
    only_name = torch.full((1, len(TEXTS)), float("-inf"))
    only_name[0, 0] = 0.0  # nothing else is allowed: leave it to the model
    out = AfterString(tables)(torch.zeros(1, 1, dtype=torch.long), only_name)
    assert torch.equal(out, only_name)


def _monitor(text: str) -> MonitorState:
    monitor = MonitorState()
    monitor.update(text)
    return monitor


@pytest.mark.parametrize(
    ("text", "after"),
    [
        ('x = "a"', ""),
        ('x = "a"  ', ""),
        ("x = 'a'", ""),
        ('x = """doc"""', ""),
        ('x = f"{y}"', ""),
        ('x = "a" i', "i"),  # a word under way
        ('x = "a"nam', "nam"),
        ('x = ""', None),  # one more quote may open a triple-quoted string
        ('x = "a', None),  # in the string
        ('x = "a" + y', None),
        ('x = "a"\n', None),
        ('x = "a" # c', None),
        ("x = a", None),
        ('x = "a" if y', None),
    ],
)
def test_the_monitor_knows_when_a_string_just_closed(text, after):
    assert _monitor(text).after_string() == after


@pytest.mark.parametrize(
    ("text", "quotes"),
    [
        ('x = f"{user.', '"'),
        ("x = f'{user.", "'"),
        ('x = f"{d[', '"'),
        ("x = f\"{d['", '"'),  # in a nested string of the other quote: the outer's is barred
        ('x = f"{x:>{w', '"'),
        ('x = f"{x:>', '"'),  # the format spec: the f-string's quote still ends it
        ('x = f"""{user.', ""),  # triple-quoted: one quote does not end it
        ('x = f"{a}" + f\'{b.', "'"),
        ("x = f\"{g(f'{b.", "\"'"),
        ('x = f"{d["', ""),  # its author nests Python 3.12's way: the nested string's own
        ('x = f"a', None),
        ('x = f"{a}', None),
        ('x = "{a', None),
        ("x = (a", None),
    ],
)
def test_the_monitor_knows_the_fields_the_text_is_in(text, quotes):
    assert _monitor(text).field_quotes() == quotes


@pytest.mark.parametrize(
    ("text", "spec"),
    [('x = f"{n:', True), ('x = f"{n:#', True), ('x = f"{n:>{w', False), ('x = f"{n', False)],
)
def test_the_monitor_knows_a_format_spec(text, spec):
    assert _monitor(text).in_format_spec() is spec


@pytest.mark.parametrize(
    ("prompt", "bad", "good"),
    [
        # The string closed early at ``get("``, and ``key`` run on from it: a name may not
        # follow a string, so the next choice goes on with an operator.
        ('def f(context):\n    return "Hi {context.get(', '"key")}"\n', '" + context\n'),
        # A name run into a quote that opens a string.
        ("def f(name):\n    return name", '"a"\n', ' + "a"\n'),
        # Python 3.12's nested quote in a field, which 3.11 cannot parse: the other quote.
        ('def f(form):\n    return f"Invalid: {form.get(', '"email")}"\n', "'email')}\"\n"),
    ],
    ids=["name-after-string", "quote-after-name", "quote-in-field"],
)
def test_a_string_ends_where_the_code_can_go_on(inner, pool, prompt, bad, good):
    script = Script({prompt + bad: 0.9, prompt + good: 0.1})
    assert unsteered(inner, script, prompt).text == bad
    run = steered(inner, script, prompt, ScriptedAnalysis(), pool)
    assert run.text == good
    ast.parse(prompt + run.text)
    off = SteeringOptions(strings=False)
    assert steered(inner, script, prompt, ScriptedAnalysis(), pool, options=off).text == bad
