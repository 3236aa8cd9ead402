"""Pure conversions of the analysis instance: items, signatures, definitions, ranged sync."""

import random

import pytest
from lsprotocol import types
from pylsp.workspace import Document

from steerlsp.models.steering.analysis import CompletionCandidate, DefinitionSource, Signature
from steerlsp.server.analysis.items import (
    candidate_from,
    candidates_from,
    definition_from,
    first_doc_line,
    position_at,
    ranged_change,
    returned_type,
    signature_from,
    unstructure,
)


def test_an_item_becomes_a_candidate_with_its_name_kind_detail_doc_line_and_tags():
    item = {
        "label": "with_vat(rate)",
        "kind": 3,
        "insertText": "with_vat",
        "detail": "shop.pricing.Price",
        "documentation": "with_vat(rate: float) -> Price\n\nReturn this price with VAT.\n\nMore.",
        "tags": [1],
    }
    assert candidate_from(item) == CompletionCandidate(
        "with_vat",
        kind="function",
        detail="shop.pricing.Price",
        documentation="Return this price with VAT.",
        deprecated=True,
        returns="Price",  # from the signature line the documentation starts with
    )


@pytest.mark.parametrize(
    ("item", "name"),
    [
        ({"label": "model_dump(mode)", "kind": 2}, "model_dump"),  # label without params
        ({"label": "x=", "kind": 6}, "x"),  # a keyword argument
        ({"label": "f", "insertText": "f(${1:a})"}, "f"),  # a snippet
        ({"label": "héllo"}, "héllo"),
    ],
)
def test_the_name_has_no_parameters_or_snippet_syntax(item, name):
    candidate = candidate_from(item)
    assert candidate is not None and candidate.name == name


def test_kinds_are_lower_case_lsp_names_and_deprecated_comes_from_either_field():
    assert candidate_from({"label": "a", "kind": 10}).kind == "property"  # type: ignore[union-attr]
    assert candidate_from({"label": "a", "kind": 99}).kind == ""  # type: ignore[union-attr]
    assert candidate_from({"label": "a", "deprecated": True}).deprecated  # type: ignore[union-attr]
    assert not candidate_from({"label": "a"}).deprecated  # type: ignore[union-attr]


def test_items_that_name_nothing_are_dropped_and_lists_or_completion_lists_are_read():
    assert candidate_from({"label": "("}) is None
    items = [{"label": "a"}, {"label": "..."}, "junk", {"label": "b"}]
    assert [c.name for c in candidates_from(items)] == ["a", "b"]
    assert [c.name for c in candidates_from({"isIncomplete": False, "items": items})] == ["a", "b"]
    assert candidates_from(None) == []


@pytest.mark.parametrize(
    ("documentation", "line"),
    [
        ("Sum of all items.\n\nDetails.", "Sum of all items."),
        ("total(self) -> Price\n\nSum of all items.", "Sum of all items."),
        ({"kind": "markdown", "value": "```python\ntotal()\n```\n\nSum."}, "Sum."),
        ("total(self) -> Price", "total(self) -> Price"),  # no docstring: the signature is all
        ("", ""),
        (None, ""),
    ],
)
def test_the_first_doc_line_skips_the_signature_block(documentation, line):
    assert first_doc_line(documentation, "total") == line


def test_a_signature_help_becomes_the_active_signature_with_parameter_labels():
    label = "with_vat(rate: float=VAT_RATE, *, exact: bool) -> Price"
    help_ = {
        "signatures": [
            {
                "label": label,
                "documentation": {"kind": "plaintext", "value": "Return it with VAT.\nMore."},
                "parameters": [{"label": [9, 29]}, {"label": "exact: bool"}],
            }
        ],
        "activeSignature": 0,
        "activeParameter": 1,
    }
    assert signature_from(help_) == Signature(
        label, ("rate: float=VAT_RATE", "exact: bool"), 1, "Return it with VAT."
    )
    assert signature_from({"signatures": []}) is None
    assert signature_from(None) is None


def test_a_definition_is_the_first_file_location_or_link():
    location = {
        "uri": "file:///p/shop/pricing.py",
        "range": {"start": {"line": 16, "character": 8}, "end": {"line": 16, "character": 16}},
    }
    assert definition_from([location]) == DefinitionSource("/p/shop/pricing.py", 16)
    assert definition_from(location) == DefinitionSource("/p/shop/pricing.py", 16)
    link = {
        "targetUri": "file:///p/a.py",
        "targetRange": location["range"],
        "targetSelectionRange": {
            "start": {"line": 3, "character": 0},
            "end": {"line": 3, "character": 1},
        },
    }
    assert definition_from([link]) == DefinitionSource("/p/a.py", 3)
    assert definition_from([{**location, "uri": "untitled:1"}]) is None
    assert definition_from(None) is None and definition_from([]) is None


@pytest.mark.parametrize(
    ("text", "offset", "line", "column"),
    [
        ("ab\ncd", 4, 1, 1),
        ("ab\r\ncd", 4, 1, 0),
        ("ab\rcd", 3, 1, 0),
        ("🛒 x.", 4, 0, 4),  # code points, not UTF-16 units
        ("a\x0cb.", 3, 1, 1),  # pylsp splits at a form feed too (str.splitlines)
        ("a\x0c", 2, 1, 0),
        ("", 0, 0, 0),
    ],
)
def test_positions_count_code_points_on_pylsps_lines(text, offset, line, column):
    assert position_at(text, offset) == types.Position(line=line, character=column)


def _applied_by_pylsp(old: str, new: str) -> str:
    class Workspace:
        def __getattr__(self, name):
            return None

    document = Document("file:///x.py", Workspace(), source=old)
    change = ranged_change(old, new)
    if change is not None:
        document.apply_change(unstructure(change))
    return document.source


def test_a_speculative_insertion_is_sent_as_a_ranged_change_of_only_what_differs():
    old = "import os\n\ncart.\nprint(1)\n"
    new = "import os\n\ncart.total()\nprint(1)\n"
    change = ranged_change(old, new)
    assert change is not None and change.text == "total()"
    assert change.range.start == change.range.end == types.Position(line=2, character=5)
    assert ranged_change(new, new) is None
    assert _applied_by_pylsp(old, new) == new


def test_random_edits_applied_by_pylsp_give_the_new_text():
    rng = random.Random(7)
    alphabet = ["a", "b", ".", "\n", "\r", "\r\n", "🛒", "\x0c", " "]
    for _ in range(400):
        old = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        start = rng.randrange(len(old) + 1)
        end = rng.randrange(start, len(old) + 1)
        inserted = "".join(rng.choice(alphabet) for _ in range(rng.randrange(4)))
        new = old[:start] + inserted + old[end:]
        assert _applied_by_pylsp(old, new) == new, (old, new)


def test_the_return_annotation_is_read_from_the_signature_line_only():
    doc = "model_dump(self, *, mode: str='python') -> dict[str, Any]\n\nGenerate a dict."
    assert returned_type(doc, "model_dump") == "dict[str, Any]"
    assert returned_type({"kind": "markdown", "value": doc}, "model_dump") == "dict[str, Any]"
    assert returned_type("Generate a dict -> not a signature", "model_dump") == ""
    assert returned_type("other(x) -> int\n\nDoc.", "model_dump") == ""
    assert returned_type(None, "x") == ""
