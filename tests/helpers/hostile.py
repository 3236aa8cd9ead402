"""The fault suite's hostile phase: steerlsp in a workspace built to hurt it.

The real ``steerlsp`` (the console script, as an editor starts it, with the
workspace as its working directory) serves a client for a given time in the
workspace of tests/helpers/hostile_workspace.py, with pylsp's pylint and flake8
plugins on (so that pylsp starts tools of its own). The client opens, edits,
saves and closes documents (symlinks to special files and documents over the
size limit among them), asks every request kind at random positions, names
special and unopened files directly, opens notebooks whose cells name special
files, and now and then sends settings nested 500 levels deep. At most
``inflight`` requests are in flight; one unanswered after ``timeout`` seconds
is a hang.

The product's promises, checked:

- no process below steerlsp runs workspace code (the markers folder stays
  empty), and every one runs outside the workspace with ``PYTHONSAFEPATH=1``;
- a request about an unopened file that is not a regular file is refused
  with an error, never answered by the upstream;
- documents over ``upstream.maxDocumentBytes`` reach pylsp empty (what pylsp
  then does is seen in its memory and its children's);
- every request gets exactly one reply, and none hangs;
- no pylsp grows past ``upstream.memoryLimitMb`` (default 2048 MiB); one that
  reaches it is restarted (``upstream.memory_restarts`` counts those);
- steerlsp answers shutdown, exits 0 on exit, and leaves no process behind.

Used by bench/fuzz.py (``--hostile SECONDS``) and tests/e2e/test_fuzz.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import hostile_workspace, proctree
from tests.helpers.fuzzing import FuzzClient, identifier_positions, key
from tests.helpers.hostile_report import HostileReport, MethodStats, finish
from tests.helpers.hostile_workspace import Workspace

# Requests the proxy forwards to pylsp (Session.params adds what each needs).
UPSTREAM_METHODS = (
    "textDocument/hover",
    "textDocument/definition",
    "textDocument/references",
    "textDocument/completion",
    "textDocument/signatureHelp",
    "textDocument/documentSymbol",
    "textDocument/formatting",
    "textDocument/rangeFormatting",
    "textDocument/rename",
    "textDocument/codeAction",
    "textDocument/foldingRange",
    "textDocument/documentHighlight",
)
# steerlsp's own: the model ones answer "disabled" without a model.
OWN_METHODS = (
    "textDocument/expectedType",
    "textDocument/relevantTypes",
    "textDocument/relevantHeaders",
    "textDocument/aiTutorial",
    "textDocument/errorReport",
    "steerlsp/explain",
)
MODEL_METHODS = (
    "textDocument/inlineCompletion",
    "textDocument/llmCompletion",
    "textDocument/llmCompletionResolveErrors",
)
STATUS = "steerlsp/status"
PYLSP_SETTINGS = {"pylsp": {"plugins": {"pylint": {"enabled": True}, "flake8": {"enabled": True}}}}
# Special files outside the workspace, named directly by requests.
OUTSIDE = ("/dev/stdin", "/dev/stdout", "/dev/zero", "/dev/urandom", "/dev/null", "/proc/self/fd/0")
MAX_ACTIONS = 100_000
SNIPPETS = ("value.\n", "x_1 = json.\n", "é = 'ü😀'\n", "import zz\n", "def f(a, b):\n", "\n")


@dataclass
class Doc:
    """A document the client may open: its text as the client edits it."""

    uri: str
    text: str
    version: int = 0
    open: bool = False
    huge: bool = False
    cached: list[tuple[int, int]] | None = None  # identifier positions of this text

    def positions(self) -> list[tuple[int, int]]:
        if self.cached is None:
            head = self.text[:100_000] if self.huge else self.text
            self.cached = identifier_positions(head)
        return self.cached

    def edited(self) -> None:
        self.cached = None

    def lines(self) -> int:
        return self.text.count("\n", 0, 200_000 if self.huge else None) + 1


class Session:
    """The client side of one hostile session."""

    def __init__(
        self,
        client: FuzzClient,
        ws: Workspace,
        rng: random.Random,
        report: HostileReport,
        *,
        model: bool,
        inflight: int,
        timeout: float,
    ) -> None:
        self.client, self.ws, self.rng, self.report = client, ws, rng, report
        self.timeout = timeout
        self.slots = asyncio.Semaphore(inflight)
        self.methods = UPSTREAM_METHODS + OWN_METHODS + (MODEL_METHODS if model else ())
        self.docs = [Doc(p.as_uri(), t) for p, t in ws.code.items()]
        self.docs += [Doc(u, t, huge=True) for u, t in ws.huge.items()]
        self.docs += [Doc(u, t) for u, t in ws.untitled.items()]
        self.docs += [Doc(p.as_uri(), "import os\nvalue = os.sep\nvalue.\n") for p in ws.specials]
        self.specials = [p.as_uri() for p in ws.specials + ws.fifos]
        self.specials += [Path(p).as_uri() for p in OUTSIDE] + [ws.root.as_uri()]
        self.specials += [(ws.root / "app").as_uri(), "file:///tmp/nul%00byte.py"]
        unopened = [ws.big] if ws.big else []
        self.unopened = [p.as_uri() for p in [*unopened, ws.root / "missing.py"]]
        self.unopened += [p.as_uri() for p in ws.root.glob("*.py") if p.is_file()]
        self.notebooks: dict[str, list[str]] = {}  # open notebook uri -> its cell uris
        self.cells: Counter[str] = Counter()  # uris open as notebook cells
        self.sent: dict[str, tuple[str, str, float]] = {}  # id -> method, uri, sent at
        self.special_ids: set[str] = set()
        self.pending: set[asyncio.Task[None]] = set()
        self.inflight: set[str] = set()  # ids sent and not answered yet (nor timed out)
        self.n = 0
        self.notebook_names = itertools.count(1)
        self.actions: list[tuple[float, str]] = []  # (sent at, what): for the first hang's story

    # ---- sending --------------------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        self.client.notify(method, params)
        self.report.notifications[method] = self.report.notifications.get(method, 0) + 1
        self.remember(method, params)

    def remember(self, what: str, params: Any) -> None:
        document = params.get("textDocument") or params.get("notebookDocument") or {}
        if len(self.actions) < MAX_ACTIONS:
            self.actions.append((time.monotonic(), f"{what} {document.get('uri', '')}"))

    async def request(self, method: str, params: Any, uri: str = "", special: bool = False) -> None:
        """Send a request when a slot is free; a task waits for its reply. ``special``:
        about a file that is not a regular one and not open, so never for the upstream."""
        await self.slots.acquire()
        self.n += 1
        msg_id = f"h-{self.n}"
        self.sent[msg_id] = (method, uri, time.monotonic())
        if special:
            self.special_ids.add(msg_id)
        self.inflight.add(msg_id)
        stats = self.report.by_method.setdefault(method, MethodStats())
        stats.sent += 1
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.client.send(message)
        self.remember(f"{msg_id} {method}", params or {})
        task = asyncio.create_task(self._await(msg_id, stats))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    async def _await(self, msg_id: str, stats: MethodStats) -> None:
        method, uri, sent_at = self.sent[msg_id]
        try:
            reply = await self.client.response(msg_id, self.timeout)
        except TimeoutError:
            shown = f"{msg_id} {method} {uri[-80:]}"
            self.report.hangs.append(f"{shown} unanswered after {self.timeout:.0f} s")
            if not self.report.hang_snapshot:
                self.report.hang_snapshot = proctree.snapshot(self.client.proc.pid)
                self.report.before_first_hang = [
                    what for at, what in self.actions if sent_at - 15 <= at <= sent_at
                ][-60:]
            return
        finally:
            self.slots.release()
            self.inflight.discard(msg_id)
        stats.answered += 1
        stats.max_ms = max(stats.max_ms, round((time.monotonic() - sent_at) * 1000, 1))
        if "result" in reply:
            stats.results += 1
            if msg_id in self.special_ids:
                shown = json.dumps(reply["result"])[:80]
                self.report.special_results.append(f"{method} {uri}: {shown}")
        else:
            code = str((reply.get("error") or {}).get("code"))
            stats.errors[code] = stats.errors.get(code, 0) + 1
        if method == STATUS and "result" in reply:
            self._status(reply["result"])

    def _status(self, status: dict[str, Any]) -> None:
        self.report.status_polls += 1
        self.report.upstream = status.get("upstream") or {}
        self.report.analysis = status.get("analysis") or {}
        for section, pids in (
            (self.report.upstream, self.report.upstream_pids),
            (self.report.analysis, self.report.analysis_pids),
        ):
            pid = section.get("pid")
            if isinstance(pid, int) and pid not in pids:
                pids.append(pid)

    # ---- actions --------------------------------------------------------------

    async def step(self) -> None:
        """One random action."""
        roll = self.rng.random()
        if roll < 0.45:
            await self.ask_open()
        elif roll < 0.57:
            await self.ask_special()
        elif roll < 0.62:
            await self.ask_unopened()
        elif roll < 0.75:
            self.change()
        elif roll < 0.81:
            self.open_doc()
        elif roll < 0.85:
            self.close_doc()
        elif roll < 0.88:
            self.save()
        elif roll < 0.92:
            self.notebook()
        elif roll < 0.95:
            await self.request(STATUS, None)
        elif roll < 0.98:
            self.cancel()
        elif roll < 0.99:
            self.settings()
        else:
            self.notify("workspace/didChangeConfiguration", {"settings": nested(500)})

    def params(self, method: str, uri: str, line: int, col: int) -> dict[str, Any]:
        at = {"line": line, "character": col}
        params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": at}
        span = {"start": {"line": max(line - 2, 0), "character": 0}, "end": at}
        if method in (
            "textDocument/documentSymbol",
            "textDocument/foldingRange",
            "steerlsp/explain",
        ):
            del params["position"]
        elif method == "textDocument/references":
            params["context"] = {"includeDeclaration": self.rng.random() < 0.5}
        elif method in ("textDocument/formatting", "textDocument/rangeFormatting"):
            del params["position"]
            params["options"] = {"tabSize": 4, "insertSpaces": True}
            if method == "textDocument/rangeFormatting":
                params["range"] = span
        elif method == "textDocument/rename":
            params["newName"] = self.rng.choice(("renamed", "json", "x" * 300))
        elif method == "textDocument/codeAction":
            del params["position"]
            params["range"] = span
            params["context"] = {"diagnostics": []}
        elif method == "textDocument/errorReport":
            params["completion"] = self.rng.choice(("value.upper()", "zz.read()", "json."))
        elif method == "textDocument/inlineCompletion":
            params["context"] = {"triggerKind": self.rng.choice((1, 2))}
        return params

    async def ask_open(self) -> None:
        docs = [d for d in self.docs if d.open]
        if not docs:
            self.open_doc()
            return
        doc = self.rng.choice(docs)
        roll = self.rng.random()
        if roll < 0.7:
            line, col = self.rng.choice(doc.positions())
        elif roll < 0.9:
            line, col = self.rng.randrange(doc.lines()), self.rng.randrange(120)
        else:
            line, col = self.rng.choice(((10**6, 0), (0, 10**6), (2**31 - 1, 2**31 - 1)))
        method = self.rng.choice(self.methods)
        await self.request(method, self.params(method, doc.uri, line, col), doc.uri)

    async def ask_special(self) -> None:
        uri = self.rng.choice(self.specials)
        method = self.rng.choice(self.methods)
        special = not self.opened(uri)
        self.report.special_requests += special
        forwarded = special and method in UPSTREAM_METHODS
        await self.request(method, self.params(method, uri, 0, 0), uri, special=forwarded)

    async def ask_unopened(self) -> None:
        uri = self.rng.choice(self.unopened)
        method = self.rng.choice(UPSTREAM_METHODS)
        await self.request(method, self.params(method, uri, 0, self.rng.randrange(10)), uri)

    def opened(self, uri: str) -> bool:
        return self.cells[uri] > 0 or any(d.open for d in self.docs if d.uri == uri)

    def open_doc(self) -> None:
        closed = [d for d in self.docs if not d.open and not self.cells[d.uri]]
        if not closed:
            return
        doc = self.rng.choice(closed)
        doc.open, doc.version = True, doc.version + 1
        item = {"uri": doc.uri, "languageId": "python", "version": doc.version, "text": doc.text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def close_doc(self) -> None:
        docs = [d for d in self.docs if d.open]
        if docs:
            doc = self.rng.choice(docs)
            doc.open = False
            self.notify("textDocument/didClose", {"textDocument": {"uri": doc.uri}})

    def save(self) -> None:
        docs = [d for d in self.docs if d.open]
        if docs:
            doc = self.rng.choice(docs)
            params: dict[str, Any] = {"textDocument": {"uri": doc.uri}}
            if self.rng.random() < 0.5:
                params["text"] = doc.text
            self.notify("textDocument/didSave", params)

    def change(self) -> None:
        docs = [d for d in self.docs if d.open]
        if not docs:
            return
        doc = self.rng.choice(docs)
        doc.version += 1
        roll = self.rng.random()
        snippet = self.rng.choice(SNIPPETS)
        if doc.huge and roll < 0.05:  # shrink under the limit, or grow back over it
            small = len(doc.text) < hostile_workspace.MiB
            original = self.ws.huge[doc.uri]
            doc.text = original if small else "import os\nvalue = os.sep\nvalue.\n"
            change: dict[str, Any] = {"text": doc.text}
        elif doc.huge or roll < 0.6:  # a line inserted (at the top of a huge one)
            line = 0 if doc.huge else self.rng.randrange(doc.lines())
            if doc.huge:
                doc.text = snippet + doc.text
            else:
                lines = doc.text.split("\n")
                doc.text = "\n".join([*lines[:line], snippet[:-1], *lines[line:]])
            at = {"line": line, "character": 0}
            change = {"range": {"start": at, "end": at}, "text": snippet}
        elif roll < 0.85:  # a line deleted
            lines = doc.text.split("\n")
            line = self.rng.randrange(len(lines))
            end = {"line": line + 1, "character": 0} if line + 1 < len(lines) else None
            if end is None:
                end = {"line": line, "character": utf16_len(lines[line])}
                doc.text = "\n".join([*lines[:line], ""])
            else:
                doc.text = "\n".join(lines[:line] + lines[line + 1 :])
            change = {"range": {"start": {"line": line, "character": 0}, "end": end}, "text": ""}
        else:  # the whole text again
            change = {"text": doc.text}
        doc.edited()
        params = {
            "textDocument": {"uri": doc.uri, "version": doc.version},
            "contentChanges": [change],
        }
        self.notify("textDocument/didChange", params)

    def notebook(self) -> None:
        if self.notebooks and self.rng.random() < 0.4:
            uri = self.rng.choice(sorted(self.notebooks))
            cells = self.notebooks.pop(uri)
            for cell in cells:
                self.cells[cell] -= 1
            closing = {
                "notebookDocument": {"uri": uri},
                "cellTextDocuments": [{"uri": c} for c in cells],
            }
            self.notify("notebookDocument/didClose", closing)
            return
        if self.notebooks and self.rng.random() < 0.5:
            uri = self.rng.choice(sorted(self.notebooks))
            cell = self.rng.choice(self.notebooks[uri])
            change = {
                "notebookDocument": {"uri": uri, "version": self.rng.randrange(2, 1000)},
                "change": {
                    "cells": {
                        "textContent": [
                            {
                                "document": {"uri": cell, "version": self.rng.randrange(2, 1000)},
                                "changes": [{"text": "import zz\nzz.\n"}],
                            }
                        ]
                    }
                },
            }
            self.notify("notebookDocument/didChange", change)
            return
        name = next(self.notebook_names)
        uri = self.rng.choice((self.ws.root / "nb.ipynb", self.ws.root / f"n{name}.ipynb")).as_uri()
        if uri in self.notebooks:
            return
        pool = [u for u in self.specials if not self.opened(u)]
        cells = self.rng.sample(pool, min(len(pool), self.rng.randint(1, 3)))
        cells.append(f"vscode-notebook-cell:/nb{name}.ipynb#c0")
        self.notebooks[uri] = cells
        for cell in cells:
            self.cells[cell] += 1
        texts = [
            {"uri": c, "languageId": "python", "version": 1, "text": "import os\nos.path.\n"}
            for c in cells
        ]
        notebook = {
            "uri": uri,
            "notebookType": "jupyter-notebook",
            "version": 1,
            "cells": [{"kind": 2, "document": c} for c in cells],
        }
        self.notify(
            "notebookDocument/didOpen", {"notebookDocument": notebook, "cellTextDocuments": texts}
        )

    def cancel(self) -> None:
        if self.inflight:
            self.notify("$/cancelRequest", {"id": self.rng.choice(sorted(self.inflight))})

    def settings(self) -> None:
        pylint = {
            "enabled": True,
            "args": self.rng.choice(([], ["--rcfile=pylintrc"], ["-j", "2"])),
        }
        settings = {"pylsp": {"plugins": {"pylint": pylint, "flake8": {"enabled": True}}}}
        self.notify("workspace/didChangeConfiguration", {"settings": settings})

    # ---- the end --------------------------------------------------------------

    async def drain(self) -> None:
        """Wait for every request still in flight (each to its own timeout)."""
        while self.pending:
            await asyncio.gather(*list(self.pending), return_exceptions=True)

    def tally(self) -> None:
        self.report.requests = len(self.sent)
        for msg_id, (method, uri, _) in self.sent.items():
            got = self.client.replies[key(msg_id)]
            self.report.answered += got >= 1
            self.report.never_answered += got == 0
            if got > 1:
                self.report.double_replies.append(f"{msg_id} {method} {uri[-60:]}: {got} replies")
        ours = {key(i) for i in self.sent}
        self.report.stray_replies = sum(
            n
            for k, n in self.client.replies.items()
            if k not in ours and not k.startswith('"setup-')
        )
        counts = Counter(m.get("method", "") for m in self.client.notifications)
        self.report.server_notifications = dict(counts.most_common())


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def nested(depth: int) -> dict[str, Any]:
    """``{"pylsp": {"x": {"x": ...}}}``, ``depth`` levels."""
    value: dict[str, Any] = {"enabled": True}
    for _ in range(depth - 1):
        value = {"x": value}
    return {"pylsp": value}


def command(model: bool, log_file: Path, log_level: str = "info") -> list[str]:
    """steerlsp as an editor starts it: the console script, so that its own working
    directory (the workspace) is not on its ``sys.path``."""
    script = Path(sys.executable).with_name("steerlsp")
    base = [str(script)] if script.exists() else [sys.executable, "-P", "-m", "steerlsp"]
    flags = ["--log-file", str(log_file), "--log-level", log_level]
    return base + flags + ([] if model else ["--no-model"])


async def run(
    seconds: float,
    seed: int,
    base: Path,
    *,
    model: bool = False,
    memory_mb: int | None = None,
    inflight: int = 8,
    timeout: float = 60.0,
    big_mb: int = 50,
    log_level: str = "info",
    progress: Callable[[str], None] | None = None,
) -> HostileReport:
    """One hostile session of ``seconds`` (after start-up) in a workspace under ``base``."""
    rng = random.Random(seed)
    ws = hostile_workspace.build(base, rng, big_mb)
    log_file = base / "steerlsp.log"
    report = HostileReport(seed=seed, model=model, workspace=str(ws.root), log_file=str(log_file))
    proc = await asyncio.create_subprocess_exec(
        *command(model, log_file, log_level),
        cwd=ws.root,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    watch = proctree.ProcessWatch(proc.pid)
    watch.start()
    client = FuzzClient(proc)
    session = Session(client, ws, rng, report, model=model, inflight=inflight, timeout=timeout)
    started = time.monotonic()
    try:
        await start(client, ws, memory_mb, model)
        await session.request(STATUS, None)  # the pids and limits, whatever happens next
        deadline = time.monotonic() + seconds
        last = time.monotonic()
        while time.monotonic() < deadline and client.alive:
            await session.step()
            try:
                await asyncio.wait_for(client.drain(), timeout)
            except TimeoutError:
                report.aborted = f"steerlsp read nothing of its input for {timeout:.0f} s"
                break
            await asyncio.sleep(rng.expovariate(1 / 0.015))
            if progress is not None and time.monotonic() - last > 10:
                last = time.monotonic()
                elapsed = time.monotonic() - started
                progress(f"{elapsed:.0f} s: {session.n} requests, {len(report.hangs)} hangs")
        await session.drain()
        await session.request(STATUS, None)  # the restarts in the end
        await session.drain()
        await asyncio.sleep(0.5)  # a late second reply must still be seen
        report.memory_limit_mb = report.upstream.get("memory_limit_mb")
        if not client.alive:
            report.aborted = f"steerlsp exited during the session (code {proc.returncode})"
        else:
            await stop(client, report)
    except Exception as exc:  # reported with the rest
        traceback.print_exc()
        report.aborted = f"{type(exc).__name__}: {exc}"
    finally:
        report.seconds = round(time.monotonic() - started, 1)
        session.tally()
        report.control_chars = list(client.control_chars)
        report.framing_errors = list(client.framing_errors)
        watch.stop()
        await client.close()
        finish(report, watch, ws)
    return report


async def start(client: FuzzClient, ws: Workspace, memory_mb: int | None, model: bool) -> None:
    options: dict[str, Any] = {}
    if memory_mb is not None:
        options["upstream"] = {"memoryLimitMb": memory_mb}
    params = {
        "processId": None,
        "rootUri": ws.root.as_uri(),
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {"inlineCompletion": {}},
            "notebookDocument": {"synchronization": {}},
        },
        "initializationOptions": options,
    }
    reply = await client.request("initialize", params, "setup-initialize", timeout=120)
    if "result" not in reply:
        raise RuntimeError(f"initialize failed: {reply}")
    client.notify("initialized", {})
    client.notify("workspace/didChangeConfiguration", {"settings": PYLSP_SETTINGS})
    if model:
        loading = time.monotonic()
        for n in itertools.count():
            status = (await client.request(STATUS, None, f"setup-ready-{n}", 60))["result"]["model"]
            if status["state"] != "loading":
                break
            if time.monotonic() - loading > 600:
                raise TimeoutError("the model did not load in 10 minutes")
            await asyncio.sleep(0.5)


async def stop(client: FuzzClient, report: HostileReport) -> None:
    client.send({"jsonrpc": "2.0", "id": "setup-shutdown", "method": "shutdown"})
    try:
        reply = await client.response("setup-shutdown", timeout=30)
        report.shutdown = "result" if "result" in reply else json.dumps(reply.get("error"))
    except TimeoutError:
        report.shutdown = "no reply in 30 s"
    client.send({"jsonrpc": "2.0", "method": "exit"})
    await client.drain()
    with contextlib.suppress(TimeoutError):
        report.exit_code = await asyncio.wait_for(client.proc.wait(), 15)
