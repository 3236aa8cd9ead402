"""Keyword arguments: a keyword the callee does not take is written again.

The parameters' reading (``models/steering/parameters.py``) on signature labels
as pylsp gives them, and the stage (``models/steering/stages/keywords.py``) in
the real decode loop, with a scripted model and scripted analysis: the
mechanics only; what the real model writes is measured by
``bench/next_identifier.py --track keywords``.
"""

from __future__ import annotations

import pytest

from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import DefinitionSource, Signature
from steerlsp.models.steering.parameters import Kind, call_shape
from steerlsp.models.steering.stages.keywords import given_arguments, shape_of
from tests.doubles.analysis import ScriptedAnalysis
from tests.unit.test_steer import Script, inner, one_thread, pool, steered, tokenize, unsteered

__all__ = ["inner", "one_thread", "pool"]  # the fixtures, shared with test_steer

DUMPS = (
    "dumps(obj: Any, *, skipkeys: bool=False, cls: type[JSONEncoder] | None=None,"
    " indent: None | int | str=None, **kwds: Any) -> str"
)
SEND = "send(request, /, timeout: float=5.0, *, stream: bool=False, retries: int) -> Response"
PROMPT = "def fetch(client, request):\n    return client.send(request, "
SIGNATURE = Signature(SEND, ("request", "timeout", "stream", "retries"))
# The same with nothing required but the request: a call may end after it.
OPTIONAL = Signature(SEND.replace("retries: int", "retries: int=3"), SIGNATURE.parameters)


def test_a_label_gives_each_parameters_kind_and_default():
    shape = call_shape(SEND, "send")
    assert shape is not None and not shape.open
    (overload,) = shape.overloads
    assert [(p.name, p.kind, p.required) for p in overload] == [
        ("request", Kind.POSITIONAL_ONLY, True),
        ("timeout", Kind.EITHER, False),
        ("stream", Kind.KEYWORD_ONLY, False),
        ("retries", Kind.KEYWORD_ONLY, True),
    ]
    assert shape.keywords() == ["timeout", "stream", "retries"]
    assert not shape.accepts("request")  # positional-only
    # Required first, then in order; none given, none filled by position.
    assert shape.wanted(set(), 1) == ["retries", "timeout", "stream"]
    assert shape.wanted({"retries"}, 2) == ["stream"]


def test_kwargs_accept_any_keyword_and_overloads_add_up():
    assert call_shape(DUMPS, "dumps").open and call_shape(DUMPS, "dumps").accepts("anything")
    overloads = "read(path, *, sep: str=...) -> A read(path, *, sep: str=..., chunks: int) -> B"
    shape = call_shape(overloads, "read")
    assert shape is not None and len(shape.overloads) == 2
    assert shape.accepts("chunks") and not shape.accepts("chunksize")
    # Brackets, strings and ``==`` in defaults are not commas or defaults of their own.
    odd = call_shape("f(x=g(1, 2), y: dict[str, int]={'a,': 1}, z='=')", "f")
    assert odd is not None and [p.name for p in odd.overloads[0]] == ["x", "y", "z"]


@pytest.mark.parametrize(
    "label", ["", "Return a copy (shallow) of the list.", "send(request", "send(**)"]
)
def test_a_label_that_cannot_be_read_checks_nothing(label):
    assert call_shape(label, "send") is None


def test_a_label_that_disagrees_with_the_listed_parameters_is_not_trusted():
    assert shape_of(SIGNATURE, "client.send") is not None
    assert shape_of(Signature(SEND, ("request", "verify")), "client.send") is None
    assert shape_of(SIGNATURE, "client.post") is None  # the label names another callee


def test_the_arguments_given_so_far():
    assert given_arguments("request, timeout=f(a, b=1), *extra, x == y") == ({"timeout"}, 2)
    assert given_arguments("") == (set(), 0)


def test_an_unexpected_keyword_is_written_again_among_the_callees_parameters(inner, pool):
    script = Script({PROMPT + "verbose=True)\n": 0.9, PROMPT + "retries=3)\n": 0.1})
    assert unsteered(inner, script, PROMPT).text == "verbose=True)\n"
    analysis = ScriptedAnalysis(signatures={"client.send(": SIGNATURE})
    run = steered(inner, script, PROMPT, analysis, pool)
    assert run.text == "retries=3)\n"
    (interrupt,) = run.trace["interrupts"]
    assert interrupt["reason"] == "unexpected keyword 'verbose' for client.send"
    walk = run.trace["walks"][-1]
    assert walk["instead_of"] == "verbose" and walk["wrote"] == "retries"
    assert walk["candidates"] == 3  # retries, timeout, stream
    queries = [q["query"] for q in run.trace["queries"] if q["query"] != "scope"]
    assert queries == ["parameters", "callee"]  # its signature, and where it is defined
    # The cache is the rewritten text's: nothing of "verbose" is left in it.
    assert run.engine.cache.cached == [*run.prompt_ids, *tokenize("retries=3)\n")]


def test_keywords_given_are_not_offered_again(inner, pool):
    prompt = PROMPT + "retries=2, "
    script = Script(
        {
            prompt + "retries=3)\n": 0.8,
            prompt + "verbose=1)\n": 0.15,
            prompt + "stream=True)\n": 0.05,
        }
    )
    analysis = ScriptedAnalysis(signatures={"client.send(": SIGNATURE})
    run = steered(inner, script, prompt, analysis, pool)
    # "retries" is a parameter, but given already (a repeated keyword is a syntax
    # error): the argument is written again, and "stream" is what is left.
    assert run.text == "stream=True)\n"


@pytest.mark.parametrize(
    ("written", "signature"),
    [
        ("timeout=3)\n", OPTIONAL),  # a parameter: stands
        ("verbose=True)\n", Signature(DUMPS, ("obj", "skipkeys", "cls", "indent", "kwds"))),
        ("request == 1)\n", OPTIONAL),  # a comparison, not a keyword
        ("verbose=True)\n", None),  # no signature known
    ],
)
def test_what_stands(inner, pool, written, signature):
    callee = "json.dumps(" if signature and signature.label.startswith("dumps") else "client.send("
    prompt = PROMPT.replace("client.send(", callee)
    script = Script({prompt + written: 0.9, prompt + "retries=3)\n": 0.1})
    analysis = ScriptedAnalysis(signatures={callee: signature} if signature else {})
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == written and run.trace["interrupts"] == []


def test_a_keyword_the_user_began_is_not_rewritten_nor_with_the_stage_off(inner, pool):
    analysis = ScriptedAnalysis(signatures={"client.send(": SIGNATURE})
    typed = PROMPT + "verb"
    script = Script({typed + "ose=True)\n": 0.9, typed + "retries=3)\n": 0.1})
    run = steered(inner, script, typed, analysis, pool)
    assert run.text == "ose=True)\n"
    assert not any(q["query"] == "parameters" for q in run.trace["queries"])  # not asked
    script = Script({PROMPT + "verbose=True)\n": 0.9, PROMPT + "retries=3)\n": 0.1})
    off = SteeringOptions(keywords=False)
    assert steered(inner, script, PROMPT, analysis, pool, options=off).text == "verbose=True)\n"


def test_a_signature_still_out_at_the_keyword_is_waited_for_within_the_budget(inner, pool):
    script = Script({PROMPT + "verbose=True)\n": 0.9, PROMPT + "retries=3)\n": 0.1})
    late = ScriptedAnalysis(signatures={"client.send(": SIGNATURE}, latency=0.3)
    run = steered(inner, script, PROMPT, late, pool, SteeringOptions(budget=2.0))
    assert run.text == "retries=3)\n" and run.trace["waited_ms"] > 0
    too_late = SteeringOptions(budget=0.05)
    assert steered(inner, script, PROMPT, late, pool, too_late).text == "verbose=True)\n"


@pytest.mark.parametrize(
    ("timeout", "retries", "wrote", "text"),
    [
        (0.11, 0.09, "retries", "retries=3)\n"),
        # ``retries`` is then still missing at the ``)``: given as the call's last.
        (0.19, 0.01, "timeout", "timeout=3, retries=1)\n"),
    ],
)
def test_the_likeliest_whole_keyword_is_written_a_required_one_ahead(
    inner, pool, timeout, retries, wrote, text
):
    """Scored whole on the cache: ``retries`` (required, not given) wins within a nat of
    the likeliest, not beyond."""
    script = Script(
        {
            PROMPT + "verbose=True)\n": 0.8,
            PROMPT + "timeout=3)\n": timeout,
            PROMPT + "timeout=3, retries=1)\n": 0.0001,
            PROMPT + "retries=3)\n": retries,
        }
    )
    analysis = ScriptedAnalysis(signatures={"client.send(": SIGNATURE})
    run = steered(inner, script, PROMPT, analysis, pool)
    assert run.text == text
    walk = run.trace["walks"][0]
    assert walk["followed"] == [wrote] and set(walk["scores"]) == {"retries", "timeout", "stream"}


def test_a_repeated_keyword_is_written_again_even_where_any_keyword_goes(inner, pool):
    """``frame.assign(**kwargs)`` takes any keyword, but not the same one twice."""
    prompt = "def f(frame, a, b):\n    return frame.assign(bid=a, "
    assign = Signature("assign(**kwargs) -> DataFrame", ("kwargs",))
    script = Script({prompt + "bid=b)\n": 0.9, prompt + "ask=b)\n": 0.1})
    analysis = ScriptedAnalysis(signatures={"frame.assign(": assign})
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == "ask=b)\n"
    (interrupt,) = run.trace["interrupts"]
    assert interrupt["reason"] == "repeated keyword 'bid' for frame.assign"


SCHEMA = Signature("Schema(*, only=None, many: bool=False)", ("only", "many"))
LOAD = "def load(rows, columns):\n    schema = marshmallow.Schema("


@pytest.mark.parametrize(
    ("close", "keyword", "wrote"),
    [(0.09, 0.01, ")\n"), (0.01, 0.09, "only=columns)\n")],
)
def test_an_argument_past_the_positional_parameters_is_written_again(
    inner, pool, close, keyword, wrote
):
    """``Schema(columns)`` where ``Schema`` takes keywords only (pylint's E1121): the
    argument is written again as a keyword it takes, or as the call's close, whichever
    the model finds likelier whole."""
    script = Script(
        {LOAD + "columns)\n": 0.9, LOAD + ")\n": close, LOAD + "only=columns)\n": keyword}
    )
    assert unsteered(inner, script, LOAD).text == "columns)\n"
    analysis = ScriptedAnalysis(signatures={"marshmallow.Schema(": SCHEMA})
    run = steered(inner, script, LOAD, analysis, pool)
    assert run.text == wrote
    (interrupt,) = run.trace["interrupts"]
    assert interrupt["reason"] == (
        "argument 'columns' past the 0 positional parameters of marshmallow.Schema"
    )
    walk = run.trace["walks"][-1]
    assert walk["instead_of"] == "columns" and set(walk["scores"]) == {"only=", "many=", ")"}
    assert run.engine.cache.cached == [*run.prompt_ids, *tokenize(wrote)]


def test_a_later_argument_past_them_becomes_a_keyword_and_what_fits_stands(inner, pool):
    prompt = "def fetch(client, request):\n    return client.send("
    script = Script(
        {
            prompt + "request, 3, True)\n": 0.8,
            prompt + "request, 3, stream=True)\n": 0.1,
            prompt + "request, 3, retries=2)\n": 0.1,
        }
    )
    analysis = ScriptedAnalysis(signatures={"client.send(": SIGNATURE})
    run = steered(inner, script, prompt, analysis, pool)
    # ``send`` takes two by position (request, timeout): ``True`` is one too many, and
    # ``retries`` (required) is ahead of ``stream``; no ``)`` after a first argument.
    assert run.text == "request, 3, retries=2)\n"
    assert run.trace["walks"][-1]["scores"].keys() == {"retries=", "stream="}
    fits = Script({prompt + "request, 3, retries=2)\n": 1.0})
    run = steered(inner, fits, prompt, analysis, pool)
    assert run.text == "request, 3, retries=2)\n" and run.trace["interrupts"] == []


@pytest.mark.parametrize(
    ("prompt", "written"),
    [
        ("def f(rows, n):\n    return len(", "rows, n)\n"),  # a builtin: not counted
        ("def f(rows, n):\n    rows.append(", "rows, n)\n"),  # a builtin type's method
        ("def f(d, n):\n    return d['k'](", "n, n)\n"),  # no callee name to read
        (LOAD + "columns, ", "many=True)\n"),  # the user's own argument (``many`` asked)
        ("def f(args):\n    s = marshmallow.Schema(", "*args)\n"),  # unpacked: no count holds
    ],
)
def test_what_is_not_counted(inner, pool, prompt, written):
    script = Script({prompt + written: 0.9, prompt + ")\n": 0.1})
    one = Signature("f(obj, /)", ("obj",))
    analysis = ScriptedAnalysis(
        signatures={
            "marshmallow.Schema(": SCHEMA,
            "len(": Signature("len(obj, /)", ("obj",)),
            "rows.append(": Signature("append(obj, /)", ("obj",)),
            "d['k'](": one,
        }
    )
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == written and run.trace["interrupts"] == []
    asked = any(q["query"] == "parameters" for q in run.trace["queries"])
    assert asked == written.startswith("many=")


def test_a_signature_still_out_at_the_calls_close_is_waited_for_within_the_budget(inner, pool):
    script = Script({LOAD + "columns)\n": 0.9, LOAD + ")\n": 0.1})
    late = ScriptedAnalysis(signatures={"marshmallow.Schema(": SCHEMA}, latency=0.3)
    run = steered(inner, script, LOAD, late, pool, SteeringOptions(budget=2.0))
    assert run.text == ")\n" and run.trace["waited_ms"] > 0
    too_late = SteeringOptions(budget=0.05)
    assert steered(inner, script, LOAD, late, pool, too_late).text == "columns)\n"


def test_a_call_closed_without_a_required_argument_is_given_it(inner, pool):
    """``send(request)`` where ``retries`` is required (pylint's E1120): its ``)`` is
    written again as ``, retries=``, and the model writes the value."""
    prompt = "def fetch(client, request):\n    return client.send("
    script = Script({prompt + "request)\n": 0.9, prompt + "request, retries=3)\n": 0.1})
    analysis = ScriptedAnalysis(signatures={"client.send(": SIGNATURE})
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == "request, retries=3)\n"
    (interrupt,) = run.trace["interrupts"]
    assert interrupt["reason"] == "missing required argument retries of client.send"
    walk = run.trace["walks"][-1]
    assert walk["instead_of"] == ")" and walk["wrote"] == ", retries="
    # Given, or with two overloads (the other may not need it), nothing is rewritten.
    given = Script({prompt + "request, retries=2)\n": 1.0})
    assert steered(inner, given, prompt, analysis, pool).trace["interrupts"] == []
    two = Signature(f"{SEND} send(request, /) -> Response", SIGNATURE.parameters)
    overloaded = ScriptedAnalysis(signatures={"client.send(": two})
    assert steered(inner, script, prompt, overloaded, pool).text == "request)\n"


ENCODER = """import warnings


class OneHotEncoder:
    def __init__(self, *, categories="auto", sparse="deprecated", sparse_output=True):
        if sparse != "deprecated":
            warnings.warn("`sparse` was renamed to `sparse_output` in 1.2", FutureWarning)
"""


def test_a_keyword_its_callees_source_deprecates_is_written_as_its_replacement(
    inner, pool, tmp_path
):
    """The callee takes ``sparse`` still, but its source renames it: written as
    ``sparse_output``. Its definition is asked with its signature, once per call."""
    module = tmp_path / "encoders.py"
    module.write_text(ENCODER)
    prompt = "def encode(rows):\n    return OneHotEncoder("
    script = Script({prompt + "sparse=False)\n": 0.9, prompt + "sparse_output=False)\n": 0.1})
    label = "OneHotEncoder(*, categories='auto', sparse='deprecated', sparse_output=True)"
    signature = Signature(label, ("categories", "sparse", "sparse_output"))
    analysis = ScriptedAnalysis(
        signatures={"OneHotEncoder(": signature},
        # Asked inside the callee's name, as the deprecation stage asks.
        definitions={"OneHotEncode": DefinitionSource(str(module), 3)},
    )
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == "sparse_output=False)\n"
    (interrupt,) = run.trace["interrupts"]
    assert interrupt["reason"] == (
        "deprecated keyword 'sparse' (use 'sparse_output') for OneHotEncoder"
    )
    # Without the definition, nothing is known to be deprecated: the keyword stands.
    unknown = ScriptedAnalysis(signatures={"OneHotEncoder(": signature})
    assert steered(inner, script, prompt, unknown, pool).text == "sparse=False)\n"


def test_a_deprecated_keyword_falls_behind_when_one_is_written_again(inner, pool, tmp_path):
    module = tmp_path / "pages.py"
    module.write_text(
        "def fetch(url, timeout=None, retries=0, retry=None):\n"
        '    """Fetch.\n\n    Args:\n        retry: Deprecated.\n    """\n'
    )
    prompt = "def get(url):\n    return fetch(url, "
    script = Script(
        {prompt + "verbose=1)\n": 0.7, prompt + "retry=1)\n": 0.2, prompt + "retries=1)\n": 0.1}
    )
    signature = Signature(
        "fetch(url, timeout=None, retries=0, retry=None)", ("url", "timeout", "retries", "retry")
    )
    analysis = ScriptedAnalysis(
        signatures={"fetch(": signature}, definitions={"fetc": DefinitionSource(str(module), 0)}
    )
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == "retries=1)\n"  # ``retry`` likelier, but deprecated: 2 nats behind
    scores = run.trace["walks"][-1]["scores"]
    assert scores["retries"] > scores["retry"]
