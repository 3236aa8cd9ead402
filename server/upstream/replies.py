"""The one reply each client request gets, and the way back of forwarded results.

:class:`ClientReplies` holds every client request not yet answered; a reply
is written only if it removes its id from there, which makes "exactly one
reply" a property of one dict. Ids already answered are remembered too, so
that an error for a reused or salvaged id never becomes a second reply.

:class:`ForwardedResults` turns the upstream's answer into that reply. A
result that names files the editor has not opened needs their lines (to
convert columns between encodings): they are read off the event loop first.
A :class:`ResultRewriter` (the AI item added to pylsp's completion list) may
then change the result; whatever fails on the way, the upstream's answer
still goes out, once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from steerlsp.server.lsp import jsonrpc as rpc
from steerlsp.server.lsp.answered import AnsweredIds
from steerlsp.server.lsp.tasks import BackgroundTasks
from steerlsp.server.upstream.mirror import DocumentMirror

# The router's logger: these lines were always the proxy's, and users filter on its name.
log = logging.getLogger("steerlsp.server.upstream.proxy")


class ClientReplies:
    """The client requests in flight, the ids answered, and the writer to the editor."""

    def __init__(self, write_client: Callable[[bytes], None]) -> None:
        self._write_client = write_client
        self._inflight: dict[rpc.MsgId, str] = {}  # id -> method
        self._answered = AnsweredIds()  # every id replied to, this session

    def in_flight(self, msg_id: rpc.MsgId) -> bool:
        """Whether ``msg_id`` is a request accepted and not yet answered."""
        return msg_id in self._inflight

    def accept(self, msg_id: rpc.MsgId, method: str) -> None:
        """``msg_id`` is in flight until :meth:`claim` takes it."""
        self._inflight[msg_id] = method

    def claim(self, msg_id: rpc.MsgId) -> bool:
        """Take the right to answer ``msg_id``. True exactly once per request."""
        if self._inflight.pop(msg_id, None) is None:
            return False
        self._answered.add(msg_id)
        return True

    def reply(self, msg_id: rpc.MsgId, message: dict[str, Any]) -> None:
        """Send ``message`` as the one reply to client request ``msg_id``."""
        if self.claim(msg_id):
            self.write(message)
        else:
            log.warning("dropped a second reply to %r", msg_id)

    def refuse(self, msg_id: rpc.MsgId, message: dict[str, Any]) -> None:
        """Answer a request that was never accepted with the error ``message``."""
        if msg_id not in self._inflight:  # an id in use keeps its own answer pending
            self._answered.add(msg_id)
        self.write(message)

    def error_once(self, msg_id: rpc.MsgId, code: int, text: str) -> None:
        """Answer a message that is not a request we accepted, unless its id is taken.

        Its id may be a guess (salvaged from broken bytes) or reused: an id in
        flight is answered by its request, and one already answered must not
        get a second reply, so neither gets this error.
        """
        if msg_id in self._inflight or msg_id in self._answered:
            log.info("no error reply to %r: that id is in flight or already answered", msg_id)
            return
        self._answered.add(msg_id)
        self.write(rpc.error(msg_id, code, text))

    def write(self, message: dict[str, Any]) -> None:
        """Frame ``message`` and write it to the editor."""
        frame = rpc.frame(message)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("-> editor %s", frame.decode("utf-8", "replace"))
        self._write_client(frame)


class ResultRewriter(Protocol):
    """A component that may change the results of forwarded requests (the AI item
    added to pylsp's completion list). The router asks it; it never reaches in."""

    def rewrites(self, method: str) -> bool:
        """True if results of ``method`` go through :meth:`rewrite` (the router then
        keeps what :meth:`prepare` makes of the request); False keeps the direct path."""
        ...

    def prepare(self, method: str, params: Any) -> Any:
        """Called as the request is forwarded, with the client's params (client units,
        not to be kept: they are converted in place next) and the documents as the
        client sent them so far; what it returns is handed to :meth:`rewrite`."""
        ...

    async def rewrite(self, method: str, prepared: Any, result: Any) -> Any:
        """The result to send, from what :meth:`prepare` returned and the result in
        client units."""
        ...


@dataclass
class ForwardedRequest:
    """A client request the upstream is answering (the connection's tag for it)."""

    client_id: rpc.MsgId
    method: str
    uri: str | None
    prepared: Any = None  # what the rewriter made of the request (ResultRewriter.prepare)


class ForwardedResults:
    """Turns the upstream's answer to a forwarded request into the client's one reply."""

    def __init__(
        self, documents: DocumentMirror, replies: ClientReplies, tasks: BackgroundTasks
    ) -> None:
        self._documents = documents
        self._replies = replies
        self._tasks = tasks
        self._rewriter: ResultRewriter | None = None

    def rewrite_with(self, rewriter: ResultRewriter) -> None:
        """Let ``rewriter`` change the results of the methods it asks for."""
        self._rewriter = rewriter

    def prepare(self, method: str, params: Any) -> Any:
        """What the rewriter makes of a request it rewrites the result of; None when it
        fails (the result then goes out as the upstream sent it)."""
        if self._rewriter is None or not self._rewriter.rewrites(method):
            return None
        try:
            return self._rewriter.prepare(method, params)
        except Exception:
            log.exception("preparing to rewrite the result of %s failed", method)
            return None

    def deliver(self, entry: ForwardedRequest, raw: dict[str, Any]) -> None:
        """Convert the upstream's answer ``raw`` (already under the client's id) and reply."""
        docs = self._documents.docs
        if "result" in raw and docs is not None and docs.result_may_move(entry.method, entry.uri):
            unread = docs.unread(raw["result"], entry.method, entry.uri)
            if unread:
                self._tasks.spawn(self._reply_after_reading(entry, raw, unread))
                return
            self._documents.convert(raw["result"], entry.uri, toward_upstream=False)
        self._send_result(entry, raw)

    async def _reply_after_reading(
        self, entry: ForwardedRequest, raw: dict[str, Any], uris: list[str]
    ) -> None:
        """Read files off the event loop, then convert and send the one reply.

        Nothing else can answer the request meanwhile: the connection no
        longer holds it, so neither a cancel nor an upstream crash reaches it.
        """
        try:
            docs = self._documents.docs
            assert docs is not None
            known = await docs.load(uris)
            self._documents.convert(raw["result"], entry.uri, toward_upstream=False, known=known)
        except Exception:  # the upstream's answer still goes out, unconverted
            log.exception("reading files for %s failed", entry.method)
        self._send_result(entry, raw)

    def _send_result(self, entry: ForwardedRequest, raw: dict[str, Any]) -> None:
        rewriter = self._rewriter
        if rewriter is not None and rewriter.rewrites(entry.method) and "result" in raw:
            self._tasks.spawn(self._rewritten_reply(rewriter, entry, raw))
        else:
            self._replies.reply(entry.client_id, raw)

    async def _rewritten_reply(
        self, rewriter: ResultRewriter, entry: ForwardedRequest, raw: dict[str, Any]
    ) -> None:
        try:
            raw["result"] = await rewriter.rewrite(entry.method, entry.prepared, raw["result"])
        except Exception:  # the upstream's answer still goes out
            log.exception("rewriting the result of %s failed", entry.method)
        self._replies.reply(entry.client_id, raw)
