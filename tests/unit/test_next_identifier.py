"""The next-identifier benchmark's pure parts: positions, groups, the split, the report."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import next_identifier as nid
from tests.helpers.evaltasks import Task

SOURCE = """import os
x = os.path.join("a", "é")  # a non-ASCII byte before the next access
y = (1).bit_length() + len(x).real
name = f"{os.sep}"
self.cache.clear()
z = obj.method().result
w = foo .bar
"""


def test_attribute_sites_find_each_dot_and_name_in_code_points():
    sites = nid.attribute_sites(SOURCE)
    names = [s.name for s in sites]
    # (1).bit_length is a number's attribute; `foo .bar` counts (its name follows its
    # dot); an f-string's attribute is kept only where its position reads back as its name.
    assert names[:2] == ["path", "join"]
    assert "bit_length" not in names
    assert {"real", "cache", "clear", "method", "result", "bar"} <= set(names)
    for site in sites:
        assert SOURCE[site.dot] == "."
        assert SOURCE[site.dot + 1 : site.end] == site.name
    assert [s.dot for s in sites] == sorted(s.dot for s in sites)


def test_attribute_sites_after_the_non_ascii_line_are_placed_right():
    sites = {s.name: s for s in nid.attribute_sites(SOURCE)}
    real = sites["real"]
    assert SOURCE[: real.dot].endswith("len(x)")


def test_receivers_are_classified():
    kinds = {s.name: s.receiver for s in nid.attribute_sites(SOURCE)}
    assert kinds["path"] == "chain"
    assert kinds["join"] == "chain"  # os.path.join
    assert kinds["cache"] == "self"
    assert kinds["clear"] == "self"  # self.cache.clear
    assert kinds["result"] == "other"  # a call's result
    assert kinds["real"] == "other"


def test_start_keeps_only_sites_after_it():
    start = SOURCE.index("self.")
    names = [s.name for s in nid.attribute_sites(SOURCE, start=start)]
    assert names[0] == "cache"
    assert "join" not in names


def test_library_sites_skip_private_calls_and_count_private():
    source = "a.b\nc._d\ne.f()\ng().h\nm._n._o\n"
    sites, private = nid.library_sites(source, "pkg/mod.py")
    assert [s.name for s in sites] == ["b", "f"]
    assert private == 3


def test_task_positions_complete_after_the_prompt(tmp_path: Path):
    (tmp_path / "prompt.py").write_text("import os\n\n\ndef f(p):\n    ")
    (tmp_path / "solution.py").write_text("return os.path.basename(p).upper()\n")
    task = Task("changed-x-y", "changed-api", "x", "f", "", "", tmp_path)
    positions = nid.task_positions(task, "/usr/bin/python3")
    assert [p.truth for p in positions] == ["path", "basename", "upper"]
    first = positions[0]
    assert first.prefix == "import os\n\n\ndef f(p):\n    return os."
    assert first.suffix == "\n"
    assert first.kind == "changed"
    assert first.id == "changed-x-y:9"  # the offset of the dot in the solution
    assert first.document == str(tmp_path / "prompt.py")
    assert all(p.prefix.endswith(".") for p in positions)


def test_split_is_stable_and_about_half():
    ids = [f"pkg/mod{i}.py:{i * 37}" for i in range(2000)]
    splits = Counter(nid.split_of(i) for i in ids)
    assert set(splits) == {"train", "test"}
    assert 900 < splits["train"] < 1100
    assert [nid.split_of(i) for i in ids[:50]] == [nid.split_of(i) for i in ids[:50]]
    positions = [_position(i) for i in ids[:40]]
    test = nid.select(positions, "test", None)
    train = nid.select(positions, "train", None)
    assert len(test) + len(train) == 40
    assert not {p.id for p in test} & {p.id for p in train}
    assert nid.select(positions, "test", 3) == test[:3]


def test_round_robin_spreads_a_short_limit_over_the_sources():
    a = [_position(f"a:{i}") for i in range(3)]
    b = [_position("b:0")]
    c = [_position(f"c:{i}") for i in range(2)]
    ids = [p.id for p in nid.round_robin([a, b, c])]
    assert ids == ["a:0", "b:0", "c:0", "a:1", "c:1", "a:2"]
    assert nid.round_robin([]) == []


def test_groups():
    assert nid.group_of("changed", common=True) == "uncommon/changed"
    assert nid.group_of("uncommon", common=True) == "uncommon/changed"
    assert nid.group_of("third-party", common=True) == "common"
    assert nid.group_of("third-party", common=False) == "uncommon/changed"
    assert nid.group_of("local", common=True) == "common"
    assert nid.group_of("local", common=False) == "local"


def test_top_names_are_the_most_frequent_with_stable_ties():
    counts = Counter(nid.count_attributes(["a.x; a.x; a.y; b.z.x; c.w", "not python ("]))
    assert counts == Counter({"x": 3, "y": 1, "z": 1, "w": 1})
    assert nid.top_names(counts, top=2) == frozenset({"x", "w"})


def test_the_stdlib_common_names_include_the_usual_ones(tmp_path: Path):
    common = nid.common_attributes(tmp_path / "common.json")
    assert len(common) == nid.COMMON_TOP
    assert {"append", "join", "get", "items"} <= common
    assert "model_dump" not in common
    assert nid.common_attributes(tmp_path / "common.json") == common  # from the cache


def test_written_identifier():
    assert nid.written_identifier("model_dump()\n") == "model_dump"
    assert nid.written_identifier("_x1.y") == "_x1"
    assert nid.written_identifier(" items") == ""
    assert nid.written_identifier("") == ""


def test_weights_apply_to_ranked_configurations_only():
    weights = nid.parse_weights("rank_relevance=6, follow=2,hints=false")
    assert weights == {"rank_relevance": 6.0, "follow": 2, "hints": False}
    configs = nid.configurations(["unsteered", "walk", "ranked"], weights)
    assert configs["ranked"].rank_relevance == 6.0
    assert configs["ranked"].follow == 2
    assert configs["walk"].rank_relevance == nid.CONFIGS["walk"].rank_relevance
    assert not configs["unsteered"].enabled
    with pytest.raises(ValueError, match="nope"):
        nid.parse_weights("nope=1")
    with pytest.raises(ValueError, match="unknown configurations"):
        nid.configurations(["bogus"], {})


def test_summary_and_report():
    rows = [
        _row("a:1", "changed", "model_dump", oracle=True, unsteered="dict", ranked="model_dump"),
        _row("b:2", "third-party", "items", oracle=True, unsteered="items", ranked="items"),
        _row("c:3", "local", "frobnicate", oracle=False, unsteered="x", ranked="x"),
    ]
    summary = nid.summarize(rows, ["unsteered", "ranked"])
    assert summary["configs"]["ranked"]["uncommon/changed"] == {"correct": 1, "n": 1, "rate": 1.0}
    assert summary["configs"]["unsteered"]["all"]["correct"] == 1
    assert summary["configs"]["ranked"]["in_list"]["rate"] == 1.0
    assert summary["oracle"]["all"]["correct"] == 2
    assert summary["configs"]["ranked"]["latency_ratio"] == 2.0
    meta = {"split": "test", "task_positions": 2, "third_party_positions": 1, "private_skipped": 0}
    text = nid.report(summary, ["unsteered", "ranked"], meta)
    assert "| ranked | 100% (1/1) |" in text
    assert "| oracle (name in list) |" in text
    assert summary["configs"]["unsteered"]["deprecated"] == 1  # ``dict`` on pydantic 2
    assert text.splitlines()[6].endswith("| 1 |")  # unsteered's row: deprecated written


LIBRARY = """import warnings


class Profile:
    name: str = ""

    def dict(self) -> dict:
        warnings.warn("use model_dump() instead", DeprecationWarning, stacklevel=2)
        return self.model_dump()

    def model_dump(self) -> dict:
        return {"name": self.name}
"""
PROFILE = """from library import Profile


def payload(profile: Profile) -> dict:
    return profile."""


def test_a_deprecated_name_written_is_found_statically(tmp_path: Path):
    """A method whose body warns it is deprecated, in a module beside the document:
    Jedi resolves ``profile.dict`` there; nothing is imported or run."""
    (tmp_path / "library.py").write_text(LIBRARY)
    document = tmp_path / "profile.py"
    position = nid.Position(
        "p:1", "task", "changed", "t", PROFILE, "()\n", "model_dump", str(tmp_path),
        sys.executable, str(document), "profile.py",
    )  # fmt: skip
    names = {"dict", "model_dump", "name", "not_a_member"}
    assert nid.deprecated_names(position, names) == {"dict"}


def _position(position_id: str) -> nid.Position:
    return nid.Position(
        position_id, "third-party", "third-party", "pkg", "a.", "\n", "b", "", "", "", ""
    )


def _row(position_id: str, kind: str, truth: str, oracle: bool, **written: str) -> nid.Row:
    common = truth == "items"
    row = nid.Row(position_id, "task", kind, "t", truth, common, nid.group_of(kind, common), "test")
    row.oracle = {"in_list": oracle, "count": 5}
    for n, (name, text) in enumerate(written.items()):
        row.results[name] = {
            "written": text,
            "correct": text == truth,
            "latency_ms": 100.0 * (n + 1),
            "queries": n,
            "timeouts": 0,
            "interrupts": 0,
            "changed": 0,
            "deprecated": text == "dict",
        }
    return row
