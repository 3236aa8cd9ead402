"""steerlsp on a shared inference server: agreement with the in-process model, the
cost of steering through the API, and 1 to 8 editors on one server.

The server is llama-cpp-python's ``llama_cpp.server`` serving the embedded GGUF
(Gemma 3 270M, Q4_K_M) on 127.0.0.1, on the same 2 cores as everything else.

**Agreement and cost** (``steering_latency.py``'s machinery, its held-out
third-party positions): three real ``python -m steerlsp`` processes taking turns,
``steered`` (the in-process model), ``remote-unsteered`` and ``remote-steered``
(``model.backend: openai``, each at a local server of its own, so that neither
finds the other's prompt in the server's cache), automatic inline completions in
two situations: *cold* (right after didOpen) and *typing* (after a line typed
above the enclosing function). Reports the p50 latency of each, the remote
steered ÷ unsteered ratio, the share of positions where the remote steered
completion writes the same first identifier as the in-process one, and accuracy.

**Load**: N editors (N = 1, 2, 4, 8), each a ``remote-steered`` steerlsp process
with its own document (a held-out position), all on the one server. Each round an
editor types two keystrokes 150 ms apart (each a ``didChange`` and an automatic
request; the first is cancelled by the second, ``$/cancelRequest``, as editors do),
waits for the second's answer, then reads for 1 s. Reports p50/p90 latency of the
answered requests, completions per second, the cancelled requests' answers
(every request must get one), the server requests per completion, and the server's
prefix-cache hit rate (its log's "prefix-match hit" over the prompt tokens).

    PYTHONPATH=. .venv/bin/python bench/served.py --out bench/results
    PYTHONPATH=. .venv/bin/python bench/served.py --limit 4 --editors 1,2 --rounds 2

Writes ``served.json``, ``served.md`` and ``served.png``.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.steering_latency as latency
from bench.next_identifier import RESULTS, Position
from tests.helpers.llama_server import LlamaServer

INPROCESS = "steered"
REMOTE_UNSTEERED, REMOTE_STEERED = "remote-unsteered", "remote-steered"
SITUATIONS = ["cold", "typing"]
EDITORS = (1, 2, 4, 8)
KEYSTROKE = 0.15  # seconds between the two keystrokes of a round
READING = 1.0  # seconds an editor reads after an answer
ANSWER_TIMEOUT = 120.0  # a request unanswered this long is lost (none should be)
# How much of each prompt the server's cache held, as its log says: llama-cpp-python's
# "N prefix-match hit, remaining M prompt tokens"; llama-server's "n_prompt_tokens = T"
# of a new task, then "kv cache rm [N, end)".
_HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens")
_TASK = re.compile(r"n_prompt_tokens = (\d+)|kv cache rm \[(\d+), end\)")


def remote_configs(unsteered: str, steered: str) -> dict[str, dict[str, Any]]:
    """The two remote configurations, each at its own server's URL."""

    def model(url: str) -> dict[str, Any]:
        return {"backend": "openai", "endpoint": url, "timeoutMs": 60000}

    return {
        REMOTE_UNSTEERED: {"model": model(unsteered), "steering": {"enabled": False}},
        REMOTE_STEERED: {"model": model(steered)},
    }


# -- agreement and cost -------------------------------------------------------------------------


def agreement(positions: list[Position], tokens: int, logs: Path) -> dict[str, Any]:
    configs = [INPROCESS, REMOTE_UNSTEERED, REMOTE_STEERED]
    rows, states = latency.run_once(0, positions, configs, SITUATIONS, tokens, logs)
    summary: dict[str, Any] = {}
    for situation in SITUATIONS:
        results = [row["results"][situation] for row in rows]
        entry: dict[str, Any] = {}
        for config in configs:
            ok = [r[config] for r in results if not r[config]["error"]]
            entry[config] = {
                "n": len(ok),
                "p50_ms": _median([r["ms"] for r in ok]),
                "p90_ms": _round(latency.percentile([r["ms"] for r in ok], 90)),
                "accuracy": round(sum(r["correct"] for r in ok) / len(ok), 3) if ok else None,
                "errors": len(results) - len(ok),
            }
        both = [r for r in results if not r[INPROCESS]["error"] and not r[REMOTE_STEERED]["error"]]
        same = sum(r[INPROCESS]["written"] == r[REMOTE_STEERED]["written"] for r in both)
        paired = [
            r[REMOTE_STEERED]["ms"] / r[REMOTE_UNSTEERED]["ms"]
            for r in results
            if not r[REMOTE_STEERED]["error"]
            and not r[REMOTE_UNSTEERED]["error"]
            and r[REMOTE_UNSTEERED]["ms"] > 0
        ]
        entry["same_first_identifier"] = {"same": same, "compared": len(both)}
        steered, unsteered = entry[REMOTE_STEERED]["p50_ms"], entry[REMOTE_UNSTEERED]["p50_ms"]
        entry["remote_ratio_p50"] = round(steered / unsteered, 2) if steered and unsteered else None
        entry["remote_paired_ratio_p50"] = round(statistics.median(paired), 2) if paired else None
        summary[situation] = entry
    return {"rows": rows, "summary": summary, "servers": states}


# -- load ---------------------------------------------------------------------------------------


class Editor:
    """One editor: a steerlsp process and its document, typing in rounds."""

    def __init__(self, index: int, position: Position, settings: dict[str, Any], logs: Path):
        self.doc = latency.document(position)
        root = Path(position.root)
        self.server = latency.Server(REMOTE_STEERED, f"editor{index}", settings, root, logs)
        self.version = 1
        self.line = self.doc.line
        self.latencies: list[float] = []
        self.outcomes: dict[str, int] = {"answered": 0, "cancelled": 0, "failed": 0, "lost": 0}

    def start(self) -> None:
        self.server.launch()

    def ready(self) -> None:
        self.server.wait_ready()
        self.server.open(self.doc.uri, self.doc.text)

    def keystroke(self) -> tuple[threading.Event, dict[str, Any], float]:
        """A blank line typed above the function, then an automatic request."""
        client = self.server.client
        assert client is not None
        self.version += 1
        at = {"line": self.doc.edit.line, "character": 0}
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.doc.uri, "version": self.version},
                "contentChanges": [{"range": {"start": at, "end": at}, "text": "\n"}],
            },
        )
        self.line += 1
        done, box = threading.Event(), {}

        def on_reply(message: dict[str, Any] | None, read_at: float) -> None:
            box["reply"] = (message, read_at)
            done.set()

        params = {
            "textDocument": {"uri": self.doc.uri},
            "position": {"line": self.line, "character": self.doc.character},
            "context": {"triggerKind": latency.AUTOMATIC},
        }
        msg_id = next(client._ids)
        box["id"] = msg_id
        client._pending[msg_id] = on_reply
        sent = client._send(
            {"jsonrpc": "2.0", "id": msg_id, "method": latency.INLINE, "params": params}
        )
        return done, box, sent

    def rounds(self, count: int) -> None:
        client = self.server.client
        assert client is not None
        for _ in range(count):
            first = self.keystroke()
            time.sleep(KEYSTROKE)
            if not first[0].is_set():
                client.notify("$/cancelRequest", {"id": first[1]["id"]})
            second = self.keystroke()
            for index, (done, box, sent) in enumerate((first, second)):
                if not done.wait(ANSWER_TIMEOUT):
                    self.outcomes["lost"] += 1
                    continue
                message, read_at = box["reply"]
                if message is None or "error" not in message:
                    self.outcomes["answered"] += 1
                    if index == 1:
                        self.latencies.append((read_at - sent) * 1000)
                elif message["error"].get("code") == -32800:
                    self.outcomes["cancelled"] += 1
                else:
                    self.outcomes["failed"] += 1
            time.sleep(READING)

    def counts(self) -> tuple[int, int]:
        """The requests sent to the server so far, and the completions served."""
        model = self.server.status().get("model", {})
        remote = model.get("remote") or {}
        return int(remote.get("requests", 0)), int(model.get("served") or 0)

    def requests_per_completion(self, before: tuple[int, int]) -> float | None:
        """The requests per completion served since ``before`` (so the connection's
        probes, sent once at start, are not counted)."""
        (requests, served), (sent, done) = self.counts(), before
        served -= done
        return round((requests - sent) / served, 2) if served else None


def load(
    positions: list[Position],
    url: str,
    editors: list[int],
    rounds: int,
    tokens: int,
    server_log: Path,
    logs: Path,
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    root_env = str(Path(positions[0].python).parent.parent)
    for count in editors:
        settings = json.loads(json.dumps(remote_configs(url, url)[REMOTE_STEERED]))
        settings["completion"] = {"maxNewTokens": tokens}
        settings["python"] = {"environment": root_env}
        team = [Editor(i, positions[i % len(positions)], settings, logs) for i in range(count)]
        try:
            for editor in team:
                editor.start()
            for editor in team:
                editor.ready()
            log_from = server_log.stat().st_size
            before = [editor.counts() for editor in team]
            started = time.perf_counter()
            threads = [threading.Thread(target=e.rounds, args=(rounds,)) for e in team]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - started
            hits = _hits(server_log, log_from)
            latencies = [ms for e in team for ms in e.latencies]
            outcomes = {k: sum(e.outcomes[k] for e in team) for k in team[0].outcomes}
            per = [e.requests_per_completion(b) for e, b in zip(team, before, strict=True)]
            results[str(count)] = {
                "editors": count,
                "p50_ms": _median(latencies),
                "p90_ms": _round(latency.percentile(latencies, 90)),
                "completions_per_s": round(outcomes["answered"] / elapsed, 2),
                "outcomes": outcomes,
                "server_requests_per_completion": _median([p for p in per if p is not None]),
                "prefix_hit_rate": hits,
                "seconds": round(elapsed, 1),
            }
            print(f"load {count}: {results[str(count)]}", file=sys.stderr, flush=True)
        finally:
            for editor in team:
                editor.server.stop()
    return results


def _hits(log: Path, start: int) -> float | None:
    """The share of prompt tokens the server found in its cache, from ``start`` on."""
    with log.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode("utf-8", "replace")
    hit = fresh = 0
    for match in _HIT.finditer(text):
        hit, fresh = hit + int(match.group(1)), fresh + int(match.group(2))
    prompt = 0
    for match in _TASK.finditer(text):
        if match.group(1) is not None:
            prompt = int(match.group(1))
        elif prompt:
            kept = min(int(match.group(2)), prompt)
            hit, fresh, prompt = hit + kept, fresh + prompt - kept, 0
    return round(hit / (hit + fresh), 3) if hit + fresh else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


# -- report -------------------------------------------------------------------------------------


def report(result: dict[str, Any]) -> str:
    meta = result["meta"]
    lines = [
        "# steerlsp on a shared inference server",
        "",
        (
            f"llama.cpp's `llama-server` (as vendored by llama-cpp-python {meta['llama_cpp']}, "
            f"{meta['slots']} slots)"
            if meta.get("engine") == "llama-server"
            else f"llama-cpp-python {meta['llama_cpp']} `llama_cpp.server`"
        )
        + " serving the embedded GGUF on "
        f"127.0.0.1 (2 threads), on the same 2 cores as the editors' steerlsp processes. "
        f"{meta['positions']} held-out third-party positions, automatic inline completions "
        f"of {meta['tokens']} tokens. Took {meta['seconds'] / 60:.0f} min.",
        "",
        "## Agreement and the cost of steering through the API",
        "",
        "| situation | in-process steered p50 | remote unsteered p50 | remote steered p50 | "
        "remote steered ÷ unsteered (paired) | same first identifier as in-process | "
        "accuracy in-process / remote unsteered / remote steered |",
        "|---|---|---|---|---|---|---|",
    ]
    for situation, entry in result["agreement"]["summary"].items():
        same = entry["same_first_identifier"]
        share = same["same"] / same["compared"] if same["compared"] else 0
        lines.append(
            f"| {situation} | {entry[INPROCESS]['p50_ms']} ms | "
            f"{entry[REMOTE_UNSTEERED]['p50_ms']} ms | {entry[REMOTE_STEERED]['p50_ms']} ms | "
            f"{entry['remote_ratio_p50']}x ({entry['remote_paired_ratio_p50']}x) | "
            f"{share:.0%} ({same['same']}/{same['compared']}) | "
            + " / ".join(
                f"{entry[c]['accuracy']:.0%}" if entry[c]["accuracy"] is not None else "-"
                for c in (INPROCESS, REMOTE_UNSTEERED, REMOTE_STEERED)
            )
            + " |"
        )
    lines += [
        "",
        "## Editors on one server",
        "",
        "| editors | p50 | p90 | p50 ÷ 1 editor | completions/s | answered / cancelled / "
        "failed / lost | server requests per completion | prefix-cache hit rate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    one = (result["load"].get("1") or {}).get("p50_ms")
    for entry in result["load"].values():
        o = entry["outcomes"]
        ratio = f"{entry['p50_ms'] / one:.2f}x" if one and entry["p50_ms"] else "-"
        hit = entry["prefix_hit_rate"]
        lines.append(
            f"| {entry['editors']} | {entry['p50_ms']} ms | {entry['p90_ms']} ms | {ratio} | "
            f"{entry['completions_per_s']} | {o['answered']} / {o['cancelled']} / "
            f"{o['failed']} / {o['lost']} | {entry['server_requests_per_completion']} | "
            + (f"{hit:.0%}" if hit is not None else "-")
            + " |"
        )
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    summary = result["agreement"]["summary"]
    configs = [INPROCESS, REMOTE_UNSTEERED, REMOTE_STEERED]
    width = 0.25
    for k, config in enumerate(configs):
        values = [(summary[s][config]["p50_ms"] or 0) / 1000 for s in summary]
        left.bar([i + k * width for i in range(len(summary))], values, width, label=config)
    left.set_xticks([i + width for i in range(len(summary))])
    left.set_xticklabels(
        [
            f"{s}\nsame name: {summary[s]['same_first_identifier']['same']}/"
            f"{summary[s]['same_first_identifier']['compared']}"
            for s in summary
        ]
    )
    left.set_ylabel("p50 inline completion latency (s)")
    left.set_title("in-process vs a local llama.cpp server", fontsize=10)
    left.legend(fontsize=8)
    counts = [entry["editors"] for entry in result["load"].values()]
    for key, style in (("p50_ms", "o-"), ("p90_ms", "s--")):
        right.plot(
            counts,
            [(entry[key] or 0) / 1000 for entry in result["load"].values()],
            style,
            label=key[:3],
        )
    right.set_xscale("log", base=2)
    right.set_xticks(counts)
    right.set_xticklabels([str(c) for c in counts])
    right.set_xlabel("editors on one server")
    right.set_ylabel("latency of answered completions (s)")
    right.set_title("editors typing on one llama.cpp server (2 cores)", fontsize=10)
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=12, help="held-out positions")
    parser.add_argument("--tokens", type=int, default=8, help="completion.maxNewTokens")
    parser.add_argument("--editors", default=",".join(map(str, EDITORS)))
    parser.add_argument("--rounds", type=int, default=4, help="typing rounds per editor")
    parser.add_argument("--skip-agreement", action="store_true")
    parser.add_argument(
        "--llama-server",
        default="",
        help="llama.cpp's llama-server binary to serve with (one slot per editor) instead "
        "of llama-cpp-python's llama_cpp.server",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    import llama_cpp

    positions = latency.positions_for(args.limit, 0)
    started = time.perf_counter()
    # The agreement part gives each remote configuration a server of its own, so that
    # neither finds the other's prompt in its cache; the load part shares one.
    binary = args.llama_server
    slots = max(int(n) for n in args.editors.split(",")) if binary else 1
    server = LlamaServer(verbose=True, binary=binary, slots=slots).start()
    other = LlamaServer(binary=binary).start()
    try:
        latency.CONFIGS.update(remote_configs(other.url, server.url))
        with tempfile.TemporaryDirectory(prefix="served-") as logs:
            agreed = (
                {"summary": {}, "rows": []}
                if args.skip_agreement
                else agreement(positions, args.tokens, Path(logs))
            )
            loaded = load(
                positions,
                server.url,
                [int(n) for n in args.editors.split(",")],
                args.rounds,
                args.tokens,
                server.log,
                Path(logs),
            )
    finally:
        server.close()
        other.close()
    result = {
        "meta": {
            "positions": len(positions),
            "tokens": args.tokens,
            "rounds": args.rounds,
            "llama_cpp": llama_cpp.__version__,
            "engine": "llama-server" if binary else "llama_cpp.server",
            "slots": slots,
            "seconds": round(time.perf_counter() - started, 1),
        },
        "agreement": agreed,
        "load": loaded,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "served_llama_server" if binary else "served"
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    markdown = report(result)
    (args.out / f"{stem}.md").write_text(markdown)
    plot(result, args.out / f"{stem}.png")
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
