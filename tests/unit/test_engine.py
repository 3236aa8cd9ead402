"""The decode loop's mechanics on a tiny model: stages, cache reuse, cancel, stops."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from steerlsp.models.decoding.engine import Engine
from steerlsp.models.decoding.scoring import PrefixTree
from steerlsp.models.loading.precision import use_low_precision_head
from steerlsp.models.options import Sampling
from steerlsp.prompts.postprocess import CompletionMode, Stop, stop_reason
from tests.doubles.tiny import ALPHABET, CharTokenizer, Script, tiny_model
from tests.helpers.scoring import whole_logprob


@pytest.fixture(scope="module")
def model():
    return tiny_model()


@pytest.fixture
def engine(model) -> Engine:
    return Engine(model, CharTokenizer())


def no_specials(ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Noise models emit pad/eos/bos; mechanics tests want visible characters."""
    scores = scores.clone()
    scores[:, :3] = float("-inf")
    return scores


def _reference(model, ids: list[int], n: int) -> list[int]:
    out = model.generate(
        torch.tensor([ids]), max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0
    )
    return out[0, len(ids) :].tolist()


def test_greedy_matches_transformers_generate_past_the_sliding_window(model, engine):
    ids = CharTokenizer().encode("def add(a, b):\n    return a + b\n\nx = add(")  # > window of 8
    ref = _reference(model, ids, 12)
    got = engine.generate(ids, max_new_tokens=12, stop_ids=frozenset(), should_stop=lambda t: False)
    assert got.token_ids == ref[: len(got.token_ids)]
    assert got.stop in {"max_tokens", "eos"}


def test_prefix_reuse_prefills_only_new_tokens_and_changes_nothing(model, engine):
    tok = CharTokenizer()
    first = tok.encode("for i in range(10):\n    ")
    engine.generate(first, max_new_tokens=3)
    typed = tok.encode("for i in range(10):\n    pri")
    warm = engine.generate(typed, max_new_tokens=5)
    assert warm.reused_tokens == len(first)  # the whole earlier prompt was kept
    engine.reset()
    cold = engine.generate(typed, max_new_tokens=5)
    assert cold.reused_tokens == 0
    assert warm.token_ids == cold.token_ids


def test_diverging_prompt_crops_the_cache(engine):
    tok = CharTokenizer()
    engine.generate(tok.encode("abcdefgh"), max_new_tokens=2)
    got = engine.generate(tok.encode("abcdxyz"), max_new_tokens=2)
    assert got.reused_tokens == len(tok.encode("abcd"))


def test_cancel_stops_within_one_step(engine):
    steps = []

    def cancelled() -> bool:
        steps.append(time.perf_counter())
        return len(steps) > 3

    got = engine.generate(
        CharTokenizer().encode("x = "),
        max_new_tokens=100,
        cancelled=cancelled,
        processors=[no_specials],
    )
    assert got.stop == "cancelled" and len(got.token_ids) == 3


def test_cancel_from_another_thread(engine):
    flag = threading.Event()
    timer = threading.Timer(0.05, flag.set)
    timer.start()
    got = engine.generate(
        CharTokenizer().encode("x"),
        max_new_tokens=100_000,
        cancelled=flag.is_set,
        processors=[no_specials],
    )
    assert got.stop == "cancelled" and len(got.token_ids) < 100_000


def test_should_stop_sees_the_decoded_text(engine):
    seen = []
    got = engine.generate(
        CharTokenizer().encode("a"),
        max_new_tokens=50,
        should_stop=lambda text: seen.append(text) or len(text) >= 4,
        processors=[no_specials],
    )
    assert got.stop == "stop" and len(got.text) == 4 and seen[-1] == got.text


def test_processors_steer_every_step(engine):
    only_z = CharTokenizer().vocab["z"]

    def force_z(ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        mask = torch.full_like(scores, float("-inf"))
        mask[:, only_z] = 0
        return scores + mask

    got = engine.generate(CharTokenizer().encode("a"), max_new_tokens=5, processors=[force_z])
    assert got.text == "zzzzz"


def test_sampling_is_reproducible_with_a_seed(engine):
    ids = CharTokenizer().encode("q")
    runs = [
        engine.generate(ids, max_new_tokens=8, sampling=Sampling(1.0, 0.9, seed=7)).token_ids
        for _ in range(2)
    ]
    assert runs[0] == runs[1]


@pytest.mark.parametrize("bad", [{"temperature": -1}, {"top_p": 0}, {"top_p": 1.5}])
def test_sampling_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="must be"):
        Sampling(**bad)


def test_empty_prompt_is_a_programmer_error(engine):
    with pytest.raises(ValueError, match="empty"):
        engine.generate([], max_new_tokens=1)


@pytest.mark.parametrize(("precision", "dtype"), [("bf16", torch.bfloat16), ("int8", torch.int8)])
def test_low_precision_head_keeps_greedy_choices_on_a_tiny_model(precision, dtype):
    model = tiny_model(seed=3)
    ids = CharTokenizer().encode("while x:\n    ")
    before = Engine(model, CharTokenizer()).generate(ids, max_new_tokens=10).token_ids
    embedded = model.get_input_embeddings()(torch.tensor([ids]))
    assert use_low_precision_head(model, precision) == precision
    table = next(t for t in model.lm_head.state_dict().values() if t.dim() == 2)
    assert table.dtype == dtype and table.shape == (len(ALPHABET), 32)
    # one table serves the head and the embedding: the fp32 copy is gone
    assert not any(
        p.dtype == torch.float32 and p.shape[0] == len(ALPHABET) for p in model.parameters()
    )
    after = Engine(model, CharTokenizer()).generate(ids, max_new_tokens=10).token_ids
    assert sum(a == b for a, b in zip(before, after, strict=True)) >= 8
    again = model.get_input_embeddings()(torch.tensor([ids]))
    assert torch.allclose(again, embedded, rtol=0.02, atol=0.02)


def test_fp32_or_an_untied_head_stays_as_it_is():
    model = tiny_model(seed=3)
    head = model.lm_head
    assert use_low_precision_head(model, "fp32") == "fp32" and model.lm_head is head
    with pytest.raises(ValueError, match="int8"):
        use_low_precision_head(model, "int4")


def test_rows_of_the_int8_head_are_its_logits():
    model = tiny_model(seed=3)
    use_low_precision_head(model, "int8")
    hidden = torch.randn(3, 32)
    full = model.lm_head(hidden[None])[0]
    ids = torch.tensor([4, 9, 17])
    # the bf16 kernel's full logits and fp32 rows differ by bf16 rounding only
    assert torch.allclose(model.lm_head.rows(hidden, ids), full[:, ids], rtol=0.02, atol=0.05)


def test_a_looping_model_is_stopped_at_its_third_copy(engine):
    """The repetition rule runs per step in the loop, so a loop costs a few steps, not the limit."""
    reasons = []

    def should_stop(text: str) -> bool:
        reasons.append(
            stop_reason(text, mode=CompletionMode.SINGLE_LINE, indent_of_block=0, max_lines=8)
        )
        return reasons[-1] is not None

    got = engine.generate(
        CharTokenizer().encode("tree = "),
        max_new_tokens=200,
        should_stop=should_stop,
        processors=[Script("node(")],
    )
    # 24 characters: the shortest run of "node(" the rule takes for a loop.
    assert got.stop == "stop" and got.text == "node(node(node(node(node"
    assert reasons[-1] is Stop.REPETITION and len(reasons) == len(got.token_ids) == 24


SEQUENCES = [[5, 6, 7], [5, 6], [8], [9, 10, 11, 12]]  # shared starts, one a prefix


@pytest.mark.parametrize("tree", [True, False], ids=["token-tree", "batch"])
def test_score_continuations_is_each_sequences_own_log_probability(model, tree, monkeypatch):
    """Past the tiny model's sliding window (8), so its sliding layers hold only the
    last tokens; the token tree (one row) and the batch (one cache copy per sequence)
    both give what a pass without a cache gives, and leave the cache as it was."""
    engine = Engine(model, CharTokenizer())
    engine.scorer._tree = tree
    if tree:  # the tree must not quietly fall back to the batch
        monkeypatch.setattr(
            engine.scorer, "_batched_hidden", lambda sequences: pytest.fail("batched")
        )
    ends = torch.zeros(len(ALPHABET), dtype=torch.bool)
    ends[[3, 4, 20]] = True
    prompt = CharTokenizer().encode("def scale(values, factor): return values.")
    with torch.inference_mode():
        logits = engine.prefill(prompt)
        scores = engine.scorer.score_continuations(logits, SEQUENCES, ends)
        after = engine.decode_step(SEQUENCES[0][0])
        fresh = model(torch.tensor([[*prompt, SEQUENCES[0][0]]])).logits[0, -1]
    want = [whole_logprob(model, prompt, s, ends) for s in SEQUENCES]
    assert scores == pytest.approx(want, abs=1e-4)
    assert torch.allclose(after[0], fresh, atol=1e-4)  # the cache is left as it was
    assert engine.scorer._tree is tree  # the tree was not refused


def test_a_prefix_the_sequences_share_is_fed_once(model, monkeypatch):
    engine = Engine(model, CharTokenizer())
    fed: list[int] = []
    real = model.model.forward

    def counting(*args, **kwargs):
        fed.append(kwargs["input_ids"].shape[-1])
        return real(*args, **kwargs)

    prompt = CharTokenizer().encode("total = price.")
    with torch.inference_mode():
        logits = engine.prefill(prompt)
        monkeypatch.setattr(model.model, "forward", counting)
        engine.scorer.score_continuations(
            logits, SEQUENCES, torch.ones(len(ALPHABET), dtype=torch.bool)
        )
    # [5, 6, 7], [5, 6], [8], [9, 10, 11, 12]: 10 tokens, 8 distinct prefixes.
    assert fed == [8]


def test_prefix_tree_nodes_paths_and_ancestry():
    tree = PrefixTree(SEQUENCES)
    assert tree.tokens == [5, 6, 7, 8, 9, 10, 11, 12]
    assert tree.depths == [0, 1, 2, 0, 0, 1, 2, 3]
    assert tree.paths == [[0, 1, 2], [0, 1], [3], [4, 5, 6, 7]]
    assert tree.first_seen == [0, 1, 2, 5, 6, 7, 8, 9]
    ancestry = tree.ancestry()
    assert ancestry[2].nonzero().flatten().tolist() == [0, 1, 2]
    assert ancestry[3].nonzero().flatten().tolist() == [3]
    assert ancestry[7].nonzero().flatten().tolist() == [4, 5, 6, 7]


def test_score_continuations_falls_back_to_a_batch_when_the_tree_is_refused(model, monkeypatch):
    engine = Engine(model, CharTokenizer())
    ends = torch.zeros(len(ALPHABET), dtype=torch.bool)
    ends[3] = True
    prompt = CharTokenizer().encode("total = price.")
    with torch.inference_mode():
        logits = engine.prefill(prompt)
        want = engine.scorer.score_continuations(logits, SEQUENCES, ends)
        real = model.model.forward

        def refuses_dict_masks(*args, **kwargs):
            if isinstance(kwargs.get("attention_mask"), dict):
                raise TypeError("attention_mask must be a tensor")
            return real(*args, **kwargs)

        monkeypatch.setattr(model.model, "forward", refuses_dict_masks)
        got = engine.scorer.score_continuations(logits, SEQUENCES, ends)
    assert got == pytest.approx(want, abs=1e-4)
    assert engine.scorer._tree is False  # the batch from now on
