"""Segment-by-segment steering through the API, on a scripted model (mechanics only).

The scripted API writes a fixed continuation for each text written so far, as a
greedy server would, and honours ``logprobs`` and constraints. The
real engine is in ``tests/model/test_remote.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

from steerlsp.models.options import SteeringOptions
from steerlsp.models.remote.api import TOP_K, Capabilities, Choice
from steerlsp.models.remote.client import Deadline
from steerlsp.models.remote.keywords import keywords_written
from steerlsp.models.remote.members import choose, decided, first_tokens, walked_choice
from steerlsp.models.remote.segments import Segments
from steerlsp.models.remote.steering import RemoteSteering
from steerlsp.models.steering.analysis import CompletionCandidate, Signature
from steerlsp.models.steering.monitor import MonitorState
from steerlsp.models.steering.ranking.intent import intent_at
from steerlsp.models.steering.ranking.relevance import RankWeights
from tests.doubles.analysis import ScriptedAnalysis

BEFORE = (
    "class Inventory:\n"
    "    def stock_level(self, sku: str) -> int: ...\n"
    "    def reorder_point(self) -> int: ...\n\n\n"
    "def on_hand(inventory: Inventory, sku: str) -> int:\n"
    "    return inventory"
)
MEMBERS = [
    CompletionCandidate("reorder_point", "method"),
    CompletionCandidate("stock_level", "method"),
]


class ScriptedApi:
    """A greedy model: ``writes(written)`` is all it would write after ``written``
    (what was generated so far), ``tops(written)`` its k likeliest next tokens."""

    def __init__(
        self,
        prompt: str,
        writes: Callable[[str], str],
        tops: Callable[[str], dict[str, float]] = lambda written: {},
        constraint: str = "grammar",
    ) -> None:
        self.prompt, self.writes, self.tops = prompt, writes, tops
        self.client = SimpleNamespace(requests=0)
        self.capabilities = Capabilities(top_logprobs=True, constraint=constraint)
        self.picked: list[tuple[str, ...]] = []
        self.probed: list[tuple[str, int, int]] = []  # (written, max_tokens, logprobs) asked
        self.streamed = 0  # pieces handed out
        self.closed_early = 0  # streams left before their end

    def _written(self, prompt: str) -> str:
        assert prompt.startswith(self.prompt)
        return prompt[len(self.prompt) :]

    def stream(
        self, prompt: str, deadline: Deadline, *, max_tokens: int, sampling=None
    ) -> Iterator[tuple[str, str]]:
        self.client.requests += 1
        text = self.writes(self._written(prompt))
        finish = "stop"
        pieces = [text[i : i + 2] for i in range(0, len(text), 2)][:max_tokens]
        if len(pieces) == max_tokens and "".join(pieces) != text:
            finish = "length"
        done = False
        try:
            for index, piece in enumerate(pieces):
                self.streamed += 1
                yield piece, finish if index == len(pieces) - 1 else ""
            done = True
        finally:
            if not done:
                self.closed_early += 1

    def complete(
        self,
        prompt: str,
        deadline: Deadline,
        *,
        max_tokens: int,
        logprobs: int = 0,
        sampling=None,
        choices: tuple[str, ...] = (),
        then_end: bool = False,
    ) -> Choice:
        self.client.requests += 1
        written = self._written(prompt)
        text = self.writes(written)
        if choices:  # the choice that agrees longest with what the model would write
            self.picked.append(choices)
            chosen = max(choices, key=lambda c: (_agreeing(c, text), -len(c)))
            return Choice(chosen + ("(" if then_end else ""), "stop")
        first = "." if text.startswith(".") else text[:1]
        if not logprobs:
            return Choice(first, "length")
        tokens, top = ((first,) if first else ()), (self.tops(written),)
        self.probed.append((written, max_tokens, logprobs))
        return Choice("".join(tokens), "length", tokens, (), top)


def _agreeing(a: str, b: str) -> int:
    """How many characters two texts agree on from the start."""
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def walk(
    before: str = BEFORE, after: str = "\n", analysis=None, rank: bool = True, **options: Any
) -> RemoteSteering:
    analysis = analysis or ScriptedAnalysis(completions={"inventory.": MEMBERS})
    return RemoteSteering(
        analysis,
        SteeringOptions(**options),
        window=before,
        before=before,
        after=after,
        rank=rank,
    )


def run(api: ScriptedApi, dot: RemoteSteering | None, max_tokens: int = 40) -> str:
    return (
        Segments(
            api,
            api.prompt,
            max_tokens=max_tokens,
            ends=lambda text: "\n" in text,
            deadline=Deadline.within(5),
            sampling={"temperature": 0.0},
            walk=dot,
        )
        .run()
        .text
    )


def misspelling(written: str) -> str:
    """A model that remembers the wrong name, and calls whatever it wrote."""
    if written == "":
        return ".stok_level(sku)\n"
    if written.endswith("."):
        return "stok_level(sku)\n"
    return "(sku)\n"


def test_the_name_after_a_dot_the_model_writes_is_one_the_analysis_lists():
    api = ScriptedApi(BEFORE, misspelling, lambda written: {"st": -0.4, "re": -3.0})
    dot = walk()
    assert run(api, None) == ".stok_level(sku)\n"
    assert run(api, dot) == ".stock_level(sku)\n"
    ranking = dot.trace["rankings"][0]
    assert ranking["chosen"] == "stock_level" and ranking["offset"] == 1
    # The call it closed has an argument by position: its signature is asked (none here).
    assert [q["kind"] for q in dot.trace["queries"]] == [
        "completions",
        "documentation",
        "signature",
    ]


def test_at_the_cursor_after_a_dot_the_name_comes_first():
    before = BEFORE + "."
    api = ScriptedApi(before, lambda written: "(sku)\n" if written else "stok_level(sku)\n")
    api.tops = lambda written: {"st": -0.4, "re": -3.0}
    assert run(api, walk(before)) == "stock_level(sku)\n"


def test_at_the_cursor_inside_a_name_only_the_rest_is_written():
    before = BEFORE + ".re"
    api = ScriptedApi(before, lambda written: "(sku)\n" if written else "order(sku)\n")
    api.tops = lambda written: {"order": -0.2}
    assert run(api, walk(before)) == "order_point(sku)\n"


def test_a_stop_that_was_the_models_end_adds_no_dot():
    api = ScriptedApi(BEFORE, lambda written: "" if written else " + 1")
    dot = walk()
    # Stopped by its end of text, not at a ``.``: the text is left as it is.
    assert (
        Segments(
            api,
            BEFORE,
            max_tokens=40,
            ends=lambda text: False,
            deadline=Deadline.within(5),
            sampling={},
            walk=dot,
        )
        .run()
        .text
        == " + 1"
    )
    assert dot.trace["rankings"] == []


def test_a_dot_that_starts_no_member_is_written_through():
    before = "x = 1"
    api = ScriptedApi(before, lambda written: ".5\n"[len(written) :])
    dot = walk(before)
    assert run(api, dot) == ".5\n"
    assert dot.trace["queries"] == []  # a number's dot asks nothing


def test_the_stop_rule_closes_the_stream_early():
    api = ScriptedApi("x = ", lambda written: "1\n" + "y = 2\n" * 20)
    assert run(api, None) == "1\n"
    assert api.closed_early == 1 and api.streamed == 1


def test_names_sharing_a_first_token_are_left_to_the_models_constrained_choice():
    items = [CompletionCandidate("get_total", "method"), CompletionCandidate("get_items", "method")]
    analysis = ScriptedAnalysis(completions={"inventory.": items})

    def writes(written: str) -> str:
        return "get_items()\n" if written.endswith(".") else ("()\n" if written else ".get_x()\n")

    api = ScriptedApi(BEFORE, writes, lambda written: {"get": -0.1, "total": -5.0})
    assert run(api, walk(analysis=analysis)) == ".get_items()\n"
    assert [set(p) for p in api.picked] == [{"get_total", "get_items"}]


def test_where_log_probabilities_are_dear_the_model_chooses_among_the_listed_names():
    members = [*MEMBERS, CompletionCandidate("_stock_cache", "attribute")]
    analysis = ScriptedAnalysis(completions={"inventory.": members})
    api = ScriptedApi(BEFORE, misspelling)
    dot = walk(analysis=analysis, rank=False)
    assert run(api, dot) == ".stock_level(sku)\n"
    assert [set(p) for p in api.picked] == [{"reorder_point", "stock_level"}]  # not private
    ranking = dot.trace["rankings"][0]
    assert ranking["chosen"] == "stock_level" and ranking["among"] == 2
    assert [q["kind"] for q in dot.trace["queries"]] == ["completions", "signature"]  # no docs


def test_a_receiver_not_statically_known_is_left_to_the_model_when_constrained():
    members = [CompletionCandidate("__getattr__", "method"), *MEMBERS]
    analysis = ScriptedAnalysis(completions={"inventory.": members})
    api = ScriptedApi(BEFORE, misspelling)
    assert run(api, walk(analysis=analysis, rank=False)) == ".stok_level(sku)\n"
    assert api.picked == []


def test_no_steering_past_the_question_budget():
    api = ScriptedApi(BEFORE, misspelling, lambda written: {"st": -0.4})
    dot = walk(max_queries_total=0)
    assert run(api, dot) == ".stok_level(sku)\n"
    assert api.client.requests == 1  # one segment, no stop at the dot


def test_first_tokens_take_the_longest_listed_token_a_name_starts_with():
    top = {"st": -1.0, "stock": -2.0, "re": -0.5, "join(": -3.0}
    firsts = first_tokens(["stock_level", "reorder", "join", "other"], top, -20.0)
    assert firsts == {
        "stock_level": ("stock", -2.0),
        "reorder": ("re", -0.5),
        "join": ("join(", -3.0),  # the whole name, then its end
        "other": ("", -20.0),
    }
    assert first_tokens(["reorder"], {"order": -0.1}, -20.0, typed="re") == {
        "reorder": ("order", -0.1)
    }


def test_the_ranker_prefers_the_member_of_the_expected_type():
    items = [
        CompletionCandidate("name", "property", returns="str"),
        CompletionCandidate("model_dump", "method", returns="dict[str, Any]"),
    ]
    intent = intent_at("def as_dict(user: User) -> dict:\n    return user.")
    chosen = choose(
        items,
        {"name": -0.8, "model": -1.5},
        intent,
        weights=RankWeights(),
        static=True,
        escape_margin=5.0,
    )
    assert chosen.name == "model_dump"
    assert chosen.ranked[0].expected > 0


def test_the_remote_ranker_reads_a_field_s_type_from_the_document_s_class():
    items = [
        CompletionCandidate("describe", "method", detail="orders.Order", returns="str"),
        CompletionCandidate("total", "statement", detail="orders.Order"),
    ]
    text = (
        "class Order:\n    total: float\n\n\ndef amount(order: Order) -> float:\n    return order."
    )
    chosen = choose(
        items,
        {"describe": -0.5, "total": -1.5},
        intent_at(text),
        weights=RankWeights(),
        static=True,
        escape_margin=5.0,
    )
    assert chosen.name == "total"
    assert chosen.ranked[0].expected > 0


def test_an_unknown_receiver_lets_the_model_keep_a_much_likelier_name():
    items = [CompletionCandidate("__class__"), CompletionCandidate("dynamic", "attribute")]
    chosen = choose(
        items,
        {"lookup": -0.1},
        intent_at("x = obj."),
        weights=RankWeights(),
        static=False,
        escape_margin=5.0,
    )
    assert chosen.name is None and "not listed" in chosen.reason


def test_keywords_written_are_found_in_calls_only():
    mark = MonitorState()
    fed = "x = 1\n"
    mark.update(fed)
    text = 'y = f(a, key=1, b == 2, s="k=v", other = g(z=3))\nw = 2\n'
    found = keywords_written(mark, fed, text)
    assert [(k.name, k.call.callee) for k in found] == [
        ("key", "f"),
        ("s", "f"),  # not the ``=`` in its string
        ("other", "f"),
        ("z", "g"),
    ]
    assert (fed + text)[found[0].start : found[0].end] == "key="


CONNECT = Signature("connect(host, port=0, timeout=None)", ("host", "port", "timeout"))


def typo(written: str) -> str:
    """A model that misspells a keyword, and goes on with whatever it wrote."""
    if written == "":
        return ".connect(host, timout=3)\n"
    if written.endswith("."):
        return "connect(host, timout=3)\n"
    if written.endswith(", "):
        return "timout=3)\n"
    return "3)\n" if written.endswith("=") else ""


def test_a_keyword_the_callee_does_not_take_is_written_again_as_one_it_does():
    before = "import db\n\n\ndef open_db(host):\n    return db"
    analysis = ScriptedAnalysis(signatures={"connect(": CONNECT})
    api = ScriptedApi(before, typo)
    dot = walk(before, analysis=analysis)
    assert run(api, dot) == ".connect(host, timeout=3)\n"
    assert dot.trace["rewinds"] == [
        {
            "kind": "keyword",
            "callee": "db.connect",
            "wrote": "timout",
            "offered": ["port", "timeout"],
            "now": "timeout",
        }
    ]
    assert [set(p) for p in api.picked] == [{"port", "timeout"}]
    # Asked once, as the call's first argument began (while the server streamed on).
    asked = [
        (text[:offset], kind) for kind, text, offset in analysis.calls if kind == "signature_at"
    ]
    assert len(asked) == 1 and asked[0][0].endswith("db.connect(")
    assert run(api, None) == ".connect(host, timout=3)\n"  # unsteered


def test_a_keyword_the_callee_takes_is_left_alone():
    before = "import db\n\n\ndef open_db(host):\n    return db"
    analysis = ScriptedAnalysis(signatures={"connect(": Signature("connect(host, **options)")})
    dot = walk(before, analysis=analysis)
    assert run(ScriptedApi(before, typo), dot) == ".connect(host, timout=3)\n"
    assert dot.trace["rewinds"] == []
    assert [q["kind"] for q in dot.trace["queries"]] == ["completions", "signature", "signature"]


LOOP = "def total(prices):\n    result = 0\n    for price in prices:\n        "


def misnamed(written: str) -> str:
    """A model that reads a name nothing defines."""
    if written == "":
        return "result += pric\n"
    if written == "result += ":
        return "pric\n"
    return "\n" if written.endswith("price") else ""


def test_a_name_nothing_defines_is_written_again_as_one_in_scope():
    api = ScriptedApi(LOOP, misnamed)
    dot = walk(LOOP, analysis=ScriptedAnalysis())
    assert run(api, dot) == "result += price\n"
    assert dot.trace["rewinds"] == [{"kind": "undefined name", "wrote": "pric", "now": "price"}]
    assert dot.trace["queries"] == []  # the names in scope read from the document itself
    assert run(api, None) == "result += pric\n"  # unsteered


def test_without_a_constraint_the_statement_stands():
    api = ScriptedApi(LOOP, misnamed, constraint="")
    dot = walk(LOOP, analysis=ScriptedAnalysis())
    assert run(api, dot) == "result += pric\n"
    assert dot.trace["rewinds"] == []


def test_an_argument_past_the_positional_parameters_is_written_again_as_a_keyword():
    before = "import db\n\n\ndef open_db(host):\n    return db"

    def writes(written: str) -> str:
        if written == "":
            return ".connect(host, 5432, 3)\n"
        if written.endswith("."):
            return "connect(host, 5432, 3)\n"
        return (
            "3)\n" if written.endswith("=") else ("timeout=3)\n" if written.endswith(", ") else "")
        )

    shape = Signature("connect(host, port=0, *, timeout=None)", ("host", "port", "timeout"))
    analysis = ScriptedAnalysis(signatures={"connect(": shape})
    dot = walk(before, analysis=analysis)
    assert run(ScriptedApi(before, writes), dot) == ".connect(host, 5432, timeout=3)\n"
    assert dot.trace["rewinds"][0] | {"offered": None} == {
        "kind": "positional argument",
        "callee": "db.connect",
        "wrote": "3",
        "offered": None,
        "now": "timeout",
    }


def test_a_call_closed_without_a_required_parameter_is_given_it():
    before = "import db\n\n\ndef open_db(host):\n    return db"

    def writes(written: str) -> str:
        if written == "":
            return ".connect(host)\n"
        if written.endswith("."):
            return "connect(host)\n"
        return "5432)\n" if written.endswith("=") else ""

    shape = Signature("connect(host, port)", ("host", "port"))
    analysis = ScriptedAnalysis(signatures={"connect(": shape})
    dot = walk(before, analysis=analysis)
    assert run(ScriptedApi(before, writes), dot) == ".connect(host, port=5432)\n"
    assert dot.trace["rewinds"][0]["kind"] == "missing argument"


def test_a_name_in_a_statement_begun_in_an_earlier_segment_is_written_again():
    before = BEFORE[: BEFORE.rindex("return")]

    def writes(written: str) -> str:
        if written == "":
            return "return invntory.stock_level(sku)\n"
        if written == "return ":
            return "invntory.stock_level(sku)\n"
        if written.endswith("."):
            return "stock_level(sku)\n"
        if written.endswith("stock_level"):
            return "(sku)\n"
        if written.endswith(("inventory", "invntory")):
            return ".stock_level(sku)\n"
        return ""

    api = ScriptedApi(before, writes, lambda written: {"stock": -0.1})
    dot = walk(before)
    # The name was written in the segment before the one that ended the statement.
    assert run(api, dot) == "return inventory.stock_level(sku)\n"
    assert dot.trace["rewinds"][0] == {
        "kind": "undefined name",
        "wrote": "invntory",
        "now": "inventory",
    }


UNTYPED = BEFORE.replace(") -> int:\n    return inventory", "):\n    inventory")


def test_a_name_the_documentation_cannot_unseat_is_written_without_asking_for_it():
    api = ScriptedApi(UNTYPED, misspelling, lambda written: {"st": -0.1, "re": -6.0})
    dot = walk(UNTYPED)
    assert run(api, dot) == ".stock_level(sku)\n"
    assert [q["kind"] for q in dot.trace["queries"]] == ["completions", "signature"]
    assert dot.trace["rankings"][0]["documented"] is False


def test_a_choice_the_documentation_could_change_asks_for_it():
    api = ScriptedApi(UNTYPED, misspelling, lambda written: {"st": -0.1, "re": -1.0})
    dot = walk(UNTYPED)
    assert run(api, dot) == ".stock_level(sku)\n"
    assert [q["kind"] for q in dot.trace["queries"]][:2] == ["completions", "documentation"]


def test_decided_is_what_choose_writes_with_any_documentation():
    weights = RankWeights()
    items = [
        CompletionCandidate("stock_level", "method"),
        CompletionCandidate("reorder_point", "method"),
        CompletionCandidate("sku_count", "method"),
    ]
    # Documentation that favours each rival as far as it can: relevant words, and the
    # expected type as what it returns.
    favouring = [
        [
            CompletionCandidate(
                c.name,
                c.kind,
                documentation="the on hand stock level of a sku" if c.name == rival else "",
                returns="int" if c.name == rival else "",
            )
            for c in items
        ]
        for rival in ("reorder_point", "sku_count")
    ]
    seen = set()
    for text in (BEFORE, UNTYPED):
        intent = intent_at(text + ".")
        for gap in (0.5, 1.5, 2.5, 4.0, 7.0, 9.0):
            top = {"st": -0.1, "re": -0.1 - gap, "sku": -0.1 - gap}
            sure = decided(items, top, intent, weights=weights)
            for documented in favouring:
                chosen = choose(
                    documented, top, intent, weights=weights, static=True, escape_margin=4.0
                ).name
                if sure is not None:
                    assert chosen == sure
            seen.add(sure)
    assert seen == {None, "stock_level"}  # both outcomes met


def test_a_member_access_is_told_by_the_stream_itself_not_by_a_probe():
    """The stream's piece ``.s`` shows the member access: the stream is closed there,
    the name's first tokens are asked after the ``.`` (the walk's one request with
    log-probabilities), and the next segment continues after the name."""
    tops = {".": {"st": -0.4, "re": -3.0}}
    api = ScriptedApi(BEFORE, misspelling, lambda written: tops.get(written, {}))
    dot = walk()
    assert run(api, dot) == ".stock_level(sku)\n"
    assert api.probed == [(".", 1, TOP_K)]
    assert api.client.requests == 3  # the stream closed at ".s", the names' start, a stream
    assert dot.trace["rankings"][0]["chosen"] == "stock_level"


def test_a_dot_that_begins_no_member_keeps_the_stream_going():
    """A number's ``.``, an ellipsis and a ``.`` in a comment cost no request: the one
    stream writes them through."""
    for before, writes in [
        ("x = 1", ".5 + 2.25\n"),
        ("x = ", "...\n"),
        ("x = 1  # see", " inventory.stock_level\n"),
    ]:
        api = ScriptedApi(before, lambda written, writes=writes: writes[len(written) :])
        dot = walk(before)
        assert run(api, dot) == writes
        assert api.client.requests == 1, before
        assert dot.trace["queries"] == [] and dot.trace["rankings"] == []


def test_without_ranking_no_request_asks_for_log_probabilities():
    api = ScriptedApi(BEFORE, misspelling)
    dot = walk(rank=False)
    assert run(api, dot) == ".stock_level(sku)\n"  # the model's choice, constrained
    assert api.probed == []
    assert api.client.requests == 3  # stream, the constrained choice, stream


def test_a_walk_among_names_reads_the_models_choice_from_its_likeliest_tokens():
    tops = {"": {"get": -0.1, "set": -2.0}, "get": {"_total": -0.3, "_items": -1.0}}
    asked: list[str] = []

    def top_of(text: str) -> dict[str, float]:
        asked.append(text)
        return tops.get(text, {})

    assert walked_choice(["get_items", "get_total", "set_total"], top_of) == "get_total"
    assert asked == ["", "get"]  # one request a token, until one name is left


def test_a_walk_among_names_ends_a_name_where_the_model_ends_it():
    # ``cache`` where ``cached_property`` begins: the model's next token ends the name.
    tops = {"": {"cache": -0.1}, "cache": {"(": -0.2, "d": -1.0}}
    assert walked_choice(["cache", "cached_property"], lambda t: tops.get(t, {})) == "cache"
    # One token that writes the name and what ends it.
    assert walked_choice(["cache", "cached_property"], lambda t: {"cache(": -0.1}) == "cache"
    # Nothing in the k likeliest stays within a name: the constraint decides.
    assert walked_choice(["cache", "cached_property"], lambda t: {"x": -0.1}) is None


def test_names_sharing_a_first_token_are_told_apart_by_log_probabilities_not_a_grammar():
    items = [CompletionCandidate("get_total", "method"), CompletionCandidate("get_items", "method")]
    analysis = ScriptedAnalysis(completions={"inventory.": items})
    tops = {".": {"get": -0.1, "total": -5.0}, ".get": {"_items": -0.2, "_total": -2.0}}

    def writes(written: str) -> str:
        return "get_items()\n" if written.endswith(".") else ("()\n" if written else ".get_x()\n")

    api = ScriptedApi(BEFORE, writes, lambda written: tops.get(written, {}))
    assert run(api, walk(analysis=analysis)) == ".get_items()\n"
    assert api.picked == []  # no constrained request
    assert [p[0] for p in api.probed] == [".", ".get"]
