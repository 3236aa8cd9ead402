"""Prompt building: prefix-only and FIM layouts, budgets, line-boundary truncation."""

from __future__ import annotations

import pytest

from steerlsp.prompts.builder import (
    MAX_CHARS_PER_TOKEN,
    Prompt,
    anchored_tail,
    build_prompt,
    path_comment,
    prefix_tail,
    suffix_head,
)
from steerlsp.prompts.fim import template_named
from steerlsp.prompts.window import WindowAnchors

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


# ---- a window start that stays put (the KV prefix survives typing) -----------------

LONG = "".join(f"line_{n} = {n}\n" for n in range(200))  # 3 words a line


def test_without_an_anchor_the_window_is_prefix_tails():
    assert anchored_tail(LONG, 40, words, None) == prefix_tail(LONG, 40, words)


def test_the_window_start_stays_while_it_fits_then_moves_with_slack():
    first = anchored_tail(LONG, 40, words, None)  # 13 lines + the empty cursor line
    anchor = len(LONG) - len(first)
    typed = LONG + "x = 1\n"  # one more line: 42 words from the old start
    moved = anchored_tail(typed, 40, words, anchor)
    assert moved == prefix_tail(typed, 30, words)  # fits 40 * (1 - SLACK) = 30 words
    assert moved.count("\n") == 10
    new = len(typed) - len(moved)
    for more in ("y", "y = 2\n", "y = 2\nz = 3\n"):  # typing on keeps the new start
        assert anchored_tail(typed + more, 40, words, new) == (typed + more)[new:]


def test_an_anchor_that_is_not_a_line_start_or_too_small_a_window_is_dropped():
    roomy = prefix_tail(LONG, 30, words)  # a new start, with slack
    assert anchored_tail(LONG, 40, words, 3) == roomy  # mid-line
    assert anchored_tail(LONG, 40, words, len(LONG) + 10) == roomy  # below the cursor
    late = len(LONG) - len("line_199 = 199\n")  # one line: under half the budget
    assert anchored_tail(LONG, 40, words, late) == roomy
    assert anchored_tail(LONG[:30], 40, words, 0) == LONG[:30]  # all fits


def test_the_cursor_line_alone_too_long_is_cut_mid_line_as_before():
    prefix = "import os\nresult = compute(alpha, beta, gamma, delta)"
    assert anchored_tail(prefix, 3, words, 0) == prefix_tail(prefix, 3, words)


def test_anchors_follow_a_document_whose_given_text_starts_later():
    anchors = WindowAnchors()
    document = LONG + "total = "
    start = len(LONG) - len("".join(f"line_{n} = {n}\n" for n in range(190, 200)))
    anchors.remember("a.py", document, 200, start)  # line 190
    # The server's text now starts 50 lines down, and a line was typed.
    later = document[len("".join(f"line_{n} = {n}\n" for n in range(50))) :] + "1\nx"
    offset = anchors.offset("a.py", later, 201)
    assert offset is not None and later[offset:].startswith("line_190 = 190\n")
    assert anchors.offset("b.py", later, 201) is None
    changed = later.replace("line_190 = 190", "line_190 = 0")
    assert anchors.offset("a.py", changed, 201) is None  # its line was edited


def test_anchors_forget_the_least_recent_documents():
    anchors = WindowAnchors(remembered=2)
    for name in ("a", "b", "c"):
        anchors.remember(name, "x\ny", 1, 0)
    assert anchors.offset("a", "x\ny", 1) is None and anchors.offset("c", "x\ny", 1) == 0
