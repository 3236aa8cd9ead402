"""Fuzzing the real steerlsp process over stdio (the fault suite of issue 9).

Mutated frames (headers, lengths, JSON, ids, methods, params), each followed
by valid requests, go to ``python -m steerlsp``. The ledger in
tests/helpers/fuzzing.py checks: no crash, no hang, exactly one reply per request the
server could see (never two), resynchronisation after every bad frame, no NUL
or raw control byte in anything the server writes, and that hover, completion
and inlineCompletion are still answered afterwards.

The bulk runs against tests/doubles/fake_upstream.py (fast and deterministic), a
shorter run against real pylsp. ``STEERLSP_FUZZ_SEED`` and
``STEERLSP_FUZZ_FRAMES`` override the seed and the size; bench/fuzz.py runs
100,000 frames, a cancel storm and upstream kills.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from tests.helpers import hostile
from tests.helpers.fuzzing import FuzzClient, Fuzzer, Report, Target, fuzz, identifier_positions
from tests.helpers.rawclient import FAKE_UPSTREAM, steerlsp_command

SEED = int(os.environ.get("STEERLSP_FUZZ_SEED", "20261123"))
FRAMES = int(os.environ.get("STEERLSP_FUZZ_FRAMES", "3000"))
REQUEST_CANCELLED, REQUEST_FAILED = -32800, -32803


def _open(client: FuzzClient, path: Path) -> Target:
    text = path.read_text()
    doc = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": doc})
    return Target(path.as_uri(), identifier_positions(text), fake=False)


def _explain(report: Report) -> str:
    return f"seed {report.seed} (rerun with STEERLSP_FUZZ_SEED={report.seed}): " + "; ".join(
        report.problems()
    )


async def _still_answers(client: FuzzClient, target: Target) -> None:
    line, col = target.positions[len(target.positions) // 2]
    at = {"textDocument": {"uri": target.uri}, "position": {"line": line, "character": col}}
    hover = await client.request("textDocument/hover", at, "after-hover", timeout=30)
    assert "result" in hover, hover
    completion = await client.request("textDocument/completion", at, "after-completion", 30)
    assert "result" in completion, completion
    inline = await client.request(
        "textDocument/inlineCompletion",
        {**at, "context": {"triggerKind": 1}},
        "after-inline",
        timeout=30,
    )
    # --no-model: a well-defined refusal (RequestFailed, "disabled") is the answer.
    assert inline["error"]["code"] == REQUEST_FAILED, inline
    assert "disabled" in inline["error"]["message"]
    assert client.replies['"after-inline"'] == 1
    assert client.alive


async def test_fuzz_frames_against_the_fake_upstream(start_fuzz, shop):
    client = await start_fuzz(steerlsp_command("--no-model", upstream=FAKE_UPSTREAM), shop)
    target = _open(client, shop / "shop" / "cart.py")
    target.fake = True
    fuzzer = Fuzzer(random.Random(SEED), target, pause_rate=0.005)
    report = await fuzz(client, fuzzer, FRAMES, SEED)
    assert not report.problems(), _explain(report)
    assert report.ids_expected > FRAMES // 3
    await _still_answers(client, target)
    assert not client.control_chars


async def test_fuzz_frames_against_pylsp(start_fuzz, shop):
    client = await start_fuzz(steerlsp_command("--no-model"), shop)
    target = _open(client, shop / "shop" / "cart.py")
    seed = SEED + 1
    fuzzer = Fuzzer(random.Random(seed), target, pause_rate=0.0)
    report = await fuzz(client, fuzzer, max(FRAMES // 10, 100), seed)
    assert not report.problems(), _explain(report)
    await _still_answers(client, target)
    hover = await client.response("after-hover")
    assert hover["result"] is not None  # pylsp really answered, not an error path
    assert not client.control_chars


HOSTILE_SECONDS = float(os.environ.get("STEERLSP_HOSTILE_SECONDS", "20"))


async def test_hostile_workspace(tmp_path):
    """steerlsp (--no-model) in bench/hostile_workspace.py's workspace for 20 s, served
    by tests/helpers/hostile.py's client: no workspace code runs, every request is answered
    once (none hangs 30 s), no special file reaches pylsp, every process runs outside
    the workspace with PYTHONSAFEPATH, no pylsp outgrows its memory limit, and steerlsp
    exits cleanly, leaving nothing running. bench/fuzz.py --hostile runs it longer."""
    report = await hostile.run(HOSTILE_SECONDS, SEED, tmp_path, timeout=30)
    problems = report.problems()
    assert not problems, (
        f"seed {SEED} (STEERLSP_FUZZ_SEED), workspace and log in {tmp_path}: "
        + "; ".join(problems)
        + f"; sent just before the first hang: {report.before_first_hang[-15:]}"
        + f"; processes then: {report.hang_snapshot}"
    )
    assert report.requests >= 20, report.by_method
    assert report.special_requests > 0 and report.notifications.get("textDocument/didOpen")
    assert report.pylsp_peak_mib > 0 and report.memory_limit_mb == 2048
