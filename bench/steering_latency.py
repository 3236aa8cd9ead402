"""Steering's latency as users meet it: the real server, steered and unsteered, taking turns.

Positions are the held-out third-party positions of ``bench/next_identifier.py``
(library code from the task venvs, ``--split test``: the cursor right after a
``.``, the file up to it before and the rest of the file after the name). Each
configuration is a real ``python -m steerlsp`` over stdio, as an editor starts
it: ``rootUri`` the venv's site-packages, ``python.environment`` the venv (so
Jedi resolves the library), ``completion.maxNewTokens`` ``--tokens``. Every
request is a ``textDocument/inlineCompletion`` with ``triggerKind`` 2
(Automatic: debounced, one item, as editors send while typing); its latency is
the client's wall time from writing the request to reading the reply.

Situations, at each position:

- **cold**: ``didOpen``, then at once the request: a document just opened, that
  neither the model's cache nor the analysis instance has seen;
- **typing**: in that open document, a ``didChange`` (version 2) inserting one
  blank line above the enclosing function (above the enclosing statement when
  the function starts farther back than the prompt's window), then the request
  at the same logical position: caches warm, the document version new;
- **read**: ``didOpen`` on a second server of the same configuration (which
  has not seen the document), 2 s of waiting (what an editor gives while the
  user reads), then the request.

So each configuration has two servers ("open": cold then typing; "read"). The
configurations take turns at each position, the first alternating, and each
server's own pylsp finishes linting (its diagnostics arrive) before the next
server is measured, so that neither a slow spell of the machine nor the other
server's lint falls on one configuration more than the other. Before the first
position every server completes one throwaway document (unmeasured): Jedi's
stdlib stubs and the model's first call are the server's start, not a
document's.

Per completion it records the latency, the text, the identifier written first
(right or wrong against the real name) and, from ``steerlsp/explain``, the
steering queries (outcomes, latencies). ``--runs 2`` runs everything twice with
fresh servers; *determinism* is the share of positions whose name differs
between the runs.

    python bench/steering_latency.py --out bench/results
    python bench/steering_latency.py --limit 10 --runs 1 --situations cold,typing

Writes ``steering_latency.json`` (rows and summary), ``steering_latency.md`` and
``steering_latency.png`` (``steering_latency_t48.*`` for ``--tokens 48``). A
position takes about 75 s a run on 2 busy shared cores (six completions of a
1000-token prompt, two 2 s waits): the default, 12 positions and 2 runs, about
30 minutes; all of them (``--limit 0``, about 200), about 8 hours.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import itertools
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.lspbench import LspClient
from bench.next_identifier import (
    RESULTS,
    THIRD_PARTY,
    Position,
    gather,
    written_identifier,
)
from steerlsp.prompts.builder import MAX_CHARS_PER_TOKEN
from steerlsp.server.config import CompletionSettings

# steerlsp settings per configuration (initializationOptions, camelCase). Add rows here.
CONFIGS: dict[str, dict[str, Any]] = {
    "unsteered": {"steering": {"enabled": False}},
    "steered": {},
    # The settings' maxima: no answer is late, whatever the load (bench/configs.toml).
    "steered-patient": {"steering": {"budgetMs": 10000, "queryTimeoutMs": 5000}},
    # Ablation: the default without the string stage (what its masks cost a completion).
    "steered-no-strings": {"steering": {"strings": False}},
    # Ablation: the default without the unused-import stage.
    "steered-no-imports": {"steering": {"imports": False}},
}
BASELINE = "unsteered"
SITUATIONS = ("cold", "read", "typing")
LANES = {"cold": "open", "typing": "open", "read": "read"}
DEFAULT_LIMIT = 12  # positions: `make bench` stays under about 30 minutes (2 runs)
READ_DELAY = 2.0  # seconds between didOpen and the request in "read"
REQUEST_TIMEOUT = 60.0
READY_TIMEOUT = 600.0  # the model's load on a busy machine
SETTLE_TIMEOUT = 20.0  # the most we wait for a server's diagnostics before the next server
# What the server's prompt window holds before the cursor (characters, whole lines): an
# edit farther back than this would not change the prompt, and typed-ahead would answer.
WINDOW = CompletionSettings().prefix_tokens * MAX_CHARS_PER_TOKEN
WARM_NAME = "_steerlsp_bench_warm.py"  # never written: the text travels in didOpen
WARM_TEXT = "import os\n\n\ndef here():\n    return os."
CAPABILITIES = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "inlineCompletion": {},
        "synchronization": {"dynamicRegistration": False},
        "publishDiagnostics": {},
    },
}
INLINE = "textDocument/inlineCompletion"
AUTOMATIC = 2
NEWLINE = re.compile(r"\r\n|\r|\n")  # LSP's line ends


# -- documents (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """The typing situation's edit: a blank line inserted at the start of ``line``."""

    line: int  # 0-based
    where: str  # "function" | "statement" | "module"
    distance: int  # characters from the inserted line to the cursor


@dataclass(frozen=True)
class Doc:
    """One position as an editor document: its text, cursor and typing edit."""

    uri: str
    text: str
    line: int
    character: int  # UTF-16
    edit: Edit


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def cursor_of(prefix: str) -> tuple[int, int]:
    """The LSP position (line, UTF-16 character) at the end of ``prefix``."""
    breaks = list(NEWLINE.finditer(prefix))
    start = breaks[-1].end() if breaks else 0
    return len(breaks), utf16(prefix[start:])


def typing_edit(position: Position) -> Edit:
    """Where the typing situation inserts its blank line: above the innermost function
    or class around the cursor (decorators included) when that lies within the prompt's
    window, else above the innermost statement around it that starts its own line."""
    source = position.prefix + position.truth + position.suffix
    line_starts = [0] + [m.end() for m in NEWLINE.finditer(source)]
    cursor = len(position.prefix)
    dot_line = len(list(NEWLINE.finditer(position.prefix))) + 1
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = None
    enclosing: list[ast.stmt] = []
    for node in ast.walk(tree) if tree is not None else ():
        end = getattr(node, "end_lineno", None)
        if isinstance(node, ast.stmt) and end is not None and node.lineno <= dot_line <= end:
            enclosing.append(node)
    enclosing.sort(key=lambda n: (n.lineno, -(n.end_lineno or 0)), reverse=True)  # innermost

    def first_line(node: ast.stmt) -> int:
        decorators = getattr(node, "decorator_list", [])
        return min([node.lineno, *(d.lineno for d in decorators)]) - 1

    def usable(node: ast.stmt) -> bool:
        line = first_line(node)
        text = source[line_starts[line] : cursor]
        starts_line = node.col_offset == len(text) - len(text.lstrip(" \t"))
        continued = line > 0 and source[: line_starts[line]].rstrip("\r\n").endswith("\\")
        within = cursor - line_starts[line] <= WINDOW
        return starts_line and not continued and within

    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for kinds, where in ((defs, "function"), (ast.stmt, "statement")):
        for node in enclosing:
            if isinstance(node, kinds) and usable(node):
                line = first_line(node)
                return Edit(line, where, cursor - line_starts[line])
    line = first_line(enclosing[-1]) if enclosing else dot_line - 1
    return Edit(line, "module", cursor - line_starts[line])


def document(position: Position) -> Doc:
    line, character = cursor_of(position.prefix)
    return Doc(
        Path(position.document).as_uri(),
        position.prefix + position.suffix,
        line,
        character,
        typing_edit(position),
    )


# -- the client ---------------------------------------------------------------------------------


class Client(LspClient):
    """:class:`LspClient` that also counts diagnostics per uri, keeps the server's
    warnings and errors shown to the user, and sends requests with a timeout."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.diagnostics: Counter[str] = Counter()
        self.shown: list[str] = []
        self._changed = threading.Condition()
        super().__init__(name, command)

    def _dispatch(self, message: dict[str, Any], read_at: float) -> None:
        method = message.get("method")
        params = message.get("params") or {}
        if method == "textDocument/publishDiagnostics":
            with self._changed:
                self.diagnostics[params.get("uri", "")] += 1
                self._changed.notify_all()
        elif method in ("window/showMessage", "window/showMessageRequest") and (
            params.get("type", 4) <= 2  # Error, Warning
        ):
            self.shown.append(str(params.get("message", ""))[:300])
        super()._dispatch(message, read_at)

    def wait_diagnostics(self, uri: str, seen: int, timeout: float = SETTLE_TIMEOUT) -> float:
        """Seconds until ``uri`` has had more than ``seen`` diagnostics; -1 on timeout."""
        started = time.perf_counter()
        with self._changed:
            if self._changed.wait_for(lambda: self.diagnostics[uri] > seen, timeout):
                return time.perf_counter() - started
        return -1.0

    def call(
        self, method: str, params: Any, timeout: float = REQUEST_TIMEOUT
    ) -> tuple[dict[str, Any] | None, float, str]:
        """The reply, its latency in ms (write to read) and what went wrong ("": nothing).
        A request past ``timeout`` is cancelled and its latency is the timeout."""
        done = threading.Event()
        box: list[tuple[dict[str, Any] | None, float]] = []

        def on_reply(message: dict[str, Any] | None, read_at: float) -> None:
            box.append((message, read_at))
            done.set()

        msg_id = next(self._ids)
        self._pending[msg_id] = on_reply
        try:
            started = self._send(
                {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
            )
        except OSError as exc:
            self._pending.pop(msg_id, None)
            return None, 0.0, f"send failed: {exc!r}"
        if not done.wait(timeout):
            self._pending.pop(msg_id, None)
            with contextlib.suppress(OSError):
                self.notify("$/cancelRequest", {"id": msg_id})
            return None, timeout * 1000, f"timeout after {timeout:.0f} s"
        message, read_at = box[0]
        ms = (read_at - started) * 1000
        if message is None:
            return None, ms, "the server exited"
        if "error" in message:
            return (
                message,
                ms,
                f"error {message['error'].get('code')}: "
                + str(message["error"].get("message", ""))[:200],
            )
        return message, ms, ""


@dataclass
class Server:
    """One steerlsp process for one configuration and lane."""

    config: str
    lane: str
    settings: dict[str, Any]
    root: Path
    logs: Path
    client: Client | None = None
    starts: int = 0
    ready_s: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.config}/{self.lane}"

    def launch(self) -> None:
        self.starts += 1
        log = self.logs / f"{self.config}-{self.lane}-{self.starts}.log"
        command = [sys.executable, "-m", "steerlsp", "--log-file", str(log)]
        self.client = Client(self.name, command)
        params = {
            "processId": None,
            "rootUri": self.root.as_uri(),
            "capabilities": CAPABILITIES,
            "initializationOptions": {"steerlsp": self.settings},
        }
        _, _, error = self.client.call("initialize", params, READY_TIMEOUT)
        if error:
            raise RuntimeError(f"{self.name}: initialize failed: {error}")
        self.client.notify("initialized", {})

    def wait_ready(self) -> None:
        """Until the model is ready and, when steering, the analysis instance runs; then
        one throwaway completion (Jedi's stubs, the model's first call)."""
        assert self.client is not None
        started = time.perf_counter()
        steering = self.settings.get("steering", {}).get("enabled", True)
        while True:
            reply, _, error = self.client.call("steerlsp/status", None, 30)
            status = (reply or {}).get("result") or {}
            model = status.get("model", {})
            if model.get("state") == "failed" or error:
                raise RuntimeError(f"{self.name}: {model.get('error') or error}")
            analysis = status.get("analysis", {}).get("state")
            if model.get("state") == "ready" and (not steering or analysis == "running"):
                break
            if time.perf_counter() - started > READY_TIMEOUT:
                raise TimeoutError(f"{self.name}: not ready after {READY_TIMEOUT:.0f} s: {status}")
            time.sleep(0.25)
        uri = (self.root / WARM_NAME).as_uri()
        self.open(uri, WARM_TEXT)
        line, character = cursor_of(WARM_TEXT)
        complete(self.client, uri, line, character)
        self.close_document(uri)
        self.ready_s = time.perf_counter() - started

    def alive(self) -> bool:
        return self.client is not None and self.client.proc.poll() is None

    def open(self, uri: str, text: str) -> int:
        """didOpen; the diagnostics count of ``uri`` before it."""
        assert self.client is not None
        seen = self.client.diagnostics[uri]
        doc = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        self.client.notify("textDocument/didOpen", {"textDocument": doc})
        return seen

    def close_document(self, uri: str) -> None:
        assert self.client is not None
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def status(self) -> dict[str, Any]:
        if not self.alive():
            return {"state": "exited"}
        assert self.client is not None
        reply, _, error = self.client.call("steerlsp/status", None, 30)
        return (reply or {}).get("result") or {"error": error}

    def warnings(self) -> list[str]:
        """The WARNING and ERROR lines of its logs, and what it showed the user."""
        lines: list[str] = []
        for log in sorted(self.logs.glob(f"{self.config}-{self.lane}-*.log")):
            text = log.read_text(errors="replace").splitlines()
            lines += [line[:300] for line in text if " WARNING " in line or " ERROR " in line]
        return lines + [f"shown: {m}" for m in (self.client.shown if self.client else [])]

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()


def complete(client: Client, uri: str, line: int, character: int) -> dict[str, Any]:
    """One automatic inline completion, timed; its first item's text."""
    params = {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": character},
        "context": {"triggerKind": AUTOMATIC},
    }
    reply, ms, error = client.call(INLINE, params)
    result = (reply or {}).get("result") or {}
    items = result.get("items", []) if isinstance(result, dict) else result
    text = ""
    if items:
        insert = items[0].get("insertText", "")
        text = insert.get("value", "") if isinstance(insert, dict) else str(insert)
    return {"ms": round(ms, 1), "text": text, "error": error}


# ``--traces``: each row keeps the whole ``steerlsp/explain`` trace too.
KEEP_TRACES = False


def explained(client: Client, uri: str) -> dict[str, Any]:
    """What ``steerlsp/explain`` says of the document's last completion, in brief."""
    reply, _, error = client.call("steerlsp/explain", {"textDocument": {"uri": uri}}, 30)
    if error:
        return {"explain_error": error}
    result = (reply or {}).get("result") or {}
    trace = result.get("trace") or {}
    queries = trace.get("queries", [])
    return {
        "version": result.get("version"),
        "prompt_tokens": result.get("prompt_tokens"),
        "queries": len(queries),
        "timeouts": sum(1 for q in queries if q.get("outcome") == "timeout"),
        "query_errors": sum(1 for q in queries if q.get("outcome") == "error"),
        "query_ms": [q.get("latency_ms") for q in queries],
        "query_kinds": [f"{q.get('query')}:{q.get('outcome')}" for q in queries],
        "query_problems": [q["error"] for q in queries if q.get("error")],
        "triggers": len(trace.get("triggers", [])),
        "notes": [str(n)[:200] for n in trace.get("notes", [])[:5]],
        "waited_ms": trace.get("waited_ms", 0.0),
        "interrupts": len(trace.get("interrupts", [])),
        "changed": len(trace.get("changed", [])),
        "timing": result.get("timing") or {},
    } | ({"trace": trace} if KEEP_TRACES else {})


# -- one position -------------------------------------------------------------------------------


def measure(
    server: Server, uri: str, line: int, character: int, truth: str, version: int
) -> dict[str, Any]:
    assert server.client is not None
    record = complete(server.client, uri, line, character)
    written = written_identifier(record["text"])
    record |= {"written": written, "correct": written == truth and not record["error"]}
    if not record["error"]:
        record |= explained(server.client, uri)
        if record.get("version") not in (None, version):
            record["explain_error"] = f"explained version {record['version']}, not {version}"
    return record


def settle(server: Server, uri: str, seen: int) -> float:
    """Let the server's pylsp finish linting before another server is measured."""
    assert server.client is not None
    return round(server.client.wait_diagnostics(uri, seen), 2)


def run_position(
    servers: dict[tuple[str, str], Server],
    position: Position,
    configs: list[str],
    situations: list[str],
) -> dict[str, Any]:
    """Every situation under every configuration at one position, configurations in turn."""
    doc = document(position)
    results: dict[str, dict[str, Any]] = {s: {} for s in situations}
    truth = position.truth
    if "cold" in situations or "typing" in situations:
        for config in configs:
            server = servers[(config, "open")]
            seen = server.open(doc.uri, doc.text)
            record = measure(server, doc.uri, doc.line, doc.character, truth, 1)
            record["settle_s"] = settle(server, doc.uri, seen)
            if "cold" in situations:
                results["cold"][config] = record
        if "typing" in situations:
            at = {"line": doc.edit.line, "character": 0}
            change = {"range": {"start": at, "end": at}, "text": "\n"}
            for config in configs:
                server = servers[(config, "open")]
                assert server.client is not None
                seen = server.client.diagnostics[doc.uri]
                server.client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": doc.uri, "version": 2}, "contentChanges": [change]},
                )
                record = measure(server, doc.uri, doc.line + 1, doc.character, truth, 2)
                record["settle_s"] = settle(server, doc.uri, seen)
                results["typing"][config] = record
        for config in configs:
            servers[(config, "open")].close_document(doc.uri)
    if "read" in situations:
        for config in configs:
            server = servers[(config, "read")]
            seen = server.open(doc.uri, doc.text)
            time.sleep(READ_DELAY)
            record = measure(server, doc.uri, doc.line, doc.character, truth, 1)
            record["settle_s"] = settle(server, doc.uri, seen)
            results["read"][config] = record
            server.close_document(doc.uri)
    return {
        "id": position.id,
        "origin": position.origin,
        "truth": truth,
        "chars": len(doc.text),
        "edit": {"line": doc.edit.line, "where": doc.edit.where, "distance": doc.edit.distance},
        "order": configs,
        "results": results,
    }


def run_once(
    run: int,
    positions: list[Position],
    configs: list[str],
    situations: list[str],
    tokens: int,
    logs: Path,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One run with fresh servers: the rows, and each server's state at the end."""
    lanes = sorted({LANES[s] for s in situations})
    root = Path(positions[0].root)
    environment = str(Path(positions[0].python).parent.parent)
    servers: dict[tuple[str, str], Server] = {}
    for config, lane in itertools.product(configs, lanes):
        settings = json.loads(json.dumps(CONFIGS[config]))
        settings.setdefault("completion", {})["maxNewTokens"] = tokens
        settings.setdefault("python", {})["environment"] = environment
        servers[(config, lane)] = Server(config, lane, settings, root, logs)
    rows: list[dict[str, Any]] = []
    try:
        for server in servers.values():
            server.launch()  # they load at once
        for server in servers.values():
            server.wait_ready()
            print(f"run {run + 1}: {server.name} ready in {server.ready_s:.1f}s", file=sys.stderr)
        for index, position in enumerate(positions):
            for server in servers.values():
                if not server.alive():  # a crash is recorded, and the run goes on
                    print(f"{server.name} exited; restarting it", file=sys.stderr)
                    server.stop()
                    server.launch()
                    server.wait_ready()
            order = configs if (index + run) % 2 == 0 else configs[::-1]
            started = time.perf_counter()
            row = run_position(servers, position, order, situations)
            row["run"] = run
            rows.append(row)
            print(
                f"run {run + 1} {index + 1}/{len(positions)} {position.id} {position.truth!r}: "
                + " ".join(
                    f"{s}:{c}={r['written']!r}/{r['ms']:.0f}ms{'!' if r['error'] else ''}"
                    for s, per in row["results"].items()
                    for c, r in per.items()
                )
                + f" ({time.perf_counter() - started:.1f}s)",
                file=sys.stderr,
                flush=True,
            )
        states = {
            server.name: {
                "starts": server.starts,
                "ready_s": round(server.ready_s, 1),
                "status": server.status(),
                "warnings": server.warnings()[:50],
            }
            for server in servers.values()
        }
    finally:
        for server in servers.values():
            server.stop()
    return rows, states


# -- the report (pure) --------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (linear between ranks, as numpy's default)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def summarize(rows: list[dict[str, Any]], configs: list[str], situations: list[str]) -> dict:
    """Per situation and configuration: latency percentiles (runs pooled), the ratio to
    the baseline, accuracy, steering queries, and names that differ between runs."""
    summary: dict[str, Any] = {}
    runs = sorted({row["run"] for row in rows})
    for situation in situations:
        entry: dict[str, Any] = {}
        for config in configs:
            records = [
                row["results"][situation][config]
                for row in rows
                if config in row["results"].get(situation, {})
            ]
            ok = [r for r in records if not r["error"]]
            latencies = [r["ms"] for r in ok]
            by_run = {
                run: {
                    row["id"]: row["results"][situation][config]
                    for row in rows
                    if row["run"] == run and config in row["results"].get(situation, {})
                }
                for run in runs
            }
            compared = differ = text_differ = 0
            for first, second in itertools.pairwise(runs):
                for pid, a in by_run[first].items():
                    b = by_run[second].get(pid)
                    if b is None or a["error"] or b["error"]:
                        continue
                    compared += 1
                    differ += a["written"] != b["written"]
                    text_differ += a["text"] != b["text"]
            entry[config] = {
                "n": len(records),
                "errors": len(records) - len(ok),
                "error_kinds": dict(
                    Counter(r["error"].split(":")[0] for r in records if r["error"])
                ),
                "p50_ms": _round(percentile(latencies, 50)),
                "p90_ms": _round(percentile(latencies, 90)),
                "mean_ms": _round(statistics.fmean(latencies) if latencies else None),
                "correct": sum(r["correct"] for r in records),
                "accuracy": round(sum(r["correct"] for r in records) / len(records), 3)
                if records
                else None,
                "queries_per_completion": _mean([r.get("queries", 0) for r in ok]),
                "timeouts_per_completion": _mean([r.get("timeouts", 0) for r in ok]),
                "completions_with_timeouts": sum(1 for r in ok if r.get("timeouts")),
                # Steered completions where the monitor found no trigger (nothing asked).
                "untriggered": sum(1 for r in ok if not r.get("triggers"))
                if _steers(config)
                else None,
                "waited_ms_mean": _mean([r.get("waited_ms", 0.0) for r in ok]),
                "compared_between_runs": compared,
                "names_differ": differ,
                "texts_differ": text_differ,
            }
        base = entry.get(BASELINE)
        for config, stats in entry.items():
            if base is None or config == BASELINE:
                continue
            stats["ratio_p50"] = _ratio(stats["p50_ms"], base["p50_ms"])
            stats["ratio_p90"] = _ratio(stats["p90_ms"], base["p90_ms"])
            paired = [
                row["results"][situation][config]["ms"] / row["results"][situation][BASELINE]["ms"]
                for row in rows
                if config in row["results"].get(situation, {})
                and BASELINE in row["results"][situation]
                and not row["results"][situation][config]["error"]
                and not row["results"][situation][BASELINE]["error"]
                and row["results"][situation][BASELINE]["ms"] > 0
            ]
            stats["paired_ratio_p50"] = _round(percentile(paired, 50), 3)
        summary[situation] = entry
    if "cold" in situations and "read" in situations:
        summary["cold_vs_read"] = {config: _cold_vs_read(rows, config) for config in configs}
    return summary


def _cold_vs_read(rows: list[dict[str, Any]], config: str) -> dict[str, int]:
    """Positions whose name differs between cold and read in the same run: the same
    text and the same prompt, on two servers of one configuration."""
    compared = differ = 0
    for row in rows:
        cold, read = row["results"]["cold"].get(config), row["results"]["read"].get(config)
        if cold is None or read is None or cold["error"] or read["error"]:
            continue
        compared += 1
        differ += cold["written"] != read["written"]
    return {"compared": compared, "names_differ": differ}


def _steers(config: str) -> bool:
    return bool(CONFIGS[config].get("steering", {}).get("enabled", True))


def _round(value: float | None, digits: int = 1) -> float | None:
    return round(value, digits) if value is not None else None


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


TARGETS = {"cold": 1.3, "read": 1.15, "typing": 1.15}  # steered ÷ unsteered p50 (issue 23)


def targets(summary: dict[str, Any]) -> list[str]:
    """Issue 23's targets for ``steered``, each with whether it holds."""
    lines = []
    for situation, entry in summary.items():
        if situation not in TARGETS:
            continue
        steered, base = entry.get("steered"), entry.get(BASELINE)
        if steered is None or base is None:
            continue
        ratio = steered.get("ratio_p50")
        bound = TARGETS[situation]
        lines.append(
            f"- {situation}: p50 ratio {ratio} (target ≤ {bound}): "
            + ("met" if ratio is not None and ratio <= bound else "NOT met")
        )
        if steered["compared_between_runs"]:
            lines.append(
                f"- {situation}: names differing between runs {steered['names_differ']}/"
                f"{steered['compared_between_runs']} (target 0): "
                + ("met" if steered["names_differ"] == 0 else "NOT met")
            )
        accuracy = (steered["accuracy"] or 0, base["accuracy"] or 0)
        lines.append(
            f"- {situation}: accuracy {accuracy[0]:.1%} vs unsteered {accuracy[1]:.1%} "
            "(target: not lower): " + ("met" if accuracy[0] >= accuracy[1] else "NOT met")
        )
    return lines


def report(summary: dict[str, Any], configs: list[str], meta: dict[str, Any]) -> str:
    lines = [
        "# Steering latency, as users meet it",
        "",
        f"{meta['positions']} held-out third-party positions (`bench/next_identifier.py "
        f"--split test`), {meta['runs']} run(s) with fresh servers, `python -m steerlsp` over "
        f"stdio, automatic inline completions of {meta['tokens']} tokens; latency is the "
        "client's wall time from request to reply (runs pooled). *cold*: the request right "
        "after didOpen; *read*: 2 s after didOpen; *typing*: after a blank line typed above "
        "the enclosing function. *differ*: positions whose first identifier differs between "
        "runs. *queries*, *timeouts*: steering queries, and those past their budget, per "
        "completion. *no trigger*: steered completions where the monitor found nothing to ask. "
        f"Took {meta['seconds'] / 60:.0f} min.",
        "",
        "| situation | config | n | p50 ms | p90 ms | ÷ unsteered p50 | ÷ p90 | paired p50 | "
        "accuracy | differ | queries | timeouts | no trigger | errors |",
        "|---" * 14 + "|",
    ]
    for situation, entry in summary.items():
        if situation not in SITUATIONS:
            continue
        for config in configs:
            s = entry[config]
            differ = (
                f"{s['names_differ']}/{s['compared_between_runs']}"
                if s["compared_between_runs"]
                else "-"
            )
            accuracy = f"{s['accuracy']:.1%} ({s['correct']}/{s['n']})" if s["n"] else "-"
            lines.append(
                f"| {situation} | {config} | {s['n']} | {_cell(s['p50_ms'])} | "
                f"{_cell(s['p90_ms'])} | {_cell(s.get('ratio_p50'), 'x')} | "
                f"{_cell(s.get('ratio_p90'), 'x')} | {_cell(s.get('paired_ratio_p50'), 'x')} | "
                f"{accuracy} | {differ} | {_cell(s['queries_per_completion'])} | "
                f"{_cell(s['timeouts_per_completion'])} | {_cell(s['untriggered'])} | "
                f"{s['errors']} |"
            )
    if "cold_vs_read" in summary:
        lines += [
            "",
            "Names that differ between *cold* and *read* in the same run (the same text and "
            "prompt on two servers): "
            + ", ".join(
                f"{c} {v['names_differ']}/{v['compared']}"
                for c, v in summary["cold_vs_read"].items()
            )
            + ".",
        ]
    pauses = collector_pauses(meta.get("servers", {}))
    if pauses:
        lines += ["", "Full garbage collections after the model loaded (`steerlsp/status`):", ""]
        lines += pauses
    checks = targets(summary)
    if checks:
        lines += ["", "Issue 23's targets (steered):", "", *checks]
    return "\n".join(lines) + "\n"


def collector_pauses(servers: dict[str, Any]) -> list[str]:
    """Per run and server, the full collections since its model loaded: how many,
    their total and longest pause (each one lands in a completion or a keystroke)."""
    lines = []
    for run, states in servers.items():
        for name, state in states.items():
            gen2 = ((state.get("status") or {}).get("model") or {}).get("gc", {}).get("gen2")
            if gen2 is not None:
                lines.append(
                    f"- {run}, {name}: {gen2['count']}, {gen2['total_ms']:g} ms in all, "
                    f"the longest {gen2['longest_ms']:g} ms"
                )
    return lines


def _cell(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}"


def plot(
    rows: list[dict[str, Any]], summary: dict[str, Any], configs: list[str], path: Path
) -> None:
    """Per situation, each configuration's latency distribution (box and points), the
    p50 ratio to the baseline above it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    situations = [s for s in summary if s in SITUATIONS]
    fig, axes = plt.subplots(
        1, len(situations), figsize=(1.2 + 2.6 * len(situations), 4.2), sharey=True, squeeze=False
    )
    colors = {"unsteered": "tab:gray", "steered": "tab:blue", "steered-patient": "tab:orange"}
    for ax, situation in zip(axes[0], situations, strict=True):
        data = [
            [
                row["results"][situation][c]["ms"] / 1000
                for row in rows
                if c in row["results"].get(situation, {})
                and not row["results"][situation][c]["error"]
            ]
            for c in configs
        ]
        boxes = ax.boxplot(data, whis=(10, 90), showfliers=False, patch_artist=True, widths=0.6)
        for patch, config in zip(boxes["boxes"], configs, strict=True):
            patch.set_facecolor(colors.get(config, "tab:green"))
            patch.set_alpha(0.35)
        for i, values in enumerate(data, start=1):
            jitter = [i + 0.18 * ((k * 0.618) % 1 - 0.5) for k in range(len(values))]
            ax.scatter(jitter, values, s=6, color=colors.get(configs[i - 1], "tab:green"))
        ax.set_xticks(range(1, len(configs) + 1))
        ax.set_xticklabels(configs, fontsize=8)
        ratios = [
            f"{c} {summary[situation][c]['ratio_p50']}x"
            for c in configs
            if summary[situation][c].get("ratio_p50") is not None
        ]
        title = {"cold": "just opened", "read": "2 s after open", "typing": "typing on"}
        ax.set_title(f"{title[situation]}\np50 ratio: " + ", ".join(ratios), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("inline completion latency (s)")
    fig.suptitle("Steered vs unsteered completion latency (real server, automatic trigger)")
    fig.text(
        0.5,
        0.01,
        "box p25-p75, whiskers p10-p90, dots: completions (runs pooled)",
        ha="center",
        fontsize=8,
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- entry point --------------------------------------------------------------------------------


def positions_for(limit: int | None, seed: int) -> list[Position]:
    """The held-out third-party positions (about 200), the first ``limit`` of them
    (they come round-robin over the libraries)."""
    _, library, _ = gather("test", None, THIRD_PARTY, seed)
    return library[:limit] if limit else library


def names(text: str, known: tuple[str, ...] | dict[str, Any]) -> list[str]:
    chosen = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        raise SystemExit(f"unknown: {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, help="positions (0: all, about 200)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the third-party sample's seed")
    parser.add_argument("--situations", default=",".join(SITUATIONS))
    parser.add_argument("--configs", default="unsteered,steered", help=", ".join(CONFIGS))
    parser.add_argument("--runs", type=int, default=2, help="fresh servers each (determinism)")
    parser.add_argument("--tokens", type=int, default=8, help="completion.maxNewTokens")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--traces", action="store_true", help="keep whole explain traces")
    parser.add_argument(
        "--only", default="", help="positions whose id contains one of these (comma-separated)"
    )
    args = parser.parse_args(argv)
    global KEEP_TRACES
    KEEP_TRACES = args.traces
    situations = [s for s in SITUATIONS if s in names(args.situations, SITUATIONS)]
    configs = names(args.configs, CONFIGS)
    positions = positions_for(args.limit or None, args.seed)
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        positions = [p for p in positions if any(w in p.id for w in wanted)]
    roots = {(p.root, p.python) for p in positions}
    if len(roots) != 1:  # every library comes from one venv today; servers are per root
        raise SystemExit(f"positions from {len(roots)} venvs; this bench serves one")
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    servers: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="steering-latency-") as logs:
        for run in range(args.runs):
            got, states = run_once(run, positions, configs, situations, args.tokens, Path(logs))
            rows += got
            servers[f"run {run + 1}"] = states
    elapsed = time.perf_counter() - started
    summary = summarize(rows, configs, situations)
    meta = {
        "positions": len(positions),
        "runs": args.runs,
        "tokens": args.tokens,
        "seed": args.seed,
        "limit": args.limit,
        "situations": situations,
        "configs": {c: CONFIGS[c] for c in configs},
        "root": positions[0].root if positions else None,
        "seconds": round(elapsed, 1),
        "edits": dict(Counter(row["edit"]["where"] for row in rows if row["run"] == 0)),
        "servers": servers,
    }
    stem = "steering_latency" if args.tokens == 8 else f"steering_latency_t{args.tokens}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "rows": rows}, indent=1)
    )
    markdown = report(summary, configs, meta)
    (args.out / f"{stem}.md").write_text(markdown)
    plot(rows, summary, configs, args.out / f"{stem}.png")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
