"""Helix's completion menu through steerlsp: does the AI item show up, and at what cost?

Helix has no inline completion. It asks ``textDocument/completion`` after each
keystroke, and steerlsp adds one AI item to pylsp's list: answered from the
typed-ahead cache when the text typed since a finished suggestion begins it,
otherwise generated in the background (the list is ``isIncomplete`` meanwhile,
so the editor asks again), never waited for.

A scripted client types like Helix into the functions of a copy of the example
project (``steerlsp/example/project``): each function's body (docstring included) is
removed, and typed back at ``--cps`` characters a second, Enter with auto-indent as one
keystroke; after each keystroke an incremental ``didChange`` and a
``textDocument/completion`` at the cursor, without waiting for the reply. The
same keystrokes go at the same moments to steerlsp (the embedded model, the
editor's capabilities without inline completion) and to pylsp started directly.

Figures:

(a) the share of keystrokes that show an AI item within ``--window`` seconds:
    a keystroke counts when the reply to it, or to a later keystroke's request,
    carries the AI item and arrives at most ``--window`` s after it (Helix shows
    a reply as it comes). Also: the share of replies with the item, the time
    from a keystroke to its first item, and how often the item is right (its
    first line is what the user goes on to type on that line);
(b) the normal menu's latency, steerlsp against pylsp directly, median and p90,
    over the same keystrokes in the same run; and pylsp alone (no model running
    on the machine) over the first functions, for reference.

Writes OUT/helix_fallback.json (every keystroke) and OUT/helix_fallback.png;
prints a Markdown summary. About 4 minutes on 2 cores.

Run: .venv/bin/python bench/helix_fallback.py [--cps 5] [--window 3] [--line-pause 0]
     [--baseline-functions 3] [--settings '{"completion": {...}}'] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from bench.lspbench import LspClient
from tests.helpers.typist import Editor, Sample, Target, right, shown_within, targets

REPO = Path(__file__).resolve().parents[1]
SHOP = REPO / "steerlsp" / "example" / "project"
STEERLSP = [sys.executable, "-m", "steerlsp"]
PYLSP = [sys.executable, "-I", "-m", "pylsp"]  # as steerlsp starts its upstream
AI_DETAIL = "steerlsp AI suggestion"
# What Helix 25 announces for completion (no inlineCompletion), and its settings:
# none, so steerlsp's defaults apply.
CAPABILITIES = {
    "general": {"positionEncodings": ["utf-8", "utf-32", "utf-16"]},
    "textDocument": {
        "completion": {
            "completionItem": {
                "snippetSupport": True,
                "resolveSupport": {"properties": ["documentation", "detail"]},
                "insertReplaceSupport": True,
                "deprecatedSupport": True,
                "tagSupport": {"valueSet": [1]},
            },
            "completionItemKind": {},
        },
        "synchronization": {"didSave": True},
    },
}
READY_TIMEOUT = 900.0


@dataclass
class Run:
    steerlsp: list[Sample] = field(default_factory=list)
    direct: list[Sample] = field(default_factory=list)
    alone: list[Sample] = field(default_factory=list)


def initialize(client: LspClient, root: Path, options: dict[str, Any] | None) -> None:
    params = {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": CAPABILITIES,
        "initializationOptions": options or {},
    }
    client.request("initialize", params)
    client.notify("initialized", {})


def wait_ready(client: LspClient) -> float:
    """Seconds until steerlsp reports its model ready."""
    started = time.perf_counter()
    while time.perf_counter() - started < READY_TIMEOUT:
        reply, _ = client.request("steerlsp/status")
        model = reply["result"]["model"]
        if model["state"] == "ready":
            return time.perf_counter() - started
        if model["state"] == "failed":
            raise RuntimeError(f"the model failed to load: {model['error']}")
        time.sleep(0.2)
    raise TimeoutError("the model did not load")


def recorder(sample: Sample, lock: threading.Lock) -> Any:
    def on_reply(message: dict[str, Any] | None, read_at: float) -> None:
        with lock:
            sample.received = read_at
            result = (message or {}).get("result")
            items = result.get("items", []) if isinstance(result, dict) else (result or [])
            sample.items = len(items)
            sample.incomplete = bool(isinstance(result, dict) and result.get("isIncomplete"))
            for item in items:
                if item.get("detail") == AI_DETAIL:
                    sample.ai_text = item.get("textEdit", {}).get("newText", item.get("label"))

    return on_reply


def type_function(
    clients: dict[str, LspClient],
    target: Target,
    run: dict[str, list[Sample]],
    cps: float,
    line_pause: float,
    settle: float,
    lock: threading.Lock,
) -> None:
    """Open the document without the body, type it back, close it."""
    uri = target.path.as_uri()
    document = {"uri": uri, "languageId": "python", "version": 1, "text": target.text}
    for client in clients.values():
        client.notify("textDocument/didOpen", {"textDocument": document})
    editor = Editor(target)
    time.sleep(0.5)  # as a user would look before typing; lets the open settle
    at = time.perf_counter()
    for index, key in enumerate(target.keystrokes):
        if key.insert.startswith("\n"):
            at += line_pause
        delay = at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        change = editor.type(key.insert)
        params = {
            "textDocument": {"uri": uri},
            "position": editor.position(),
            "context": {"triggerKind": 1},
        }
        for name, client in clients.items():
            client.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": index + 2}, "contentChanges": [change]},
            )
            sample = Sample(target.name, index, time.perf_counter(), rest_of_line=key.rest_of_line)
            run[name].append(sample)
            client.send_request("textDocument/completion", params, recorder(sample, lock))
        at += 1 / cps
    time.sleep(settle)  # the last keystrokes' window, and their replies
    for client in clients.values():
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def latency_ms(samples: list[Sample]) -> list[float]:
    return [(s.received - s.sent) * 1000 for s in samples if s.received is not None]


def stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    array = np.array(values)
    return {
        "n": len(values),
        "median": float(np.median(array)),
        "p90": float(np.percentile(array, 90)),
        "mean": float(array.mean()),
        "max": float(array.max()),
    }


def summarize(run: Run, window: float) -> dict[str, Any]:
    waits = shown_within(run.steerlsp, window)
    shown = [w for w in waits if w is not None]
    with_item = [s for s in run.steerlsp if s.ai_text is not None]
    answered = [s for s in run.steerlsp if s.received is not None]
    return {
        "keystrokes": len(run.steerlsp),
        "shown_within_window": len(shown) / max(1, len(waits)),
        "seconds_to_item": stats(shown),
        "replies_with_item": len(with_item) / max(1, len(answered)),
        "items_right": sum(right(s) for s in with_item) / max(1, len(with_item)),
        "unanswered": {
            name: sum(s.received is None for s in samples)
            for name, samples in (("steerlsp", run.steerlsp), ("direct", run.direct))
        },
        "menu_ms": {
            "steerlsp": stats(latency_ms(run.steerlsp)),
            "direct": stats(latency_ms(run.direct)),
            "alone": stats(latency_ms(run.alone)),
        },
    }


def markdown(summary: dict[str, Any], window: float) -> str:
    menu = summary["menu_ms"]
    rows = [
        f"| keystrokes | {summary['keystrokes']} |",
        f"| shown an AI item within {window:g} s | {summary['shown_within_window']:.0%} |",
        f"| replies with the AI item | {summary['replies_with_item']:.0%} |",
        f"| items whose first line is what was typed next | {summary['items_right']:.0%} |",
    ]
    wait = summary["seconds_to_item"]
    if wait.get("n"):
        rows.append(
            f"| keystroke to item, median / p90 | {wait['median']:.2f} / {wait['p90']:.2f} s |"
        )
    for name, label in (
        ("steerlsp", "menu via steerlsp"),
        ("direct", "menu via pylsp, same run"),
        ("alone", "menu via pylsp alone"),
    ):
        figures = menu[name]
        if figures.get("n"):
            rows.append(
                f"| {label}, median / p90 | {figures['median']:.0f} / {figures['p90']:.0f} ms |"
            )
    return "| figure | value |\n|---|---|\n" + "\n".join(rows)


def plot(run: Run, summary: dict[str, Any], window: float, out: Path) -> None:
    fig, (left, right_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, samples, style in (
        ("steerlsp", run.steerlsp, "-"),
        ("pylsp, same run", run.direct, "--"),
        ("pylsp alone", run.alone, ":"),
    ):
        values = np.sort(latency_ms(samples))
        if len(values):
            left.plot(values, np.arange(1, len(values) + 1) / len(values), style, label=name)
    left.set_xscale("log")
    left.set_xlabel("completion menu latency (ms)")
    left.set_ylabel("share of keystrokes")
    left.set_title("(b) the normal menu")
    left.legend()
    waits = [w for w in shown_within(run.steerlsp, window) if w is not None]
    if waits:
        values = np.sort(waits)
        share = np.arange(1, len(values) + 1) / len(run.steerlsp)
        right_ax.step(values, share, where="post")
    right_ax.axvline(window, color="grey", linestyle=":")
    right_ax.set_xlim(0, window * 1.05)
    right_ax.set_ylim(0, 1)
    right_ax.set_xlabel("seconds from a keystroke to an AI item in the menu")
    right_ax.set_ylabel("share of keystrokes")
    right_ax.set_title(f"(a) {summary['shown_within_window']:.0%} within {window:g} s")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cps", type=float, default=5.0, help="keystrokes a second")
    parser.add_argument("--window", type=float, default=3.0, help="seconds for figure (a)")
    parser.add_argument("--line-pause", type=float, default=0.0, help="seconds before Enter")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after each function")
    parser.add_argument("--functions", type=int, default=0, help="type only the first N (0: all)")
    parser.add_argument("--baseline-functions", type=int, default=3, help="pylsp alone (0: none)")
    parser.add_argument("--settings", default="{}", help="steerlsp settings (JSON) to send")
    parser.add_argument("--log", type=Path, help="steerlsp's log file (at debug level)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="helix-bench-") as temp:
        root = Path(temp) / "shop"
        shutil.copytree(SHOP, root)
        chosen = targets(root)
        if args.functions:
            chosen = chosen[: args.functions]
        lock = threading.Lock()
        run = Run()
        typing = {"cps": args.cps, "line_pause": args.line_pause, "settle": args.settle}

        if args.baseline_functions:
            alone = LspClient("pylsp-alone", PYLSP)
            try:
                initialize(alone, root, None)
                warm(alone, chosen[0])
                for target in chosen[: args.baseline_functions]:
                    type_function(
                        {"alone": alone}, target, {"alone": run.alone}, **typing, lock=lock
                    )
            finally:
                alone.close()

        logging = ["--log-file", str(args.log), "--log-level", "debug"] if args.log else []
        steer = LspClient("steerlsp", [*STEERLSP, *logging])
        direct = LspClient("pylsp", PYLSP)
        try:
            initialize(steer, root, json.loads(args.settings))
            initialize(direct, root, None)
            loaded_s = wait_ready(steer)
            for client in (steer, direct):
                warm(client, chosen[0])
            clients = {"steerlsp": steer, "direct": direct}
            lists = {"steerlsp": run.steerlsp, "direct": run.direct}
            for target in chosen:
                type_function(clients, target, lists, **typing, lock=lock)
            status, _ = steer.request("steerlsp/status")
        finally:
            steer.close()
            direct.close()

    summary = summarize(run, args.window)
    summary["model_load_s"] = loaded_s
    summary["model"] = status["result"]["model"]
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "config": {**vars(args), "functions": [t.name for t in chosen]},
        "summary": summary,
        "samples": asdict(run),
    }
    (args.out / "helix_fallback.json").write_text(json.dumps(report, indent=1, default=str))
    plot(run, summary, args.window, args.out / "helix_fallback.png")
    print(markdown(summary, args.window))


def warm(client: LspClient, target: Target) -> None:
    """One completion first: Jedi's first answer builds its caches (seconds)."""
    uri = target.path.as_uri()
    document = {"uri": uri, "languageId": "python", "version": 1, "text": target.text}
    client.notify("textDocument/didOpen", {"textDocument": document})
    position = {"line": target.line, "character": target.column}
    client.request("textDocument/completion", {"textDocument": {"uri": uri}, "position": position})
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


if __name__ == "__main__":
    main()
