"""What is pending on an upstream: our requests, forwarded ones, and the ids of its own.

Our requests and the ones forwarded for someone else get fresh ids from one
counter, so they never collide; requests the upstream sends get a
client-side id ``steerlsp:N`` from the same counter. Requests given up on are
remembered for a while, so that their late answers are expected, not a
protocol fault.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from steerlsp.server.lsp import jsonrpc as rpc

if TYPE_CHECKING:
    from steerlsp.server.upstream.process import UpstreamProcess

# The connection's logger: these lines were always the connection's, and users filter on it.
log = logging.getLogger("steerlsp.server.upstream.connection")

Tag = TypeVar("Tag")

# Our given-up request ids remembered, so that their late answers are logged quietly.
MAX_ABANDONED = 256


class UpstreamError(Exception):
    """An internal request to the upstream failed (crash, error reply, timeout)."""


@dataclass
class Forwarded(Generic[Tag]):
    """A request sent for someone else, known to them by ``tag``."""

    tag: Tag
    sent: bool = False  # written to a process (held ones are not)


@dataclass
class Internal:
    """A request of our own, whose answer settles ``future``."""

    method: str
    future: asyncio.Future[Any] = field(repr=False)


class PendingRequests(Generic[Tag]):
    """The id tables of one connection, across its restarts."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.entries: dict[int, Forwarded[Tag] | Internal] = {}
        self._abandoned: OrderedDict[int, None] = OrderedDict()
        self.held: list[dict[str, Any]] = []  # messages waiting for the upstream to be ready
        self._to_client: dict[str, tuple[UpstreamProcess, rpc.MsgId]] = {}
        self._upstream_to_client: dict[rpc.MsgId, str] = {}

    def internal(self, method: str) -> tuple[int, asyncio.Future[Any]]:
        """A fresh id for a request of our own, and the future its answer settles."""
        up_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.entries[up_id] = Internal(method, future)
        return up_id, future

    def forwarded(self, tag: Tag) -> int:
        """A fresh id for a request sent for someone else."""
        up_id = next(self._ids)
        self.entries[up_id] = Forwarded(tag)
        return up_id

    def abandon(self, up_id: int) -> None:
        """Stop waiting for ``up_id``; its late answer is then expected."""
        self._abandoned[up_id] = None
        while len(self._abandoned) > MAX_ABANDONED:
            self._abandoned.popitem(last=False)

    def drop(self, up_id: int) -> bool:
        """Stop waiting for ``up_id`` if it is pending; False when it is not."""
        if self.entries.pop(up_id, None) is None:
            return False
        self.abandon(up_id)
        return True

    def drop_forwarded(self, up_id: int) -> bool:
        """Stop waiting for the forwarded request ``up_id``; False when it is not pending."""
        return isinstance(self.entries.get(up_id), Forwarded) and self.drop(up_id)

    def take_held(self) -> list[dict[str, Any]]:
        """The held messages, in order, no longer held."""
        held, self.held = self.held, []
        return held

    def settle(self, response: rpc.Response) -> Forwarded[Tag] | None:
        """Take the request ``response`` answers: ours is settled here, a forwarded one
        is returned for its asker. None when it is not pending."""
        up_id = response.id
        entry = self.entries.pop(up_id, None) if isinstance(up_id, int) else None
        if entry is None:
            if up_id in self._abandoned:
                del self._abandoned[up_id]  # type: ignore[arg-type]
                log.debug("upstream answered %r, a request given up on", up_id)
            else:
                log.warning("upstream answered an unknown id %r", up_id)
            return None
        if isinstance(entry, Forwarded):
            return entry
        raw = response.raw
        if not entry.future.done():
            if "error" in raw:
                entry.future.set_exception(UpstreamError(str(raw["error"].get("message"))))
            else:
                entry.future.set_result(raw.get("result"))
        return None

    def unhold(self, up_id: int) -> bool:
        """Drop a held, never sent message with ``up_id``; False if none was held."""
        held = [m for m in self.held if m.get("id") == up_id]
        if held:
            self.held = [m for m in self.held if m.get("id") != up_id]
        return bool(held)

    def fail_sent(self, reason: str) -> list[Forwarded[Tag]]:
        """Fail our requests with ``reason``; return the forwarded ones already sent."""
        lost = []
        for up_id, entry in list(self.entries.items()):
            if isinstance(entry, Internal):
                del self.entries[up_id]
                if not entry.future.done():
                    entry.future.set_exception(UpstreamError(reason))
            elif entry.sent:
                del self.entries[up_id]
                lost.append(entry)
        return lost

    def drop_held(self) -> list[Forwarded[Tag]]:
        """Forget every held message; return the forwarded requests among them."""
        held, self.held = self.held, []
        lost = []
        for message in held:
            entry = self.entries.pop(message.get("id"), None)  # type: ignore[arg-type]
            if isinstance(entry, Forwarded):
                lost.append(entry)
        return lost

    # ---- requests the upstream sends ---------------------------------------

    def client_id(self, proc: UpstreamProcess, original: rpc.MsgId) -> str:
        """The id the upstream's request ``original`` goes out under."""
        client_id = f"steerlsp:{next(self._ids)}"
        self._to_client[client_id] = (proc, original)
        self._upstream_to_client[original] = client_id
        return client_id

    def answered(self, client_id: object) -> tuple[UpstreamProcess, rpc.MsgId] | None:
        """The process and original id a reply under ``client_id`` goes back to."""
        target = self._to_client.pop(client_id, None) if isinstance(client_id, str) else None
        if target is not None:
            self._upstream_to_client.pop(target[1], None)
        return target

    def to_client_cancel(self, raw: dict[str, Any]) -> bool:
        """Rename the id in the upstream's ``$/cancelRequest`` ``raw`` to the client-side
        one; False when no request of the upstream's has that id (nothing to cancel)."""
        params = raw.get("params")
        original = params.get("id") if isinstance(params, dict) else None
        client_id = self._upstream_to_client.get(original) if original is not None else None
        if client_id is None:
            return False
        raw["params"] = {"id": client_id}
        return True

    def forget_client_ids(self) -> None:
        """The process that asked is gone: its requests need no reply."""
        self._to_client.clear()
        self._upstream_to_client.clear()
