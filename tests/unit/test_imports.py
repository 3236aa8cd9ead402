"""Unused imports: which names a document imports and does not use, where an operand may
start, the bonus, and the stage in the real decode loop with a scripted model."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.monitor import MonitorState
from steerlsp.models.steering.processors.bonus import Bonus
from steerlsp.models.steering.stages.imports import (
    BONUS,
    MAX_DOCUMENT,
    MAX_UNUSED,
    UnusedImports,
    bound_by,
    code_names,
    imported_names,
    unused_imports,
)
from steerlsp.models.steering.stages.written import Written
from tests.doubles.analysis import ScriptedAnalysis
from tests.unit.test_steer import (
    VOCABULARY,
    Script,
    inner,
    one_thread,
    pool,
    steered,
    tokenize,
    unsteered,
)

__all__ = ["inner", "one_thread", "pool"]  # the fixtures, shared with test_steer


def test_the_names_imports_bind():
    document = (
        "from __future__ import annotations\n"
        "import os.path\n"
        "import numpy as np, json\n"
        "from a.b import (\n    c,\n    d as e,  # a comment\n)\n"
        "from f import *\n"
        "from g import \\\n    h\n"
        "    from local import inner  # a function's own import\n"
        "from half import\n"  # half-written: skipped
        "x = 'import y'\n"
    )
    assert list(imported_names(document)) == ["os", "np", "json", "c", "e", "h", "inner"]


def test_the_names_code_mentions_not_strings_comments_or_attributes():
    text = "a = \"x # y\"  # 'q'\nb = '''doc\nname''' + f'{z}' + 'it\\'s' + obj.attr\nc"
    assert code_names(text) == {"a", "b", "obj", "c"}
    assert code_names('s = """never closed\nnp') == {"s"}  # a string to the text's end


def test_a_document_too_long_to_read_on_every_completion_is_not():
    document = "import statistics\n\ndef f(xs):\n    return sum(xs)\n"
    assert unused_imports(document) == ("statistics",)
    assert unused_imports(document + " " * MAX_DOCUMENT) == ()


@pytest.mark.parametrize(
    ("document", "unused"),
    [
        ("import statistics\n\ndef f(xs):\n    return sum(xs)\n", ("statistics",)),
        # A docstring or a comment that names it is not a use.
        (
            'import statistics\n\ndef f(xs):\n    """Raise ``statistics.StatisticsError``."""\n'
            "    # statistics\n",
            ("statistics",),
        ),
        ("import statistics\n\ndef f(xs):\n    return statistics.mean(xs)\n", ()),
        # An attribute of the same name is not the import.
        ("import mean\n\ndef f(s):\n    return s.mean()\n", ("mean",)),
        # Re-exported by ``__all__``.
        ('from a import b, c\n\n__all__ = ["b"]\n', ("c",)),
        # A use after the cursor counts (the document is the text before and after it).
        ("import shlex\n\ndef f(argv):\n    \n\ndef g(a):\n    return shlex.join(a)\n", ()),
        ("x = 1\n", ()),
    ],
)
def test_the_imports_no_code_uses(document, unused):
    assert unused_imports(document) == unused


@pytest.mark.parametrize(
    ("text", "operand"),
    [
        ("    return", True),  # the keyword written, the name after a space
        ("    return ", True),
        ("    x = ", True),
        ("f(", True),
        ("f(a, ", True),
        ("f(a=", True),
        ("    if not ", True),
        ("    for x in ", True),
        ("    raise ", True),
        ("    except ", True),
        ("    with ", True),
        ("    y = a + ", True),
        ("{'a': ", True),
        ("    a[1:", True),
        ("    if x:", False),  # a block's colon: a statement follows
        ("    x: ", False),  # an annotation
        ("def f(", False),  # a parameter is bound
        ("def f(a, ", False),
        ("    for x", False),
        ("import ", False),
        ("from a import ", False),
        ("x.", False),
        ("    ", False),  # a statement's start
        ("    return x", False),
        ("    x = in", False),  # ``in`` may be ``int`` under way
        ("# return ", False),
        ("'return ", False),
    ],
)
def test_where_an_operand_may_start(text, operand):
    monitor = MonitorState()
    monitor.update(text)
    assert monitor.operand_start() is operand


def test_the_bonus_is_added_once_and_validated():
    scores = torch.zeros(1, 5)
    out = Bonus(torch.tensor([1, 3, 3, 9]), 2.0)(torch.zeros(1, 1, dtype=torch.long), scores)
    assert out.tolist() == [[0.0, 2.0, 0.0, 2.0, 0.0]]
    assert scores.tolist() == [[0.0] * 5]  # not edited in place
    with pytest.raises(ValueError, match="bonus must be > 0"):
        Bonus(torch.tensor([1]), 0.0)
    with pytest.raises(ValueError, match="1-D long"):
        Bonus(torch.tensor([1.0]), 1.0)


HEAD = "import statistics\n\ndef f(xs):\n    return"
BY_HAND = HEAD + " len(xs)\n"
IMPORTED = HEAD + " statistics.mean(xs)\n"
OFF = SteeringOptions(imports=False)


def _script(by_hand: float) -> Script:
    return Script({BY_HAND: by_hand, IMPORTED: 1 - by_hand})


def test_an_unused_import_wins_where_the_model_is_unsure(inner, pool):
    script = _script(0.6)  # 0.4 nats apart
    assert unsteered(inner, script, HEAD).text == " len(xs)\n"
    run = steered(inner, script, HEAD, ScriptedAnalysis(), pool)
    assert run.text == " statistics.mean(xs)\n"
    assert run.trace["unused_imports"] == ["statistics"]
    (changed,) = run.trace["changed"]
    assert (changed["before"], changed["after"]) == ("l", "s")
    assert steered(inner, script, HEAD, ScriptedAnalysis(), pool, options=OFF).text == (
        " len(xs)\n"
    )


def test_a_model_sure_of_its_own_choice_keeps_it(inner, pool):
    script = _script(0.95)  # 2.9 nats apart: more than the bonus
    assert BONUS < 2.9
    assert steered(inner, script, HEAD, ScriptedAnalysis(), pool).text == " len(xs)\n"


def test_a_used_import_gets_no_bonus(inner, pool):
    head = "import statistics\n\nM = statistics.mean\n\ndef f(xs):\n    return"
    script = Script({head + " len(xs)\n": 0.6, head + " statistics.mean(xs)\n": 0.4})
    run = steered(inner, script, head, ScriptedAnalysis(), pool)
    assert run.text == " len(xs)\n"
    assert run.trace["unused_imports"] == []


def test_many_unused_imports_say_nothing_of_intent(inner, pool):
    many = "".join(f"import m{i}\n" for i in range(MAX_UNUSED))
    head = many + HEAD
    script = Script({head + " len(xs)\n": 0.6, head + " statistics.mean(xs)\n": 0.4})
    assert steered(inner, script, head, ScriptedAnalysis(), pool).text == " len(xs)\n"


def test_once_written_the_name_is_used(inner, pool):
    # The first operand takes the import; the second is the model's own choice again.
    head = "import statistics\n\ndef f(xs):\n    m ="
    first = head + " statistics.mean(xs)\n    return"
    script = Script(
        {head + " len(xs)\n": 0.5, first + " len(m)\n": 0.3, first + " statistics.fmean(m)\n": 0.2}
    )
    run = steered(inner, script, head, ScriptedAnalysis(), pool)
    assert run.text == " statistics.mean(xs)\n    return len(m)\n"
    assert len(run.trace["changed"]) == 1


def test_a_rewind_forgets_where_operands_started_after_it():
    window = "import statistics\n\ndef f(xs):\n    y = ("
    written = Written(window=window, before=window, after="\n")
    facts = SimpleNamespace(tokenize=tokenize, vocabulary=VOCABULARY)
    inputs = SimpleNamespace(written=written, facts=facts)
    stage = UnusedImports(inputs, ("statistics",))  # type: ignore[arg-type]
    assert stage._wanted() == ["statistics"]  # right after ``(``
    for text in ("1", "1, "):
        written.observe(0, text)
        stage.observe(None)
    written.observe(0, "1, s")  # a name begun where an operand started: followed
    assert stage._wanted() == ["tatistics"]
    stage.rewind(1)
    written.rewind(1)  # back to ``(1``: the start after ``, `` is forgotten
    written.observe(0, "1, s")  # one token this time, that the stage did not see start
    assert stage._wanted() == []


@pytest.mark.parametrize(
    ("statement", "names"),
    [
        ("import a.b as c, d", ["c", "d"]),
        ("from . import x", ["x"]),
        ("from ..pkg.mod import (a,\n    b as c,  # why\n)", ["a", "c"]),
        ("from m import \\\n    h", ["h"]),
        ("from __future__ import annotations", []),
        ("from m import *", []),
        ("import", None),
        ("import a as", None),
        ("import if", None),
        ("from m import a.b", None),
        ("from m import (a, b", None),
        ("from import x", None),
    ],
)
def test_what_one_import_statement_binds(statement, names):
    # Read without ``ast``: CPython 3.11's parser fails when two threads parse at once.
    assert bound_by(statement) == names
