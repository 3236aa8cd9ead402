"""Plumbing for bench/proxy_latency.py: a raw LSP client, the busy keeper, the
interleaved measuring loop and the statistics.

The client speaks Content-Length framed JSON-RPC over a child's stdio, reads on
its own thread, matches replies by id and answers server->client requests with
null. A request's latency is ``time.perf_counter()`` from just before its frame
is written (after encoding) until just after its reply's body is read (before
decoding), so the client's own JSON work is outside what is timed.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import DEVNULL, PIPE, Popen
from typing import Any

import numpy as np

SERVERS = ("direct", "proxied")
BLOCK, TIMEOUT = 50, 30.0
BUSY_METHOD = "steerlsp/benchBusy"
BUSY_SECONDS = 600.0  # more than steerlsp runs one for; BusyKeeper re-sends on completion
Reply = Callable[[dict[str, Any] | None, float], None]


@dataclass(frozen=True)
class Request:
    method: str
    params: dict[str, Any]
    label: str  # short, for problem reports (params may be 20 KB)


@dataclass
class Samples:
    """Latencies (ms) per server in request order, and what went wrong."""

    ms: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in SERVERS})
    methods: list[str] = field(default_factory=list)
    result_bytes: list[int] = field(default_factory=list)  # size of the direct result's JSON
    problems: list[str] = field(default_factory=list)


class LspClient:
    """A language server child process, spoken to over its stdio."""

    def __init__(
        self,
        name: str,
        command: list[str],
        *,
        own_session: bool = True,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``own_session``: a session of its own; else ours, in a process group of its
        own. Either way a Ctrl-C reaches only us, and we shut it down in order."""
        self.name = name
        self.proc = Popen(
            command,
            stdin=PIPE,
            stdout=PIPE,
            stderr=DEVNULL,
            start_new_session=own_session,
            process_group=None if own_session else 0,
            cwd=cwd,
            env=env,
        )
        self.extra_pids: list[int] = []  # the server's own children, checked at close
        self._ids = itertools.count(1)
        self._pending: dict[int, Reply] = {}
        self._lock = threading.Lock()
        threading.Thread(target=self._read_loop, name=f"{name}-reader", daemon=True).start()

    def _send(self, message: dict[str, Any]) -> float:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        with self._lock:
            started = time.perf_counter()
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            self.proc.stdin.flush()
        return started

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: Any, on_reply: Reply) -> float:
        """Send without waiting; ``on_reply(reply, read_at)`` runs on the reader thread."""
        msg_id = next(self._ids)
        self._pending[msg_id] = on_reply
        return self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    def request(self, method: str, params: Any = None) -> tuple[dict[str, Any], float]:
        """Send and wait; return the reply and its latency in ms (write to reply read)."""
        done = threading.Event()
        box: list[tuple[dict[str, Any] | None, float]] = []

        def on_reply(message: dict[str, Any] | None, read_at: float) -> None:
            box.append((message, read_at))
            done.set()

        started = self.send_request(method, params, on_reply)
        if not done.wait(TIMEOUT):
            raise TimeoutError(f"{self.name}: {method} got no reply in {TIMEOUT:.0f}s")
        message, read_at = box[0]
        if message is None:
            raise ConnectionError(f"{self.name} exited while {method} was pending")
        return message, (read_at - started) * 1000

    def _read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            length = None
            while (line := stdout.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if not line:
                break
            if length is not None:
                body = stdout.read(length)
                self._dispatch(json.loads(body), time.perf_counter())
        for on_reply in self._pending.values():
            on_reply(None, time.perf_counter())

    def _dispatch(self, message: dict[str, Any], read_at: float) -> None:
        if "method" in message:
            if "id" in message:  # a server->client request
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        on_reply = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
        if on_reply is not None:
            on_reply(message, read_at)

    def open_document(self, path: Path, text: str) -> None:
        """initialize (rootUri = the file's folder), initialized, didOpen."""
        caps = {"general": {"positionEncodings": ["utf-16"]}}
        params = {"processId": os.getpid(), "rootUri": path.parent.as_uri()}
        self.request("initialize", {**params, "capabilities": caps})
        self.notify("initialized", {})
        doc = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": doc})

    def close(self) -> None:
        """shutdown + exit; then make sure neither the server nor its children live on."""
        try:
            if self.proc.poll() is None:
                self.request("shutdown")
                self.notify("exit")
                self.proc.wait(timeout=10)
        except Exception as exc:
            print(f"warning: {self.name} did not shut down cleanly: {exc!r}", file=sys.stderr)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for pid in self.extra_pids:
                reap_stray(pid, self.name)


def reap_stray(pid: int, owner: str) -> None:
    """Give ``pid`` 5 s to go away (exit or zombie), then kill it."""
    for _ in range(100):
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return
        except OSError:
            return
        time.sleep(0.05)
    print(f"warning: {owner}'s child {pid} outlived it; killing it", file=sys.stderr)
    os.kill(pid, signal.SIGKILL)


class BusyKeeper:
    """Keeps one ``steerlsp/benchBusy`` (a GIL-holding worker thread) running until stopped."""

    def __init__(self, client: LspClient) -> None:
        self.client, self.running, self.completed = client, False, 0
        self.errors: list[Any] = []

    def start(self) -> None:
        self.running = True
        self.client.send_request(BUSY_METHOD, {"seconds": BUSY_SECONDS}, self._done)
        time.sleep(0.2)  # let the worker thread start spinning

    def _done(self, reply: dict[str, Any] | None, _read_at: float) -> None:
        if not self.running:  # the one cut short by shutdown
            return
        self.completed += 1
        if reply is None or "error" in reply:
            self.errors.append(reply and reply["error"])
        else:
            self.client.send_request(BUSY_METHOD, {"seconds": BUSY_SECONDS}, self._done)

    def stop(self) -> None:
        self.running = False


def canonical(result: Any) -> str:
    """A result as comparable JSON (lists sorted: pylsp lists several definitions
    in no fixed order)."""
    if isinstance(result, list):
        return json.dumps(sorted(json.dumps(item, sort_keys=True) for item in result))
    return json.dumps(result, sort_keys=True)


def send_timed(client: LspClient, req: Request, samples: Samples) -> str:
    """Send one request, record its latency, return its result canonicalised."""
    reply, ms = client.request(req.method, req.params)
    samples.ms[client.name].append(ms)
    if "error" in reply:
        samples.problems.append(f"{client.name} {req.label}: error {reply['error']}")
    return canonical(reply.get("result"))


def measure(clients: list[LspClient], requests: list[Request], samples: Samples) -> None:
    """The same blocks of requests to each client, alternating who goes first, so
    machine noise hits both alike; results are compared."""
    for index, start in enumerate(range(0, len(requests), BLOCK)):
        block = requests[start : start + BLOCK]
        results = {}
        for client in clients if index % 2 == 0 else clients[::-1]:
            results[client.name] = [send_timed(client, req, samples) for req in block]
        samples.methods += [req.method for req in block]
        samples.result_bytes += [len(result) for result in results["direct"]]
        for req, direct, proxied in zip(block, results["direct"], results["proxied"], strict=True):
            if direct != proxied:
                samples.problems.append(
                    f"{req.label}: results differ: {direct[:150]} vs {proxied[:150]}"
                )


def short(method: str) -> str:
    return method.rsplit("/", 1)[-1]


def summarize(samples: Samples) -> dict[str, dict[str, float]]:
    """Per method: percentiles of direct and proxied, added (difference of the
    percentiles), ratio, and percentiles of the paired per-request differences."""
    methods = np.array(samples.methods)
    direct, proxied = np.array(samples.ms["direct"]), np.array(samples.ms["proxied"])
    rows = {}
    for method in dict.fromkeys(samples.methods):
        mask = methods == method
        row: dict[str, float] = {"n": int(mask.sum())}
        row["result_bytes_p50"] = float(np.median(np.array(samples.result_bytes)[mask]))
        for q in (50, 99):
            d, p = np.percentile(direct[mask], q), np.percentile(proxied[mask], q)
            paired = np.percentile(proxied[mask] - direct[mask], q)
            row |= {f"direct_p{q}": d, f"proxied_p{q}": p, f"added_p{q}": p - d}
            row |= {f"ratio_p{q}": p / d, f"paired_p{q}": paired}
        rows[short(method)] = row
    return rows


COLUMNS = [  # (header, key, format); times in ms
    *[(f"{k} p{q}", f"{k}_p{q}", "{:.2f}") for k in ("direct", "proxied") for q in (50, 99)],
    *[(f"added p{q}", f"added_p{q}", "{:+.2f}") for q in (50, 99)],
    *[(f"ratio p{q}", f"ratio_p{q}", "{:.3f}x") for q in (50, 99)],
]


def markdown(summary: dict[str, dict[str, dict[str, float]]]) -> str:
    head = ["scenario", "method", "n", *(header for header, _, _ in COLUMNS)]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for scenario, rows in summary.items():
        for method, row in rows.items():
            cells = [scenario, method, str(row["n"]), *(f.format(row[k]) for _, k, f in COLUMNS)]
            out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
