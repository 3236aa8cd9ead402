"""ChatLSP semantics against the labelled holes of bench/chatlsp (labels.toml).

Each case is a file of bench/chatlsp/project with the cursor at the end of a
unique substring and the rest of that line deleted; the labels say what a
careful reader expects from the issue's semantics. One Semantics instance
serves the whole module, as one would serve a whole session.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.chatlsp import run as bench

CASES = bench.load_cases()
TYPED = [case for case in CASES if case.expected]


def _ids(cases: list[bench.Case]) -> list[str]:
    return [case.id for case in cases]


@pytest.fixture(scope="module")
def semantics() -> Any:
    from steerlsp.server.chatlsp.semantics import Semantics

    return Semantics(str(bench.PROJECT), None)


def _ask(semantics: Any, method: str, case: bench.Case) -> Any:
    doc = bench.document_for(case)
    return getattr(semantics, method)(doc.source, doc.path, doc.line, doc.column)


def test_labels_are_well_formed() -> None:
    assert bench.label_problems(CASES) == []
    assert len(CASES) >= bench.MIN_CASES
    assert len({case.id for case in CASES}) == len(CASES)
    assert len({(case.file, case.cursor) for case in CASES}) == len(CASES)


def test_labels_cover_every_origin_several_times() -> None:
    for origin in bench.ORIGINS:
        assert sum(case.origin == origin for case in CASES) >= 5, origin


def test_document_puts_the_cursor_at_the_end_and_deletes_the_rest_of_the_line() -> None:
    text = "def f() -> int:\n    return 1 + 2\n\nx = 1\n"
    source, line, column = bench.document_from(text, "    return ")
    assert source == "def f() -> int:\n    return \n\nx = 1\n"
    assert (line, column) == (1, 11)
    assert source.splitlines()[line][:column] == "    return "
    # A cursor spanning lines lands on its last line.
    source, line, column = bench.document_from(text, "int:\n    return 1")
    assert (line, column) == (1, 12)
    assert source.splitlines()[1] == "    return 1"


def test_every_document_ends_its_cursor_line_at_the_cursor() -> None:
    for case in CASES:
        doc = bench.document_for(case)
        lines = doc.source.split("\n")
        assert lines[doc.line] == case.cursor.split("\n")[-1], case.id
        assert len(lines[doc.line]) == doc.column, case.id


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_expected_type(semantics: Any, case: bench.Case) -> None:
    got = _ask(semantics, "expected_type", case)
    assert bench.annotation_of(got) == bench.normalise(case.expected), case.note


@pytest.mark.parametrize("case", TYPED, ids=_ids(TYPED))
def test_expected_type_origin(semantics: Any, case: bench.Case) -> None:
    got = _ask(semantics, "expected_type", case)
    assert got is not None
    assert got.origin == case.origin


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_relevant_types(semantics: Any, case: bench.Case) -> None:
    got = _ask(semantics, "relevant_types", case)
    assert bench.type_names(got) == set(case.types), case.note


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_relevant_headers(semantics: Any, case: bench.Case) -> None:
    got = _ask(semantics, "relevant_headers", case)
    top = bench.header_names(got)
    assert len(got) <= bench.TOP_HEADERS
    assert set(case.headers) <= set(top), (top, case.note)
    assert not set(top) & set(case.headers_absent), top
