"""The ids the editor has had a reply to, for the whole session, in little memory.

A malformed message may carry (or seem to carry) an id that was answered long
ago; replying to it again would be a second reply to one id. Remembering every
id exactly costs little when stored compactly:

- integer ids, which editors count up, as disjoint ranges (a session of any
  length with ids 1, 2, 3, ... is one range);
- string ids as 64-bit digests (a collision would only suppress an error reply
  to a malformed message).

Past ``limit`` entries (a client that spreads its ids widely), the lowest
integer ranges and the oldest digests are forgotten.
"""

from __future__ import annotations

import bisect
import hashlib

from steerlsp.server.lsp.jsonrpc import MsgId

DEFAULT_LIMIT = 1 << 20


class AnsweredIds:
    """A set of JSON-RPC ids with compact storage; ``add`` and ``in`` are O(log n)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"limit must be positive, got {limit!r}")
        self.limit = limit
        self._starts: list[int] = []  # disjoint, non-adjacent ranges [start, end], sorted
        self._ends: list[int] = []
        self._digests: dict[int, None] = {}  # insertion-ordered, oldest first

    def __len__(self) -> int:
        return len(self._starts) + len(self._digests)

    def __contains__(self, msg_id: object) -> bool:
        if isinstance(msg_id, bool):
            return False
        if isinstance(msg_id, int):
            index = bisect.bisect_right(self._starts, msg_id) - 1
            return index >= 0 and msg_id <= self._ends[index]
        if isinstance(msg_id, str):
            return _digest(msg_id) in self._digests
        return False

    def add(self, msg_id: MsgId) -> None:
        """Remember ``msg_id`` as answered."""
        if isinstance(msg_id, int) and not isinstance(msg_id, bool):
            self._add_int(msg_id)
        elif isinstance(msg_id, str):
            digest = _digest(msg_id)
            self._digests.pop(digest, None)
            self._digests[digest] = None
        while len(self) > self.limit:
            self._forget_one()

    def _add_int(self, value: int) -> None:
        starts, ends = self._starts, self._ends
        index = bisect.bisect_right(starts, value) - 1
        if index >= 0 and value <= ends[index]:
            return
        joins_left = index >= 0 and ends[index] == value - 1
        joins_right = index + 1 < len(starts) and starts[index + 1] == value + 1
        if joins_left and joins_right:
            ends[index] = ends[index + 1]
            del starts[index + 1], ends[index + 1]
        elif joins_left:
            ends[index] = value
        elif joins_right:
            starts[index + 1] = value
        else:
            starts.insert(index + 1, value)
            ends.insert(index + 1, value)

    def _forget_one(self) -> None:
        if self._digests and (not self._starts or len(self._digests) >= len(self._starts)):
            del self._digests[next(iter(self._digests))]
        else:
            del self._starts[0], self._ends[0]


def _digest(text: str) -> int:
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big"
    )
