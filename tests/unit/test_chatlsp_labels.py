"""ChatLSP semantics against the labelled holes of bench/chatlsp (labels.toml).

Each case is a file of bench/chatlsp/project with the cursor at the end of a
unique substring and the rest of that line deleted; the labels say what a
careful reader expects from the issue's semantics. One Semantics instance
serves the whole module, as one would serve a whole session, and so does one
ErrorChecker: errorReport must find nothing in the line's true rest (the real
code the document lost) and must report that rest with one identifier misspelt
by ``labels.corrupt``'s rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import chatlsp_labels as labels

CASES = labels.load_cases()
TYPED = [case for case in CASES if case.expected]


def _rest(case: labels.Case) -> str:
    return labels.true_rest((labels.PROJECT / case.file).read_text("utf-8"), case.cursor)


def _corruption(case: labels.Case) -> labels.Corruption | None:
    doc = labels.document_for(case)
    text = (labels.PROJECT / case.file).read_text("utf-8")
    return labels.corrupt(text, doc.line, doc.column, _rest(case))


CHECKED = [case for case in CASES if _rest(case).strip()]
BROKEN = [(case, corruption) for case in CHECKED if (corruption := _corruption(case))]
# Broken variants errorReport misses today, each with its cause; strict, so a fix shows.
KNOWN_MISSES: dict[str, str] = {}  # case id -> why errorReport misses its broken variant


def _ids(cases: list[labels.Case]) -> list[str]:
    return [case.id for case in cases]


@pytest.fixture(scope="module")
def semantics() -> Any:
    from steerlsp.server.chatlsp.semantics import Semantics

    return Semantics(str(labels.PROJECT), None)


def _ask(semantics: Any, method: str, case: labels.Case) -> Any:
    doc = labels.document_for(case)
    return getattr(semantics, method)(doc.source, doc.path, doc.line, doc.column)


def test_labels_are_well_formed() -> None:
    assert labels.label_problems(CASES) == []
    assert len(CASES) >= labels.MIN_CASES
    assert len({case.id for case in CASES}) == len(CASES)
    assert len({(case.file, case.cursor) for case in CASES}) == len(CASES)


def test_labels_cover_every_origin_several_times() -> None:
    for origin in labels.ORIGINS:
        assert sum(case.origin == origin for case in CASES) >= 5, origin


def test_document_puts_the_cursor_at_the_end_and_deletes_the_rest_of_the_line() -> None:
    text = "def f() -> int:\n    return 1 + 2\n\nx = 1\n"
    source, line, column = labels.document_from(text, "    return ")
    assert source == "def f() -> int:\n    return \n\nx = 1\n"
    assert (line, column) == (1, 11)
    assert source.splitlines()[line][:column] == "    return "
    # A cursor spanning lines lands on its last line.
    source, line, column = labels.document_from(text, "int:\n    return 1")
    assert (line, column) == (1, 12)
    assert source.splitlines()[1] == "    return 1"


def test_every_document_ends_its_cursor_line_at_the_cursor() -> None:
    for case in CASES:
        doc = labels.document_for(case)
        lines = doc.source.split("\n")
        assert lines[doc.line] == case.cursor.split("\n")[-1], case.id
        assert len(lines[doc.line]) == doc.column, case.id


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_expected_type(semantics: Any, case: labels.Case) -> None:
    got = _ask(semantics, "expected_type", case)
    assert labels.annotation_of(got) == labels.normalise(case.expected), case.note


@pytest.mark.parametrize("case", TYPED, ids=_ids(TYPED))
def test_expected_type_origin(semantics: Any, case: labels.Case) -> None:
    got = _ask(semantics, "expected_type", case)
    assert got is not None
    assert got.origin == case.origin


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_relevant_types(semantics: Any, case: labels.Case) -> None:
    got = _ask(semantics, "relevant_types", case)
    assert labels.type_names(got) == set(case.types), case.note


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_relevant_headers(semantics: Any, case: labels.Case) -> None:
    got = _ask(semantics, "relevant_headers", case)
    top = labels.header_names(got)
    assert len(got) <= labels.TOP_HEADERS
    assert set(case.headers) <= set(top), (top, case.note)
    assert not set(top) & set(case.headers_absent), top


# ---- errorReport and aiTutorial ---------------------------------------------------------


@pytest.fixture(scope="module")
def checker() -> Iterator[Any]:
    from steerlsp.server.chatlsp.errors import ErrorChecker

    # A generous pylint timeout: a busy machine must not turn a slow lint into a pass.
    checker = ErrorChecker(str(labels.PROJECT), None, timeout=30.0)
    yield checker
    checker.close()


def _check(checker: Any, case: labels.Case, completion: str) -> tuple[Any, list[Any]]:
    from steerlsp.server.chatlsp.errors import with_completion

    doc = labels.document_for(case)
    checked = with_completion(doc.source, doc.line, doc.column, completion)
    return checked, checker.check(checked, doc.path)


def _broken_param(case: labels.Case, corruption: labels.Corruption) -> Any:
    marks = []
    if case.id in KNOWN_MISSES:
        marks.append(pytest.mark.xfail(reason=KNOWN_MISSES[case.id], strict=True))
    return pytest.param(case, corruption, id=case.id, marks=marks)


def test_every_case_but_the_end_of_line_ones_has_a_check_and_most_a_broken_one() -> None:
    assert len(CHECKED) == sum(bool(_rest(case)) for case in CASES) >= len(CASES) - 2
    assert len(BROKEN) >= 50
    kinds = [corruption.kind for _, corruption in BROKEN]
    assert kinds.count("attribute") >= 10 and kinds.count("name") >= 10
    assert set(KNOWN_MISSES) <= {case.id for case, _ in BROKEN}


@pytest.mark.parametrize("case", CHECKED, ids=_ids(CHECKED))
def test_error_report_finds_nothing_in_the_true_rest_of_the_line(
    checker: Any, case: labels.Case
) -> None:
    from steerlsp.server.chatlsp.errors import feedback, needs_repair

    checked, problems = _check(checker, case, _rest(case))
    assert checked.text == (labels.PROJECT / case.file).read_text("utf-8")  # the real file
    assert not needs_repair(problems), feedback(problems, checked)


@pytest.mark.parametrize(
    ("case", "corruption"), [_broken_param(case, corruption) for case, corruption in BROKEN]
)
def test_error_report_catches_the_misspelt_rest(
    checker: Any, case: labels.Case, corruption: labels.Corruption
) -> None:
    from steerlsp.server.chatlsp.errors import feedback, needs_repair

    checked, problems = _check(checker, case, corruption.completion)
    first, last = checked.lines
    assert needs_repair(problems)
    assert all(first <= problem.line <= last for problem in problems)
    misspelt = corruption.target.rsplit(".", 1)[-1] + labels.SUFFIX
    named = [p for p in problems if p.code in corruption.codes and misspelt in p.message]
    assert named, feedback(problems, checked)


def _corrupt(text: str, marker: str = "#|") -> labels.Corruption | None:
    """corrupt() with the cursor where ``marker`` is; the marker is removed."""
    before, after = text.split(marker)
    line, column = before.count("\n"), len(before) - (before.rfind("\n") + 1)
    source = before + after
    return labels.corrupt(source, line, column, labels.true_rest(source, before))


def test_corrupt_misspells_an_attribute_of_a_declared_receiver_first() -> None:
    text = (
        "import json\n"
        "class C:\n"
        "    def f(self, data: dict, n):\n"
        "        return #|n.real + self.size + data.keys() + json.dumps(n)\n"
    )
    got = _corrupt(text)
    assert got is not None
    assert (got.kind, got.target, got.codes) == ("attribute", "self.size", ("E1101",))
    assert got.completion == "n.real + self.size_x + data.keys() + json.dumps(n)"


def test_corrupt_falls_back_to_a_name_when_receivers_are_rebound_or_untyped() -> None:
    text = (
        "import json\n"
        "def g(row: dict, rows):\n"
        "    json = rows\n"
        "    for row in rows:\n"
        "        print(#|row.keys(), json.dumps(row), [r.x for r in rows])\n"
    )
    got = _corrupt(text)
    assert got is not None
    assert (got.kind, got.target, got.codes) == ("name", "row", ("F821", "E0602"))
    assert got.completion == "row_x.keys(), json.dumps(row), [r.x for r in rows])"


def test_corrupt_reads_a_default_outside_its_function_and_skips_real_names() -> None:
    text = "class C:\n    size = 1\ndef h(c: C = #|C.size, d=sorted_x):\n    return c\n"
    got = _corrupt(text)
    assert got is not None and (got.kind, got.target) == ("attribute", "C.size")
    # c is h's annotated parameter, but a default is not in h's scope: c is a name there.
    got = _corrupt("def h(c: int, d=#|c.real):\n    return c\n")
    assert got is not None and (got.kind, got.completion) == ("name", "c_x.real):")
    # sorted_x already names something: the misspelling would not be an error.
    text = "sorted_x = sorted\nvalues = #|sorted([2, 1]) + [len([])]\n"
    got = _corrupt(text)
    assert got is not None and got.target == "len"


def test_corrupt_finds_nothing_to_misspell_in_constants_and_brackets() -> None:
    for rest in ("None", "[]", "{}", '"ord"', "True", "1 + 2"):
        assert _corrupt(f"def f():\n    return #|{rest}\n") is None, rest
    assert _corrupt("x = 1\ny = #|\n") is None
    assert _corrupt("x = #|len(\n") is None  # no tree, no rule


@pytest.mark.parametrize("file", sorted(labels.PROJECT.rglob("*.py")), ids=lambda p: p.name)
def test_ai_tutorial_names_the_python_version_and_the_indentation(file: Any) -> None:
    from steerlsp.server.chatlsp.tutorial import tutorial

    text = tutorial(str(labels.PROJECT), None, file.read_text("utf-8"))
    assert labels.tutorial_ok(text), text
