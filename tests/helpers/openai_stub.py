"""A scripted OpenAI-compatible server on 127.0.0.1, for the remote backend's error
shapes (the real engine is ``tests/helpers/llama_server.py``)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A scripted answer: (status, headers, body chunks, pause between chunks in seconds).
Answer = tuple[int, dict[str, str], list[bytes], float]


class Stub:
    """Answers each request with the next scripted answer; records what it was sent."""

    def __init__(self, answers: list[Answer] | Callable[[str, str, dict], Answer]) -> None:
        """``answers``: in order, or a function of (method, path, body)."""
        self.answers = answers if callable(answers) else list(answers)
        self.seen: list[tuple[str, str, dict, dict[str, str]]] = []
        self.closed_early = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else {}
                stub.seen.append((self.command, self.path, body, dict(self.headers)))
                answers = stub.answers
                if callable(answers):
                    status, headers, chunks, pause = answers(self.command, self.path, body)
                else:
                    status, headers, chunks, pause = answers.pop(0)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if len(chunks) > 1:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(chunks[0]) if chunks else 0))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    if len(chunks) <= 1:
                        time.sleep(pause)  # a slow answer
                        self.wfile.write(chunks[0] if chunks else b"")
                        return
                    for chunk in chunks:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                        time.sleep(pause)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    stub.closed_early.set()

            do_GET = _answer
            do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def ok(body: object) -> Answer:
    return 200, {"Content-Type": "application/json"}, [json.dumps(body).encode()], 0.0


def events(texts: list[str], pause: float = 0.0) -> Answer:
    chunks = [
        b"data: " + json.dumps({"choices": [{"text": t, "finish_reason": None}]}).encode() + b"\n\n"
        for t in texts
    ]
    return 200, {"Content-Type": "text/event-stream"}, [*chunks, b"data: [DONE]\n\n"], pause


def completion(text: str) -> dict:
    return {"choices": [{"text": text, "finish_reason": "stop"}]}
