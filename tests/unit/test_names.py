"""models/steering/stages/scope.py: the names a statement reads that nothing defines (pure)."""

from __future__ import annotations

import pytest

from steerlsp.models.steering.stages.scope import (
    NameCheck,
    bound_names,
    parse_statement,
    undefined_reads,
)

KNOWN = {"form", "records", "values", "calendar"}


def names(statement: str, known: set[str] = KNOWN) -> list[tuple[str, str]]:
    """(name, the statement's text at the reported offset) for each undefined read."""
    return [
        (u.name, statement[u.offset : u.offset + len(u.name)])
        for u in undefined_reads(statement, known)
    ]


@pytest.mark.parametrize(
    ("statement", "undefined"),
    [
        ("    data = form.get(key, None)", ["key"]),
        ("    if not slot_free(calendar, who):", ["slot_free", "who"]),
        ("    elif keyy > 2:", ["keyy"]),
        ("    while pending:", ["pending"]),
        ("    except Oops as e:", ["Oops"]),
        ("    for row in rows:", ["rows"]),
        ("    with open(path) as handle:", ["path"]),
        ("    return len(obj)", ["obj"]),
        ('    s = f"{who} é {key}"', ["who", "key"]),  # offsets in code points after an é
        ("    result = foo(\n        bar, baz)", ["foo", "bar", "baz"]),
        ("    x = records[0]; y = zz", ["zz"]),
        ("    def inner(a, b=default):", ["default"]),
        ("    @decorate", []),  # a decorator alone does not parse: nothing is said
        ("    x = (", []),  # nor does a statement cut short
        ("    else:", []),
        ("    # key", []),
    ],
)
def test_undefined_reads_are_found_where_they_stand(statement, undefined):
    assert names(statement) == [(n, n) for n in undefined]


@pytest.mark.parametrize(
    "statement",
    [
        "    total = sum(v.price for v in values)",  # a comprehension binds after reading
        "    pairs = {k: v for k, v in form.items()}",
        "    form.update(key=1, **{})",  # a keyword names a parameter
        "    f = lambda q: q + 1",
        "    r = (n := 3) + n",
        "    print(len(values), None, True, __name__)",  # builtins
        "    x: int = 3",
    ],
)
def test_what_the_statement_binds_or_python_provides_is_not_undefined(statement):
    assert names(statement) == []


def test_bound_names_are_what_later_statements_may_read():
    parsed = parse_statement("    for i, (a, b) in enumerate(x): pass")
    assert parsed is not None
    assert bound_names(parsed.tree) == {"i", "a", "b"}
    for statement, bound in [
        ("import os.path as p, sys", {"p", "sys"}),
        ("from x import y as z", {"z"}),
        ("def f(a, /, b, *c, d, **e): pass", {"f", "a", "b", "c", "d", "e"}),
        ("class K(Base): pass", {"K"}),
        ("x = [y for y in z]", {"x"}),  # the comprehension's y does not leak
        ("a += 1", {"a"}),
    ]:
        parsed = parse_statement(statement)
        assert parsed is not None and bound_names(parsed.tree) == bound, statement


def test_name_check_learns_bindings_and_reports_only_the_generated_part():
    text = "def f(form):\n    key = 1\n    data = form.get(key, nope)\n    return data\n"
    check = NameCheck(known={"form", "f"}, statement_start=text.index("    key"))
    first = text.index("\n", text.index("key = 1"))
    assert check.check(text, first, 0) is None
    check.advance(text, first)
    assert "key" in check.known
    second = text.index("\n", first + 1)
    found = check.check(text, second, 0)
    assert found is not None and found.name == "nope"
    assert text[found.offset : found.offset + 4] == "nope"
    # The same statement, but "nope" lies in what the user wrote: nothing to say.
    assert check.check(text, second, found.offset + 1) is None


def test_a_statement_that_began_before_the_window_is_not_checked():
    check = NameCheck(known=set(), statement_start=None)
    text = "    nope)\n"
    assert check.check(text, text.index("\n"), 0) is None
    check.advance(text, text.index("\n"))
    assert check.statement_start == len(text)
