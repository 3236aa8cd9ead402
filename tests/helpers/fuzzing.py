"""The frame fuzzer shared by tests/e2e/test_fuzz.py and bench/fuzz.py.

It writes mutated frames to the real steerlsp process's stdin, each followed by
valid requests (the resync probes), and keeps a ledger of how many replies
every id may get:

- ``must``: a request the server could see as one (valid, a notification
  method with an id, bad params, a body that is not JSON but carries a
  readable id): exactly one reply each.
- ``may``: ids inside frames the framing had to cut or skip, or ids that
  JSON-RPC does not allow: at most one reply each (best-effort salvage).
- everything else the fuzzer sent (responses, cancel targets, ids reused by a
  malformed frame after their request was answered): no reply at all.

A reply's id is keyed by its JSON text, so ``1`` and ``1.0`` stay apart and
an object id cannot break the bookkeeping. Integer ids are six digits wide
(100000-999999), so a frame cut inside an id can never turn into another id
the fuzzer used.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from steerlsp.server.lsp.framing import FrameDecoder, FramingError, encode_frame
from tests.helpers.rawclient import SILENT, spawn

# Bytes a JSON writer never leaves unescaped in a body.
CONTROL_BYTES = frozenset(range(0x20))

# What the fuzz and cancel-burst clients announce: UTF-16 positions, inline completions.
INLINE_CAPS = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {"inlineCompletion": {}},
}


def key(msg_id: Any) -> str:
    """The ledger's key for an id: its JSON text."""
    return json.dumps(msg_id, sort_keys=True)


class FuzzClient:
    """A byte-level client that counts replies per id and checks every byte it reads."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.replies: Counter[str] = Counter()
        self.codes: dict[str, list[int | None]] = {}
        self.framing_errors: list[str] = []
        self.control_chars: list[str] = []  # where a NUL or raw control byte was seen
        self.notifications: list[dict[str, Any]] = []
        self.answer: Callable[[dict[str, Any]], Any] = lambda request: None
        self._waiters: dict[str, list[asyncio.Future[dict[str, Any]]]] = {}
        self._last: dict[str, dict[str, Any]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, command: list[str]) -> FuzzClient:
        return cls(await spawn(command))

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder = FrameDecoder()
        while data := await self.proc.stdout.read(65536):
            for event in decoder.feed(data):
                if isinstance(event, FramingError):
                    self.framing_errors.append(event.reason)
                    continue
                if CONTROL_BYTES.intersection(event):
                    self.control_chars.append(f"raw control byte in {event[:120]!r}")
                try:
                    msg = json.loads(event)
                except ValueError:
                    self.framing_errors.append(f"bad JSON from the server: {event[:120]!r}")
                    continue
                if _has_nul(msg):
                    self.control_chars.append(f"NUL in {event[:200]!r}")
                self._dispatch(msg)

    def _dispatch(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            self.framing_errors.append(f"non-object message: {msg!r:.120}")
            return
        if "method" in msg:
            if "id" in msg:  # a server->client request: answer it
                answer = self.answer(msg)
                if answer is not SILENT:
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": answer})
            else:
                self.notifications.append(msg)
            return
        k = key(msg.get("id"))
        self.replies[k] += 1
        error = msg.get("error")
        self.codes.setdefault(k, []).append(error.get("code") if isinstance(error, dict) else None)
        self._last[k] = msg
        for waiter in self._waiters.pop(k, []):
            if not waiter.done():
                waiter.set_result(msg)

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def drain(self) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(encode_frame(json.dumps(message).encode()))

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def response(self, msg_id: Any, timeout: float = 30) -> dict[str, Any]:
        """The (first) reply to ``msg_id``, waiting up to ``timeout`` seconds."""
        k = key(msg_id)
        if k in self._last:
            return self._last[k]
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(k, []).append(waiter)
        return await asyncio.wait_for(waiter, timeout)

    async def request(
        self, method: str, params: Any, msg_id: Any, timeout: float = 30
    ) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await self.response(msg_id, timeout)

    async def close(self) -> None:
        if self.alive:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def rss_kib(pid: int) -> int | None:
    """VmRSS of ``pid`` in KiB, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


# ---- frames -----------------------------------------------------------------


@dataclass
class Frame:
    """Bytes to write, and what the ledger expects of them."""

    data: bytes
    kind: str
    must: list[Any] = field(default_factory=list)
    may: list[Any] = field(default_factory=list)
    never: list[Any] = field(default_factory=list)
    frames: int = 1
    pause: float = 0.0  # seconds of silence after the frame, before its probes


@dataclass
class Target:
    """The document the valid requests point at, and which upstream serves it."""

    uri: str
    positions: list[tuple[int, int]]  # (line, UTF-16 column) inside identifiers
    fake: bool  # tests/doubles/fake_upstream.py: fake/echo and fake/hang exist


def body(message: Any) -> bytes:
    return json.dumps(message).encode()


def header(length: Any) -> bytes:
    return b"Content-Length: %s\r\n\r\n" % str(length).encode()


NOTIFICATION_METHODS = (
    "initialized",
    "textDocument/didSave",
    "textDocument/didClose",
    "textDocument/willSave",
    "workspace/didChangeWatchedFiles",
    "$/cancelRequest",
    "$/setTrace",
    "$/progress",
    "window/workDoneProgress/cancel",
)
BAD_IDS: tuple[Any, ...] = (None, 100000.5, True, False, {"x": 1}, [1], 2**70, -(2**70), 1e300)
# Reused ids come from the whole history: the server remembers every answered id
# (server/lsp/answered.py), so even an old one is never answered twice.
REUSE_WINDOW = 10**9
BAD_LENGTHS = (
    b"-5",
    b"-0",
    b"abc",
    b"12abc",
    b"",
    b"0x10",
    b"1e3",
    b"12 34",
    b"99999999999999999999",
)


class Fuzzer:
    """Builds rounds of frames from a seeded RNG and keeps the ledger."""

    def __init__(self, rng: random.Random, target: Target, pause_rate: float = 0.005) -> None:
        self.rng = rng
        self.target = target
        self.pause_rate = pause_rate
        self.must: Counter[str] = Counter()
        self.may: Counter[str] = Counter()
        self.sent: set[str] = set()  # every id the fuzzer put in any frame
        self.answered: list[Any] = []  # ids whose one reply has arrived, oldest first
        self.kinds: Counter[str] = Counter()
        self.carried: dict[str, list[str]] = {}  # id -> the kinds of frame that carried it
        self._next = 100000

    # ---- ids ----

    def fresh_id(self) -> Any:
        self._next += 1
        if self._next > 999999:
            raise RuntimeError("out of six-digit ids")
        n = self._next
        roll = self.rng.random()
        if roll < 0.15:
            return f"s{n}"
        if roll < 0.2:
            return -n
        return n

    def odd_valid_id(self) -> Any:
        """Ids that are valid but unusual: long, non-ASCII or escaped strings, extreme ints."""
        n = self._next = self._next + 1
        pick = self.rng.randrange(5)
        if pick == 0:
            return f"long{n}-" + "x" * self.rng.choice((100, 1000, 10000))
        if pick == 1:
            return f'ü{n}"\\/\t😀'
        if pick == 2:
            return 2**31 - 1 - n  # within int32, far from the six-digit range
        if pick == 3:
            return 2**53 - n
        return f"{n}"  # a digit string: must stay distinct from the integer

    def _record(self, frame: Frame) -> Frame:
        for ids, counter in ((frame.must, self.must), (frame.may, self.may)):
            for msg_id in ids:
                counter[key(msg_id)] += 1
        for msg_id in (*frame.must, *frame.may, *frame.never):
            self.sent.add(key(msg_id))
            self.carried.setdefault(key(msg_id), []).append(frame.kind)
        self.kinds[frame.kind] += 1
        return frame

    def recently_answered(self) -> Any:
        """An id whose reply has arrived, among the last ``REUSE_WINDOW``."""
        return self.rng.choice(self.answered[-REUSE_WINDOW:])

    # ---- valid requests ----

    def valid(self, msg_id: Any = None) -> tuple[dict[str, Any], Any]:
        msg_id = self.fresh_id() if msg_id is None else msg_id
        line, col = self.rng.choice(self.target.positions)
        at = {
            "textDocument": {"uri": self.target.uri},
            "position": {"line": line, "character": col},
        }
        choices = ["hover", "completion", "status"] + (["echo"] if self.target.fake else [])
        pick = self.rng.choice(choices)
        if pick == "hover":
            method, params = "textDocument/hover", at
        elif pick == "completion":
            method, params = "textDocument/completion", at
        elif pick == "status":
            method, params = "steerlsp/status", None
        else:
            method, params = "fake/echo", {"n": self.rng.randrange(1000)}
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        return message, msg_id

    def probe(self) -> Frame:
        message, msg_id = self.valid()
        return self._record(Frame(encode_frame(body(message)), "probe", must=[msg_id]))

    # ---- mutations ----

    def mutation(self) -> Frame:
        """One bad (or odd but valid) frame, chosen at random."""
        makers = [
            self._headers_extra,
            self._headers_bad,
            self._length_wrong,
            self._bad_json,
            self._non_object,
            self._bad_id,
            self._odd_id,
            self._unknown_method,
            self._notification_with_id,
            self._bad_params,
            self._cancel_unknown,
            self._response_unknown,
            self._duplicate_id,
            self._reused_id,
            self._garbage,
            self._batch,
        ]
        return self._record(self.rng.choice(makers)())

    def _headers_extra(self) -> Frame:
        message, msg_id = self.valid()
        data = body(message)
        extra = self.rng.choice(
            (
                b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n",
                b"X-Fuzz-%d: %d\r\n" % (self.rng.randrange(100), self.rng.randrange(10**6)),
            )
        )
        length = b"Content-Length: %d\r\n" % len(data)
        head = extra + length if self.rng.random() < 0.5 else length + extra
        return Frame(head + b"\r\n" + data, "header-extra", must=[msg_id])

    def _headers_bad(self) -> Frame:
        message, msg_id = self.valid()
        data = body(message)
        n = len(data)
        variants = {
            "no-length": b"Content-Type: application/json\r\n\r\n" + data,
            "dup-length": b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n"
            % (n, self.rng.choice((n, n + 7, 1)))
            + data,
            "bad-length": b"Content-Length: " + self.rng.choice(BAD_LENGTHS) + b"\r\n\r\n" + data,
            "junk-line": b"this is not a header\r\n" + header(n) + data,
            "no-blank-line": b"Content-Length: %d\r\n" % n + data,
            "lf-only": b"Content-Length: %d\n\n" % n + data,
        }
        kind = self.rng.choice(sorted(variants))
        return Frame(variants[kind], kind, may=[msg_id])

    def _length_wrong(self) -> Frame:
        message, msg_id = self.valid()
        data = body(message)
        if self.rng.random() < 0.5:
            return Frame(header(self.rng.randrange(len(data))) + data, "too-short", may=[msg_id])
        over = self.rng.choice((1, 5, 50, 500, 5000))
        pause = 0.7 if self.rng.random() < self.pause_rate else 0.0
        return Frame(header(len(data) + over) + data, "too-long", may=[msg_id], pause=pause)

    def _bad_json(self) -> Frame:
        message, msg_id = self.valid()
        message = {"id": msg_id, **{k: v for k, v in message.items() if k != "id"}}
        data = body(message)
        after_id = data.index(b",") + 1  # the id is first: everything before is intact
        cut = self.rng.randrange(after_id, len(data) - 1)
        variants = {
            "truncated-json": data[:cut],
            "invalid-utf8": data[:cut] + b"\xff\xfe" + data[cut:],
            "trailing-comma": data[:-1] + b",}",
            "unquoted-key": data[:-1] + b", oops: 1}",
        }
        kind = self.rng.choice(sorted(variants))
        return Frame(encode_frame(variants[kind]), kind, must=[msg_id])

    def _non_object(self) -> Frame:
        data = self.rng.choice((b"[1, 2]", b'"text"', b"42", b"null", b"true", b"[]", b"{}", b"  "))
        return Frame(encode_frame(data), "non-object")

    def _batch(self) -> Frame:
        message, msg_id = self.valid()
        return Frame(encode_frame(body([message])), "batch", may=[msg_id])

    def _bad_id(self) -> Frame:
        message, _ = self.valid()
        bad = self.rng.choice(BAD_IDS)
        message["id"] = bad
        # JSON-RPC: an unusable id is answered, if at all, under id null.
        return Frame(encode_frame(body(message)), "bad-id", may=[bad] if bad is not None else [])

    def _odd_id(self) -> Frame:
        msg_id = self.odd_valid_id()
        message, _ = self.valid(msg_id)
        return Frame(encode_frame(body(message)), "odd-id", must=[msg_id])

    def _unknown_method(self) -> Frame:
        msg_id = self.fresh_id()
        method = self.rng.choice(("fuzz/unknown", "$/fuzzUnknown", "textDocument/fuzz", ""))
        params: Any = self.rng.choice(({}, [], None, {"a": [1, {"b": None}]}))
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        return Frame(encode_frame(body(message)), "unknown-method", must=[msg_id])

    def _notification_with_id(self) -> Frame:
        msg_id = self.fresh_id()
        method = self.rng.choice(NOTIFICATION_METHODS)
        params = {
            "textDocument": {"uri": "file:///nonexistent/fuzz.py"},
            "id": 1,  # $/cancelRequest's target: not a live request
            "changes": [],
            "value": "off",
            "token": "fuzz",
        }
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        return Frame(encode_frame(body(message)), "notification-with-id", must=[msg_id])

    def _bad_params(self) -> Frame:
        msg_id = self.fresh_id()
        uri = self.target.uri
        method = self.rng.choice(
            ("textDocument/hover", "textDocument/completion", "textDocument/inlineCompletion")
        )
        params = self.rng.choice(
            (
                5,
                "text",
                [],
                [1, 2],
                {},
                {"textDocument": {"uri": uri}},
                {"textDocument": {"uri": uri}, "position": {"line": "0", "character": 0}},
                {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}},
                {"textDocument": {"uri": uri}, "position": {"line": 10**9, "character": 10**9}},
                {"textDocument": {"uri": 7}, "position": {"line": 0, "character": 0}},
                {
                    "textDocument": {"uri": "file:///nonexistent/x.py"},
                    "position": {"line": 0, "character": 0},
                },
                {
                    "textDocument": {"uri": uri},
                    "position": {"line": 0, "character": 0},
                    "context": 3,
                },
            )
        )
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        return Frame(encode_frame(body(message)), "bad-params", must=[msg_id])

    def _cancel_unknown(self) -> Frame:
        pick = self.rng.randrange(3)
        target: Any
        if pick == 0 and self.answered:
            target = self.recently_answered()  # nothing more to say about it
        elif pick == 1:
            target = self.rng.choice(BAD_IDS)
        else:
            target = self.fresh_id()
        message = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": target}}
        never = [target] if not isinstance(target, (dict, list)) else []
        return Frame(encode_frame(body(message)), "cancel-unknown", never=never)

    def _response_unknown(self) -> Frame:
        msg_id = self.fresh_id()
        reply = self.rng.choice(({"result": None}, {"error": {"code": 1, "message": "x"}}))
        message = {"jsonrpc": "2.0", "id": msg_id, **reply}
        return Frame(encode_frame(body(message)), "response-unknown", never=[msg_id])

    def _duplicate_id(self) -> Frame:
        msg_id = self.fresh_id()
        first, _ = self.valid(msg_id)
        if self.target.fake:
            first = {"jsonrpc": "2.0", "id": msg_id, "method": "fake/hang", "params": {}}
        second, _ = self.valid(msg_id)
        cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}
        data = b"".join(encode_frame(body(m)) for m in (first, second, cancel))
        # The first request gets its one reply; the second may be refused.
        return Frame(data, "duplicate-id", must=[msg_id], may=[msg_id], frames=3)

    def _reused_id(self) -> Frame:
        if not self.answered:
            return self._bad_json()
        msg_id = self.recently_answered()
        data = body({"id": msg_id, "jsonrpc": "2.0", "method": "textDocument/hover"})
        cut = data.index(b",") + 1 + self.rng.randrange(5)
        # Its request was answered already: a second reply would break "exactly once".
        return Frame(encode_frame(data[:cut]), "reused-id-malformed", never=[msg_id])

    def _garbage(self) -> Frame:
        data = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 200)))
        data = data.replace(b"ength", b"ength_")  # never a header by accident
        return Frame(data, "garbage")


# ---- running ----------------------------------------------------------------


@dataclass
class Report:
    seed: int
    frames: int = 0
    rounds: int = 0
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    resync_failures: list[str] = field(default_factory=list)  # probe unanswered after a bad frame
    unanswered: list[str] = field(default_factory=list)  # a must-id with no reply at the end
    over_answered: list[str] = field(default_factory=list)  # more replies than requests
    # Replies to ids no frame carried, e.g. salvaged from a frame cut inside its
    # id ("id": 1001 from "id": 100123): could be a second reply to another request.
    stray_replies: int = 0
    stray_ids: list[str] = field(default_factory=list)
    null_id_replies: int = 0
    ids_expected: int = 0
    ids_answered_once: int = 0
    max_replies_per_id: int = 0
    control_chars: list[str] = field(default_factory=list)
    framing_errors: list[str] = field(default_factory=list)
    crashed: bool = False
    aborted: str | None = None

    def problems(self) -> list[str]:
        """Everything that breaks the suite's promises, one line each."""
        found = []
        if self.crashed:
            found.append("the steerlsp process died")
        if self.aborted:
            found.append(f"aborted: {self.aborted}")
        if self.stray_replies:
            found.append(
                f"{self.stray_replies} replies to ids no frame carried: {self.stray_ids[:5]}"
            )
        for name in (
            "resync_failures",
            "unanswered",
            "over_answered",
            "control_chars",
            "framing_errors",
        ):
            items = getattr(self, name)
            if items:
                found.append(f"{name} ({len(items)}): {items[:5]}")
        return found


async def fuzz(
    client: FuzzClient,
    fuzzer: Fuzzer,
    frames: int,
    seed: int,
    round_timeout: float = 10.0,
    max_hangs: int = 3,
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Send about ``frames`` frames: each round one mutation, then one or two probes."""
    report = Report(seed=seed)
    started = time.perf_counter()
    rng = fuzzer.rng
    while report.frames < frames:
        bad = fuzzer.mutation()
        probes = [fuzzer.probe() for _ in range(rng.randint(1, 2))]
        report.rounds += 1
        report.frames += bad.frames + len(probes)
        client.send_bytes(bad.data)
        if bad.pause:
            await client.drain()
            await asyncio.sleep(bad.pause)
        client.send_bytes(b"".join(p.data for p in probes))
        await client.drain()
        try:
            for p in probes:
                await client.response(p.must[0], round_timeout)
        except TimeoutError:
            report.resync_failures.append(
                f"round {report.rounds}: after {bad.kind} {bad.data[:80]!r}"
            )
            if not client.alive:
                report.crashed = True
                break
            if len(report.resync_failures) >= max_hangs:
                report.aborted = f"{max_hangs} rounds without a reply"
                break
        for p in probes:
            fuzzer.answered.append(p.must[0])
        if progress is not None and report.rounds % 5000 == 0:
            progress(report.frames)
    report.seconds = time.perf_counter() - started
    await settle(client, fuzzer, report)
    return report


async def settle(client: FuzzClient, fuzzer: Fuzzer, report: Report, timeout: float = 10.0) -> None:
    """Wait for every must-id (bounded), then compare the replies with the ledger."""

    async def all_answered() -> None:
        while any(client.replies[k] < n for k, n in fuzzer.must.items()):
            await asyncio.sleep(0.02)

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_answered(), timeout)
    await asyncio.sleep(0.3)  # a late second reply must still be seen
    report.crashed = report.crashed or not client.alive
    report.kinds = dict(sorted(fuzzer.kinds.items()))
    report.ids_expected = len(fuzzer.must)
    for k, n in fuzzer.must.items():
        if client.replies[k] < n:
            report.unanswered.append(f"{k[:80]} {fuzzer.carried[k]}")
    for k, got in client.replies.items():
        if k == "null":
            report.null_id_replies = got
            continue
        if k.startswith('"setup-'):
            continue  # the harness's own requests (initialize, status), outside the ledger
        if k not in fuzzer.sent:
            report.stray_replies += got
            report.stray_ids.append(f"{k[:80]} {client.codes[k]}")
            continue
        report.max_replies_per_id = max(report.max_replies_per_id, got)
        allowed = fuzzer.must[k] + fuzzer.may[k]
        if got > allowed:
            report.over_answered.append(
                f"{k[:80]} {fuzzer.carried[k]}: {got} replies {client.codes[k]}, allowed {allowed}"
            )
        elif got == 1 and fuzzer.must[k] == 1:
            report.ids_answered_once += 1
    report.control_chars = list(client.control_chars)
    report.framing_errors = list(client.framing_errors)


def identifier_positions(text: str) -> list[tuple[int, int]]:
    """(line, UTF-16 column) of the middle of identifiers, for hover and completion."""
    import re

    found = []
    for n, line in enumerate(text.split("\n")):
        for match in re.finditer(r"[A-Za-z_]\w{2,}", line):
            mid = (match.start() + match.end()) // 2
            found.append((n, len(line[:mid].encode("utf-16-le")) // 2))
    return found or [(0, 0)]
