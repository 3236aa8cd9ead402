"""An OpenAI-compatible completions client: the one place steerlsp opens a connection.

It talks to the configured endpoint only (``model.endpoint``), with the standard
library's ``http.client``: no other host, no proxy from the environment, no
redirects followed. Every call is bounded by a deadline and watches a ``cancelled``
callable: a cancelled request has its socket shut down at once (a stream closed
mid-way tells llama.cpp's and vLLM's servers to stop generating). Overloaded
answers (429, 503) are retried with backoff within the deadline. What goes wrong
is one :class:`RemoteError` whose message says what to fix; the prompt's text is
never in it, nor in a log line.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# Backoff after a 429 or 503: doubling from this, at most this, Retry-After obeyed up to it.
FIRST_BACKOFF = 0.2
MAX_BACKOFF = 2.0
# How often a waiting request looks at its ``cancelled``.
CANCEL_POLL = 0.02
# An error body quoted in a message is cut to this many characters.
QUOTED = 200


class RemoteError(Exception):
    """The server could not serve the request; the message says why, for the user."""


class RemoteUnavailable(RemoteError):
    """The server did not serve the request: ``gone`` when nothing answers at the
    endpoint (refused, reset, not resolved), which may change; else it was too slow or
    stayed overloaded."""

    def __init__(self, message: str, *, gone: bool = False) -> None:
        super().__init__(message)
        self.gone = gone


class RemoteRejected(RemoteError):
    """The server answered with an error that trying again will not mend (a wrong URL,
    model or key, a request it does not understand)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class RemoteCancelled(Exception):
    """``cancelled`` became true while the request ran; its connection was closed."""


@dataclass(frozen=True)
class Endpoint:
    """Where the server is and how to talk to it."""

    url: str  # the API's base, e.g. http://gpu-box:8000/v1
    api_key: str = ""  # sent as a bearer token when set

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"model.endpoint must be an http:// or https:// URL, got {self.url!r}")
        if parts.username or parts.password:
            raise ValueError(
                "model.endpoint must not carry credentials; name an environment variable "
                "in model.apiKeyEnv instead"
            )

    @property
    def shown(self) -> str:
        """The endpoint as messages quote it (scheme, host, port and path only)."""
        parts = urllib.parse.urlsplit(self.url)
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


@dataclass(frozen=True)
class Deadline:
    """The moment a request must be answered by, and whether its job was cancelled."""

    at: float
    cancelled: Callable[[], bool] = lambda: False
    seconds: float = 0.0  # the limit it was set from, as messages quote it

    @staticmethod
    def within(seconds: float, cancelled: Callable[[], bool] = lambda: False) -> Deadline:
        return Deadline(time.monotonic() + seconds, cancelled, seconds)

    def left(self) -> float:
        return self.at - time.monotonic()


class Client:
    """JSON requests and server-sent-event streams to one endpoint. Thread-safe: each
    request opens its own connection (a shared server keeps the prompt's prefix
    cached either way; a connection costs well under a millisecond on a LAN)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        parts = urllib.parse.urlsplit(endpoint.url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._base = parts.path.rstrip("/")
        self.requests = 0  # sent, retries included
        self.retries = 0

    def get(self, path: str, deadline: Deadline) -> Any:
        """The JSON answer to ``GET base + path``."""
        with self._exchange("GET", path, None, deadline) as response:
            return _json_of(response.read(), self.endpoint)

    def post(self, path: str, body: dict[str, Any], deadline: Deadline) -> Any:
        """The JSON answer to ``POST base + path`` with ``body``."""
        with self._exchange("POST", path, body, deadline) as response:
            return _json_of(response.read(), self.endpoint)

    def stream(self, path: str, body: dict[str, Any], deadline: Deadline) -> Iterator[Any]:
        """Each event of a ``stream: true`` answer, parsed, until ``data: [DONE]``. Leaving
        the loop early closes the connection (the server stops generating)."""
        with self._exchange("POST", path, {**body, "stream": True}, deadline) as response:
            for line in _lines(response):
                if not line.startswith(b"data:"):
                    continue  # comments (keep-alives), event names, blank separators
                data = line[5:].strip()
                if data == b"[DONE]":
                    return
                yield _json_of(data, self.endpoint)

    # ---- one exchange, with retries -------------------------------------------------

    def _exchange(
        self, method: str, path: str, body: dict[str, Any] | None, deadline: Deadline
    ) -> _Open:
        payload = json.dumps(body).encode() if body is not None else None
        backoff = FIRST_BACKOFF
        while True:
            if deadline.cancelled():
                raise RemoteCancelled()
            left = deadline.left()
            if left <= 0:
                raise RemoteUnavailable(
                    f"{self.endpoint.shown} did not answer within {deadline.seconds:g} s"
                )
            opened = self._open(method, path, payload, deadline)
            status = opened.response.status
            if status < 300:
                return opened
            error = opened.read_error()
            if status in (429, 503):
                wait = min(_retry_after(opened.response, backoff), MAX_BACKOFF)
                if wait < deadline.left():
                    self.retries += 1
                    _sleep(wait, deadline)
                    backoff = min(backoff * 2, MAX_BACKOFF)
                    continue
                raise RemoteUnavailable(
                    f"{self.endpoint.shown} is overloaded (HTTP {status}) and stayed so "
                    f"for {deadline.seconds:g} s: {error}"
                )
            raise RemoteRejected(_rejection(self.endpoint, path, status, error), status)

    def _open(self, method: str, path: str, payload: bytes | None, deadline: Deadline) -> _Open:
        connection: http.client.HTTPConnection
        limit = max(deadline.left(), 0.001)
        if self._https:
            connection = http.client.HTTPSConnection(self._host, self._port, timeout=limit)
        else:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=limit)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.endpoint.api_key:
            headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
        watch = _Watch(deadline)
        self.requests += 1
        try:
            connection.connect()
            watch.sock = connection.sock  # held: http.client lets go of it once answered
            connection.request(method, self._base + path, body=payload, headers=headers)
            response = connection.getresponse()
        except BaseException as exc:
            watch.stop()
            connection.close()
            raise _failure(exc, watch, self.endpoint) from exc
        return _Open(connection, response, watch, self.endpoint)


class _Watch:
    """Shuts the connection's socket down when the deadline passes or ``cancelled``
    turns true, which wakes a read blocked on it at once."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.sock: socket.socket | None = None  # once connected
        self.reason = ""  # "cancelled" or "deadline" once it fired
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="steerlsp-remote-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(CANCEL_POLL):
            if not self.reason:
                if self.deadline.cancelled():
                    self.reason = "cancelled"
                elif self.deadline.left() <= 0:
                    self.reason = "deadline"
                else:
                    continue
            sock = self.sock
            if sock is None:
                continue  # still connecting: shut it down once connected
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)
            return

    def stop(self) -> None:
        self._done.set()


class _Open:
    """A response being read; closing it stops the watch and the connection."""

    def __init__(
        self,
        connection: http.client.HTTPConnection,
        response: http.client.HTTPResponse,
        watch: _Watch,
        endpoint: Endpoint,
    ) -> None:
        self.connection, self.response, self.watch, self.endpoint = (
            connection,
            response,
            watch,
            endpoint,
        )

    def __enter__(self) -> http.client.HTTPResponse:
        return _Guarded(self)  # type: ignore[return-value]

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.watch.stop()
        self.connection.close()

    def read_error(self) -> str:
        """An error answer's message (its JSON ``error.message`` where it has one), and
        the connection closed."""
        try:
            raw = self.response.read(64 * 1024)
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            self.close()
        return _error_message(raw)


class _Guarded:
    """A response whose reads turn a shut-down socket into what shut it."""

    def __init__(self, opened: _Open) -> None:
        self._opened = opened

    def read(self, amount: int | None = None) -> bytes:
        return self._guard(lambda: self._opened.response.read(amount))

    def readline(self) -> bytes:
        return self._guard(self._opened.response.readline)

    def _guard(self, read: Callable[[], bytes]) -> bytes:
        watch = self._opened.watch
        try:
            data = read()
        except BaseException as exc:
            raise _failure(exc, watch, self._opened.endpoint) from exc
        if watch.reason:  # the socket was shut: what it read since is no answer
            raise _failure(ConnectionAbortedError(), watch, self._opened.endpoint)
        return data


def _lines(response: Any) -> Iterator[bytes]:
    while True:
        line = response.readline()
        if not line:
            return
        yield line.rstrip(b"\r\n")


def _failure(exc: BaseException, watch: _Watch, endpoint: Endpoint) -> BaseException:
    """What a failed connect, send or read means to the caller."""
    if watch.reason == "cancelled":
        return RemoteCancelled()
    if watch.reason == "deadline" or isinstance(exc, TimeoutError | socket.timeout):
        seconds = watch.deadline.seconds
        return RemoteUnavailable(f"{endpoint.shown} did not answer within {seconds:g} s")
    if isinstance(exc, ConnectionRefusedError):
        return RemoteUnavailable(
            f"nothing listens at {endpoint.shown} (connection refused)", gone=True
        )
    if isinstance(exc, socket.gaierror):
        return RemoteUnavailable(f"cannot resolve the host of {endpoint.shown}", gone=True)
    if isinstance(exc, OSError | http.client.HTTPException):
        return RemoteUnavailable(
            f"the connection to {endpoint.shown} failed: {type(exc).__name__}: {exc}", gone=True
        )
    return exc


def _json_of(raw: bytes, endpoint: Endpoint) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise RemoteRejected(
            f"{endpoint.shown} answered with something that is not JSON "
            f"({len(raw)} bytes; is it an OpenAI-compatible API?)",
            200,
        ) from exc


def _error_message(raw: bytes) -> str:
    try:
        body = json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace").strip()
        return text[:QUOTED] or "no message"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:QUOTED]
    if isinstance(error, str) and error:
        return error[:QUOTED]
    if isinstance(body, dict) and isinstance(body.get("detail"), str | list):
        return str(body["detail"])[:QUOTED]
    return json.dumps(body)[:QUOTED]


def _rejection(endpoint: Endpoint, path: str, status: int, error: str) -> str:
    if status in (401, 403):
        return (
            f"{endpoint.shown} refused the API key (HTTP {status}): {error}. "
            "Set the environment variable that model.apiKeyEnv names"
        )
    if status == 404:
        return (
            f"{endpoint.shown}{path} was not found (HTTP 404): {error}. "
            "model.endpoint should be the API's base, e.g. http://host:8000/v1"
        )
    return f"{endpoint.shown}{path} failed (HTTP {status}): {error}"


def _retry_after(response: http.client.HTTPResponse, backoff: float) -> float:
    header = response.getheader("Retry-After")
    try:
        return max(float(header), 0.0) if header is not None else backoff
    except ValueError:
        return backoff


def _sleep(seconds: float, deadline: Deadline) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if deadline.cancelled():
            raise RemoteCancelled()
        time.sleep(min(CANCEL_POLL, max(end - time.monotonic(), 0)))
