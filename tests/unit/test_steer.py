"""Interrupt-guided decoding (``models/steering/steerer.py``) on a scripted tiny model.

The tiny Gemma 3 of ``tests/doubles/tiny.py`` runs for real, so its ``DynamicCache`` is
cropped, repeated for batched scoring and spliced as in production; only its
logits are replaced, by a :class:`Script`: a language model written down as
whole documents with weights. At every position the next character's
probability is the weight of the documents that continue the text there, so
each step's preference, and every whole-identifier log-probability the ranker
asks for, is fixed and known. The script reads the cache's *logical* text
(hint comment lines removed); ``hinted`` documents say what a model that reads
a hint would write instead.
"""

from __future__ import annotations

import concurrent.futures
import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
import torch
from torch import nn

from steerlsp.models.decoding.engine import Engine, Generation
from steerlsp.models.deprecation.runtime import RuntimeDeprecations
from steerlsp.models.deprecation.static import Deprecation, DeprecationCache
from steerlsp.models.options import SteeringOptions
from steerlsp.models.steering.analysis import (
    AnalysisTimeout,
    CompletionCandidate,
    DefinitionSource,
    Signature,
)
from steerlsp.models.steering.facts import SteeringFacts
from steerlsp.models.steering.stages import deprecations, members
from steerlsp.models.steering.stages.base import ASKED_AHEAD
from steerlsp.models.steering.stages.repetition import repeated_from
from steerlsp.models.steering.steerer import Steerer
from steerlsp.models.steering.tokens.vocab import VocabularyIndex
from steerlsp.prompts.postprocess import CompletionMode, finalize
from tests.doubles import tiny
from tests.doubles.analysis import ScriptedAnalysis

# One character per token, as in tests/doubles/tiny.py, plus what hints and signatures use.
ALPHABET = [*tiny.ALPHABET, *"#,;'\"[]<>*/@ABCDEFGHIJKLMNOPQRSTUVWXYZ{}"]
EOS = "<eos>"
FLOOR = -30.0  # the log-probability of anything the script does not write
HINT_LINE = re.compile(r"[ \t]*# [^\n]*\n")  # a hint line, as the steerer writes one
T = TypeVar("T")


class Chars:
    """:class:`tests.doubles.tiny.CharTokenizer` over :data:`ALPHABET`."""

    pad_token_id, eos_token_id, bos_token_id = 0, 1, 2

    def __init__(self) -> None:
        self.vocab = {token: i for i, token in enumerate(ALPHABET)}

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = [self.vocab[c] for c in text]  # KeyError: a test wrote a character outside
        return [self.bos_token_id, *ids] if add_special_tokens else ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return "".join(ALPHABET[i] for i in ids if not (skip_special_tokens and i < 3))


TOKENIZER = Chars()
VOCABULARY = VocabularyIndex(ALPHABET)


def tokenize(text: str) -> list[int]:
    return TOKENIZER.encode(text, add_special_tokens=False)


@dataclass
class Script:
    """A language model written down: whole documents (prompt and completion) with weights.

    ``hinted`` replaces ``documents`` while a hint line is in the cache (a model
    that reads it); ``echo`` is the share of probability a hint in view puts on
    ``#`` (a model that would copy the comment style).
    """

    documents: dict[str, float]
    hinted: dict[str, float] | None = None
    echo: float = 0.0

    def probabilities(self, physical: str) -> dict[str, float]:
        logical = HINT_LINE.sub("", physical)
        in_view = bool(HINT_LINE.search(physical))
        documents = self.hinted if in_view and self.hinted is not None else self.documents
        mass: dict[str, float] = {}
        for document, weight in documents.items():
            if document.startswith(logical):
                following = document[len(logical)] if len(document) > len(logical) else EOS
                mass[following] = mass.get(following, 0.0) + weight
        total = sum(mass.values())
        probs = {c: m / total for c, m in mass.items()} if total else {EOS: 1.0}
        if in_view and self.echo:
            probs = {c: p * (1 - self.echo) for c, p in probs.items()}
            probs["#"] = probs.get("#", 0.0) + self.echo
        return probs

    def logits(self, tokens: Sequence[int]) -> torch.Tensor:
        # -> [V]
        out = torch.full((len(ALPHABET),), FLOOR)
        for char, p in self.probabilities(TOKENIZER.decode(tokens)).items():
            out[ALPHABET.index(char)] = math.log(p)
        return out


@dataclass
class Call:
    """One forward pass: how many tokens the cache held before it, and the ids fed."""

    held: int
    rows: list[list[int]]
    tree: bool = False  # one row of several sequences, kept apart by attention masks


@dataclass
class Mirror:
    """What the scripted model knows: its script, what the cache holds, what it was fed.

    ``tokens`` mirrors the cache (row 0), cut to the cache's own length at each
    call, so the script sees hints exactly where the cache has them.
    """

    script: Script
    tokens: list[int] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    raw: torch.Tensor | None = None  # the real model's last logits of the last 1-row pass, [V]

    def fed(self, input_ids: torch.Tensor, cache: Any) -> tuple[list[int], list[list[int]]]:
        held = cache.get_seq_length() if cache is not None else 0
        rows = input_ids.tolist()
        self.calls.append(Call(held, rows))
        return self.tokens[:held], rows

    def scripted(self, prefix: list[int], rows: list[list[int]], keep: int) -> torch.Tensor:
        """The script's logits after each of each row's last ``keep`` tokens. -> [B, keep, V]"""
        if len(rows) == 1:
            self.tokens = prefix + rows[0]
        return torch.stack(
            [
                torch.stack(
                    [
                        self.script.logits(prefix + row[:end])
                        for end in range(len(row) - keep + 1, len(row) + 1)
                    ]
                )
                for row in rows
            ]
        )


class ScriptedBase(nn.Module):
    """The base model for scoring names whole: real layers on the real cache; its
    "hidden states" are the script's logits, which the identity head passes through.
    A token tree (attention masks per layer type) is read as the masks say: each
    token sees the cached prefix and the tokens of its row its mask lets it see."""

    def __init__(self, base: nn.Module, mirror: Mirror) -> None:
        super().__init__()
        self.base = base
        self.mirror = mirror

    def forward(self, input_ids: torch.Tensor, past_key_values: Any = None, **kwargs: Any) -> Any:
        # input_ids: [B, W] -> last_hidden_state [B, W, V]
        prefix, rows = self.mirror.fed(input_ids, past_key_values)
        masks = kwargs.get("attention_mask")
        out = self.base(input_ids=input_ids, past_key_values=past_key_values, **kwargs)
        if isinstance(masks, dict):
            self.mirror.calls[-1].tree = True
            own = next(iter(masks.values()))[0, 0, :, -input_ids.shape[1] :]  # [W, W] bool
            (row,) = rows
            seen = [[t for t, sees in zip(row, line, strict=True) if sees] for line in own.tolist()]
            out.last_hidden_state = torch.stack(
                [self.mirror.script.logits(prefix + s) for s in seen]
            )[None]
        else:
            out.last_hidden_state = self.mirror.scripted(prefix, rows, input_ids.shape[1])
        return out


class Scripted(nn.Module):
    """The tiny model, run for real on the real cache, its logits replaced by a script's."""

    def __init__(self, inner: Any, script: Script) -> None:
        super().__init__()
        self.inner = inner
        self.mirror = Mirror(script)
        self.model = ScriptedBase(inner.model, self.mirror)
        self.config = inner.config
        self.head = nn.Identity()

    def get_output_embeddings(self) -> nn.Module:
        return self.head

    def forward(self, input_ids: torch.Tensor, past_key_values: Any = None, **kwargs: Any) -> Any:
        # input_ids: [B, T] -> logits [B, keep, V]
        prefix, rows = self.mirror.fed(input_ids, past_key_values)
        out = self.inner(input_ids=input_ids, past_key_values=past_key_values, **kwargs)
        if len(rows) == 1:
            self.mirror.raw = out.logits[0, -1].detach().clone()
        out.logits = self.mirror.scripted(prefix, rows, out.logits.shape[1])
        return out


class Settled(concurrent.futures.ThreadPoolExecutor):
    """A query pool whose answers are in before ``submit`` returns.

    A signature answer is collected at the first step it is ``done()``; settling
    it makes that the very next step, so the hint's place is deterministic.
    """

    def submit(  # type: ignore[override]
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        future = super().submit(fn, *args, **kwargs)
        concurrent.futures.wait([future])
        return future


class Deferred(concurrent.futures.ThreadPoolExecutor):
    """A query pool that answers at once but hands the answers over only on ``release``."""

    def __init__(self) -> None:
        super().__init__(1)
        self.held: list[tuple[concurrent.futures.Future[Any], Callable[[], Any]]] = []

    def submit(  # type: ignore[override]
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self.held.append((future, lambda: fn(*args, **kwargs)))
        return future

    def release(self) -> None:
        for future, answer in self.held:
            if not future.cancelled():  # given up on (a budget spent, a rewind)
                future.set_result(answer())
        self.held.clear()


class Spy:
    """The hook the engine calls: the steerer, plus a copy of the cache after each steer."""

    def __init__(self, steerer: Steerer, seen: Callable[[str], None] | None = None) -> None:
        self.steerer = steerer
        self.seen = seen  # told the text after each observed token
        self.snapshots: list[list[int]] = []

    def steer(self, engine: Engine, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        out = self.steerer.steer(engine, history, logits)
        self.snapshots.append(list(engine.cache.cached))
        return out

    def observe(self, token: int, text: str) -> None:
        self.steerer.observe(token, text)
        if self.seen is not None:
            self.seen(text)

    def rewind(self) -> int | None:
        return self.steerer.rewind()

    def quiet(self) -> bool:
        return self.steerer.quiet()

    def draft(self, history: torch.Tensor) -> list[int]:
        return self.steerer.draft(history)

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        return self.steerer.rows(history)


@dataclass
class Run:
    generation: Generation
    steerer: Steerer
    spy: Spy
    mirror: Mirror
    engine: Engine
    prompt_ids: list[int]
    seconds: float

    @property
    def text(self) -> str:
        return self.generation.text

    @property
    def trace(self) -> dict[str, Any]:
        return self.steerer.trace.as_dict()


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """The tiny model's passes are microseconds of work: on a shared two-core machine,
    torch's thread pool makes each one 10-50 times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def inner() -> nn.Module:
    model = tiny.tiny_model(seed=0, vocab=len(ALPHABET))
    assert model.config.final_logit_softcapping is None  # the identity head's logits stay
    return model


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    executor = concurrent.futures.ThreadPoolExecutor(2)
    yield executor
    executor.shutdown(wait=True, cancel_futures=True)


@pytest.fixture
def settled() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    executor = Settled(2)
    yield executor
    executor.shutdown(wait=True)


def steered(
    inner: nn.Module,
    script: Script,
    prompt: str,
    analysis: Any,
    pool: concurrent.futures.ThreadPoolExecutor,
    options: SteeringOptions | None = None,
    seen: Callable[[str], None] | None = None,
    facts: SteeringFacts | None = None,
) -> Run:
    """Generate ``prompt``'s continuation with a steerer; the document is the prompt + a newline.

    ``facts`` are what completions share (a session's remembered files); fresh by default."""
    model = Scripted(inner, script)
    engine = Engine(model, TOKENIZER)
    facts = facts or SteeringFacts(
        vocabulary=VOCABULARY, tokenize=tokenize, pool=pool, deprecations=DeprecationCache()
    )
    ids = TOKENIZER.encode(prompt)
    steerer = Steerer(
        analysis=analysis,
        facts=facts,
        options=options or SteeringOptions(),
        window=prompt,
        before=prompt,
        after="\n",
        prompt_length=len(ids),
    )
    spy = Spy(steerer, seen)
    started = time.perf_counter()
    generation = engine.generate(ids, max_new_tokens=60, hook=spy)
    return Run(generation, steerer, spy, model.mirror, engine, ids, time.perf_counter() - started)


def unsteered(inner: nn.Module, script: Script, prompt: str) -> Generation:
    engine = Engine(Scripted(inner, script), TOKENIZER)
    return engine.generate(TOKENIZER.encode(prompt), max_new_tokens=60)


def completions(*items: CompletionCandidate, at: str = "obj.") -> ScriptedAnalysis:
    return ScriptedAnalysis(completions={at: items})


def method(name: str, doc: str = "") -> CompletionCandidate:
    return CompletionCandidate(name, kind="method", documentation=doc)


def prop(name: str, doc: str = "") -> CompletionCandidate:
    return CompletionCandidate(name, kind="property", documentation=doc)


# --- the script itself --------------------------------------------------------------

HINTED = SteeringOptions(hints=True)  # hints are off by default
HEAD = "def f(obj):\n    x = obj"  # the model writes the dot: the trigger is in its text


def test_the_script_writes_its_likeliest_document_and_ignores_hint_lines(inner):
    script = Script({HEAD + ".updaet(1)\n": 0.9, HEAD + ".update(1)\n": 0.1})
    assert unsteered(inner, script, HEAD).text == ".updaet(1)\n"
    probs = script.probabilities(HEAD + ".upda")
    assert probs == pytest.approx({"e": 0.9, "t": 0.1})
    hinted = "def f(obj):\n    # note: a hint\n    x = obj.upda"
    assert script.probabilities(hinted) == probs


# --- the walk: the identifier after "." ---------------------------------------------

TYPO, RIGHT = HEAD + ".updaet(1)\n", HEAD + ".update(1)\n"


def test_the_walk_masks_a_known_receivers_name_to_a_candidate(inner, pool):
    script = Script({TYPO: 0.999, RIGHT: 0.001})
    analysis = completions(method("update"), method("items"))
    assert unsteered(inner, script, HEAD).text == ".updaet(1)\n"
    run = steered(inner, script, HEAD, analysis, pool)
    assert run.text == ".update(1)\n"
    walk = run.trace["walks"][0]
    assert walk["mode"] == "mask" and walk["typed"] == "" and walk["wrote"] == "update"
    # One token changed: the fifth, "e" (p .999) became "t" (p .001), by the walk.
    (changed,) = run.trace["changed"]
    assert changed == {
        "step": 5,
        "at": 5,
        "before": "e",
        "after": "t",
        "p_before": pytest.approx(0.999, abs=1e-4),
        "p_after": pytest.approx(0.001, abs=1e-4),
        "by": "walk",
    }


@pytest.mark.parametrize(("sure", "wrote"), [(0.9, ".update(1)\n"), (0.999, ".updaet(1)\n")])
def test_the_walk_boosts_a_dynamic_receivers_name_but_lets_a_sure_model_escape(
    inner, pool, sure, wrote
):
    """``__getattr__`` in the list: any name is possible, so "auto" boosts and never masks.
    A boost of 7 nats overturns odds of 9 to 1 (2.2 nats) but not 999 to 1 (6.9 nats,
    past the escape margin of 5)."""
    script = Script({TYPO: sure, RIGHT: 1 - sure})
    analysis = completions(method("update"), method("__getattr__"))
    run = steered(inner, script, HEAD, analysis, pool)
    assert run.text == wrote
    walk = run.trace["walks"][0]
    assert walk["mode"] == "boost"
    assert walk["wrote"] == ("update" if wrote == RIGHT[len(HEAD) :] else None)


@pytest.mark.parametrize("sure", [0.999, 0.9])
def test_a_list_of_dunders_only_is_not_steered_toward(inner, pool, sure):
    """Only ``object``'s dunders: Jedi did not infer the receiver's type (a dynamic
    attribute), so there is nothing to walk toward, and the model's name passes even
    where a boost of 7 nats would have overturned it (9 to 1)."""
    script = Script({HEAD + ".active\n": sure, HEAD + ".__dict__\n": 1 - sure})
    analysis = completions(method("__dict__"), method("__class__"), method("__repr__"))
    run = steered(inner, script, HEAD, analysis, pool)
    assert run.text == ".active\n"
    assert run.trace["walks"] == []
    assert "only dunders listed: the receiver's type is unknown" in run.trace["notes"]


def test_the_rankers_choice_is_followed_over_the_models_first_token(inner, pool):
    """The model slightly prefers ``items``; the function's name asks for ``update``."""
    head = "def update_record(obj):\n    x = obj"
    script = Script({head + ".items()\n": 0.55, head + ".update()\n": 0.45})
    analysis = completions(
        method("items", "The items of the record."), method("update", "Update it in place.")
    )
    assert unsteered(inner, script, head).text == ".items()\n"
    run = steered(inner, script, head, analysis, pool)
    assert run.text == ".update()\n"
    (ranking,) = run.trace["rankings"]
    assert ranking["intent"] == "update_record" and ranking["scored"] == 2
    top = {entry["name"]: entry for entry in ranking["top"]}
    assert ranking["top"][0]["name"] == "update" and top["update"]["relevance"] == 1.0
    # Whole-identifier log-probabilities from the one scoring pass (a token tree of both
    # names): each name's first character, then certainty, then "(" (an identifier
    # end) with certainty.
    assert top["items"]["logprob"] == pytest.approx(math.log(0.55), abs=1e-3)
    assert top["update"]["logprob"] == pytest.approx(math.log(0.45), abs=1e-3)
    (tree,) = [call for call in run.mirror.calls if call.tree]
    assert TOKENIZER.decode(tree.rows[0]) == "updateitems"  # the shortlist, best first
    assert run.trace["walks"][0]["followed"] == ["update"]


def test_the_rest_of_a_followed_name_is_fed_in_one_pass_and_writes_the_same(
    inner, pool, monkeypatch
):
    """Once the walk follows ``update``, the loop feeds the rest of it (``pdate``, one
    token per character here) in one forward pass, steering each position as it
    would one by one: the same text and the same changes, in fewer passes."""
    head = "def update_record(obj):\n    x = obj"
    script = Script({head + ".items()\n": 0.55, head + ".update()\n": 0.45})

    def analysis() -> ScriptedAnalysis:
        return completions(
            method("items", "The items of the record."), method("update", "Update it in place.")
        )

    drafted = steered(inner, script, head, analysis(), pool)
    monkeypatch.setattr(Steerer, "draft", lambda self, history: [])
    plain = steered(inner, script, head, analysis(), pool)
    assert drafted.text == plain.text == ".update()\n"
    assert drafted.trace["changed"] == plain.trace["changed"]
    assert plain.generation.drafted == 0
    assert drafted.generation.accepted >= len("pdate")
    assert len(drafted.mirror.calls) <= len(plain.mirror.calls) - len("pdate") + 1
    assert drafted.engine.cache.cached == plain.engine.cache.cached


def test_only_the_contenders_documentation_is_asked_and_it_decides_relevance(inner, pool):
    """Items are listed without documentation (each is a Jedi inference); once the name
    is due, the model's likeliest names and the ranker's are documented, and a summary
    line that says what the function does makes its member win."""
    head = "def normalize_record(obj):\n    x = obj"
    script = Script({head + ".items()\n": 0.55, head + ".tidy()\n": 0.45})
    fillers = [method(f"zz{n}") for n in range(20)]
    listed = completions(method("items"), method("tidy"), *fillers)
    documented = replace(
        listed,
        documentation={"tidy": "Normalize the record in place.", "zz19": "Normalize it."},
    )
    assert steered(inner, script, head, listed, pool).text == ".items()\n"
    run = steered(inner, script, head, documented, pool)
    assert run.text == ".tidy()\n"
    asked = documented.documented_for[-1]
    assert {"items", "tidy"} <= set(asked) and "zz19" not in asked
    assert len(asked) <= members.DOCUMENT_FIRST + members.DOCUMENT_RANKED
    top = {entry["name"]: entry for entry in run.trace["rankings"][0]["top"]}
    assert top["tidy"]["relevance"] > 0 and top["items"]["relevance"] == 0


def test_a_leader_no_documentation_can_unseat_is_walked_without_asking_for_it(inner, pool):
    """The model's favourite leads the others' log-probabilities by more than relevance
    (and, where a type is expected, the expected-type bonus) can add: its documentation
    changes no choice, so none is asked. Where the lead is smaller, it is asked."""
    head = "def normalize_record(obj):\n    x = obj"
    fillers = [method(f"zz{n}") for n in range(5)]
    listed = completions(method("items"), method("tidy"), *fillers)
    sure = Script({head + ".items()\n": 0.98, head + ".tidy()\n": 0.02})
    run = steered(inner, sure, head, listed, pool)
    assert run.text == ".items()\n"
    assert "documentation" not in [q["query"] for q in run.trace["queries"]]
    assert listed.documented_for == []
    assert run.trace["rankings"][0]["documented"] is False
    close = Script({head + ".items()\n": 0.6, head + ".tidy()\n": 0.4})
    run = steered(inner, close, head, listed, pool)
    assert "documentation" in [q["query"] for q in run.trace["queries"]]
    assert run.trace["rankings"][0]["documented"] is True
    # Where a type is expected, the bonus it could give is counted too: the same lead
    # no longer settles it.
    typed = "def as_payload(obj) -> dict:\n    return obj"
    expected = Script({typed + ".items()\n": 0.98, typed + ".tidy()\n": 0.02})
    run = steered(inner, expected, typed, listed, pool)
    assert "documentation" in [q["query"] for q in run.trace["queries"]]


def test_a_settled_leader_found_deprecated_has_the_others_documented_after_all(
    inner, pool, tmp_path
):
    """``dict`` leads by far, but its source deprecates it: the documentation is asked
    then, and the ranking goes on as if it had been asked first."""
    script = Script({DICT: 0.97, DUMP: 0.03})
    analysis = deprecating(tmp_path, dict=method("dict"), model_dump=method("model_dump"))
    run = steered(inner, script, HEAD, analysis, pool, SteeringOptions(hints=False, names=False))
    assert run.text == ".model_dump()\n"
    kinds = [q["query"] for q in run.trace["queries"]]
    assert kinds.index("documentation") > kinds.index("definitions")
    assert run.trace["rankings"][0]["documented"] is True


def test_where_a_type_is_expected_the_first_public_items_are_documented_too(inner, pool):
    """What each item returns is in its documentation (its signature): on a ``return``
    of a ``-> dict`` function, the first public items are documented, not only the
    contenders, so a member that returns a dict can win on its type."""
    head = "def as_payload(obj) -> dict:\n    return obj"
    script = Script({head + ".name\n": 0.6, head + ".dump()\n": 0.4})
    fillers = [method(f"zz{n}") for n in range(50)]
    analysis = completions(prop("name"), *fillers, method("dump"))
    run = steered(inner, script, head, analysis, pool)
    asked = set(analysis.documented_for[-1])
    public = ["name", *(f"zz{n}" for n in range(50)), "dump"]
    assert set(public[: members.DOCUMENT_TYPED]) <= asked
    assert "dump" in asked  # past the first 40, but a contender: the model's second
    assert run.trace["rankings"][0]["expected"] == "dict"


@pytest.mark.parametrize(
    ("item", "preferred", "other", "wrote"),
    [
        (prop("name"), ".name()\n", ".name\n", ".name\n"),  # a property is not called
        (method("update"), ".update\n", ".update()\n", ".update()\n"),  # a method is
    ],
)
def test_follow_by_kind_steers_the_token_after_the_name(inner, pool, item, preferred, other, wrote):
    script = Script({HEAD + preferred: 0.6, HEAD + other: 0.4})
    analysis = completions(item)
    off = steered(inner, script, HEAD, analysis, pool, SteeringOptions(follow_kind=False))
    assert off.text == preferred
    run = steered(inner, script, HEAD, analysis, pool)
    assert run.text == wrote
    (changed,) = run.trace["changed"]
    assert changed["at"] == len(item.name) + 1 and changed["by"] == "walk"
    after_name = len(item.name) + 1
    assert (changed["before"], changed["after"]) == (preferred[after_name], wrote[after_name])


@pytest.mark.parametrize(
    ("head", "after"),
    [
        ("@obj", "\ndef g():\n    pass\n"),  # a decorator: ``@functools.cache``
        ("def f(obj):\n    return sorted(x, key=obj", ")\n"),  # a keyword argument's value
    ],
)
def test_a_method_passed_as_a_value_is_not_made_a_call(inner, pool, head, after):
    named, called = head + ".update" + after, head + ".update()" + after
    script = Script({named: 0.6, called: 0.4})
    analysis = completions(method("update"))
    run = steered(inner, script, head, analysis, pool)
    assert run.text == named[len(head) :]
    assert analysis.calls  # the walk was steered: the items were asked
    assert run.trace["walks"][0]["followed"] == ["update"]
    assert run.trace["changed"] == []
    # Where the expression is not passed, the same method is called.
    plain = "def f(obj):\n    x = obj"
    script = Script({plain + ".update\n": 0.6, plain + ".update()\n": 0.4})
    assert steered(inner, script, plain, completions(method("update")), pool).text == ".update()\n"


# --- deprecation: read from the definitions' source ---------------------------------

MODEL_SOURCE = """from typing_extensions import deprecated


class Model:
    @deprecated("use model_dump instead")
    def dict(self):
        return {}

    def model_dump(self):
        return {}
"""
DICT, DUMP = HEAD + ".dict()\n", HEAD + ".model_dump()\n"


def deprecating(tmp_path: Path, **items: CompletionCandidate) -> ScriptedAnalysis:
    """Completions after ``obj.`` whose definitions are in a file where ``dict`` is deprecated."""
    source = tmp_path / "model.py"
    source.write_text(MODEL_SOURCE)
    where = DefinitionSource(str(source), 0)
    # definition_source is asked one character inside the name (at its last but one).
    return ScriptedAnalysis(
        completions={"obj.": list(items.values())},
        definitions={f"obj.{name[:-1]}": where for name in items},
    )


def test_deprecated_items_read_from_their_source_are_demoted(inner, pool, tmp_path):
    script = Script({DICT: 0.7, DUMP: 0.3})
    analysis = deprecating(tmp_path, dict=method("dict"), model_dump=method("model_dump"))
    plain = SteeringOptions(rank=False, hints=False, names=False)
    off = steered(inner, script, HEAD, analysis, pool, replace(plain, deprecation=False))
    assert off.text == ".dict()\n"
    run = steered(inner, script, HEAD, analysis, pool, plain)
    assert run.text == ".model_dump()\n"
    assert run.trace["walks"][0]["deprecated"] == ["dict"]
    assert "deprecated here: dict" in run.trace["notes"]
    asked = [call for call in analysis.calls if call[0] == "definition_source"]
    assert len(asked) == 2  # the two likeliest items, resolved in one round
    # The documentation of the contenders (listed without it), the prefetched files of
    # the items' classes (these items name none), then the two.
    assert [q["outcome"] for q in run.trace["queries"]] == ["ok"] * 5
    assert [q["query"] for q in run.trace["queries"]] == [
        "completions",
        "documentation",
        "definitions",
        "definition",
        "definition",
    ]
    assert analysis.documented_for[-1] == ("dict", "model_dump")


def test_a_deprecated_name_the_ranker_favours_is_resolved_by_name_and_its_replacement_wins(
    inner, pool, tmp_path
):
    """Items without a defining class (the analysis instance does not resolve them
    eagerly) are resolved one by one: the model's likeliest two (fields here) and the
    ranker's. The function's name asks for ``dict``, which is deprecated; its
    replacement inherits the support and is written."""
    head = "def as_dict(obj):\n    x = obj"
    script = Script(
        {
            head + ".name\n": 0.4,
            head + ".title\n": 0.3,
            head + ".dict()\n": 0.2,
            head + ".model_dump()\n": 0.1,
        }
    )
    source = tmp_path / "model.py"
    source.write_text(MODEL_SOURCE)
    where = DefinitionSource(str(source), 0)
    analysis = ScriptedAnalysis(
        completions={"obj.": [prop("name"), prop("title"), method("dict"), method("model_dump")]},
        definitions={"obj.dic": where, "obj.model_dum": where},
    )
    facts = SteeringFacts(
        vocabulary=VOCABULARY, tokenize=tokenize, pool=pool, deprecations=DeprecationCache()
    )
    options = SteeringOptions(hints=False)
    assert unsteered(inner, script, head).text == ".name\n"
    run = steered(inner, script, head, analysis, pool, options, facts=facts)
    assert run.text == ".model_dump()\n"
    asked = [call[1] for call in analysis.calls if call[0] == "definition_source"]
    assert any(text.endswith("obj.dict\n") for text in asked)  # the ranker's contender
    assert run.trace["walks"][0]["deprecated"] == ["dict"]
    assert run.trace["walks"][0]["followed"] == ["model_dump"]
    # The same list again (the same receiver type): every file is known by now.
    analysis.calls.clear()
    again = steered(inner, script, head, analysis, pool, options, facts=facts)
    assert again.text == ".model_dump()\n"
    assert again.trace["walks"][0]["deprecated"] == ["dict"]
    assert [call for call in analysis.calls if call[0] == "definition_source"] == []


def test_the_rankers_choice_in_a_static_list_is_followed_past_what_a_boost_overturns(
    inner, pool, tmp_path
):
    """9.2 nats separate ``dict`` from ``model_dump``: a boost of 7 would not overturn
    them, but the list is static and the ranker has chosen, so the walk masks to it."""
    script = Script({DICT: 0.9999, DUMP: 0.0001})
    analysis = deprecating(tmp_path, dict=method("dict"), model_dump=method("model_dump"))
    run = steered(inner, script, HEAD, analysis, pool, SteeringOptions(hints=False))
    assert run.text == ".model_dump()\n"
    assert run.trace["walks"][0]["followed"] == ["model_dump"]
    assert run.trace["changed"][0]["by"] == "walk"


# A decorator the static reader does not know: only importing the module shows it.
RUNTIME_SOURCE = """def _retired(message):
    def mark(function):
        function.__deprecated__ = message
        return function
    return mark


class Model:
    @_retired("use model_dump instead")
    def dict(self):
        return {}

    def model_dump(self):
        return {}
"""


def test_a_runtime_probe_the_first_completion_starts_steers_the_second(inner, pool, tmp_path):
    """Opt-in: the first completion reads nothing statically, starts the probe and is not
    delayed by it; the next completion of that class finds ``dict`` deprecated."""
    script = Script({DICT: 0.7, DUMP: 0.3})
    source = tmp_path / "runtime_model.py"
    source.write_text(RUNTIME_SOURCE)
    where = DefinitionSource(str(source), RUNTIME_SOURCE.splitlines().index("    def dict(self):"))
    analysis = ScriptedAnalysis(
        completions={"obj.": [method("dict"), method("model_dump")]},
        definitions={"obj.dic": where, "obj.model_dum": where},
    )
    facts = SteeringFacts(
        vocabulary=VOCABULARY,
        tokenize=tokenize,
        pool=pool,
        deprecations=DeprecationCache(),
        runtime=RuntimeDeprecations(sys.executable, timeout=20.0),
    )
    options = SteeringOptions(rank=False, hints=False)
    off = steered(inner, script, HEAD, analysis, pool, options, facts=facts)
    assert off.text == ".dict()\n" and facts.runtime_groups == {}  # not asked for: no probe
    options = replace(options, runtime_deprecation=True)
    first = steered(inner, script, HEAD, analysis, pool, options, facts=facts)
    assert first.text == ".dict()\n" and first.trace["walks"][0]["deprecated"] == []
    assert "runtime deprecation check started: runtime_model.py" in first.trace["notes"]
    deadline = time.monotonic() + 30
    while not facts.runtime_found and time.monotonic() < deadline:
        time.sleep(0.05)
    assert facts.runtime_found == {
        (str(source), "Model"): {
            "dict": Deprecation("use model_dump instead", "model_dump", "runtime"),
        }
    }
    second = steered(inner, script, HEAD, analysis, pool, options, facts=facts)
    assert second.text == ".model_dump()\n"
    assert second.trace["walks"][0]["deprecated"] == ["dict"]
    assert "deprecated at runtime: dict" in second.trace["notes"]
    assert not any("check started" in note for note in second.trace["notes"])  # once


def test_an_item_the_server_tags_deprecated_is_demoted_without_reading_a_file(inner, pool):
    script = Script({DICT: 0.7, DUMP: 0.3})
    tagged = CompletionCandidate("dict", kind="method", deprecated=True)
    analysis = completions(tagged, method("model_dump"))
    run = steered(inner, script, HEAD, analysis, pool, SteeringOptions(rank=False, hints=False))
    assert run.text == ".model_dump()\n"
    assert run.trace["walks"][0]["deprecated"] == ["dict"]


# --- interrupts: hints spliced into the cache ---------------------------------------


def line_start(prompt: str) -> int:
    """The index, in the prompt's ids (BOS first), of its last line's first token."""
    return 1 + prompt.rindex("\n") + 1


def fresh_logits(inner: Any, tokens: list[int]) -> torch.Tensor:
    """The real model's last logits for ``tokens`` prefilled from scratch. -> [V]"""
    with torch.inference_mode():
        return inner(input_ids=torch.tensor([tokens])).logits[0, -1]  # type: ignore[no-any-return]


def test_engine_splice_inserts_without_touching_the_cache_before_it(inner):
    """The real model alone: the spliced cache is the one a fresh prefill gives."""
    engine = Engine(inner, TOKENIZER)
    prompt = "def f(x):\n    return x"
    ids = TOKENIZER.encode(prompt)
    engine.generate(ids, max_new_tokens=1)  # the cache now holds the prompt
    at, insert = line_start(prompt), tokenize("    # hint\n")
    logits = engine.cache.splice(at, 0, insert)
    assert engine.cache.cached == [*ids[:at], *insert, *ids[at:]]
    assert torch.allclose(logits[0], fresh_logits(inner, engine.cache.cached), atol=1e-4)
    logits = engine.cache.splice(at, len(insert), [])
    assert engine.cache.cached == ids
    assert torch.allclose(logits[0], fresh_logits(inner, ids), atol=1e-4)


def test_a_deprecated_favourite_interrupts_with_a_hint_above_the_line(inner, pool, tmp_path):
    script = Script({DICT: 0.7, DUMP: 0.3})
    analysis = deprecating(tmp_path, dict=method("dict"), model_dump=method("model_dump"))
    run = steered(inner, script, HEAD, analysis, pool, HINTED)
    assert run.text == ".model_dump()\n"
    hint = "    # note: dict is deprecated; use model_dump\n"
    assert run.trace["hints"] == [{"kind": "deprecation", "text": hint.strip(), "replaced": False}]
    (interrupt,) = run.trace["interrupts"]
    assert interrupt["reason"] == "deprecation hint" and interrupt["at"] == 1
    assert interrupt["reprefilled"] == len("    x = obj.")  # the current line only
    # The cache: the prompt up to the line start untouched, the hint, then the line.
    at = line_start(HEAD)
    logical = [*run.prompt_ids, *run.generation.token_ids]
    assert run.engine.cache.cached == [*logical[:at], *tokenize(hint), *logical[at:]]
    assert run.mirror.tokens == run.engine.cache.cached
    # The real KV cache, cropped and prefilled again, is the one a fresh prefill gives.
    assert run.mirror.raw is not None
    assert torch.allclose(run.mirror.raw, fresh_logits(inner, run.engine.cache.cached), atol=1e-4)
    assert "#" not in run.text and "deprecated" not in run.text


def test_a_hint_left_in_the_cache_does_not_leak_into_the_next_request(inner, pool, tmp_path):
    script = Script({DICT: 0.7, DUMP: 0.3})
    analysis = deprecating(tmp_path, dict=method("dict"), model_dump=method("model_dump"))
    run = steered(inner, script, HEAD, analysis, pool, HINTED)
    assert any(call[0] == "definition_source" for call in analysis.calls)
    again = run.engine.generate(run.prompt_ids, max_new_tokens=60)
    # The shared prefix ends where the hint was (and its indentation, which is the line's).
    assert again.reused_tokens == line_start(HEAD) + len("    ")
    assert again.text == unsteered(inner, script, HEAD).text == ".dict()\n"
    assert run.engine.cache.cached == [*run.prompt_ids, *again.token_ids]


SIG = "def g(total):\n    y = 1\n    return scale"
SIGNATURE = ScriptedAnalysis(signatures={"scale(": Signature("scale(value, factor) -> int")})
SIG_HINT = "    # signature: scale(value, factor) -> int\n"


def test_a_signature_hint_is_spliced_in_front_of_the_line_and_removed_when_the_call_closes(
    inner, settled
):
    script = Script({SIG + "(total, 2)\n": 1.0})
    run = steered(inner, script, SIG, SIGNATURE, settled, HINTED)
    assert run.text == "(total, 2)\n" == unsteered(inner, script, SIG).text  # resumed as before
    at, hint, line = line_start(SIG), tokenize(SIG_HINT), tokenize("    return scale(")
    prompt = run.prompt_ids
    # Placed at the step after "(": everything before the line start unchanged.
    placed = run.spy.snapshots[1]
    assert placed == [*prompt[:at], *hint, *line]
    # Only the hint and the current line were prefilled again, on the cache cropped there.
    splice = run.mirror.calls.index(Call(at, [[*hint, *line]]))
    # The call closed at ")": the next step spliced the hint out, prefilling the line again.
    closed = len("(total, 2)")
    assert run.spy.snapshots[closed - 1] == placed + tokenize("total, 2")
    assert run.spy.snapshots[closed] == [*prompt, *tokenize("(total, 2)")]
    removal = run.mirror.calls.index(Call(at, [tokenize("    return scale(total, 2)")]))
    assert splice < removal
    assert [i["reason"] for i in run.trace["interrupts"]] == [
        "signature hint",
        "signature hint removed",
    ]
    assert run.trace["interrupts"][0]["reprefilled"] == len(line)
    assert run.trace["hints"] == [
        {"kind": "signature", "text": SIG_HINT.strip(), "replaced": False}
    ]
    # Every pass but the prompt's, the splice's and the removal's fed one token.
    longer = [c for c in run.mirror.calls[1:] if len(c.rows[0]) > 1]
    assert longer == [run.mirror.calls[splice], run.mirror.calls[removal]]
    # The real KV cache after both splices is the one a fresh prefill gives.
    assert run.mirror.raw is not None
    assert torch.allclose(run.mirror.raw, fresh_logits(inner, run.engine.cache.cached), atol=1e-4)


def test_the_model_reads_the_hint_it_resumes_with(inner, settled):
    """The re-prefilled cache holds the hint: a model that reads it writes both arguments."""
    short, both = SIG + "(total)\n", SIG + "(total, 2)\n"
    script = Script({short: 0.99, both: 0.01}, hinted={both: 1.0})
    assert unsteered(inner, script, SIG).text == "(total)\n"
    run = steered(inner, script, SIG, SIGNATURE, settled, HINTED)
    assert run.text == "(total, 2)\n"
    assert "#" not in run.text and "signature" not in run.text


def test_comments_are_suppressed_while_a_hint_is_shown(inner, settled):
    """A model that would copy the hint's comment style never writes ``#``."""
    script = Script({SIG + "(total, 2)\n": 1.0}, echo=0.6)
    run = steered(inner, script, SIG, SIGNATURE, settled, HINTED)
    assert run.text == "(total, 2)\n"
    changed = run.trace["changed"]
    assert changed and all(c["by"] == "hint" and c["before"] == "#" for c in changed)
    # The last: the hint was taken out after ")" (raw logits still saw it) before "\n".
    assert [c["after"] for c in changed] == list("otal, 2)\n")
    assert changed[0]["p_before"] == pytest.approx(0.6, abs=1e-4)
    assert changed[0]["p_after"] == pytest.approx(0.4, abs=1e-4)


NESTED = "from lib import inner, outer\n\n\ndef g(total):\n    return outer"
NESTED_ANALYSIS = ScriptedAnalysis(
    signatures={"outer(": Signature("outer(a, b)"), "inner(": Signature("inner(x)")}
)


def test_a_new_signature_hint_replaces_the_old_one(inner, settled):
    script = Script({NESTED + "(inner(1), 2)\n": 1.0})
    run = steered(inner, script, NESTED, NESTED_ANALYSIS, settled, HINTED)
    assert run.text == "(inner(1), 2)\n"
    at = line_start(NESTED)
    prompt = run.prompt_ids
    outer, inner_hint = (
        tokenize("    # signature: outer(a, b)\n"),
        tokenize("    # signature: inner(x)\n"),
    )
    assert run.spy.snapshots[1] == [*prompt[:at], *outer, *tokenize("    return outer(")]
    replaced = len("(inner(")
    assert run.spy.snapshots[replaced] == [
        *prompt[:at],
        *inner_hint,
        *tokenize("    return outer(inner("),
    ]
    assert [h["replaced"] for h in run.trace["hints"]] == [False, True]
    # inner's ")" closed the call its hint belongs to: gone at the next step.
    assert run.spy.snapshots[len("(inner(1)")] == [*prompt, *tokenize("(inner(1)")]


def test_the_interrupt_cap_skips_further_hints(inner, settled):
    script = Script({NESTED + "(inner(1), 2)\n": 1.0})
    options = SteeringOptions(max_interrupts=1, hints=True)
    run = steered(inner, script, NESTED, NESTED_ANALYSIS, settled, options)
    assert run.text == "(inner(1), 2)\n"
    assert [h["text"] for h in run.trace["hints"]] == ["# signature: outer(a, b)"]
    assert "signature hint skipped: interrupt cap reached" in run.trace["notes"]
    # outer's hint stays until outer's own ")" closes.
    assert run.spy.snapshots[len("(inner(1)")][line_start(NESTED)] == TOKENIZER.vocab[" "]
    assert run.engine.cache.cached == [*run.prompt_ids, *tokenize("(inner(1), 2)\n")]


# --- time: query timeouts, the completion's budget, the query cap ------------------

TWICE = HEAD + ".updaet().updaet()\n"  # two dots: two triggers
TWICE_RIGHT = HEAD + ".update().updaet()\n"


class TimesOut(ScriptedAnalysis):
    """A server that gives up at once: the analysis raises its own timeout."""

    def completions_at(
        self, text: str, offset: int, *, timeout: float = 0.15, documented: bool = True
    ) -> Any:
        self.calls.append(("completions_at", text, offset))
        raise AnalysisTimeout(f"completions_at took over {timeout:.3f}s")


class Crashes(ScriptedAnalysis):
    """A broken analysis: one of its questions raises something unexpected."""

    broken: str = "completions_at"

    def completions_at(
        self, text: str, offset: int, *, timeout: float = 0.15, documented: bool = True
    ) -> Any:
        if self.broken == "completions_at":
            raise RuntimeError("upstream crashed")
        return super().completions_at(text, offset, timeout=timeout)

    def definition_source(self, text: str, offset: int, *, timeout: float = 0.15) -> Any:
        if self.broken == "definition_source":
            raise RuntimeError("upstream crashed")
        return super().definition_source(text, offset, timeout=timeout)


ITEMS = [method("update"), method("items")]


def test_the_analysis_giving_up_leaves_the_name_unsteered(inner, pool):
    script = Script({TYPO: 0.999, RIGHT: 0.001})
    analysis = TimesOut(completions={"obj.": ITEMS})
    run = steered(inner, script, HEAD, analysis, pool, SteeringOptions(query_timeout=0.05))
    assert run.text == unsteered(inner, script, HEAD).text == ".updaet(1)\n"
    (query,) = [q for q in run.trace["queries"] if q["query"] == "completions"]
    assert query["outcome"] == "timeout"  # past its own limit, query_timeout
    # On its pool thread the question also had the time it may wait to be due.
    assert query.get("error") == f"completions_at took over {0.05 + ASKED_AHEAD:.3f}s"
    assert run.trace["walks"] == [] and run.trace["changed"] == []


@pytest.mark.parametrize("latency", [0.0, 0.05, 0.3, 0.6])
def test_a_due_answer_is_waited_for_so_the_completion_does_not_depend_on_its_latency(
    inner, pool, latency
):
    """The race issue 23 found: an answer slower than 250 ms used to leave the name
    unsteered (the loop waited that long, then decoded on), so the name written
    depended on the machine's load. Now the loop waits for a due answer within the
    completion's budget: every latency within it gives what an instant answer gives."""
    script = Script({TYPO: 0.999, RIGHT: 0.001})
    analysis = ScriptedAnalysis(completions={"obj.": ITEMS}, latency=latency)
    options = SteeringOptions(query_timeout=1.0, budget=2.0)
    run = steered(inner, script, HEAD, analysis, pool, options)
    assert run.text == ".update(1)\n"
    (query,) = [q for q in run.trace["queries"] if q["query"] == "completions"]
    assert query["outcome"] == "ok"
    assert [w["followed"] for w in run.trace["walks"]] == [["update"]]
    if latency >= 0.3:
        assert query["blocked_ms"] >= (latency - 0.1) * 1000  # waited, not raced past


def test_the_time_budget_stops_waiting_and_then_stops_asking(inner, pool):
    script = Script({TWICE: 0.999, TWICE_RIGHT: 0.001})
    slow = ScriptedAnalysis(completions={"obj.": ITEMS, ").": ITEMS}, latency=0.5)
    options = SteeringOptions(query_timeout=1.0, budget=0.03, hints=False)
    run = steered(inner, script, HEAD, slow, pool, options)
    assert run.text == unsteered(inner, script, HEAD).text == ".updaet().updaet()\n"
    (query,) = [q for q in run.trace["queries"] if q["query"] == "completions"]
    assert query["outcome"] == "timeout"  # cut at the budget's 30 ms, not the query's 1 s
    assert 30 <= run.trace["waited_ms"] < 300
    assert len(run.trace["triggers"]) == 2
    assert run.trace["notes"] == [f"completions at {len('.updaet().')}: time budget spent (line)"]


def test_the_query_cap_leaves_later_triggers_unasked(inner, pool):
    script = Script({TWICE: 0.999, TWICE_RIGHT: 0.001})
    analysis = ScriptedAnalysis(completions={"obj.": ITEMS, ").": ITEMS})
    options = SteeringOptions(max_queries=1, hints=False, names=False)
    run = steered(inner, script, HEAD, analysis, pool, options)
    assert run.text == ".update().updaet()\n"  # the first name steered, the second not
    assert [call[0] for call in analysis.calls] == ["completions_at"]  # no definition either
    asked = [t["offset"] for t in run.trace["triggers"] if t["query"] == "completions"]
    assert asked == [1, len(".update().")]
    assert f"completions at {len('.update().')}: query cap reached (line)" in run.trace["notes"]


LINES = HEAD + ".updaet()\n    obj.updaet()\n"  # a trigger on each line
LINES_HALF = HEAD + ".update()\n    obj.updaet()\n"
LINES_RIGHT = HEAD + ".update()\n    obj.update()\n"


@pytest.mark.parametrize(
    ("total", "wrote"),
    [(24, ".update()\n    obj.update()\n"), (1, ".update()\n    obj.updaet()\n")],
)
def test_the_query_cap_holds_per_line_within_a_cap_per_completion(inner, pool, total, wrote):
    """Issue 24's budget per line: one question a line steers both lines of a body,
    unless the completion's own cap is spent on the first."""
    script = Script({LINES: 0.6, LINES_HALF: 0.39, LINES_RIGHT: 0.01})
    analysis = ScriptedAnalysis(completions={"obj.": ITEMS})
    options = SteeringOptions(max_queries=1, max_queries_total=total, hints=False, names=False)
    run = steered(inner, script, HEAD, analysis, pool, options)
    assert run.text == wrote
    assert [c[0] for c in analysis.calls] == ["completions_at"] * min(total, 2)
    capped = [note for note in run.trace["notes"] if "query cap" in note]
    second = len(".update()\n    obj.")
    reached = f"completions at {second}: query cap reached (completion)"
    assert capped == ([] if total > 1 else [reached])


def test_the_time_budget_holds_per_line_within_a_budget_per_completion(inner, pool):
    """The first line's slow answer spends its line's budget, not the second line's."""
    script = Script({LINES: 0.999, LINES_RIGHT: 0.001})
    slow = ScriptedAnalysis(completions={"obj.": ITEMS}, latency=0.05)
    options = SteeringOptions(budget=0.02, budget_total=1.0, hints=False, names=False)
    run = steered(inner, script, HEAD, slow, pool, options)
    timed = [q["outcome"] for q in run.trace["queries"] if q["query"] == "completions"]
    assert timed == ["timeout", "timeout"]  # each line waited, each for its own 20 ms
    assert 40 <= run.trace["waited_ms"] < 300
    spent = replace(options, budget_total=0.02)
    again = steered(inner, script, HEAD, slow, pool, spent)
    assert [q["query"] for q in again.trace["queries"]] == ["completions"]
    assert any(note.endswith("time budget spent (completion)") for note in again.trace["notes"])


@pytest.mark.parametrize(
    ("broken", "wrote"),
    [("completions_at", ".updaet(1)\n"), ("definition_source", ".update(1)\n")],
)
def test_an_analysis_that_raises_leaves_the_completion_to_finish(inner, pool, broken, wrote):
    """A crash in the completion query leaves that name unsteered; one in the
    deprecation lookup only loses the deprecation."""
    script = Script({TYPO: 0.999, RIGHT: 0.001})
    analysis = Crashes(completions={"obj.": ITEMS}, definitions={})
    analysis.broken = broken
    run = steered(inner, script, HEAD, analysis, pool)
    assert run.generation.stop == "eos" and run.text == wrote
    failed = [q for q in run.trace["queries"] if q["outcome"] == "error"]
    assert failed and all(q["error"] == "RuntimeError: upstream crashed" for q in failed)


def test_the_trace_records_triggers_queries_and_rankings(inner, pool):
    script = Script({TYPO: 0.999, RIGHT: 0.001})
    run = steered(inner, script, HEAD, completions(*ITEMS), pool, HINTED)
    assert run.trace["triggers"] == [
        {"kind": "completions_after_dot", "offset": 1, "query": "completions"},
        {"kind": "call_argument", "offset": len(".update("), "query": "signature"},
    ]
    completion = run.trace["queries"][0]
    assert completion["query"] == "completions" and completion["offset"] == 1
    assert completion["outcome"] == "ok" and completion["results"] == 2
    assert completion["latency_ms"] >= completion["blocked_ms"] >= 0
    # No documentation: ``update`` leads ``items`` by more than it could change. No
    # class named in the items' details: nothing prefetched; then the two likeliest
    # names were resolved (the script has no definitions: no result).
    assert run.trace["queries"][1]["query"] == "definitions"
    assert run.trace["queries"][1]["results"] == 0
    assert run.trace["rankings"][0]["documented"] is False
    assert [q["query"] for q in run.trace["queries"][2:4]] == ["definition", "definition"]
    assert all("results" not in q for q in run.trace["queries"][2:4])
    assert [r["name"] for r in run.trace["rankings"][0]["top"]] == ["update", "items"]
    assert run.trace["waited_ms"] >= 0 and run.trace["hints"] == []


# --- the cursor itself as a trigger, and known bugs --------------------------------


def test_a_name_after_a_dot_at_the_end_of_the_prompt_is_steered_from_its_first_token(inner, pool):
    """The editor's commonest case: the cursor right after ``obj.``."""
    prompt = HEAD + "."
    script = Script({prompt + "xs(1)\n": 0.9, prompt + "update(1)\n": 0.1})
    assert unsteered(inner, script, prompt).text == "xs(1)\n"
    run = steered(inner, script, prompt, completions(*ITEMS), pool)
    assert run.text == "update(1)\n"
    assert run.trace["triggers"][0] == {
        "kind": "completions_after_dot",
        "offset": 0,
        "query": "completions",
    }


def test_the_cursors_question_is_timed_from_when_it_is_due_not_from_the_prefill(
    inner, pool, monkeypatch
):
    """The cursor's list is asked before the prefill. On two slow cores a 1,000-token
    prefill takes 3 to 7.5 s, and Jedi's first list of a library answered during it
    was timed out at ``query_timeout`` after the asking: whether the name was steered
    depended on the machine's load (stop 34: 1 of 8 names differed between two runs,
    11 of 16 first lists timed out). Its limit now counts from when it is due."""
    prompt = HEAD + "."
    script = Script({prompt + "xs(1)\n": 0.9, prompt + "update(1)\n": 0.1})
    forward, slept = Scripted.forward, []

    def slow_prefill(self: Scripted, *args: Any, **kwargs: Any) -> Any:
        if not slept:  # the prefill: longer than the question's own limit
            slept.append(time.sleep(0.5))
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(Scripted, "forward", slow_prefill)
    analysis = ScriptedAnalysis(completions={"obj.": ITEMS}, latency=0.4)
    run = steered(inner, script, prompt, analysis, pool, SteeringOptions(query_timeout=0.25))
    assert slept and run.text == "update(1)\n"
    (query,) = [q for q in run.trace["queries"] if q["query"] == "completions"]
    assert query["outcome"] == "ok" and query["latency_ms"] >= 400  # past 0.25 s from asking
    assert query["blocked_ms"] < 250  # the loop waited less than the limit once it was due


def test_a_name_the_user_began_is_steered_from_the_models_first_token(inner, pool):
    """``obj.up|``: the server is asked at the dot (every member, cached per trigger), and the
    items that continue ``up`` are walked from what is still to write."""
    prompt = HEAD + ".up"
    script = Script({prompt + "dtae(1)\n": 0.999, prompt + "date(1)\n": 0.001})
    analysis = completions(method("update"), method("upgrade"), method("items"), at="obj.")
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == "date(1)\n"
    assert run.trace["walks"][0]["typed"] == "up" and run.trace["walks"][0]["wrote"] == "update"


def test_a_name_in_an_f_strings_replacement_field_is_walked(inner, pool):
    head = 'def f(obj):\n    return f"{obj'
    script = Script({head + '.updaet}"\n': 0.999, head + '.update}"\n': 0.001})
    analysis = ScriptedAnalysis(completions={'f"{obj.': (method("update"), method("items"))})
    run = steered(inner, script, head, analysis, pool)
    assert run.text == '.update}"\n'
    assert run.trace["walks"][0]["wrote"] == "update"


def test_a_dot_right_after_a_walked_name_triggers_the_next_walk(inner, pool):
    """``obj.config.name``: the second dot is written while the first walk is still on."""
    script = Script({HEAD + ".config.mame\n": 0.6, HEAD + ".config.name\n": 0.4})
    analysis = ScriptedAnalysis(
        completions={"obj.": [prop("config")], "config.": [prop("name"), prop("size")]}
    )
    run = steered(inner, script, HEAD, analysis, pool)
    assert run.text == ".config.name\n"


def test_a_signature_answer_that_arrives_after_its_call_closed_places_no_hint(inner):
    """The answer is held back until the model has written ``)``: the hint would only
    be spliced in, onto whatever line is current, and out again, spending an interrupt."""
    script = Script({SIG + "(total, 2)\n    w = 1\n": 1.0})
    pool = Deferred()
    run = steered(
        inner,
        script,
        SIG,
        SIGNATURE,
        pool,
        # Not the keyword stage, which would wait at ``)`` for the answer to count ``2``.
        options=SteeringOptions(keywords=False),
        seen=lambda text: pool.release() if text.endswith(")") else None,
    )
    assert run.text == "(total, 2)\n    w = 1\n"
    assert run.trace["hints"] == [] and run.trace["interrupts"] == []


def test_the_files_of_the_items_classes_are_prefetched_and_remembered(inner, pool, tmp_path):
    """Items that name their class (Jedi's ``detail``): its file is looked up as soon as the
    list arrives, and a later completion of the same class asks no definition at all."""
    script = Script({DICT: 0.7, DUMP: 0.3})
    detail = "lib.Model"
    analysis = deprecating(
        tmp_path,
        dict=replace(method("dict"), detail=detail),
        model_dump=replace(method("model_dump"), detail=detail),
    )
    facts = SteeringFacts(
        vocabulary=VOCABULARY, tokenize=tokenize, pool=pool, deprecations=DeprecationCache()
    )
    options = SteeringOptions(rank=False, hints=False, names=False)  # no scope query
    first = steered(inner, script, HEAD, analysis, pool, options, facts=facts)
    assert first.text == ".model_dump()\n"
    asked = ["completions", "documentation", "definitions"]
    assert [q["query"] for q in first.trace["queries"]] == asked
    assert first.trace["queries"][2]["results"] == 1
    assert detail in facts.defined_in
    second = steered(inner, script, HEAD, analysis, pool, options, facts=facts)
    assert second.text == ".model_dump()\n"
    assert [q["query"] for q in second.trace["queries"]] == asked
    assert second.trace["queries"][2]["results"] == 0  # known: nothing to look up


def test_a_group_nested_in_another_shares_its_file_when_prefetched(inner, pool, tmp_path):
    """``Model.__init__``'s fields are in ``Model``'s file: the list's two groups are
    resolved by one definition."""
    script = Script({DICT: 0.7, DUMP: 0.3})
    analysis = deprecating(
        tmp_path,
        dict=replace(method("dict"), detail="lib.Model"),
        model_dump=replace(method("model_dump"), detail="lib.Model.__init__"),
    )
    facts = SteeringFacts(
        vocabulary=VOCABULARY, tokenize=tokenize, pool=pool, deprecations=DeprecationCache()
    )
    options = SteeringOptions(rank=False, hints=False, names=False)
    run = steered(inner, script, HEAD, analysis, pool, options, facts=facts)
    assert run.text == ".model_dump()\n"
    assert run.trace["walks"][0]["deprecated"] == ["dict"]
    assert len([call for call in analysis.calls if call[0] == "definition_source"]) == 1
    assert facts.defined_in["lib.Model.__init__"] == facts.defined_in["lib.Model"]


def test_contenders_whose_groups_nest_are_resolved_by_one_definition(inner, pool, tmp_path):
    """Listed without their classes, the contenders learn them with their documentation
    (as pylsp's resolve gives Jedi's ``detail``): ``dict`` is a field set in
    ``Model.__init__``, ``model_dump`` a method of ``Model``. One definition, of the
    outer group, tells both files, and ``dict``'s deprecation is read from it."""
    script = Script({DICT: 0.7, DUMP: 0.3})
    analysis = deprecating(tmp_path, dict=method("dict"), model_dump=method("model_dump"))
    analysis.details = {"dict": "lib.Model.__init__", "model_dump": "lib.Model"}
    plain = SteeringOptions(rank=False, hints=False, names=False)
    run = steered(inner, script, HEAD, analysis, pool, plain)
    assert run.text == ".model_dump()\n"
    assert run.trace["walks"][0]["deprecated"] == ["dict"]
    asked = [call[1] for call in analysis.calls if call[0] == "definition_source"]
    assert len(asked) == 1 and asked[0].endswith("obj.model_dump\n")
    assert [q["query"] for q in run.trace["queries"]] == [
        "completions",
        "documentation",
        "definitions",
        "definition",
    ]


def test_a_name_nested_in_a_package_may_be_another_file():
    """A class's or a module's file holds what is nested in its name; a package's
    ``__init__`` need not (``lib.sub.Thing`` is in ``lib/sub.py``)."""
    assert deprecations.nested_in("lib.Model.__init__", "lib.Model")
    assert not deprecations.nested_in("lib.Models", "lib.Model")
    assert not deprecations.nested_in("4880c64c17c8:help_options", "4880c64c17c8")
    known = {"lib.Model": "/v/lib/model.py", "lib": "/v/lib/__init__.py"}
    assert deprecations.enclosing_file("lib.Model.__init__.x", known) == "/v/lib/model.py"
    assert deprecations.enclosing_file("lib.sub.Thing", known) is None
    assert deprecations.enclosing_file("lib.Model", {"lib": "/v/lib/__init__.pyi"}) is None
    assert deprecations.enclosing_file("lib.Model.f", {}, {"lib.Model": "/m.py"}) == "/m.py"
    assert deprecations.enclosing_file("a:b.c", {"a:b": "/m.py"}) is None


def test_dunder_contenders_ask_no_definition(inner, pool, tmp_path):
    """``object``'s dunders are never deprecated: the model's second choice here,
    ``__doc__``, is not resolved."""
    doc = HEAD + ".__doc__\n"
    script = Script({DICT: 0.6, doc: 0.4})
    analysis = deprecating(tmp_path, dict=method("dict"), __doc__=prop("__doc__"))
    plain = SteeringOptions(rank=False, hints=False, names=False)
    run = steered(inner, script, HEAD, analysis, pool, plain)
    asked = [call[1] for call in analysis.calls if call[0] == "definition_source"]
    assert len(asked) == 1 and asked[0].endswith("obj.dict\n")
    assert run.trace["walks"][0]["deprecated"] == ["dict"]


# --- undefined names: rewind at the statement's end and write the name again --------

CALLER = "def f(form, name):\n    data = form.get("
# A star import hides the module's names from a static reading: the analysis is asked.
STARRED = "from lib import *\n\n\n" + CALLER
SCOPE = ScriptedAnalysis(
    completions={"):\n    ": (CompletionCandidate("form"), CompletionCandidate("name"))}
)


def test_engine_rewind_leaves_the_cache_a_fresh_prefill_gives(inner):
    engine = Engine(inner, TOKENIZER)
    ids = TOKENIZER.encode("def f(x):\n    return x")
    engine.generate(ids, max_new_tokens=1)
    engine.cache.splice(len(ids), 0, tokenize("+1"))  # the cache now holds the prompt and "+1"
    logits = engine.cache.rewind(2)  # forget "+1", and feed the prompt's last token again
    assert engine.cache.cached == ids
    assert torch.allclose(logits[0], fresh_logits(inner, ids), atol=1e-4)
    with pytest.raises(ValueError, match="rewind"):
        engine.cache.rewind(len(ids))


@pytest.mark.parametrize(("prompt", "read"), [(CALLER, "static"), (STARRED, "asked")])
def test_an_undefined_name_is_written_again_from_the_names_in_scope(inner, pool, prompt, read):
    script = Script({prompt + "key)\n": 0.99, prompt + "name)\n": 0.01})
    assert unsteered(inner, script, prompt).text == "key)\n"
    analysis = ScriptedAnalysis(completions=SCOPE.completions)
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == "name)\n"
    (interrupt,) = run.trace["interrupts"]
    assert interrupt == {"at": 0, "reason": "undefined name 'key'", "rewound": 5}
    walk = run.trace["walks"][-1]
    assert walk["instead_of"] == "key" and walk["wrote"] == "name"
    (scope,) = [q for q in run.trace["queries"] if q["query"] == "scope"]
    asked = [call for call in analysis.calls if call[0] == "completions_at"]
    if read == "static":  # {f, form, name}, read from the document: nothing asked
        assert scope["static"] and scope["results"] == 3 and asked == []
    else:
        assert "static" not in scope and scope["results"] == 2 and len(asked) == 1
    # The cache is the one the rewritten text gives: nothing of "key" is left in it.
    assert run.engine.cache.cached == [*run.prompt_ids, *tokenize("name)\n")]


def test_names_in_scope_are_read_statically_inside_a_statement_over_several_lines(inner, pool):
    # The cursor's line alone, replaced, leaves ``form.get(`` open: the whole statement is.
    prompt = "def f(form, name):\n    data = form.get(\n        'a',"
    script = Script({prompt + ")\n    return key\n": 0.99, prompt + ")\n    return name\n": 0.01})
    analysis = ScriptedAnalysis(completions=SCOPE.completions)
    run = steered(inner, script, prompt, analysis, pool)
    assert run.text == ")\n    return name\n"
    (scope,) = [q for q in run.trace["queries"] if q["query"] == "scope"]
    assert scope["static"] and scope["results"] == 3  # f, form, name
    assert [call for call in analysis.calls if call[0] == "completions_at"] == []


def test_a_name_the_statement_binds_later_is_not_undefined(inner, pool):
    head = "def f(form, name):\n    total = sum("
    script = Script({head + "v for v in form)\n": 0.99, head + "name)\n": 0.01})
    run = steered(inner, script, head, SCOPE, pool)
    assert run.text == "v for v in form)\n"
    assert run.trace["interrupts"] == []


def test_a_name_bound_by_an_earlier_generated_statement_is_known(inner, pool):
    head = "def f(form, name):\n"
    body = "    key = 1\n    data = form.get(key)\n"
    scope = ScriptedAnalysis(completions={"):\n": (CompletionCandidate("form"),)})
    run = steered(inner, Script({head + body: 1.0}), head, scope, pool)
    assert run.text == body
    assert run.trace["interrupts"] == []


def test_no_rewind_without_the_names_in_scope_or_with_rewinds_off(inner, pool):
    script = Script({STARRED + "key)\n": 0.99, STARRED + "name)\n": 0.01})
    slow = ScriptedAnalysis(completions=SCOPE.completions, latency=0.5)
    past_budget = SteeringOptions(budget=0.1)  # not answered within the budget
    assert steered(inner, script, STARRED, slow, pool, past_budget).text == "key)\n"
    script = Script({CALLER + "key)\n": 0.99, CALLER + "name)\n": 0.01})
    off = SteeringOptions(max_rewinds=0)
    assert steered(inner, script, CALLER, SCOPE, pool, options=off).text == "key)\n"


@pytest.mark.parametrize("latency", [0.1, 0.5])
def test_a_scope_still_out_at_the_statements_end_is_waited_for_within_the_budget(
    inner, pool, latency
):
    script = Script({STARRED + "key)\n": 0.99, STARRED + "name)\n": 0.01})
    late = ScriptedAnalysis(completions=SCOPE.completions, latency=latency)
    run = steered(inner, script, STARRED, late, pool, SteeringOptions(budget=2.0))
    assert run.text == "name)\n"
    assert run.trace["waited_ms"] > 0


def test_rewinds_stop_at_the_cap(inner, pool):
    script = Script({CALLER + "key)\n": 0.9, CALLER + "kez)\n": 0.09, CALLER + "name)\n": 0.01})
    one = SteeringOptions(max_rewinds=1)
    run = steered(inner, script, CALLER, SCOPE, pool, options=one)
    # The first rewind demotes "k" and boosts the names in scope: "name" wins at once.
    assert run.text == "name)\n"
    assert len(run.trace["interrupts"]) == 1


def test_the_scope_is_asked_once_for_typing_on_one_line(inner, pool):
    """Typing on the cursor's line leaves the scope question as it was: asked once."""
    script = Script({STARRED + "key)\n": 0.99, STARRED + "name)\n": 0.01})
    analysis = ScriptedAnalysis(completions=SCOPE.completions)
    facts = SteeringFacts(
        vocabulary=VOCABULARY, tokenize=tokenize, pool=pool, deprecations=DeprecationCache()
    )
    first = steered(inner, script, STARRED, analysis, pool, facts=facts)
    second = steered(inner, script, STARRED, analysis, pool, facts=facts)
    assert first.text == second.text == "name)\n"
    scopes = [q for run in (first, second) for q in run.trace["queries"] if q["query"] == "scope"]
    assert [q["remembered"] for q in scopes] == [False, True]
    assert sum(1 for call in analysis.calls if call[0] == "completions_at") == 1


# --- repeated lines -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("    x = compute(a)\n    x = compute(a)\n", len("    x = compute(a)\n")),
        ("    # add one\n    y = 2\n    # add one\n", len("    # add one\n    y = 2\n")),
        ("    i += 1\n    j = 0\n    i += 1\n    j = 0\n", len("    i += 1\n    j = 0\n")),
        ("    i += 1\n    j = 0\n    i += 1\n", None),  # short lines: only a pair counts
        ("    total = total + 1\n    return total\n", None),
        ("        return None\n    else:\n        return None\n", None),  # two branches
        ("        )\n        )\n", None),  # punctuation repeats in correct code
        ("    else:\n    pass\n    else:\n    pass\n", len("    else:\n    pass\n")),
    ],
)
def test_a_repeated_line_or_pair_is_found_where_the_repeat_starts(text, start):
    assert repeated_from(text) == start


def ending_facts(pool: concurrent.futures.ThreadPoolExecutor) -> SteeringFacts:
    """Facts with the EOS among the tokens that end a completion (the repeated-line
    stage needs one to end on)."""
    return SteeringFacts(
        vocabulary=VOCABULARY,
        tokenize=tokenize,
        pool=pool,
        deprecations=DeprecationCache(),
        end_ids=frozenset({TOKENIZER.eos_token_id}),
    )


def test_a_completion_ends_before_its_first_repeated_line(inner, pool):
    head = "def f(n):\n"
    body = "    n = n + 1\n    n = n + 1\n    return n\n"
    script = Script({head + body: 1.0})
    assert unsteered(inner, script, head).text == body
    facts = ending_facts(pool)
    run = steered(inner, script, head, ScriptedAnalysis(), pool, facts=facts)
    assert run.text == "    n = n + 1\n"
    assert run.generation.stop == "eos"
    (interrupt,) = run.trace["interrupts"]
    assert interrupt["reason"] == "repeated line" and interrupt["at"] == len(run.text)
    assert interrupt["dropped_chars"] == len("    n = n + 1\n")
    assert run.steerer.cut_short()  # post-processing keeps its complete statements
    # Without end tokens to end on (a model without EOS) the stage stays out of the way.
    assert steered(inner, script, head, ScriptedAnalysis(), pool).text == body


def test_a_repeat_inside_a_list_ends_the_completion_open_and_it_is_kept_to_whole_statements(
    inner, pool
):
    """The same item twice in a list ends the completion mid-statement: the decode
    loop says it cut it short, and post-processing keeps the complete statements only."""
    head = "def f(es):\n"
    body = "    n = 1\n    kinds = [\n        es.Bad01,\n        es.Bad01,\n    ]\n"
    script = Script({head + body: 1.0})
    facts = ending_facts(pool)
    run = steered(inner, script, head, ScriptedAnalysis(), pool, facts=facts)
    assert run.text == "    n = 1\n    kinds = [\n        es.Bad01,\n"
    assert run.steerer.cut_short()
    kept = finalize(
        run.text,
        mode=CompletionMode.MULTI_LINE,
        line_prefix="",
        suffix="\n",
        block_indent=4,
        max_lines=8,
        truncated=run.steerer.cut_short(),
    )
    assert kept == "    n = 1"
    assert not steered(
        inner, Script({head + "    return 1\n": 1.0}), head, ScriptedAnalysis(), pool, facts=facts
    ).steerer.cut_short()


def test_an_attribute_the_documents_class_declares_has_its_type_for_the_expected_one(inner, pool):
    """The analysis gives a method's return type (its signature) but nothing for a field:
    where the document defines the class the analysis names for an item, the class's
    declaration says it (``total: float``), so the field fits ``-> float`` as a method
    returning ``float`` would, and beats a method of another type the model liked more."""
    head = (
        "class Order:\n"
        "    total: float\n"
        "\n"
        "    def describe(self) -> str:\n"
        "        return 'an order'\n"
        "\n"
        "\n"
        "def amount(obj: Order) -> float:\n"
        "    return obj"
    )
    script = Script({head + ".describe()\n": 0.6, head + ".total\n": 0.4})
    described = CompletionCandidate("describe", kind="method", returns="str", detail="doc.Order")
    named = completions(
        described, CompletionCandidate("total", kind="statement", detail="doc.Order")
    )
    run = steered(inner, script, head, named, pool)
    assert run.text == ".total\n"
    top = {entry["name"]: entry for entry in run.trace["rankings"][0]["top"]}
    assert top["total"]["expected"] > 0 and top["describe"]["expected"] == 0
    # Without the class the analysis named, nothing is known of the field: the model decides.
    unnamed = completions(described, CompletionCandidate("total", kind="statement"))
    assert steered(inner, script, head, unnamed, pool).text == ".describe()\n"
