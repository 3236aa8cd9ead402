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


def test_a_block_header_left_without_its_body_at_the_line_limit_is_dropped():
    """``if ...:`` as the last line the limit allowed is a syntax error once inserted."""
    generated = "if not rooms:\n        return None\n\n    if len(rooms) > 1:\n        pick()"
    assert complete(generated, "    ", max_lines=3) == "if not rooms:\n        return None"
    # The code after the cursor holds the header's body: the header stands.
    generated = "rooms = free()\n    if len(rooms) > 1:\n"
    assert complete(generated, "    ") == "rooms = free()"
    below = "\n        pick(rooms)\n"
    assert complete(generated, "    ", suffix=below) == "rooms = free()\n    if len(rooms) > 1:"


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


# --- issue 9, item 14: a cursor at column 0 on a blank line inside a body -----------------

DOCSTRING_FUNCTION = (
    'import os\n\n\ndef list_files(folder):\n    """Return the names of the files."""\n'
)


@pytest.mark.parametrize(
    ("prefix", "indent"),
    [
        (DOCSTRING_FUNCTION, 4),  # after a docstring: the function's body
        ("def f(xs):\n    for x in xs:\n        print(x)\n", 4),  # the outermost body
        ("def f(xs):\n    total = 0\n\n", 4),  # one blank line: still in the body
        ("def f():\n", 1),  # after a header: deeper than it
        ("def f():\n    for x in xs:\n", 5),
        ("def f(\n    a,\n    b,\n):\n", 1),  # a header over several lines
        ('def f():\n    """Doc.\n\nfor a in b:\n    """\n', 4),  # text inside a string
        ("def f():\n    x = 1\n# commented_out()\n", 4),  # a comment at column 0
        ("def f():\n    x = {\n'a': 1,\n    }\n", 4),  # a line inside brackets
        ("x = 1\n", 0),  # module level
        ("def f():\n    return 1\n\n\n", 0),  # two blank lines: the next top-level statement
        ('x = """\nfor a in b:\n"""\n', 0),
        ("", 0),
        ("def f():\n    x = 1\n  ", 2),  # a column the user chose is kept
        ("def f():\n    x = 1\n        ", 8),
    ],
)
def test_block_indent_at_column_zero_comes_from_the_enclosing_block(prefix, indent):
    assert block_indent(prefix) == indent


def test_block_indent_reads_a_bounded_tail_of_a_huge_prefix():
    prefix = "x = 1\n" * 500_000 + "def f():\n    y = 2\n"
    assert block_indent(prefix) == 4


def test_column_zero_completion_keeps_the_body_and_stops_at_module_level():
    generated = (
        "    for name in os.listdir(folder):\n        yield name\n\n\n"
        "def list_directories(folder):\n    pass\n"
    )
    indent = block_indent(DOCSTRING_FUNCTION)
    got = finalize(
        generated,
        mode=MULTI,
        line_prefix="",
        suffix="\n\ndef main():\n    pass\n",
        block_indent=indent,
    )
    assert got == "    for name in os.listdir(folder):\n        yield name"
    reason = stop_reason(
        generated[: generated.index("def") + 1],
        mode=MULTI,
        indent_of_block=indent,
        max_lines=8,
        line_prefix="",
    )
    assert reason is Stop.DEDENT


def test_a_dedented_first_line_at_column_zero_gives_nothing():
    generated = "def list_directories(folder):\n    return []\n"
    indent = block_indent(DOCSTRING_FUNCTION)
    assert stop_reason("d", mode=MULTI, indent_of_block=indent, max_lines=8, line_prefix="") is (
        Stop.DEDENT
    )
    assert finalize(generated, mode=MULTI, line_prefix="", suffix="\n", block_indent=indent) == ""


# --- issue 9, item 15: degenerate repetition and truncation ---------------------------------


@pytest.mark.parametrize(
    "generated",
    [
        "indent_mode(indent_mode(indent_mode(",
        'action="store_true", action="store_true", action="store_true", ',
        "    # path: test.py\n    # path: test.py\n    # path: test.py\n",
        "1234567890123456789012345678901",
    ],
)
def test_degenerate_repetition_stops_generation(generated):
    before = generated[: len(generated) * 2 // 3]  # two copies
    modes = (SINGLE, MULTI) if "\n" not in generated else (MULTI,)
    for mode in modes:
        assert stop_reason(generated, mode=mode, indent_of_block=4, max_lines=8) is (
            Stop.REPETITION
        )
        assert stop_reason(before, mode=mode, indent_of_block=4, max_lines=8) is None


@pytest.mark.parametrize(
    "generated",
    [
        "[0, 0, 0, 0, 0, 0, 0]",  # data, not a loop
        "# -------------------------------------------",  # a rule of punctuation
        "        " * 8 + "x",  # whitespace
        "x = 1\n    x = 1\n",  # one repeat is plausible
        "ab(ab(",
    ],
)
def test_plausible_repetition_goes_on(generated):
    assert stop_reason(generated, mode=MULTI, indent_of_block=4, max_lines=8) is None


def test_repeated_call_chain_is_cut_back_to_balanced_code():
    line_prefix = "    mode = "
    generated = "indent_mode(indent_mode(indent_mode(indent_mode("
    got = finalize(generated, mode=SINGLE, line_prefix=line_prefix, suffix="\n", block_indent=4)
    assert got == "indent_mode"


def test_repeated_keyword_argument_keeps_one_copy():
    line_prefix = '    parser.add_argument("--verbose", '
    generated = 'action="store_true", ' * 8
    got = finalize(generated, mode=SINGLE, line_prefix=line_prefix, suffix=")\n", block_indent=4)
    assert got == 'action="store_true",'


def test_repeated_lines_keep_one_copy():
    generated = "total = 0\n" + "    print(total(items))\n" * 4
    got = finalize(generated, mode=MULTI, line_prefix="    ", suffix="\n", block_indent=4)
    assert got == "total = 0\n    print(total(items))"


def test_truncation_drops_the_unfinished_last_line():
    generated = "print(item)\n        print(self.price)\n        print(self.total"
    got = finalize(
        generated, mode=MULTI, line_prefix="        ", suffix="\n", block_indent=8, truncated=True
    )
    assert got == "print(item)\n        print(self.price)"


def test_truncation_drops_a_cut_identifier_even_when_balanced():
    generated = "self.a = a\n        self.trailing_"
    got = finalize(
        generated, mode=MULTI, line_prefix="        ", suffix="\n", block_indent=8, truncated=True
    )
    assert got == "self.a = a"


@pytest.mark.parametrize(
    ("generated", "line_prefix"),
    [
        ("result = compute(a, b, [c, d", "    "),  # nothing complete
        ("for x in xs:\n        if x.endswith(", "    "),  # a header without its body
        ('"""Return the files.\n    more text', "    "),  # a docstring left open
        ("\n        total += compute(a,", "    for item in items:"),
        ("x = a + \\\n        b", "    "),  # a continuation line
    ],
)
def test_truncation_with_nothing_complete_gives_nothing(generated, line_prefix):
    got = finalize(
        generated,
        mode=MULTI,
        line_prefix=line_prefix,
        suffix="\n",
        block_indent=block_indent(line_prefix),
        truncated=True,
    )
    assert got == ""


def test_truncation_keeps_a_compound_statement_with_its_body():
    generated = "for x in xs:\n        total += x\n        if total > (10"
    got = finalize(
        generated, mode=MULTI, line_prefix="    ", suffix="\n", block_indent=4, truncated=True
    )
    assert got == "for x in xs:\n        total += x"


def test_truncated_single_line_is_cut_before_its_own_open_bracket():
    got = finalize(
        "compute(items, [1, 2",
        mode=SINGLE,
        line_prefix="    total = ",
        suffix="\n",
        block_indent=4,
        truncated=True,
    )
    assert got == "compute"
    got = finalize(
        "a, b, c",
        mode=SINGLE,
        line_prefix="    total = f(",
        suffix=")\n",
        block_indent=4,
        truncated=True,
    )
    assert got == "a, b, c"


def test_a_multi_line_completion_never_ends_inside_a_string_it_opened():
    generated = 'path=kwargs["path"],\n        type="x",\n        description="This is a long'
    got = finalize(generated, mode=MULTI, line_prefix="        ", suffix="\n", block_indent=8)
    assert got == 'path=kwargs["path"],\n        type="x",'


def test_without_truncation_the_last_line_is_kept():
    generated = "print(item)\n        print(self.price)"
    got = finalize(generated, mode=MULTI, line_prefix="        ", suffix="\n", block_indent=8)
    assert got == generated


def test_max_lines_counts_a_statement_over_lines_once():
    """The line limit never cuts a call spread over lines open: its lines count as one,
    when it closes (a max-lines stop in the middle left ghost text that does not parse)."""
    generated = "x = f(\n        a,\n        b,\n    )\n    y = 2\n    z = 3\n"
    assert stream(generated, "    ", max_lines=2) == (generated.index("y = 2") + 6, Stop.MAX_LINES)
    kept = "x = f(\n        a,\n        b,\n    )\n    y = 2"
    assert complete(generated, "    ", max_lines=2) == kept
    docstring = '"""Sum.\n\nThe items.\n    """\n    return 1\n'
    assert complete(docstring, "    ", max_lines=1) == '"""Sum.\n\nThe items.\n    """'


def test_a_continuation_line_never_dedents():
    """A line inside an open bracket may stand shallower than the block: it does not end it."""
    generated = "total = sum(\nprice for price in prices\n)\n    return total\n"
    assert stream(generated, "    ", max_lines=8) is None
    assert complete(generated, "    ") == generated.rstrip()
