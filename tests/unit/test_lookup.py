"""Prompt-lookup decoding: drafts from n-grams, verified in one pass, exactly greedy.

The tiny model writes noise, so Script processors make it copy text; what is
asserted is that the loop with drafts produces the same tokens as the loop
without, for plain, processed and hooked generations, and that drafts were
really taken.
"""

from __future__ import annotations

import pytest
import torch

from steerlsp.models.decoding.engine import Engine
from steerlsp.models.decoding.lookup import Lookup
from tests.doubles.tiny import CharTokenizer, Script, tiny_model

TOK = CharTokenizer()
LINE = "total = total + price\n"
PROMPT = f"def f(price):\n    total = 0\n    {LINE}    {LINE}    "


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=5)


def ids(text: str) -> list[int]:
    return TOK.encode(text, add_special_tokens=False)


def test_draft_copies_what_followed_the_longest_earlier_ngram():
    sequence = ids("ab cd ab ce ab")
    # " ab" occurred before, followed by " ce"
    assert Lookup(longest=3, tokens=3).draft(sequence, room=10) == ids(" ce")
    assert Lookup(longest=3, tokens=8).draft(sequence, room=2) == ids(" c")


def test_the_draft_length_grows_while_drafts_are_kept_and_shrinks_when_refused():
    lookup = Lookup(tokens=8, start=3)
    sizes = []
    for drafted, kept in ((3, 3), (6, 6), (8, 8), (8, 5), (8, 0), (4, 0), (2, 0), (1, 0)):
        lookup.tell(drafted, kept)
        sizes.append(lookup.size)
    assert sizes == [6, 8, 8, 8, 4, 2, 1, 1]


def test_draft_uses_the_text_after_the_cursor_and_stops_without_a_match():
    lookup = Lookup(ids("total)\nreturn x"), longest=2, tokens=4, start=4)
    assert lookup.draft(ids("print(to"), room=8) == ids("tal)")
    assert Lookup(longest=3).draft(ids("xyz"), room=8) == []
    assert Lookup().draft(ids("aaaa"), room=0) == []


def generate(engine: Engine, text: str, lookup: Lookup | None, **kwargs):
    engine.reset()
    return engine.generate(ids(text), lookup=lookup, stop_ids=frozenset(), **kwargs)


@pytest.mark.parametrize("prompt", [PROMPT, "x = 1\nx = 1\nx = ", "abcabcabcabc"])
def test_plain_greedy_output_is_unchanged(model, prompt):
    engine = Engine(model, TOK)
    plain = generate(engine, prompt, None, max_new_tokens=24)
    drafted = generate(engine, prompt, Lookup(), max_new_tokens=24)
    assert drafted.token_ids == plain.token_ids and drafted.stop == plain.stop
    assert drafted.drafted > 0  # drafts were verified (and mostly refused: noise)


def test_copied_lines_are_taken_from_drafts(model):
    engine = Engine(model, TOK)
    plain = generate(engine, PROMPT, None, max_new_tokens=40, processors=[Script(LINE * 2)])
    drafted = generate(engine, PROMPT, Lookup(), max_new_tokens=40, processors=[Script(LINE * 2)])
    assert drafted.text == plain.text == (LINE * 2)[:40]
    assert drafted.accepted >= 20 and drafted.accepted <= drafted.drafted
    # The cache holds exactly prompt + output (the refused drafts were cropped), so the
    # next request reuses it as it would without drafts.
    assert engine.cache.cached == ids(PROMPT) + drafted.token_ids[:-1]


def test_the_token_limit_is_kept(model):
    engine = Engine(model, TOK)
    for limit in (1, 2, 5, 13):
        got = generate(engine, PROMPT, Lookup(), max_new_tokens=limit, processors=[Script(LINE)])
        assert got.text == LINE[:limit] and got.stop == "max_tokens"


def test_should_stop_ends_inside_a_draft(model):
    engine = Engine(model, TOK)
    got = generate(
        engine,
        PROMPT,
        Lookup(),
        max_new_tokens=40,
        processors=[Script(LINE)],
        should_stop=lambda text: text.endswith("+"),
    )
    assert got.stop == "stop" and got.text == "total = total +"
    assert engine.cache.cached == ids(PROMPT) + got.token_ids[:-1]


class Hook:
    """Steers at one point: after a ``+`` it is busy for one step and forces ``q``.
    Optionally asks, once, to write again from the first ``=``."""

    def __init__(self, rewind_at: str | None = None) -> None:
        self.text = ""
        self.busy = False
        self.steered: list[int] = []  # history lengths steer() saw while busy
        self.rewind_at = rewind_at
        self.pending: int | None = None

    def steer(self, engine: Engine, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        if not self.busy:
            return logits
        self.busy = False
        self.steered.append(history.shape[-1])
        forced = torch.full_like(logits, float("-inf"))
        forced[:, TOK.vocab["q"]] = 0
        return forced

    def observe(self, token: int, text: str) -> None:
        self.text = text
        self.busy = text.endswith("+")
        if self.rewind_at is not None and text.endswith(self.rewind_at):
            self.pending, self.rewind_at = text.index("=") + 1, None

    def rewind(self) -> int | None:
        keep, self.pending = self.pending, None
        return keep

    def quiet(self) -> bool:
        return not self.busy

    def draft(self, history: torch.Tensor) -> list[int]:
        return []

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        return None


@pytest.mark.parametrize("rewind_at", [None, "total +"])
def test_a_hook_steers_where_it_is_busy_and_rewinds_inside_a_draft(model, rewind_at):
    engine = Engine(model, TOK)
    runs = []
    for lookup in (None, Lookup()):
        hook = Hook(rewind_at)
        got = generate(
            engine,
            PROMPT,
            lookup,
            max_new_tokens=30,
            processors=[Script(LINE * 2)],
            hook=hook,
        )
        runs.append((got, hook.steered))
    (plain, plain_steered), (drafted, drafted_steered) = runs
    assert drafted.text == plain.text and "+q" in plain.text
    assert drafted_steered == plain_steered  # steered at the same steps
    assert drafted.accepted > 0
    assert engine.cache.cached == ids(PROMPT) + drafted.token_ids[:-1]


class Masking:
    """Allows only the characters of ``allowed`` at every step, through ``steer``; says
    so in advance through ``rows`` when ``tell`` is set."""

    def __init__(self, allowed: str, tell: bool) -> None:
        self.ids = torch.tensor(sorted(set(ids(allowed))))
        self.tell = tell

    def steer(self, engine: Engine, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        masked = torch.full_like(logits, float("-inf"))
        masked[:, self.ids] = logits[:, self.ids]
        return masked

    def observe(self, token: int, text: str) -> None:
        pass

    def rewind(self) -> int | None:
        return None

    def quiet(self) -> bool:
        return False

    def draft(self, history: torch.Tensor) -> list[int]:
        return []

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        return self.ids if self.tell else None


def test_a_hard_mask_known_in_advance_computes_only_its_rows_and_writes_the_same():
    from steerlsp.models.loading.precision import use_low_precision_head

    model = tiny_model(seed=5)
    use_low_precision_head(model, "int8")
    engine = Engine(model, TOK)
    engine.reset()
    engine.generate(ids(PROMPT), max_new_tokens=1, stop_ids=frozenset())
    full = engine.decode_step(TOK.vocab["x"])
    engine.cache.forget(1)
    rows = torch.tensor([4, 9, 17, 30])
    only = engine.decode_rows(TOK.vocab["x"], rows)
    assert engine.cache.cached[-1] == TOK.vocab["x"]
    assert torch.allclose(only[0, rows], full[0, rows], atol=0.05)
    assert torch.isinf(only).sum() == only.shape[-1] - len(rows)
    texts = []
    for tell in (False, True):
        hook = Masking("total=+ ", tell)
        texts.append(generate(engine, PROMPT, None, max_new_tokens=16, hook=hook).text)
    assert texts[0] == texts[1] and set(texts[0]) <= set("total=+ ")


class Renaming:
    """A walk-like hook: after ``total = `` it allows only the next letter of ``price``,
    a function of the history alone. ``quiet_in_walk``: whether it says so (drafts are
    then verified under its mask) or, as before, refuses drafts while it masks."""

    def __init__(self, quiet_in_walk: bool, drafts: bool = False) -> None:
        self.quiet_in_walk = quiet_in_walk
        self.drafts = drafts  # tell the loop the rest of ``price`` in advance
        self.text = ""
        self.told: list[list[int]] = []

    def _next_letter(self, text: str) -> str | None:
        head, _, tail = text.rpartition("total = ")
        if not head and not text.startswith("total = "):
            return None
        return "price"[len(tail)] if len(tail) < 5 and "price".startswith(tail) else None

    def steer(self, engine: Engine, history: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        letter = self._next_letter(TOK.decode(history[0].tolist())[len(PROMPT) :])
        if letter is None:
            return logits
        forced = torch.full_like(logits, float("-inf"))
        forced[:, TOK.vocab[letter]] = 0
        return forced

    def observe(self, token: int, text: str) -> None:
        self.text = text

    def rewind(self) -> int | None:
        return None

    def quiet(self) -> bool:
        return self.quiet_in_walk or self._next_letter(self.text) is None

    def draft(self, history: torch.Tensor) -> list[int]:
        text = TOK.decode(history[0].tolist())[len(PROMPT) :]
        if not self.drafts or self._next_letter(text) is None:
            return []
        tail = text.rpartition("total = ")[2]
        told = [TOK.vocab[letter] for letter in "price"[len(tail) :]]
        self.told.append(told)
        return told

    def rows(self, history: torch.Tensor) -> torch.Tensor | None:
        return None


def test_a_walk_under_way_takes_drafts_verified_under_its_mask(model):
    """A name the prompt already spells is drafted and verified in one pass while the
    walk masks, with the same output as steering it token by token."""
    engine = Engine(model, TOK)
    runs = {}
    for quiet_in_walk in (False, True):
        for lookup in (None, Lookup()):
            runs[quiet_in_walk, lookup is not None] = generate(
                engine,
                PROMPT,
                lookup,
                max_new_tokens=40,
                processors=[Script(LINE * 2)],
                hook=Renaming(quiet_in_walk),
            )
    texts = {run.text for run in runs.values()}
    assert texts == {"total = price + price\ntotal = price + price\n"[:40]}
    # Inside the walk, "rice" after "p" is drafted from the prompt and kept.
    assert runs[True, True].accepted >= runs[False, True].accepted + 4
    assert engine.cache.cached == ids(PROMPT) + runs[True, True].token_ids[:-1]


def renamed(engine: Engine, hook: Renaming):
    """Two scripted lines, the names after ``total = `` steered by ``hook``; no lookup."""
    return generate(
        engine, PROMPT, None, max_new_tokens=40, processors=[Script(LINE * 2)], hook=hook
    )


def test_the_rest_of_a_walked_name_is_verified_in_one_pass_with_the_same_output(model):
    """A walk that knows the rest of its name drafts it (no prompt lookup needed): the
    loop feeds it in one pass, steers each position as it would one by one, and
    writes the same text; the cache holds what the loop without drafts leaves."""
    engine = Engine(model, TOK)
    plain = renamed(engine, Renaming(quiet_in_walk=True))
    hook = Renaming(quiet_in_walk=True, drafts=True)
    drafted = renamed(engine, hook)
    assert drafted.text == plain.text == "total = price + price\ntotal = price + price\n"[:40]
    assert plain.drafted == 0
    # Each ``price`` is told once ``total = `` is written: five tokens, all kept.
    assert [TOK.decode(t) for t in hook.told] == ["price", "price"]
    assert drafted.accepted == drafted.drafted == 10
    assert engine.cache.cached == ids(PROMPT) + drafted.token_ids[:-1]


def test_a_walk_draft_the_model_refuses_is_cut_where_the_steering_disagrees(model):
    """A draft is a guess: where the steered argmax differs, the rest is dropped and the
    output is the loop's own."""

    class Wrong(Renaming):
        def draft(self, history: torch.Tensor) -> list[int]:
            told = super().draft(history)
            return [told[0], TOK.vocab["z"], *told[2:]] if len(told) > 1 else told

    engine = Engine(model, TOK)
    plain = renamed(engine, Renaming(quiet_in_walk=True))
    wrong = renamed(engine, Wrong(quiet_in_walk=True, drafts=True))
    assert wrong.text == plain.text
    assert wrong.drafted > wrong.accepted > 0
    assert engine.cache.cached == ids(PROMPT) + wrong.token_ids[:-1]
