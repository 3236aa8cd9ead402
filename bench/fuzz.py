"""The fault suite at full size: frame fuzzing, cancel storm, upstream kills, hostile workspace.

Four phases against the real steerlsp over stdio:

1. **frames**: ``--frames`` mutated frames (tests/helpers/fuzzing.py: bad headers,
   lengths, JSON, ids, methods, params, duplicate and reused ids), each
   followed by valid requests, against tests/doubles/fake_upstream.py (fast, so the
   proxy is what is measured); then ``--pylsp-frames`` more against real
   pylsp. Checked: no crash, no hang, exactly one reply per request (never
   two), resynchronisation after every bad frame, no NUL or raw control byte
   in anything steerlsp writes.
2. **storm**: ``--storm`` inlineCompletions against the real embedded model
   and pylsp, in bursts of up to 20 over ``--storm-docs`` documents, with
   ``$/cancelRequest``s (some while the request is still queued behind a
   running generation), edits and cancel-previous; ``--storm-tokens`` keeps
   each generation short, so the storm measures cancelling, not decoding.
   ``steerlsp/status`` is polled meanwhile: at most one generation may run at
   any time (``model.worker.running``, where the server reports it), and the
   model thread must never have died (``model.worker.restarts``). Every id
   must be answered exactly once, and completion and inlineCompletion still
   answer afterwards.
3. **kills**: ``--kills`` times ``kill -9`` of the upstream pylsp (its pid from
   ``steerlsp/status``), with hovers in flight; after each, status must show a
   new ready pid and hover must answer again. steerlsp runs with
   ``--max-restarts`` above the number of kills and a fixed
   ``--restart-backoff`` (the default backoff grows to 4 s, which would be
   most of the phase's time).
4. **hostile** (``--hostile SECONDS``, off by default; ``--only-hostile`` runs
   it alone): steerlsp started as an editor starts it, in a workspace built to
   hurt it (tests/helpers/hostile_workspace.py: symlinks to ``/dev/stdin``,
   ``/dev/zero`` and FIFOs where tools look, a 50 MB module, documents over
   ``upstream.maxDocumentBytes``, modules and config hooks that leave a marker
   when run), with pylsp's pylint and flake8 plugins on, served for that long
   by a client that sends every request kind, special-file uris, notebooks and
   deeply nested settings (tests/helpers/hostile.py). ``--no-model`` unless
   ``--hostile-model``. Checked: no marker, no hang, no double reply, no
   special file answered by the upstream, every process outside the workspace
   with ``PYTHONSAFEPATH=1``, no pylsp over ``upstream.memoryLimitMb``
   (``--hostile-memory-mb``), a clean shutdown and nothing left running. Peak
   RSS per process role is reported. The workspace and steerlsp's log are kept
   when a check fails.

VmRSS of steerlsp is recorded before and after each process's phases.
Prints a table, writes JSON to ``--out`` and exits 1 if any check failed.

The default run (100,000 frames, 1,000 inlineCompletions, 50 kills) takes
about 8 minutes on 2 shared cores; most of it is the storm's generations.

Run: .venv/bin/python bench/fuzz.py [--frames 100000] [--storm 1000] [--kills 50]
     [--hostile 600] [--seed N] [--out bench/results/fuzz.json]
     .venv/bin/python bench/fuzz.py --only-hostile [--hostile 60] [--hostile-model]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from tests.helpers import hostile
from tests.helpers.fuzzing import (
    FuzzClient,
    Fuzzer,
    Report,
    Target,
    fuzz,
    identifier_positions,
    key,
    rss_kib,
)
from tests.helpers.hostile_report import table_rows
from tests.helpers.rawclient import FAKE_UPSTREAM, steerlsp_command

REPO = Path(__file__).resolve().parents[1]
SHOP = REPO / "steerlsp" / "example" / "project"
CART = SHOP / "shop" / "cart.py"
REQUEST_CANCELLED, REQUEST_FAILED = -32800, -32803
LOOP = (
    "import os\n\n\ndef list_python_files(folder):\n"
    '    """Print every .py file in folder."""\n'
    "    for name in os.listdir(folder):\n        "
)


@dataclass
class StormReport:
    requests: int = 0
    cancels_sent: int = 0
    edits_sent: int = 0
    seconds: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)  # result / error code -> count
    unanswered: int = 0
    over_answered: int = 0
    status_polls: int = 0
    max_running: int | None = None  # None: the server does not report it
    max_queued: int | None = None
    worker: dict[str, Any] | None = None  # the last worker status seen
    completion_after: bool = False
    inline_after: str = ""
    problems: list[str] = field(default_factory=list)


@dataclass
class KillReport:
    kills: int = 0
    survived: int = 0
    seconds: float = 0.0
    requests: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    unanswered: int = 0
    over_answered: int = 0
    restart_seconds_max: float = 0.0
    problems: list[str] = field(default_factory=list)


def tally(client: FuzzClient, sent: list[Any]) -> tuple[int, int, dict[str, int]]:
    """(ids never answered, ids answered more than once, replies by outcome) for ``sent``."""
    unanswered = over_answered = 0
    outcomes: Counter[str] = Counter()
    for msg_id in sent:
        got = client.replies[key(msg_id)]
        unanswered += got == 0
        over_answered += got > 1
        for code in client.codes.get(key(msg_id), []):
            outcomes["result" if code is None else str(code)] += 1
    return unanswered, over_answered, dict(outcomes)


class Ids:
    """Ids for the storm and kill phases: strings, never colliding with the fuzzer's."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.n = prefix, 0

    def __call__(self) -> str:
        self.n += 1
        return f"{self.prefix}-{self.n}"


def outcome(reply: dict[str, Any]) -> str:
    return "result" if "result" in reply else str(reply.get("error", {}).get("code"))


async def start(command: list[str], options: dict[str, Any] | None = None) -> FuzzClient:
    client = await FuzzClient.start(command)
    params = {
        "processId": None,
        "rootUri": SHOP.as_uri(),
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {"inlineCompletion": {}},
        },
        "initializationOptions": options or {},
    }
    reply = await client.request("initialize", params, "setup-initialize", timeout=60)
    assert "result" in reply, reply
    client.notify("initialized", {})
    return client


def open_doc(client: FuzzClient, uri: str, text: str) -> None:
    doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": doc})


async def status(client: FuzzClient, ids: Ids, timeout: float = 30) -> dict[str, Any]:
    reply = await client.request("steerlsp/status", None, ids(), timeout)
    return reply["result"]  # type: ignore[no-any-return]


# ---- phase 1: frames ----------------------------------------------------------


async def frames_phase(
    frames: int, seed: int, upstream: list[str] | None, pause_rate: float
) -> tuple[Report, dict[str, int | None]]:
    client = await start(steerlsp_command("--no-model", upstream=upstream))
    try:
        text = CART.read_text()
        open_doc(client, CART.as_uri(), text)
        target = Target(CART.as_uri(), identifier_positions(text), fake=upstream is not None)
        await status(client, Ids("setup-warm"))
        rss = {"before_kib": rss_kib(client.proc.pid)}
        fuzzer = Fuzzer(random.Random(seed), target, pause_rate=pause_rate)

        def progress(n: int) -> None:
            print(f"  {n} frames", file=sys.stderr)

        report = await fuzz(client, fuzzer, frames, seed, progress=progress)
        rss["after_kib"] = rss_kib(client.proc.pid)
        return report, rss
    finally:
        await client.close()


# ---- phase 2: cancel storm ---------------------------------------------------------


async def poll_worker(client: FuzzClient, report: StormReport, stop: asyncio.Event) -> None:
    """Sample the model worker's state every 100 ms until told to stop."""
    ids = Ids("poll")
    while not stop.is_set():
        model = (await status(client, ids))["model"]
        report.status_polls += 1
        worker = model.get("worker")
        if isinstance(worker, dict):
            report.worker = worker
            running = int(worker.get("running") or 0)
            queued = int(worker.get("queued") or 0)
            report.max_running = max(report.max_running or 0, running)
            report.max_queued = max(report.max_queued or 0, queued)
        await asyncio.sleep(0.1)


async def storm_phase(client: FuzzClient, n: int, seed: int, docs: int) -> StormReport:
    report = StormReport()
    rng = random.Random(seed)
    ids = Ids("storm")
    uris = [(SHOP / f"storm_{i}.py").as_uri() for i in range(docs)]
    versions = dict.fromkeys(uris, 1)
    for uri in uris:
        open_doc(client, uri, LOOP)
    lines = LOOP.split("\n")
    end = {"line": len(lines) - 1, "character": len(lines[-1])}
    stop = asyncio.Event()
    poller = asyncio.create_task(poll_worker(client, report, stop))
    started = time.perf_counter()
    sent: list[str] = []
    while report.requests < n:
        burst: list[str] = []
        for _ in range(min(rng.randint(1, 20), n - report.requests)):
            msg_id = ids()
            uri = rng.choice(uris)
            params = {
                "textDocument": {"uri": uri},
                "position": end,
                "context": {"triggerKind": rng.choice((1, 2))},
            }
            request = {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/inlineCompletion"}
            client.send({**request, "params": params})
            burst.append(msg_id)
            report.requests += 1
            if rng.random() < 0.1:
                # The same text, a new version: cancels the running generation.
                versions[uri] += 1
                client.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": versions[uri]},
                        "contentChanges": [{"text": LOOP}],
                    },
                )
                report.edits_sent += 1
        # Cancel some while they are still queued behind a running generation
        # (the path that once killed the model thread), some at once.
        await asyncio.sleep(rng.choice((0.0, 0.01, 0.05)))
        for msg_id in rng.sample(burst, rng.randint(0, len(burst))):
            client.notify("$/cancelRequest", {"id": msg_id})
            report.cancels_sent += 1
        sent += burst
        try:
            for msg_id in burst:
                await client.response(msg_id, timeout=60)
        except TimeoutError:
            report.problems.append(f"no reply within 60 s in burst ending {burst[-1]}")
            break
    report.seconds = time.perf_counter() - started
    stop.set()
    await poller
    await asyncio.sleep(0.3)
    report.unanswered, report.over_answered, report.outcomes = tally(client, sent)
    at = {"textDocument": {"uri": CART.as_uri()}, "position": {"line": 0, "character": 0}}
    completion = await client.request("textDocument/completion", at, ids(), 60)
    report.completion_after = "result" in completion
    inline = await client.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uris[0]}, "position": end, "context": {"triggerKind": 1}},
        ids(),
        120,
    )
    report.inline_after = outcome(inline)
    if report.unanswered:
        report.problems.append(f"{report.unanswered} inlineCompletions never answered")
    if report.over_answered:
        report.problems.append(f"{report.over_answered} ids answered more than once")
    restarts = (report.worker or {}).get("restarts")
    if restarts:
        report.problems.append(f"the model thread died and was restarted {restarts} times")
    if report.max_running is not None and report.max_running > 1:
        report.problems.append(f"{report.max_running} generations ran at once")
    unexpected = set(report.outcomes) - {"result", str(REQUEST_CANCELLED)}
    if unexpected:
        report.problems.append(f"unexpected outcomes {sorted(unexpected)}")
    if not report.completion_after:
        report.problems.append(f"completion after the storm: {completion}")
    if report.inline_after != "result":
        report.problems.append(f"inlineCompletion after the storm: {inline}")
    return report


# ---- phase 3: upstream kills ---------------------------------------------------


async def kills_phase(client: FuzzClient, kills: int, seed: int) -> KillReport:
    report = KillReport()
    rng = random.Random(seed)
    ids = Ids("kill")
    text = CART.read_text()
    positions = identifier_positions(text)
    sent: list[str] = []

    def hover() -> str:
        line, col = rng.choice(positions)
        msg_id = ids()
        params = {
            "textDocument": {"uri": CART.as_uri()},
            "position": {"line": line, "character": col},
        }
        client.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover", "params": params}
        )
        sent.append(msg_id)
        return msg_id

    async def ready_pid(old: int | None, timeout: float = 60) -> int:
        while True:
            upstream = (await status(client, ids))["upstream"]
            if upstream["ready"] and upstream["pid"] not in (None, old):
                return int(upstream["pid"])
            await asyncio.sleep(0.05)

    started = time.perf_counter()
    pid = await asyncio.wait_for(ready_pid(None), 60)
    for n in range(kills):
        for _ in range(rng.randint(0, 3)):
            hover()  # in flight when the upstream dies: answered with an error, once
        os.kill(pid, signal.SIGKILL)
        report.kills += 1
        killed_at = time.perf_counter()
        for _ in range(rng.randint(0, 3)):
            hover()  # during the restart: held, then answered
        try:
            pid = await asyncio.wait_for(ready_pid(pid), 60)
            reply = await client.response(hover(), 30)
        except TimeoutError:
            report.problems.append(f"kill {n + 1}: no new ready upstream or no hover reply")
            break
        report.restart_seconds_max = max(
            report.restart_seconds_max, time.perf_counter() - killed_at
        )
        if "result" in reply:
            report.survived += 1
        else:
            report.problems.append(f"kill {n + 1}: hover after the restart failed: {reply}")
    # Whatever was still in flight has had its chance to be answered.
    for msg_id in sent:
        try:
            await client.response(msg_id, 30)
        except TimeoutError:
            break
    await asyncio.sleep(0.3)
    report.seconds = time.perf_counter() - started
    report.requests = len(sent)
    report.unanswered, report.over_answered, report.outcomes = tally(client, sent)
    if report.unanswered:
        report.problems.append(f"{report.unanswered} hovers never answered")
    if report.over_answered:
        report.problems.append(f"{report.over_answered} hovers answered more than once")
    return report


async def model_phases(args: argparse.Namespace) -> dict[str, Any]:
    options = {"completion": {"maxNewTokens": args.storm_tokens}}
    command = steerlsp_command(
        "--max-restarts", str(args.kills + 10), "--restart-backoff", str(args.restart_backoff)
    )
    client = await start(command, options)
    try:
        open_doc(client, CART.as_uri(), CART.read_text())
        ids = Ids("ready")
        loaded = time.perf_counter()
        while (model := (await status(client, ids))["model"])["state"] == "loading":
            if time.perf_counter() - loaded > 600:
                raise TimeoutError("the model did not load in 10 minutes")
            await asyncio.sleep(0.2)
        if model["state"] != "ready":
            raise RuntimeError(f"model: {model}")
        rss_before = rss_kib(client.proc.pid)
        storm = await storm_phase(client, args.storm, args.seed, args.storm_docs)
        rss_storm = rss_kib(client.proc.pid)
        kills = await kills_phase(client, args.kills, args.seed)
        rss_after = rss_kib(client.proc.pid)
        alive = client.alive
        nul = list(client.control_chars)
        return {
            "storm": asdict(storm),
            "kills": asdict(kills),
            "rss_kib": {"before": rss_before, "after_storm": rss_storm, "after_kills": rss_after},
            "alive": alive,
            "control_chars": nul[:5],
        }
    finally:
        await client.close()


# ---- phase 4: a hostile workspace ------------------------------------------------


async def hostile_phase(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="steerlsp-hostile-"))
    report = await hostile.run(
        args.hostile,
        args.seed,
        base,
        model=args.hostile_model,
        memory_mb=args.hostile_memory_mb,
        inflight=args.hostile_inflight,
        timeout=args.hostile_timeout,
        progress=lambda line: print(f"  {line}", file=sys.stderr),
    )
    result = asdict(report)
    result["problems"] = report.problems()
    if result["problems"]:
        result["kept"] = str(base)  # the workspace and steerlsp's log, to look at
    else:
        shutil.rmtree(base, ignore_errors=True)
    return result


# ---- report -----------------------------------------------------------------------


def mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.0f} MiB"


def table(result: dict[str, Any]) -> str:
    rows = [("phase", "figure", "value")]
    for name in ("frames_fake", "frames_pylsp"):
        phase = result.get(name)
        if not phase:
            continue
        r = phase["report"]
        rows += [
            (name, "frames sent", f"{r['frames']} in {r['seconds']:.0f} s"),
            (name, "requests expecting one reply", str(r["ids_expected"])),
            (name, "answered exactly once", str(r["ids_answered_once"])),
            (name, "unanswered (hangs)", str(len(r["unanswered"]))),
            (name, "resync failures", str(len(r["resync_failures"]))),
            (name, "ids answered twice or more", str(len(r["over_answered"]))),
            (name, "max replies per id", str(r["max_replies_per_id"])),
            (name, "replies to cut ids never sent", str(r["stray_replies"])),
            (name, "NUL / control bytes written", str(len(r["control_chars"]))),
            (name, "crashed", str(r["crashed"])),
            (
                name,
                "RSS before -> after",
                f"{mib(phase['rss_kib']['before_kib'])} -> {mib(phase['rss_kib']['after_kib'])}",
            ),
        ]
    model = result.get("model")
    if model:
        s, k, rss = model["storm"], model["kills"], model["rss_kib"]
        running = "not reported" if s["max_running"] is None else str(s["max_running"])
        rows += [
            ("storm", "inlineCompletions", f"{s['requests']} in {s['seconds']:.0f} s"),
            ("storm", "cancels / edits sent", f"{s['cancels_sent']} / {s['edits_sent']}"),
            ("storm", "outcomes", json.dumps(s["outcomes"], sort_keys=True)),
            ("storm", "unanswered / answered twice", f"{s['unanswered']} / {s['over_answered']}"),
            ("storm", "max generations running", f"{running} ({s['status_polls']} polls)"),
            (
                "storm",
                "completion / inline after",
                f"{s['completion_after']} / {s['inline_after']}",
            ),
            (
                "kills",
                "kill -9 survived",
                f"{k['survived']} of {k['kills']} in {k['seconds']:.0f} s",
            ),
            ("kills", "slowest restart", f"{k['restart_seconds_max']:.1f} s"),
            ("kills", "hovers", f"{k['requests']}: {json.dumps(k['outcomes'], sort_keys=True)}"),
            ("kills", "unanswered / answered twice", f"{k['unanswered']} / {k['over_answered']}"),
            (
                "model",
                "RSS before -> storm -> kills",
                f"{mib(rss['before'])} -> {mib(rss['after_storm'])} -> {mib(rss['after_kills'])}",
            ),
        ]
    if "hostile" in result:
        rows += table_rows(result["hostile"])
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--frames", type=int, default=100_000, help="frames against the fake upstream"
    )
    parser.add_argument("--pylsp-frames", type=int, default=2000, help="frames against real pylsp")
    parser.add_argument("--storm", type=int, default=1000, help="inlineCompletions in the storm")
    parser.add_argument("--storm-docs", type=int, default=2)
    parser.add_argument("--storm-tokens", type=int, default=4, help="maxNewTokens in the storm")
    parser.add_argument("--kills", type=int, default=50, help="kill -9s of the upstream")
    parser.add_argument(
        "--restart-backoff", type=float, default=0.2, help="steerlsp's restart backoff (s)"
    )
    parser.add_argument(
        "--pause-rate",
        type=float,
        default=0.01,
        help="share of too-long frames followed by 0.7 s of silence",
    )
    parser.add_argument(
        "--hostile", type=float, default=0, help="seconds in a hostile workspace (0: off)"
    )
    parser.add_argument(
        "--only-hostile",
        action="store_true",
        help="run only the hostile phase (for --hostile seconds; 120 if not given)",
    )
    parser.add_argument(
        "--hostile-model", action="store_true", help="load the real model in the hostile phase"
    )
    parser.add_argument(
        "--hostile-memory-mb",
        type=int,
        default=None,
        help="upstream.memoryLimitMb in the hostile phase (default: steerlsp's)",
    )
    parser.add_argument(
        "--hostile-timeout", type=float, default=60, help="seconds before a request is a hang"
    )
    parser.add_argument("--hostile-inflight", type=int, default=8, help="requests in flight")
    parser.add_argument("--seed", type=int, default=None, help="default: random, printed")
    parser.add_argument("--out", default="bench/results/fuzz.json", help="JSON file (or folder)")
    args = parser.parse_args()
    if args.only_hostile:
        args.frames = args.pylsp_frames = args.storm = args.kills = 0
        args.hostile = args.hostile or 120
    if args.seed is None:
        args.seed = random.randrange(2**32)
    print(f"seed {args.seed}", file=sys.stderr)
    started = time.perf_counter()

    async def run() -> dict[str, Any]:
        result: dict[str, Any] = {"seed": args.seed, "args": vars(args)}
        if args.frames:
            print("frames against the fake upstream...", file=sys.stderr)
            report, rss = await frames_phase(args.frames, args.seed, FAKE_UPSTREAM, args.pause_rate)
            result["frames_fake"] = {"report": asdict(report), "rss_kib": rss}
        if args.pylsp_frames:
            print("frames against pylsp...", file=sys.stderr)
            report, rss = await frames_phase(args.pylsp_frames, args.seed + 1, None, 0.0)
            result["frames_pylsp"] = {"report": asdict(report), "rss_kib": rss}
        if args.storm or args.kills:
            print("cancel storm and upstream kills (real model, pylsp)...", file=sys.stderr)
            result["model"] = await model_phases(args)
        if args.hostile:
            model = "the real model" if args.hostile_model else "--no-model"
            print(f"hostile workspace ({model}, {args.hostile:.0f} s)...", file=sys.stderr)
            result["hostile"] = await hostile_phase(args)
        return result

    result = asyncio.run(run())
    result["seconds"] = round(time.perf_counter() - started, 1)
    problems: list[str] = []
    for name in ("frames_fake", "frames_pylsp"):
        if name in result:
            r = result[name]["report"]
            problems += [f"{name}: {p}" for p in Report(**r).problems()]
    if "model" in result:
        m = result["model"]
        problems += [f"storm: {p}" for p in m["storm"]["problems"]]
        problems += [f"kills: {p}" for p in m["kills"]["problems"]]
        if not m["alive"]:
            problems.append("model session: the steerlsp process died")
        if m["control_chars"]:
            problems.append(f"model session: control characters written: {m['control_chars']}")
    if "hostile" in result:
        problems += [f"hostile: {p}" for p in result["hostile"]["problems"]]
        if "kept" in result["hostile"]:
            print(f"hostile: workspace and log kept in {result['hostile']['kept']}")
    result["problems"] = problems
    out = Path(args.out)
    if out.is_dir() or not out.suffix:
        out = out / "fuzz.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(table(result))
    print(f"\nseed {args.seed}, {result['seconds']:.0f} s; wrote {out}")
    for problem in problems:
        print(f"FAIL {problem}")
    print("PASS" if not problems else f"FAIL ({len(problems)} problems)")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
