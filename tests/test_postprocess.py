"""Post-processing: completion mode, streaming stop rules, and finalizing the inserted text."""

from __future__ import annotations

import pytest

from steerlsp.prompts.postprocess import (
    CompletionMode,
    Stop,
    block_indent,
    completion_mode,
    finalize,
    indent_width,
    stop_reason,
)
from steerlsp.prompts.scan import scan

SINGLE, MULTI = CompletionMode.SINGLE_LINE, CompletionMode.MULTI_LINE


def complete(generated: str, line_prefix: str, suffix: str = "\n", max_lines: int | None = None):
    """finalize with mode and block indentation derived as the decode loop would."""
    line_suffix = suffix.partition("\n")[0]
    return finalize(
        generated,
        mode=completion_mode(line_prefix, line_suffix),
        line_prefix=line_prefix,
        suffix=suffix,
        block_indent=block_indent(line_prefix),
        max_lines=max_lines,
    )


def stream(generated: str, line_prefix: str, line_suffix: str = "", max_lines: int = 8):
    """The first (prefix length, reason) at which stop_reason fires, fed char by char."""
    mode, indent = completion_mode(line_prefix, line_suffix), block_indent(line_prefix)
    for end in range(1, len(generated) + 1):
        reason = stop_reason(
            generated[:end], mode=mode, indent_of_block=indent, max_lines=max_lines
        )
        if reason is not None:
            return end, reason
    return None


# --- scanner ---------------------------------------------------------------------------


def test_scan_brackets_strings_and_comments():
    found = scan("foo(a, '(', [b] # (\n")
    assert found.open_tokens() == ("(",)
    assert [(c.opened.token, c.at) for c in found.closed] == [("'", 9), ("[", 14)]
    assert found.comment_at == 16


def test_scan_escapes_triple_quotes_and_line_breaks():
    assert scan(r'x = "a\")" + (').open_tokens() == ("(",)
    assert scan('doc = """(\n  ) still text').open_tokens() == ('"""',)
    assert scan("s = 'unterminated (\nnext(").open_tokens() == ("(",)
    assert scan("f(x]").open_tokens() == ("(",)  # a mismatched closer is ignored


def test_scan_from_an_outer_state():
    found = scan('world") + 1', ("(", '"'))
    assert [(c.opened.token, c.opened.outer, c.at) for c in found.closed] == [
        ('"', True, 5),
        ("(", True, 6),
    ]
    assert found.open == ()


# --- completion mode and block indentation ----------------------------------------------


@pytest.mark.parametrize(
    ("line_prefix", "line_suffix", "mode"),
    [
        ("", "", MULTI),  # empty line
        ("        ", "", MULTI),  # indentation only
        ("    for item in items:", "", MULTI),  # block header
        ("    if total > 100:  # discount", "", MULTI),  # header with a comment
        ("class Cart:", "   ", MULTI),  # trailing whitespace after the cursor
        ("    total = ", "", SINGLE),  # finishing a statement
        ("    return foo(a, ", ")", SINGLE),  # mid-line
        ("        ", "return total", SINGLE),  # text after the cursor
        ("prices = {'apple':", "", SINGLE),  # ':' inside brackets
        ("label = 'total:", "", SINGLE),  # ':' inside a string
        ("x = 1  # note:", "", SINGLE),  # ':' inside a comment
        ("items[1:", "", SINGLE),  # slice
    ],
)
def test_completion_mode(line_prefix, line_suffix, mode):
    assert completion_mode(line_prefix, line_suffix) is mode


@pytest.mark.parametrize(
    ("line_prefix", "indent"),
    [
        ("", 0),
        ("        ", 8),
        ("\t", 8),
        ("    for item in items:", 5),
        ("def cart_total(items):", 1),
        ("    total = ", 4),
    ],
)
def test_block_indent(line_prefix, indent):
    assert block_indent(line_prefix) == indent


def test_block_indent_reads_the_last_line_of_a_whole_prefix():
    prefix = "def cart_total(items):\n    total = 0\n    for item in items:"
    assert block_indent(prefix) == 5
    assert block_indent(prefix + "\n        ") == 8


def test_indent_width_expands_tabs():
    assert indent_width("  \tx") == 8
    assert indent_width("x") == 0
    assert indent_width("   ") == 3


# --- streaming stop rules ---------------------------------------------------------------


def test_single_line_stops_at_the_first_line_break():
    assert stream("b, c)\n    next()", "    foo(a, ", ")") == (6, Stop.NEWLINE)
    assert stream("b, c)", "    foo(a, ", ")") is None


def test_multi_line_stops_when_a_line_leaves_the_block():
    generated = "total += price_of(item)\n        count += 1\n    return total\n"
    # Stops as soon as "r" shows at column 4, not before: indentation alone decides nothing.
    assert stream(generated, "        ") == (generated.index("return") + 1, Stop.DEDENT)


def test_multi_line_after_header_stops_back_at_the_header_level():
    generated = "\n        total += item\n    return total"
    assert stream(generated, "    for item in items:") == (
        generated.index("return") + 1,
        Stop.DEDENT,
    )


def test_blank_lines_and_deeper_lines_do_not_stop():
    generated = "if item:\n\n        total += 1\n    else:\n        pass"
    assert stream(generated, "    ") is None


def test_first_line_never_dedents():
    assert stream("x = 1", "    for item in items:") is None


def test_max_lines_counts_finished_non_blank_lines():
    generated = "a = 1\n\n    b = 2\n    c = 3\n"
    assert stream(generated, "    ", max_lines=2) == (generated.index("b = 2") + 6, Stop.MAX_LINES)
    assert stream(generated, "    ", max_lines=3) == (len(generated), Stop.MAX_LINES)


def test_max_lines_must_be_positive():
    with pytest.raises(ValueError, match="0"):
        stop_reason("x", mode=MULTI, indent_of_block=0, max_lines=0)


# --- finalize: cutting at the stop ---------------------------------------------------------


def test_for_loop_body_on_an_empty_indented_line():
    generated = "total += price_of(item)\n        count += 1\n    return total\n\n\ndef other():\n"
    assert complete(generated, "        ") == "total += price_of(item)\n        count += 1"


def test_body_after_a_block_header():
    generated = "\n        total += price_of(item)\n    return total\n"
    assert complete(generated, "    for item in items:") == "\n        total += price_of(item)"


def test_single_line_keeps_only_the_rest_of_the_line():
    assert complete("sum(prices)\n    return total\n", "    total = ") == "sum(prices)"


def test_max_lines_cut():
    generated = "a = 1\n    b = 2\n    c = 3"
    assert complete(generated, "    ", max_lines=2) == "a = 1\n    b = 2"


def test_dedented_body_line_gives_nothing():
    assert complete("\nprint(items)\n", "    for item in items:") == ""


@pytest.mark.parametrize(
    ("generated", "line_prefix", "line_suffix"),
    [
        ("total += item\n        count += 1\n    return total\n", "        ", ""),
        ("\n        total += item\n    return total", "    for item in items:", ""),
        ("b, c)\n    next()", "    foo(a, ", ")"),
    ],
)
def test_finalize_agrees_with_where_streaming_stopped(generated, line_prefix, line_suffix):
    stopped = stream(generated, line_prefix, line_suffix)
    assert stopped is not None
    suffix = line_suffix + "\n"
    assert complete(generated[: stopped[0]], line_prefix, suffix) == complete(
        generated, line_prefix, suffix
    )


# --- finalize: indentation of the first line ---------------------------------------------


def test_restated_indentation_is_not_doubled():
    generated = "        total += item\n        count += 1"
    assert complete(generated, "        ") == "total += item\n        count += 1"


def test_one_extra_leading_space_is_dropped():
    assert complete(" return total", "    ") == "return total"


def test_indentation_kept_when_the_cursor_is_at_column_zero():
    assert complete("    return total\n", "") == "    return total"


# --- finalize: overlap with the suffix ------------------------------------------------------


def test_finishing_a_call_drops_the_closer_the_suffix_has():
    assert complete("b)", "    result = foo(a, ", ")\n") == "b"
    assert complete("b) + bar(c)", "    result = foo(a, ", ")\n") == "b"
    assert complete(")", "    result = foo(a", ")\n") == ""


def test_crlf_suffix():
    assert complete("b)", "    result = foo(a, ", ")\r\n    x = 1\r\n") == "b"


def test_nested_call_inside_the_suffix_brackets_is_kept():
    assert complete("price_of(item)", "    print(", ")\n") == "price_of(item)"
    assert complete("price_of(item))", "    print(", ")\n") == "price_of(item)"


def test_completion_without_auto_closed_suffix_keeps_its_closer():
    assert complete("a, b)", "    result = foo(", "\n") == "a, b)"


def test_closing_a_string_opened_before_the_cursor():
    assert complete('world")', '    print("hello ', '")\n') == "world"


def test_brackets_inside_strings_do_not_count():
    assert complete('"total)")', "    log(", ")\n") == '"total)"'
    assert complete("x)", '    foo("(", ', ")\n") == "x"
    assert complete("b]", '    pick("[", ', "]\n") == "b"


def test_tail_matching_the_rest_of_the_line_is_dropped():
    assert complete("new_value", "    x = ", "value\n") == "new_"
    assert complete("-> int:", "def total(items) ", ":\n") == "-> int"
    assert complete("a, b)", "    foo(", "b)\n") == "a, "


def test_regenerating_the_rest_of_the_line_gives_nothing():
    assert complete("total", "    return ", "total\n") == ""
    assert complete("items)", "    print(len(", "items))\n") == ""


def test_repeating_the_next_line_is_cut():
    suffix = "\n\n    return total\n"
    generated = "total = sum(prices)\n    return total\n"
    assert complete(generated, "    ", suffix) == "total = sum(prices)"
    assert complete("return total\n", "    ", suffix) == ""


def test_a_nested_line_like_the_next_one_is_kept():
    suffix = "\nelse:\n    pass\n"
    generated = "if ready:\n        ship()\n    else:\n        wait()"
    assert complete(generated, "    ", suffix) == generated


# --- finalize: trailing openers and whitespace ------------------------------------------


def test_trailing_openers_are_dropped():
    assert complete("compute(", "    total = ") == "compute"
    assert complete("compute(items, [", "    total = ") == "compute(items,"
    assert complete('"', "    label = ") == ""
    assert complete('print(f"', "    ") == "print"


def test_open_bracket_with_content_is_kept():
    assert complete("compute(items, ", "    total = ") == "compute(items,"


def test_whitespace_is_trimmed():
    assert complete("total = 0   \n    count = 0  \n\n", "    ") == "total = 0\n    count = 0"
    assert complete("   \n  ", "    ") == ""
    assert complete("", "    total = ") == ""
