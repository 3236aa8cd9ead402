"""A scripted upstream language server for testing the proxy's mechanics.

Real behaviour is tested against real pylsp; this one exists to make the
upstream do things on demand that pylsp never does deterministically: send a
server->client request under a chosen id, hang, crash, report exactly what it
received. Run as ``python tests/doubles/fake_upstream.py``; with ``--incremental`` it
advertises incremental document sync (kind 2) instead of full (kind 1).

Methods:
- ``textDocument/completion``: one item, ``fake``.
- ``fake/echo``: result is the params.
- ``fake/received``: every message received so far (method, id, params).
- ``fake/receivedJson``: the same as a JSON string, which the proxy cannot
  convert on the way back (it converts positions in results to the editor's
  encoding).
- ``fake/serverRequest`` {method, params, id}: send that request to the
  client, then reply with the client's answer.
- ``fake/notify`` {method, params}: send that notification, reply null.
- ``fake/hang``: never replies, except -32800 after ``$/cancelRequest``.
- ``fake/crash``: exit with status 3 at once.
- ``fake/allocate`` {mb}: take (and touch) that much memory, keep it, never reply.
- ``fake/progressCancel`` {id}: send ``$/cancelRequest`` for our request ``id``.

With ``--freeze-on METHOD`` it stops reading and answering for good at the first
message of that method (a read that never returns, as on a FIFO).

``initialize`` fails when ``initializationOptions.fake.failInitialize`` is set.
- ``fake/stderr`` {size}: write one line of ``size`` bytes to stderr (blocking,
  as pylsp's logging does), then reply with the size.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

CAPABILITIES = {
    "hoverProvider": True,
    "textDocumentSync": {"openClose": True, "change": 1, "save": {"includeText": False}},
    "executeCommandProvider": {"commands": ["fake.command"]},
    "experimental": {"fake": True},
}


class Fake:
    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.hanging: set[Any] = set()
        self.waiting: dict[Any, Any] = {}  # our request id -> client request id to answer
        self.shutdown = False

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sys.stdout.buffer.flush()

    def handle(self, msg: dict[str, Any]) -> None:
        method, msg_id, params = msg.get("method"), msg.get("id"), msg.get("params")
        if method is None:  # a response from the client
            self.received.append({"response": msg_id, "result": msg.get("result")})
            if msg_id in self.waiting:
                self.send({"id": self.waiting.pop(msg_id), "result": msg.get("result")})
            return
        if method not in ("fake/received", "fake/receivedJson"):
            self.received.append({"method": method, "id": msg_id, "params": params})
        handler = getattr(self, "on_" + method.replace("/", "_").replace("$", "S"), None)
        if handler is not None:
            try:
                handler(msg_id, params)
            except (KeyError, TypeError, AttributeError, IndexError) as exc:
                # Bad params get an error reply, as pylsp's do; the process lives on.
                if msg_id is not None:
                    self.send({"id": msg_id, "error": {"code": -32602, "message": repr(exc)}})
        elif msg_id is not None:
            self.send({"id": msg_id, "error": {"code": -32601, "message": f"no {method}"}})

    def on_initialize(self, msg_id: Any, params: Any) -> None:
        options = params.get("initializationOptions")
        if isinstance(options, dict) and (options.get("fake") or {}).get("failInitialize"):
            self.send({"id": msg_id, "error": {"code": -32603, "message": "fake init failure"}})
            return
        self.send({"id": msg_id, "result": {"capabilities": CAPABILITIES}})

    def on_shutdown(self, msg_id: Any, params: Any) -> None:
        self.shutdown = True
        self.send({"id": msg_id, "result": None})

    def on_exit(self, msg_id: Any, params: Any) -> None:
        sys.exit(0 if self.shutdown else 1)

    def on_textDocument_hover(self, msg_id: Any, params: Any) -> None:
        pos = params["position"]
        self.send(
            {
                "id": msg_id,
                "result": {
                    "contents": "fake hover",
                    "range": {
                        "start": pos,
                        "end": {"line": pos["line"], "character": pos["character"] + 1},
                    },
                },
            }
        )

    def on_textDocument_completion(self, msg_id: Any, params: Any) -> None:
        self.send({"id": msg_id, "result": {"isIncomplete": False, "items": [{"label": "fake"}]}})

    def on_fake_echo(self, msg_id: Any, params: Any) -> None:
        self.send({"id": msg_id, "result": params})

    def on_fake_received(self, msg_id: Any, params: Any) -> None:
        self.send({"id": msg_id, "result": self.received})

    def on_fake_receivedJson(self, msg_id: Any, params: Any) -> None:
        self.send({"id": msg_id, "result": json.dumps(self.received)})

    def on_fake_serverRequest(self, msg_id: Any, params: Any) -> None:
        self.waiting[params["id"]] = msg_id
        self.send({"id": params["id"], "method": params["method"], "params": params.get("params")})

    def on_fake_notify(self, msg_id: Any, params: Any) -> None:
        self.send({"method": params["method"], "params": params.get("params")})
        self.send({"id": msg_id, "result": None})

    def on_fake_hang(self, msg_id: Any, params: Any) -> None:
        self.hanging.add(msg_id)

    def on_fake_crash(self, msg_id: Any, params: Any) -> None:
        os._exit(3)

    def on_fake_allocate(self, msg_id: Any, params: Any) -> None:
        self.held = bytearray(params["mb"] * 1024 * 1024)
        for at in range(0, len(self.held), 4096):  # resident, not just reserved
            self.held[at] = 1
        self.hanging.add(msg_id)

    def on_fake_progressCancel(self, msg_id: Any, params: Any) -> None:
        self.send({"method": "$/cancelRequest", "params": {"id": params["id"]}})
        self.send({"id": msg_id, "result": None})

    def on_fake_stderr(self, msg_id: Any, params: Any) -> None:
        sys.stderr.buffer.write(b"e" * params["size"] + b"\n")
        sys.stderr.buffer.flush()
        self.send({"id": msg_id, "result": params["size"]})

    def on_S_cancelRequest(self, msg_id: Any, params: Any) -> None:
        target = params["id"]
        if target in self.hanging:
            self.hanging.discard(target)
            self.send({"id": target, "error": {"code": -32800, "message": "cancelled"}})


def read_message(stream: Any) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def main() -> None:
    if "--incremental" in sys.argv[1:]:
        CAPABILITIES["textDocumentSync"]["change"] = 2  # type: ignore[index]
    args = sys.argv[1:]
    freeze_on = args[args.index("--freeze-on") + 1] if "--freeze-on" in args else None
    fake = Fake()
    while (msg := read_message(sys.stdin.buffer)) is not None:
        if freeze_on is not None and msg.get("method") == freeze_on:
            while True:
                time.sleep(3600)
        fake.handle(msg)


if __name__ == "__main__":
    main()
