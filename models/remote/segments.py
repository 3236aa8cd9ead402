"""Decoding through the API, segment by segment: the thesis's interrupt strategy.

Each segment is one streamed completion, read piece by piece. A piece with a ``.``
in it is read as the server wrote it: a ``.`` that begins no member (``...``,
``.5``, a ``.`` the monitor finds outside code) is written through, and the stream
goes on; at a member access in code (the monitor decides, as in-process) the stream
is closed there, the analysis lists the receiver's members and ``RemoteSteering``
chooses one (``steering.py``, ``members.py``); the next segment continues the
prompt after it. No request asks what the model wrote at a stop: the stream
itself tells, and a stream that ends without a member access ended at the model's
end of text. After each segment the keyword arguments it wrote are audited against
the callee's signature (``keywords.py``), and one the callee does not take is
written again, the text after it dropped. Every segment continues the text
before it, so the server's prefix cache serves each one's prompt.

No segment races an answer: the loop waits for each question, within the
steering budgets, so the same document and position give the same completion
whatever the load. The post-processing stop rule is read after each streamed
piece, and a segment that has reached the end is closed at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from steerlsp.models.remote.api import TOP_K, Api
from steerlsp.models.remote.client import Deadline
from steerlsp.models.remote.members import continues, walked_choice
from steerlsp.models.remote.steering import RemoteSteering

# Why a segment ended: at a member access the walk steers.
MEMBER = "member"


@dataclass
class Segmented:
    """What the segments wrote, why they ended, and what steering did."""

    text: str
    stop: str  # "stop" (the stop rule), "eos", "max_tokens" or "cancelled"
    pieces: int = 0  # streamed pieces: about one token each
    requests: int = 0
    seconds: float = 0.0
    steering_seconds: float = 0.0  # waiting for the analysis and scoring names
    trace: dict[str, Any] = field(default_factory=dict)


class Segments:
    """One completion's segments (see the module doc). ``ends`` is the stop rule."""

    def __init__(
        self,
        api: Api,
        prompt: str,
        *,
        max_tokens: int,
        ends: Callable[[str], bool],
        deadline: Deadline,
        sampling: dict[str, Any],
        walk: RemoteSteering | None = None,
    ) -> None:
        self.api, self.prompt, self.max_tokens, self.ends = api, prompt, max_tokens, ends
        self.deadline, self.sampling, self.walk = deadline, sampling, walk
        self._tops: dict[str, dict[str, float]] = {}  # see ``_top``

    def run(self) -> Segmented:
        started, sent = time.perf_counter(), self.api.client.requests
        out = Segmented("", "max_tokens")
        if self.walk is not None and self.walk.members and self.walk.open() and self.walk.due():
            self._steer(out)  # the cursor is after ``obj.`` (or in its name): the name first
        while out.pieces < self.max_tokens:
            steering = self.walk is not None and self.walk.members and self.walk.open()
            if self.walk is not None:
                self.walk.mark(out.text)
            finish = self._segment(out, steering)
            if self.walk is not None:
                rewritten = self.walk.audit(out.text, self._picker)
                if rewritten is not None:  # a keyword written again: go on after its ``=``
                    out.text = rewritten
                    continue
            if finish in ("stop_rule", "length"):
                out.stop = "stop" if finish == "stop_rule" else "max_tokens"
                break
            if finish != MEMBER or self.walk is None:
                out.stop = "eos"
                break
            self._steer(out)
            if self.ends(out.text):
                out.stop = "stop"
                break
        out.seconds = time.perf_counter() - started
        out.requests = self.api.client.requests - sent
        if self.walk is not None:
            out.trace = self.walk.trace
        return out

    def _steer(self, out: Segmented) -> None:
        """At a member trigger: the walk's name, written."""
        assert self.walk is not None
        waited = time.perf_counter()
        rest = self.walk.at_dot(out.text, lambda: self._top(out.text), self._picker(out.text))
        out.steering_seconds += time.perf_counter() - waited
        if rest:
            self._append(out, rest)

    def _segment(self, out: Segmented, steering: bool) -> str:
        """Stream one segment into ``out``: "stop_rule" when the text reached its end,
        "length" at the token limit, :data:`MEMBER` at a member access the walk steers
        (``steering``; the stream closed there), else the server's reason (its end of
        text)."""
        finish = ""
        for piece, reason in self.api.stream(
            self.prompt + out.text,
            self.deadline,
            max_tokens=self.max_tokens - out.pieces,
            sampling=self.sampling,
        ):
            if piece:
                if not steering:
                    self._append(out, piece)
                elif self._member_in(out, piece):  # leaving the stream closes it
                    return "stop_rule" if self.ends(out.text) else MEMBER
                if self.ends(out.text):
                    return "stop_rule"
            finish = reason or finish
        if out.pieces >= self.max_tokens:
            return "length"
        return "length" if finish == "length" else finish or "stop"

    def _member_in(self, out: Segmented, piece: str) -> bool:
        """``piece`` written into ``out`` up to a member access the walk steers (True:
        the rest of the piece, the name's start as the model wrote it, is the walk's),
        or all of it (False). A ``.`` that begins no name (``...``, ``.\\n``) is written
        through, as is one the monitor finds outside code or after a number."""
        assert self.walk is not None
        while "." in piece:
            before, _, rest = piece.partition(".")
            if before:
                self._append(out, before)
            if rest[:1].isalnum() or rest[:1] in ("", "_"):  # ``obj.`` or ``obj.get``
                self._append(out, ".")
                if self.walk.due():
                    return True
                piece = rest
            else:  # the whole run of dots, then what follows it
                more = len(rest) - len(rest.lstrip("."))
                self._append(out, "." * (1 + more))
                piece = rest[more:]
        if piece:
            self._append(out, piece)
        return False

    def _top(self, written: str) -> dict[str, float]:
        """The k likeliest next tokens after ``written``, asked once a completion (the
        ranking and a walk among the names it could not tell apart both start there)."""
        if written not in self._tops:
            probe = self.api.complete(
                self.prompt + written, self.deadline, max_tokens=1, logprobs=TOP_K
            )
            self._tops[written] = dict(probe.top[0]) if probe.top else {}
        return self._tops[written]

    def _picker(self, written: str) -> Callable[[list[str]], str | None] | None:
        """The model's choice among names (the rests to write after ``written``),
        constrained by the server, where it constrains. Where the walk ranks on the
        server's log-probabilities, the choice is first read from the k likeliest
        tokens, a token a request (``walked_choice``): a name's few distinguishing
        tokens cost less than writing all of it under a grammar."""
        if not self.api.capabilities.constraint:
            return None

        def pick(rests: list[str]) -> str | None:
            if self.walk is not None and self.walk.ranks:
                walked = walked_choice(rests, lambda text: self._top(written + text))
                if walked is not None:
                    return walked
            longest = max(len(r) for r in rests)
            got = self.api.complete(
                self.prompt + written,
                self.deadline,
                max_tokens=longest + 2,
                choices=tuple(rests),
                then_end=True,
            )
            name = got.text[:-1] if got.text and not continues(got.text[-1]) else got.text
            return name if name in rests else None

        return pick

    def _append(self, out: Segmented, piece: str) -> None:
        out.text += piece
        out.pieces += 1
        if self.walk is not None:
            self.walk.saw(piece, out.text)
