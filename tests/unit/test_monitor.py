"""The monitor's lexer: triggers at the end of decoded text, fed all at once or piece by piece."""

from __future__ import annotations

import random
import re
import sysconfig
from pathlib import Path

import pytest

from steerlsp.models.steering.monitor import (
    CallContext,
    MonitorState,
    Trigger,
    TriggerPoint,
)

AFTER_DOT = Trigger.COMPLETIONS_AFTER_DOT
INSIDE = Trigger.INSIDE_IDENTIFIER
ARGUMENT = Trigger.CALL_ARGUMENT
IMPORT = Trigger.IMPORT_NAME
NONE = Trigger.NONE


def trigger_at(text: str) -> TriggerPoint:
    """The trigger at the end of ``text``, lexed in one go."""
    return MonitorState().update(text)


@pytest.mark.parametrize(
    ("text", "trigger", "partial"),
    [
        # after a dot that follows an expression
        ("x = foo.", AFTER_DOT, ""),
        ("self.model.", AFTER_DOT, ""),
        ('x = "a.b".', AFTER_DOT, ""),
        ("x = '''a'''.", AFTER_DOT, ""),
        ('print("a" "b".', AFTER_DOT, ""),
        ("(1).", AFTER_DOT, ""),
        ("x[0].", AFTER_DOT, ""),
        ("{}.", AFTER_DOT, ""),
        ("f(a)(b).", AFTER_DOT, ""),
        ("x = a if b else c.", AFTER_DOT, ""),
        ("async def f():\n    await x.", AFTER_DOT, ""),
        ("lambda x: x.", AFTER_DOT, ""),
        ("a = [x.y for x in z.", AFTER_DOT, ""),
        ("yield from x.", AFTER_DOT, ""),
        ("x = \\\n    y.", AFTER_DOT, ""),
        ("x = (a\n     .", AFTER_DOT, ""),
        ("x = r'\\''.", AFTER_DOT, ""),
        ("@app.", AFTER_DOT, ""),
        # not after a number, an ellipsis, a keyword, or with something after the dot
        ("x = 1.", NONE, ""),
        ("x = 1 .", NONE, ""),
        ("x = 0x1f.", NONE, ""),
        ("x = 1e5.", NONE, ""),
        ("x = ...", NONE, ""),
        ("x[...]", NONE, ""),
        ("return .", NONE, ""),
        ("x = foo. ", NONE, ""),
        # inside an identifier
        ("x = foo.ba", INSIDE, "ba"),
        ("return sel", INSIDE, "sel"),
        ("x.if_", INSIDE, "if_"),
        ("def f(x: Li", INSIDE, "Li"),
        ("f(*ar", INSIDE, "ar"),
        ("x = éta", INSIDE, "éta"),
        # names being bound: nothing to complete
        ("def fo", NONE, ""),
        ("class Fo", NONE, ""),
        ("def f(se", NONE, ""),
        ("def f(a, *ar", NONE, ""),
        ("def f(a, **kw", NONE, ""),
        ("lambda x", NONE, ""),
        ("lambda a, b", NONE, ""),
        ("for i", NONE, ""),
        ("with open(p) as f", NONE, ""),
        ("except E as er", NONE, ""),
        # call arguments
        ("foo(", ARGUMENT, ""),
        ("foo (", ARGUMENT, ""),
        ("a.b(c, ", ARGUMENT, ""),
        ("a.b(c,\n      ", ARGUMENT, ""),
        ("a.b(c,  # why\n      ", ARGUMENT, ""),
        ("foo(bar(1), ", ARGUMENT, ""),
        ('"".join(', ARGUMENT, ""),
        ("@app.route(", ARGUMENT, ""),
        # brackets that are not calls
        ("if (", NONE, ""),
        ("x = (", NONE, ""),
        ("x = [", NONE, ""),
        ("x[", NONE, ""),
        ("foo(a, [1, ", NONE, ""),
        ("def f(", NONE, ""),
        ("class A(B, ", NONE, ""),
        ("g(x=", NONE, ""),
        # imports
        ("import ", IMPORT, ""),
        ("import os.pa", IMPORT, "pa"),
        ("import os.", IMPORT, ""),
        ("import os, sy", IMPORT, "sy"),
        ("from ", IMPORT, ""),
        ("from .", IMPORT, ""),
        ("from os.pa", IMPORT, "pa"),
        ("from x import ", IMPORT, ""),
        ("from . import ", IMPORT, ""),
        ("from .. import (a, b", IMPORT, "b"),
        ("from .mod import x as y, ", IMPORT, ""),
        ("from x import (a,\n    ", IMPORT, ""),
        ('"""doc"""\nimport ', IMPORT, ""),
        ("x = 1; from ", IMPORT, ""),
        ("if x:\n    import os.", IMPORT, ""),
        ("else: from ", IMPORT, ""),
        ("import os as o", NONE, ""),
        ("from x import a as ", NONE, ""),
        ("from os ", NONE, ""),
        ("from os im", NONE, ""),
        ("from . imp", NONE, ""),
        ("import os\nx = os.", AFTER_DOT, ""),
        ("from x import y; y.", AFTER_DOT, ""),
        # strings and comments
        ('x = "a.b', NONE, ""),
        ('x = "a.', NONE, ""),
        ("# a.", NONE, ""),
        ("x = 1  # see foo.", NONE, ""),
        ("# foo(", NONE, ""),
        ('x = """a.\nb.', NONE, ""),
        ("x = '''it''s.", NONE, ""),
        # f-strings: a replacement field is code, the rest is text
        ('f"{x.', AFTER_DOT, ""),
        ('f"{x.na', INSIDE, "na"),
        ('rf"{x.', AFTER_DOT, ""),
        ('F"""\n{x.', AFTER_DOT, ""),
        ('f"{x.name} y.', NONE, ""),
        ('f"{{x.', NONE, ""),
        ('f"{{{x.', AFTER_DOT, ""),
        ('f"}}x.', NONE, ""),
        ('f"{', NONE, ""),
        ('f"{x!r}.', NONE, ""),
        ('f"{x:>10.', NONE, ""),
        ('f"{x:>{width.', AFTER_DOT, ""),
        ('f"{x:>{width}}.', NONE, ""),
        ('f"{x:>{width}} {y.', AFTER_DOT, ""),
        ("f\"{d['a'].", AFTER_DOT, ""),
        ('f"{d[1:2].', AFTER_DOT, ""),
        ('f"{ {1: 2}.', AFTER_DOT, ""),
        ('f"{(lambda q: q.', AFTER_DOT, ""),
        ('f"{x}".', AFTER_DOT, ""),
        ("f\"{f'{x.", AFTER_DOT, ""),
        ('"{x.', NONE, ""),
        ('b"{x.', NONE, ""),
        ('rb"x.', NONE, ""),
        ('Rb"x(', NONE, ""),
        ('x = "', NONE, ""),
        ('x = ""', NONE, ""),
        ('x = "\\"', NONE, ""),
        ('x = "a\\\nb.', NONE, ""),
        ('x = "abc\ny.', AFTER_DOT, ""),  # an unterminated string ends at its line
        ('"a" # "\nfoo.', AFTER_DOT, ""),
        ("", NONE, ""),
    ],
)
def test_trigger_at(text: str, trigger: Trigger, partial: str) -> None:
    point = trigger_at(text)
    assert (point.trigger, point.partial) == (trigger, partial)
    assert point.offset == len(text)
    assert point.partial_start == len(text) - len(partial)


def test_partial_identifier_reports_where_it_starts() -> None:
    assert trigger_at("x = foo.ba") == TriggerPoint(INSIDE, 10, "ba", 8, True, None)
    assert trigger_at("return sel") == TriggerPoint(INSIDE, 10, "sel", 7, False, None)
    assert trigger_at("import os.pa").after_dot
    assert not trigger_at("import os, sy").after_dot


@pytest.mark.parametrize(
    ("text", "passed"),
    [
        ("@functools.", True),  # a decorator
        ("class A:\n    @functools.ca", True),
        ("@app.route('/', methods=m.", True),
        ("x = map(str.", True),  # an argument
        ("sorted(x, key=str.lo", True),  # a keyword argument's value
        ('f(a, "x".', True),
        ("f(g(a.b).", True),  # the chain ``g(a.b)`` is the argument
        ("f(\n    a,\n    os.path.", True),
        ("x = obj.", False),
        ("lines = f.read.", False),
        ("f(a == b.", False),  # a comparison, not a keyword argument
        ("f(x >= b.", False),
        ("f(x=-b.", False),
        ("y = a @ b.", False),  # matrix multiplication
        ("f(a)\nb.", False),
        ("@property\ndef x(self):\n    return self.", False),
        ("x = [str.", False),  # a list's element: no call
        ("f([str.", False),
    ],
)
def test_a_receiver_passed_as_a_value(text: str, passed: bool) -> None:
    point = trigger_at(text)
    assert point.after_dot
    assert point.passed is passed


@pytest.mark.parametrize(
    ("text", "call"),
    [
        ("a.b(c, d.", CallContext("a.b", 1, 3, 6)),
        ("a.b(c, d", CallContext("a.b", 1, 3, 6)),
        ("a.b(", CallContext("a.b", 0, 3, 4)),
        ("print(f(", CallContext("f", 0, 7, 8)),
        ("print(f(x), ", CallContext("print", 1, 5, 11)),
        ("foo(a, [1, x.", CallContext("foo", 1, 3, 6)),  # the call a nested literal sits in
        ("f(a)(b, ", CallContext("f(a)", 1, 4, 7)),
        ('"".join(', CallContext('"".join', 0, 7, 8)),
        ("x[0].get(k, ", CallContext("x[0].get", 1, 8, 11)),
        ("g(x=1, y=z.", CallContext("g", 1, 1, 6)),
        ("obj.method(\n    a,\n    b,\n    ", CallContext("obj.method", 2, 10, 25)),
        ("f(a, (b, c), ", CallContext("f", 2, 1, 12)),
        ('f("a,b", ', CallContext("f", 1, 1, 8)),
        ("f(a)", None),
        ("f(a).b", None),
        ("def f(a, ", None),
        ("x = (a, ", None),
    ],
)
def test_call_context(text: str, call: CallContext | None) -> None:
    assert trigger_at(text).call == call


def test_triple_quoted_string_spanning_pieces() -> None:
    state = MonitorState()
    assert state.update("def f():\n    ").trigger == NONE
    assert state.update('"').trigger == NONE
    assert state.update('"').trigger == NONE  # "" so far: an empty string, or a triple quote
    assert state.update('"Doc. Use x.').trigger == NONE
    assert state.update('y()\n    "').trigger == NONE
    assert state.update('"').trigger == NONE
    assert state.update('"\n    return self.').trigger == AFTER_DOT


def test_pieces_split_inside_prefixes_escapes_and_keywords() -> None:
    state = MonitorState()
    for piece in ["x = r", "b", "'a", "\\", "'", ".", "'", "."]:
        point = state.update(piece)
    assert point.trigger == AFTER_DOT
    state = MonitorState()
    for piece in ["fr", "om", " os", ".pa"]:
        point = state.update(piece)
    assert (point.trigger, point.partial) == (IMPORT, "pa")
    state = MonitorState()
    for piece in ["result = se", "lf.mo"]:
        point = state.update(piece)
    assert (point.trigger, point.partial, point.partial_start) == (INSIDE, "mo", 14)


def test_fork_is_independent() -> None:
    state = MonitorState()
    state.update("x = foo(a, ")
    fork = state.fork()
    assert fork.update("b.").trigger == AFTER_DOT
    assert fork.update(")").call is None
    assert state.point().trigger == ARGUMENT
    assert state.point().call == CallContext("foo", 1, 7, 10)
    assert state.update("c").partial == "c"


def test_update_lexes_only_the_new_text(monkeypatch: pytest.MonkeyPatch) -> None:
    state = MonitorState()
    state.update(_realistic_code() * 3)
    calls = 0
    original = MonitorState._lex_code

    def counting(self: MonitorState, text: str, index: int) -> int:
        nonlocal calls
        calls += 1
        return original(self, text, index)

    monkeypatch.setattr(MonitorState, "_lex_code", counting)
    piece = "\nresult = self.model.generate(inputs, max_new_tokens=8)."
    assert state.update(piece).trigger == AFTER_DOT
    assert calls <= len(piece)


# --- incremental == batch -----------------------------------------------------------

TRICKY = '''\
import os.path as osp, sys
from . import utils
from ..pkg.mod import (a as b,
    c)
x = 1.5 + 0x1f + 1e-5 + .5; y = ...
s = r"\\d+\\." + b'\\'' + f"{x.real!r:>{width}}" + Rb"""a.b""" + u\'\'\'it\'s.\'\'\'
t = """doc with "quotes" and 'single' and a \\""" escape.
second line."""  # comment with foo.bar( and "quotes
def f(self, a: dict[str, int] = {}, *args, b=lambda q, r: q.r, **kw) -> None:
    """Docstring: use `model_dump` instead."""
    return self.model.generate(a, [b.c, (d,
        e)], key=value.attr)(1)[2].x
class A(Base, metaclass=Meta):
    @property
    def g(self): return "a.b".join(x for x in y if x.z) \\
        .strip()
'''


def _realistic_code() -> str:
    site = Path(sysconfig.get_paths()["purelib"])
    texts = [TRICKY, Path(__file__).read_text()]
    for relative in ("pydantic/main.py", "torch/nn/functional.py", "jedi/api/__init__.py"):
        path = site / relative
        if path.is_file():
            texts.append(_head(path.read_text(encoding="utf-8"), 6000))
    return "\n".join(texts)


def _head(source: str, at_least: int) -> str:
    """Whole top-level statements: up to the first top-level def or class after ``at_least``."""
    found = re.search(r"^(?:def|class) ", source[at_least:], re.MULTILINE)
    return source[: at_least + found.start()] if found else source


def _pieces(text: str, rng: random.Random, longest: int) -> list[str]:
    pieces, at = [], 0
    while at < len(text):
        size = rng.randint(1, longest)
        pieces.append(text[at : at + size])
        at += size
    return pieces


@pytest.mark.parametrize("seed", range(6))
def test_incremental_equals_batch_on_random_splits(seed: int) -> None:
    rng = random.Random(seed)
    code = _realistic_code()
    start = rng.randrange(0, len(code) - 3000)
    text = code[start : start + 3000]
    # A prefix lexed in one go, then token-sized pieces, as the decode loop feeds it.
    prefix_length = rng.randrange(0, 1500)
    state = MonitorState()
    state.update(text[:prefix_length])
    end = prefix_length
    checked = 0
    for piece in _pieces(text[prefix_length:], rng, longest=8):
        point = state.update(piece)
        end += len(piece)
        if rng.random() < 0.15:
            assert point == trigger_at(text[:end]), repr(text[max(0, end - 80) : end])
            checked += 1
    assert checked > 10
    assert state.point() == trigger_at(text)


def test_incremental_equals_batch_character_by_character() -> None:
    state = MonitorState()
    for end in range(1, len(TRICKY) + 1):
        point = state.update(TRICKY[end - 1])
        assert point == trigger_at(TRICKY[:end]), repr(TRICKY[:end][-60:])


def test_every_trigger_kind_occurs_in_realistic_code() -> None:
    # The property tests above would be weak if the code never reached a trigger.
    seen = set()
    state = MonitorState()
    for char in _realistic_code()[:20000]:
        seen.add(state.update(char).trigger)
    assert seen == set(Trigger)


def _tokenize_contexts(text: str) -> dict[int, str]:
    """Offsets inside a string or comment token, as Python's tokenizer reads ``text``."""
    import io
    import tokenize

    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    contexts = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        start = line_starts[token.start[0] - 1] + token.start[1]
        end = line_starts[token.end[0] - 1] + token.end[1]
        if token.type == tokenize.COMMENT:
            for offset in range(start + 1, end + 1):
                contexts[offset] = "comment"
        elif token.type == tokenize.STRING:
            prefix = token.string[: len(token.string) - len(token.string.lstrip("rRbBuUfF"))]
            if "f" in prefix.lower() and "{" in token.string:
                # Python 3.11 reads an f-string as one token; its fields are code
                # (tested on their own in test_trigger_at).
                for offset in range(start + 1, end + 1):
                    contexts[offset] = "ambiguous"
                continue
            body = token.string.lstrip("rRbBuUfF")
            opening = 3 if body[:3] in ('"""', "'''") else 1
            opened = start + (len(token.string) - len(body)) + opening
            for offset in range(start + 1, opened):
                contexts[offset] = "ambiguous"  # inside the prefix or the opening quotes
            for offset in range(opened, end):
                contexts[offset] = "string"
    return contexts


def test_string_and_comment_context_agrees_with_pythons_tokenizer() -> None:
    text = _realistic_code()
    expected = _tokenize_contexts(text)
    state = MonitorState()
    for offset, char in enumerate(text, start=1):
        state.update(char)
        want = expected.get(offset, "code")
        if want != "ambiguous":
            assert state.context == want, repr(text[max(0, offset - 60) : offset])


FSTRINGS = '''\
a = f"{user.name!r:>{width.real}} {{literal}} {d['k'].x}" + rf'{path.stem}\\n'
b = f"""
{items[0].sku:{fmt}} and {(lambda q: q.x)(y)}}}
""".strip()
'''


def test_incremental_equals_batch_in_f_strings_character_by_character() -> None:
    state = MonitorState()
    for end in range(1, len(FSTRINGS) + 1):
        point = state.update(FSTRINGS[end - 1])
        assert point == trigger_at(FSTRINGS[:end]), repr(FSTRINGS[:end][-60:])


def test_a_field_is_code_and_the_rest_of_the_f_string_is_text() -> None:
    assert MonitorState().update('f"{a.').trigger is AFTER_DOT
    state = MonitorState()
    state.update('f"{a}')
    assert state.context == "string"
    state.update('"')
    assert state.context == "code"
    assert trigger_at('print(f"{x.').call == CallContext("print", 0, 5, 6)


def test_the_steering_window_starts_where_the_lexer_knows_its_state() -> None:
    """The last 8,000 characters of a long file may begin inside a docstring: the window
    reaches back to the top-level ``def`` before it, so the call at the cursor is seen."""
    from steerlsp.models.steering.stages.written import WINDOW, steering_window

    docstring = '    """Examples.\n\n' + "    >>> f('it's', [1, 2,\n" * 600 + '    """\n'
    head = "import numpy\n" + "x = 1\n" * 2000 + "\n\n"
    prefix = head + "@dispatch(x)\ndef f(a):\n" + docstring + "    return g(a, "
    window = steering_window(prefix, size=WINDOW, reach=12_000)
    assert window.startswith("def f(a):\n")
    cut = prefix[-WINDOW:]
    assert MonitorState().update(cut).call.callee != "g"  # cut in the docstring: misread
    assert MonitorState().update(window).call == CallContext(
        "g", 1, len(window) - 4, len(window) - 1
    )
    assert steering_window(prefix) == prefix  # within the default reach: all of it
    # Short documents are lexed whole; beyond reach, the plain cut.
    assert steering_window("x = f(") == "x = f("
    far = "def f():\n" + "    x = 1\n" * 8000 + "    y = g("
    assert steering_window(far, size=100, reach=1000) == far[-100:]
