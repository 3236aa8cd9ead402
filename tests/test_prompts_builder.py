"""Prompt building: prefix-only and FIM layouts, budgets, line-boundary truncation."""

from __future__ import annotations

import pytest

from steerlsp.prompts.builder import (
    MAX_CHARS_PER_TOKEN,
    Prompt,
    build_prompt,
    path_comment,
    prefix_tail,
    suffix_head,
)
from steerlsp.prompts.fim import template_named

PREFIX = (
    "from shop.pricing import price_of\n"
    "\n"
    "\n"
    "def cart_total(items):\n"
    "    total = 0\n"
    "    for item in items:\n"
    "        "
)
SUFFIX = "\n    return total\n\n\ndef cart_size(items):\n    return len(items)\n"


def words(text: str) -> int:
    return len(text.split())


def build(prefix=PREFIX, suffix=SUFFIX, **overrides) -> Prompt:
    options = dict(
        path="shop/cart.py",
        template=None,
        count_tokens=len,
        prefix_budget=10_000,
        suffix_budget=10_000,
    )
    options.update(overrides)
    return build_prompt(prefix, suffix, **options)  # type: ignore[arg-type]


def test_prefix_only_header_and_verbatim_prefix():
    prompt = build()
    assert prompt == Prompt("# path: shop/cart.py\n" + PREFIX, len(PREFIX), False, None)
    assert prompt.text.endswith("for item in items:\n        ")


def test_prefix_only_without_path_has_no_header():
    assert build(path=None).text == PREFIX


def test_path_comment_flattens_line_breaks():
    assert path_comment("evil\nname.py") == "# path: evil name.py\n"
    assert path_comment(None) == ""


def test_prefix_truncated_from_the_left_at_a_line_boundary():
    tail = "    total = 0\n    for item in items:\n        "
    prompt = build(prefix_budget=len(tail) + 5)
    assert prompt.text == "# path: shop/cart.py\n" + tail
    assert prompt.prefix_chars == len(tail)
    assert PREFIX[len(PREFIX) - prompt.prefix_chars :] == tail


def test_prefix_budget_counted_with_a_word_counter():
    # Last lines: "for item in items:" (4 words) and "total = 0" (3 words).
    assert prefix_tail(PREFIX, 4, words) == "    for item in items:\n        "
    assert prefix_tail(PREFIX, 7, words) == "    total = 0\n    for item in items:\n        "


def test_cursor_line_cut_mid_line_only_when_it_alone_is_too_long():
    prefix = "import os\nresult = compute(alpha, beta, gamma, delta)"
    assert prefix_tail(prefix, 3, words) == " beta, gamma, delta)"
    assert prefix_tail(prefix, 0, words) == ""


def test_zero_prefix_budget_keeps_an_empty_cursor_line():
    assert build(prefix="x = 1\n", prefix_budget=0).text == "# path: shop/cart.py\n"


def test_negative_budget_is_a_programmer_error():
    with pytest.raises(ValueError, match="-1"):
        build(prefix_budget=-1)
    with pytest.raises(ValueError, match="suffix_budget"):
        build(suffix_budget=-3)


def test_qwen_fim_layout_with_file_header():
    prompt = build(template=template_named("qwen2.5-coder"))
    assert prompt.text == (
        "<|file_sep|>shop/cart.py\n<|fim_prefix|>"
        + PREFIX
        + "<|fim_suffix|>"
        + SUFFIX
        + "<|fim_middle|>"
    )
    assert prompt == Prompt(prompt.text, len(PREFIX), True, "qwen2.5-coder")


def test_starcoder2_puts_the_path_comment_inside_the_prefix():
    prompt = build(template=template_named("starcoder2"))
    assert prompt.text == (
        "<fim_prefix># path: shop/cart.py\n" + PREFIX + "<fim_suffix>" + SUFFIX + "<fim_middle>"
    )


def test_codellama_spacing():
    prompt = build("def f(", "):\n", path=None, template=template_named("codellama"))
    assert prompt.text == "<PRE> def f( <SUF>):\n <MID>"


def test_deepseek_and_codegemma_layouts():
    deepseek = build("a = ", "\n", path=None, template=template_named("deepseek-coder"))
    bar, space = "\uff5c", "\u2581"  # fullwidth vertical line, lower one eighth block
    assert deepseek.text == (
        f"<{bar}fim{space}begin{bar}>a = <{bar}fim{space}hole{bar}>\n<{bar}fim{space}end{bar}>"
    )
    codegemma = build("a = ", "\n", path=None, template=template_named("codegemma"))
    assert codegemma.text == "<|fim_prefix|>a = <|fim_suffix|>\n<|fim_middle|>"


def test_suffix_truncated_from_the_right_at_a_line_boundary():
    template = template_named("codegemma")
    prompt = build(template=template, suffix_budget=len("\n    return total\n"))
    assert prompt.text.endswith("<|fim_suffix|>\n    return total\n<|fim_middle|>")
    assert prompt.suffix_used


def test_suffix_first_line_cut_mid_line_only_when_alone_too_long():
    assert suffix_head("alpha, beta, gamma)\nnext()\n", 2, words) == "alpha, beta, "
    assert suffix_head("x)\nnext()\n", 1, words) == "x)\n"


def test_no_suffix_budget_means_suffix_unused():
    prompt = build(template=template_named("codegemma"), suffix_budget=0)
    assert prompt.text.endswith("<|fim_suffix|><|fim_middle|>")
    assert not prompt.suffix_used


def test_prefix_only_ignores_the_suffix():
    prompt = build(suffix="SENTINEL")
    assert "SENTINEL" not in prompt.text
    assert not prompt.suffix_used


def test_code_points_not_utf16_units():
    prefix = "name = '😋🛒'\nx = "
    prompt = build(prefix=prefix, path=None)
    assert prompt.prefix_chars == len(prefix) == 16


def test_truncation_counts_little_on_a_huge_file():
    """Counting is bounded by what fits, not by the file's size."""
    line = "    value = compute(value, other) + 1\n"
    prefix = line * 50_000 + "    "
    calls: list[int] = []

    def counting(text: str) -> int:
        calls.append(len(text))
        return len(text) // 4 + 1

    budget = 1_000
    tail = prefix_tail(prefix, budget, counting)
    assert tail.endswith(line + "    ")
    assert sum(len(piece) // 4 + 1 for piece in tail.splitlines(keepends=True)) <= budget
    assert len(calls) < 200
    assert max(calls) <= budget * MAX_CHARS_PER_TOKEN


def test_a_huge_single_line_is_never_tokenized_whole():
    calls: list[int] = []

    def counting(text: str) -> int:
        calls.append(len(text))
        return len(text)

    tail = prefix_tail("x" * 10_000_000, 100, counting)
    assert tail == "x" * 100
    assert max(calls) <= 100 * MAX_CHARS_PER_TOKEN
    assert len(calls) < 20
