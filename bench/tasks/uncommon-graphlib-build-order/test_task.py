import graphlib
from unittest.mock import patch

import pytest
from candidate import build_order


def _check_order(deps, order):
    expected = set(deps) | {d for ds in deps.values() for d in ds}
    assert sorted(order) == sorted(expected)
    pos = {node: i for i, node in enumerate(order)}
    for node, ds in deps.items():
        for d in ds:
            assert pos[d] < pos[node], f"{d} must come before {node}"


def test_output_diamond():
    deps = {"app": {"lib", "utils"}, "lib": {"core"}, "utils": {"core"}, "core": set()}
    _check_order(deps, build_order(deps))


def test_output_implicit_leaves():
    deps = {"docs": {"sphinx"}, "wheel": {"compile", "license"}, "compile": {"headers"}}
    order = build_order(deps)
    _check_order(deps, order)
    assert len(order) == 6


def test_output_empty():
    assert build_order({}) == []


def test_output_cycle_raises_value_error():
    with pytest.raises(ValueError):
        build_order({"a": {"b"}, "b": {"c"}, "c": {"a"}})


def test_approach_uses_topological_sorter():
    with patch.object(graphlib, "TopologicalSorter", wraps=graphlib.TopologicalSorter) as spy:
        deps = {"b": {"a"}}
        assert build_order(deps) == ["a", "b"]
    spy.assert_called()
