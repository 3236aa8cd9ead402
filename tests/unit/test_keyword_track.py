"""The keyword-argument track's pure parts (``bench/keyword_arguments.py``): which
keyword arguments are positions, what a completion wrote, and the verdicts."""

from __future__ import annotations

from bench.keyword_arguments import (
    KeywordRow,
    keyword_sites,
    summarize,
    verdict,
    written_keyword,
)

SOURCE = """\
import json

def save(data, path):
    text = json.dumps(data, indent=2,
                      sort_keys=True)
    write(path, text, **options)
    return dict(a=1)(b=2)
"""


def test_keyword_arguments_are_positions_where_their_name_starts():
    sites = keyword_sites(SOURCE)
    assert [s.name for s in sites] == ["indent", "sort_keys", "a", "b"]
    indent, sort_keys = sites[0], sites[1]
    assert SOURCE[indent.start : indent.start + 6] == "indent"
    assert SOURCE[: indent.start].endswith("json.dumps(data, ")
    # The suffix starts after the call's last line: the model writes the rest of the call.
    assert indent.line_end == sort_keys.line_end
    assert SOURCE[sort_keys.line_end :].startswith("\n    write(")


def test_what_was_written_and_its_verdict():
    assert written_keyword(" indent=2)\n") == "indent"
    assert written_keyword("indent == 2)") == ""
    assert written_keyword("data)\n") == ""
    keywords = ["indent", "sort_keys"]
    assert verdict("indent", "indent", keywords) == "right"
    assert verdict("sort_keys", "indent", keywords) == "parameter"
    assert verdict("indentation", "indent", keywords) == "not a parameter"
    assert verdict("", "indent", keywords) == "no keyword"


def test_only_checkable_positions_are_scored():
    def row(truth, callee, **results):
        made = KeywordRow(truth, "lib", truth, "test", callee)
        made.results = {
            name: {"verdict": v, "latency_ms": 100.0, "interrupts": 0}
            for name, v in results.items()
        }
        return made

    closed = {"known": True, "open": False, "checkable": True, "keywords": ["a", "b"]}
    rows = [
        row("a", closed, unsteered="not a parameter", ranked="right"),
        row("b", closed, unsteered="no keyword", ranked="no keyword"),
        row("c", {"known": True, "open": True, "checkable": False}, unsteered="right"),
        row("d", {"known": False}, unsteered="right"),
        row("e", {"known": True, "open": False, "checkable": False}, unsteered="right"),
    ]
    summary = summarize(rows, ["unsteered", "ranked"])
    assert (summary["checkable"], summary["open"], summary["unknown"], summary["mismatch"]) == (
        2,
        1,
        1,
        1,
    )
    unsteered, ranked = summary["configs"]["unsteered"], summary["configs"]["ranked"]
    assert (unsteered["written"], unsteered["valid_share"], unsteered["right_share"]) == (
        1,
        0.0,
        0.0,
    )
    assert (ranked["written"], ranked["valid_share"], ranked["right_share"]) == (1, 1.0, 0.5)
