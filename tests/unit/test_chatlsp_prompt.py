"""ChatLSP in steerlsp's own completions: the context block, its place in the prompt,
the error-round loop, and reading a hole from request params (pure, no model)."""

from __future__ import annotations

import asyncio

import pytest

from steerlsp.prompts.builder import build_prompt
from steerlsp.prompts.context import ChatContext, context_block, with_context
from steerlsp.server.chatlsp.repair import Checked, repaired
from steerlsp.server.chatlsp.service import ChatLspError, Source, as_return, hole_from


def words(text: str) -> int:
    return len(text.split())


CONTEXT = ChatContext(
    expected_type="list[Item]",
    relevant_types="@dataclass\nclass Item:\n    sku: Sku\n    qty: int\n\nSku = str",
    relevant_headers="def make_item(sku: Sku, qty: int = 1) -> Item: ...",
)


def test_the_block_is_comments_most_important_first():
    block = context_block(CONTEXT, budget=200, count_tokens=words)
    lines = block.splitlines()
    assert all(line.startswith("#") for line in lines)
    assert lines[0] == "# Expected type here: list[Item]"
    assert lines.index("# Relevant types:") < lines.index("# Functions that return it:")
    assert "#     sku: Sku" in lines  # indentation inside a definition is kept
    assert lines[-1] == "# def make_item(sku: Sku, qty: int = 1) -> Item: ..."


def test_the_block_is_cut_at_a_line_to_its_budget():
    block = context_block(CONTEXT, budget=9, count_tokens=words)
    assert block == "# Expected type here: list[Item]\n# Relevant types:\n"
    assert context_block(CONTEXT, budget=2, count_tokens=words) == ""
    assert context_block(ChatContext(), budget=200, count_tokens=words) == ""


def test_error_feedback_comes_right_after_the_expected_type():
    context = ChatContext(
        expected_type="int",
        relevant_types="class A: ...",
        attempt="inv.restok(5)\n",
        feedback="Line 3: `inv.restok(5)`\n  E1101 Instance of 'Inventory' has no 'restok' member",
    )
    lines = context_block(context, budget=200, count_tokens=words).splitlines()
    assert lines[:3] == [
        "# Expected type here: int",
        "# A previous attempt here:",
        "#     inv.restok(5)",
    ]
    assert "#   E1101 Instance of 'Inventory' has no 'restok' member" in lines
    assert lines.index("# Fix them.") < lines.index("# Relevant types:")


def test_no_line_break_or_control_character_escapes_a_comment():
    context = ChatContext(expected_type="A\rB\x00C\x0bD")
    block = context_block(context, budget=100, count_tokens=words)
    assert block == "# Expected type here: A B C D\n"


def test_the_block_goes_above_the_enclosing_function_and_its_decorators():
    code = "import x\n\n\nclass Shop:\n    @property\n    def total(self) -> int:\n        return "
    out = with_context(code, "# Expected type here: int\n")
    assert out == (
        "import x\n\n\nclass Shop:\n    # Expected type here: int\n"
        "    @property\n    def total(self) -> int:\n        return "
    )


def test_the_block_goes_above_the_innermost_enclosing_def():
    code = "def outer():\n    def inner() -> str:\n        x = 1\n        return "
    out = with_context(code, "# T\n")
    assert out == "def outer():\n    # T\n    def inner() -> str:\n        x = 1\n        return "


def test_without_an_enclosing_def_the_block_goes_on_top():
    assert with_context("x: int = ", "# T\n") == "# T\nx: int = "
    assert (
        with_context("def f():\n    pass\ny: int = ", "# T\n")
        == "# T\ndef f():\n    pass\ny: int = "
    )
    assert with_context("abc", "") == "abc"


def test_the_prompt_keeps_the_cursor_at_its_end_and_counts_only_code():
    prefix = "def f() -> int:\n    return "
    prompt = build_prompt(
        prefix,
        "\n",
        path="a.py",
        template=None,
        count_tokens=words,
        prefix_budget=100,
        suffix_budget=0,
        context="# Expected type here: int\n",
    )
    assert prompt.text == "# path: a.py\n# Expected type here: int\ndef f() -> int:\n    return "
    assert prompt.prefix_chars == len(prefix)


# ---- the error rounds -------------------------------------------------------------------


def run_rounds(attempts: list[str], errors: dict[str, int], rounds: int):
    asked: list[tuple[str, str]] = []
    checked: list[str] = []

    async def generate(attempt: str, feedback: str) -> str:
        asked.append((attempt, feedback))
        return attempts[len(asked) - 1]

    async def check(text: str) -> Checked:
        checked.append(text)
        n = errors.get(text, 0)
        return Checked(n, n > 0, f"{n} errors in {text}")

    done = asyncio.run(repaired(generate, check, rounds))
    return done, asked, checked


def test_no_rounds_means_one_generation_and_no_check():
    done, asked, checked = run_rounds(["a"], {"a": 3}, rounds=0)
    assert (done.text, done.feedback, asked, checked) == ("a", (), [("", "")], [])


def test_a_clean_first_attempt_ends_the_loop():
    done, asked, checked = run_rounds(["a", "b"], {}, rounds=2)
    assert (done.text, asked, checked) == ("a", [("", "")], ["a"])


def test_each_round_gets_the_previous_attempt_and_its_errors():
    done, asked, _ = run_rounds(["a", "b", "c"], {"a": 2, "b": 1}, rounds=2)
    assert done.text == "c"
    assert asked == [("", ""), ("a", "2 errors in a"), ("b", "1 errors in b")]
    assert done.feedback == ("2 errors in a", "1 errors in b")


def test_a_round_that_makes_things_worse_is_not_kept():
    done, _, checked = run_rounds(["a", "b", "c"], {"a": 1, "b": 3, "c": 2}, rounds=2)
    assert done.text == "a"
    assert checked == ["a", "b", "c"]  # the last attempt is checked too


def test_an_empty_attempt_ends_the_loop_and_keeps_the_best():
    done, _, _ = run_rounds(["a", ""], {"a": 1}, rounds=2)
    assert done.text == "a"


# ---- params ---------------------------------------------------------------------------


def test_a_hole_is_read_from_position_params():
    hole = hole_from(
        {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 2, "character": 4}}
    )
    assert (hole.uri, hole.position.line, hole.position.character) == ("file:///a.py", 2, 4)
    assert hole.completion is None
    checked = hole_from(
        {
            "textDocument": {"uri": "file:///a.py"},
            "position": {"line": 0, "character": 0},
            "completion": "x()",
        },
        with_completion=True,
    )
    assert checked.completion == "x()"


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"textDocument": {"uri": ""}, "position": {"line": 0, "character": 0}},
        {"textDocument": {"uri": "file:///a.py"}, "position": {"line": -1, "character": 0}},
        {"textDocument": {"uri": "file:///a.py"}, "position": {"line": True, "character": 0}},
        {"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0}},
        {"textDocument": {"uri": 3}, "position": {"line": 0, "character": 0}},
    ],
)
def test_bad_params_say_what_is_expected(params):
    with pytest.raises(ChatLspError, match="expected"):
        hole_from(params)


def test_a_completion_must_be_text():
    params = {
        "textDocument": {"uri": "file:///a.py"},
        "position": {"line": 0, "character": 0},
        "completion": 5,
    }
    with pytest.raises(ChatLspError, match="string"):
        hole_from(params, with_completion=True)


def test_a_new_statement_in_a_body_asks_as_a_return_would():
    text = "def f() -> int:\n    x = 1\n    \n"
    source = Source("file:///a.py", "/a.py", 3, text, line=2, column=4)
    returned = as_return(source)
    assert returned is not None
    assert returned.text == "def f() -> int:\n    x = 1\n    return \n"
    assert (returned.line, returned.column, returned.variant) == (2, 11, "return")
    assert as_return(Source("file:///a.py", "/a.py", 3, text, line=1, column=9)) is None


def test_the_function_result_is_said_as_such():
    context = ChatContext(expected_type="list[Row]", returns=True)
    block = context_block(context, budget=50, count_tokens=words)
    assert block == "# This function returns: list[Row]\n"
