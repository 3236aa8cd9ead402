"""The decode speed levers on the embedded model: the int8 head, prompt lookup, the window.

Real model, in process (loaded as the server loads it). Speed is measured in
``bench/decode_bench.py``; here: what each lever must not change.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch

from steerlsp.models.decoding.completer import load_completer
from steerlsp.models.decoding.engine import Engine
from steerlsp.models.decoding.worker import CancelToken
from steerlsp.models.loading.load import LoadRequest, load
from steerlsp.models.loading.precision import Int8Head
from steerlsp.models.options import CompletionOptions, CompletionRequest, Document

CODE = '''import json


def load_config(path):
    """Read the JSON settings file at path."""
    with open(path) as handle:
        return json.load(handle)


def save_config(path, config):
    """Write config as JSON to path."""
    with open(path, "w") as handle:
'''


@pytest.fixture(scope="module")
def models():
    """The fp32 model, and the model as the server loads it (the int8 head; bf16
    linear layers where the CPU has native bf16)."""
    return load(LoadRequest()), load_completer(LoadRequest())


def test_the_servers_weights_keep_the_fp32_models_greedy_choices(models):
    """Teacher-forced along the fp32 model's own greedy text: the int8 head (and bf16
    layers) pick the same next token at nearly every position."""
    fp32, server = models
    assert isinstance(server.loaded.model.lm_head, Int8Head)
    ids = fp32.tokenizer.encode(CODE)
    engine = Engine(fp32.model, fp32.tokenizer)
    eos = torch.tensor(sorted(engine.eos_ids))
    no_eos = lambda history, scores: scores.index_fill(-1, eos, float("-inf"))  # noqa: E731
    reference = engine.generate(ids, max_new_tokens=40, processors=[no_eos]).token_ids
    sequence = torch.tensor([ids + reference])
    with torch.inference_mode():
        want = fp32.model(sequence).logits[0, len(ids) - 1 : -1].argmax(-1)
        got = server.loaded.model(sequence).logits[0, len(ids) - 1 : -1].argmax(-1)
    assert len(reference) == 40
    assert (want == got).float().mean() >= 0.95


def test_prompt_lookup_writes_the_same_completion_and_takes_drafts(models):
    _, completer = models
    # A second loader: the model copies the first one's body, drafts from the prompt.
    prefix = CODE.split("def save_config")[0] + "def load_settings(path):\n    "
    request = CompletionRequest(prefix, "\n", "config.py")
    texts, generations = [], []
    for lookup in (False, True):
        completer.engine.reset()
        done = completer.complete(request, CompletionOptions(lookup=lookup), CancelToken())
        texts.append(done.text)
        generations.append(done.generation)
    assert texts[0] == texts[1] and "json.load(handle)" in texts[0]
    assert generations[1].accepted >= len(generations[1].token_ids) // 2
    assert generations[0].drafted == 0


def test_the_prompt_window_start_stays_put_while_typing_in_a_long_file(models):
    """1,200 lines: the 1024-token window is full, so each typed line used to move
    its start (a full prefill). Now it stays, and the cache is reused."""
    _, completer = models
    body = "".join(f"value_{n} = compute({n}, scale=2)\n" for n in range(1200))
    options = CompletionOptions(max_new_tokens=2)
    reused = []
    for typed in ("x", "x = 1\n", "x = 1\ny", "x = 1\ny = 2\n", "x = 1\ny = 2\nz"):
        prefix = body + typed
        lines = tuple(prefix.splitlines(keepends=True))
        document = Document(lines, len(lines) - 1, len(lines[-1]))
        request = CompletionRequest(prefix, "", "long.py", document)
        done = completer.complete(request, options, CancelToken())
        reused.append(done.generation.reused_tokens / done.generation.prompt_tokens)
    assert min(reused[1:]) > 0.9, reused


# A task of the suite whose completion used to be empty: a docstring, then the body.
ENERGY = (Path(__file__).parents[2] / "bench/tasks/changed-numpy-trapezoid/prompt.py").read_text()


def test_a_fresh_body_gets_code_not_a_run_of_comments(models):
    """Unlimited, the model plans in comment lines until the token limit, and a
    completion of comments alone is no statement: the editor got nothing. With the
    default limit (one comment line in a row) it writes code."""
    _, completer = models
    request = CompletionRequest(ENERGY, "", "energy.py")
    runs = {}
    for limit in (None, 1):
        completer.engine.reset()
        options = CompletionOptions(comment_lines=limit)
        runs[limit] = completer.complete(request, options, CancelToken())
    unlimited = runs[None].generation.text.split("\n")
    assert [line.strip()[:1] for line in unlimited[:3]] == ["#", "#", "#"], unlimited
    assert runs[None].text == ""
    lines = [line.strip() for line in runs[1].text.split("\n") if line.strip()]
    assert any(not line.startswith("#") for line in lines), runs[1].text
    pairs = itertools.pairwise(lines)
    assert not any(a.startswith("#") and b.startswith("#") for a, b in pairs), runs[1].text
    assert "power_w" in runs[1].text  # code about the function's own arguments


def test_a_walked_name_is_verified_in_one_pass_and_writes_the_same_completion(models, monkeypatch):
    """The embedded model steered after ``report.`` to a member with a long name:
    the rest of the name the walk follows is drafted and verified in one forward
    pass (fewer passes), and the completion is the one the loop writes token by token."""
    from steerlsp.models.options import SteeringOptions
    from steerlsp.models.steering.analysis import CompletionCandidate
    from steerlsp.models.steering.steerer import Steerer
    from tests.doubles.analysis import ScriptedAnalysis

    _, completer = models
    prefix = (
        "from reports import Report\n\n\n"
        "def publish(report: Report) -> str:\n"
        '    """Render the quarterly summary as a Markdown table."""\n'
        "    return report."
    )
    # every member's name takes several tokens, whichever the ranker follows
    members = (
        "render_markdown_summary_table",
        "quarterly_summary_rows",
        "export_rows_as_csv",
        "close_the_connection",
    )
    request = CompletionRequest(prefix, "\n", "publish.py")

    def analysis() -> ScriptedAnalysis:
        return ScriptedAnalysis(
            completions={"report.": [CompletionCandidate(m, kind="method") for m in members]}
        )

    options = CompletionOptions(lookup=False, steering=SteeringOptions())
    completer.engine.reset()
    drafted = completer.complete(request, options, CancelToken(), analysis())
    monkeypatch.setattr(Steerer, "draft", lambda self, history: [])
    completer.engine.reset()
    plain = completer.complete(request, options, CancelToken(), analysis())
    assert drafted.text == plain.text
    assert drafted.text.startswith(members), drafted.text
    assert plain.generation.drafted == 0
    # the name is several tokens; those after the first (chosen at the ranking) drafted
    assert drafted.generation.accepted >= 2
