"""The two ceilings' pure parts: how a teacher-forced divergence is classed
(``bench/teacher_forcing.py``), and what no ranking weight can change
(``bench/tune_rank.py --ceiling``)."""

from __future__ import annotations

from bench.teacher_forcing import char_classes
from bench.tune_rank import rankings, right_elsewhere

PROMPT = "import statistics\n\ndef f(xs, key):\n    # a comment\n    "


def _class_of(body: str, word: str) -> str:
    classes = char_classes(PROMPT, body)
    return classes[body.index(word)]


def test_each_part_of_a_body_has_its_class():
    body = 'return statistics.correlation(xs, key=sorted(xs), label="a")  # why\n'
    assert _class_of(body, "return") == "structure"
    assert _class_of(body, "statistics") == "import"  # imported, not yet used
    assert _class_of(body, "correlation") == "member"
    assert _class_of(body, "xs") == "name"
    assert _class_of(body, "key=") == "keyword"
    assert _class_of(body, "sorted") == "name"  # a keyword's value is a name
    assert _class_of(body, '"a"') == "literal"
    assert _class_of(body, "# why") == "comment"
    assert len(char_classes(PROMPT, body)) == len(body)


def test_a_comparison_is_no_keyword_and_a_used_import_is_a_name():
    prompt = "import statistics\nM = statistics.mean\n\ndef f(xs):\n    "
    body = "return f(xs == 1, statistics)\n"
    classes = char_classes(prompt, body)
    assert classes[body.index("xs")] == "name"
    assert classes[body.index("statistics")] == "name"


def _row(truth: str, names: list[str], correct: bool) -> dict:
    ranking = {"top": [{"name": n} for n in names]} if names else None
    return {"truth": truth, "results": {"ranked": {"correct": correct, "ranking": ranking}}}


def test_what_re_weighting_can_change_and_what_it_cannot():
    rows = [
        _row("a", ["b", "a"], False),  # listed: re-ranking may fix it
        _row("c", ["c"], True),  # listed and right
        _row("d", ["e"], True),  # right without the ranking listing it (a typed prefix)
        _row("f", [], True),  # no ranking at all (the walk alone)
        _row("g", ["h"], False),  # not listed: nothing fixes it
    ]
    assert [truth for truth, _ in rankings(rows)] == ["a", "c"]
    assert right_elsewhere(rows) == 2
