"""Decoding through the API, segment by segment: the thesis's interrupt strategy.

Each segment is one streamed completion that stops at ``.`` (the monitor's member
trigger). Where the cursor itself is at a member's name, the first segment streams
with log-probabilities and its first step ranks the members while the server
writes on; the model's name is kept where it is the walk's choice (see
``Segments._segment``). At a stop, one short greedy request tells what the model
writes there (with the name's first tokens after a lone ``.``, where the walk
ranks): nothing (the stop was its end), a ``.`` that begins no name (``...``,
``.5``), or a member access. At a member access in code (the monitor decides, as
in-process) the analysis lists the receiver's members and ``RemoteSteering``
chooses one (``steering.py``, ``members.py``); the next segment continues the
prompt after it. After each segment the keyword arguments it wrote are audited
against the callee's signature (``keywords.py``), and one the callee does not take
is written again, the text after it dropped. Every segment continues the text
before it, so the server's prefix cache serves each one's prompt.

No segment races an answer: the loop waits for each question, within the
steering budgets, so the same document and position give the same completion
whatever the load. The post-processing stop rule is read after each streamed
piece, and a segment that has reached the end is closed at once.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from steerlsp.models.remote.api import TOP_K, Api
from steerlsp.models.remote.client import Deadline
from steerlsp.models.remote.members import continues
from steerlsp.models.remote.steering import RemoteSteering

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]*")


def _identifier(text: str) -> str:
    """The identifier characters ``text`` begins with."""
    match = _IDENTIFIER.match(text)
    return match.group() if match else ""


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

    def run(self) -> Segmented:
        started, sent = time.perf_counter(), self.api.client.requests
        out = Segmented("", "max_tokens")
        name_first = False  # the cursor is after ``obj.`` (or in its name): the name first
        if self.walk is not None and self.walk.members and self.walk.open() and self.walk.due():
            if self.walk.ranks:
                name_first = True  # decided on the first segment's first step, as it streams
            else:
                self._steer(out)
        while out.pieces < self.max_tokens:
            steering = self.walk is not None and self.walk.members and self.walk.open()
            if self.walk is not None:
                self.walk.mark(out.text)
            finish = self._segment(out, (".",) if steering else (), name_first=name_first)
            name_first = False
            if finish == "rewritten":  # the walk's name, not the model's: go on after it
                continue
            if self.walk is not None:
                rewritten = self.walk.audit(out.text, self._picker)
                if rewritten is not None:  # a keyword written again: go on after its ``=``
                    out.text = rewritten
                    continue
            if finish in ("stop_rule", "length"):
                out.stop = "stop" if finish == "stop_rule" else "max_tokens"
                break
            if not steering or self.walk is None:
                out.stop = "eos"
                break
            token, after = self._after_stop(out)
            if token is None:
                out.stop = "eos"
                break
            if token == "." or token[1:2].isalnum() or token[1:2] == "_":
                self._append(out, ".")  # ``obj.`` or ``obj.get`` as one token
                if self.walk.due():
                    self._steer(out, after if token == "." else None)
            else:  # a ``.`` that starts no name (``...``, ``.\n``), or the stop's end
                self._append(out, token)
            if self.ends(out.text):
                out.stop = "stop"
                break
        out.seconds = time.perf_counter() - started
        out.requests = self.api.client.requests - sent
        if self.walk is not None:
            out.trace = self.walk.trace
        return out

    def _steer(self, out: Segmented, top: dict[str, float] | None = None) -> None:
        """At a member trigger: the walk's name, written. ``top``: the k likeliest
        tokens of the name's start, where the probe at the stop already told them."""
        rest = self._decide(out, top)
        if rest:
            self._append(out, rest)

    def _decide(self, out: Segmented, top: dict[str, float] | None) -> str | None:
        """The rest of the name the walk writes after ``out.text``, or None for the
        model's own. ``top``: the name's first tokens, where known (else asked)."""
        assert self.walk is not None
        waited = time.perf_counter()
        top_of = (lambda: top) if top is not None else (lambda: self._top(out.text))
        rest = self.walk.at_dot(out.text, top_of, self._picker(out.text))
        out.steering_seconds += time.perf_counter() - waited
        return rest

    def _segment(self, out: Segmented, stop: tuple[str, ...], *, name_first: bool = False) -> str:
        """Stream one segment into ``out``: "stop_rule" when the text reached its end,
        "length" at the token limit, "rewritten" where it began with a name the walk
        replaced, else the server's reason (a stop string or EOS).

        ``name_first``: the segment begins with a member's name. It is streamed with
        log-probabilities, and its first step's k likeliest tokens rank the members
        while the server goes on writing: the model's name is held until complete, then
        kept where it is the walk's choice, so that the usual case costs no request of
        its own; else the stream is left, and the walk's name written instead."""
        finish = ""
        held: list[str] | None = [] if name_first else None  # the name's pieces, undecided
        rest: str | None = None
        decided = False
        for piece, reason, top in self.api.stream(
            self.prompt + out.text,
            self.deadline,
            max_tokens=self.max_tokens - out.pieces,
            stop=stop,
            sampling=self.sampling,
            logprobs=TOP_K if name_first else 0,
        ):
            finish = reason or finish
            if held is not None:
                if not decided and (piece or top is not None):
                    rest, decided = self._decide(out, top), True
                held.append(piece)
                written = "".join(held)
                if _identifier(written) == written and not reason:
                    continue  # the model's name may go on
                if not self._keep(out, held, rest):
                    return "rewritten"  # leaving the stream closes it
                held = None
                if self.ends(out.text):
                    return "stop_rule"
                continue
            if piece:
                self._append(out, piece)
                if self.ends(out.text):
                    return "stop_rule"  # leaving the stream closes it
        if held is not None:  # the stream ended in the name, or before it
            if not decided:
                self._steer(out)
                return "rewritten"
            if not self._keep(out, held, rest):
                return "rewritten"
        if out.pieces >= self.max_tokens:
            return "length"
        return "length" if finish == "length" else finish or "stop"

    def _keep(self, out: Segmented, held: list[str], rest: str | None) -> bool:
        """The model's held pieces, written where its name is the walk's choice (or the
        walk left the name to it); else the walk's name instead. Whether they were."""
        own = _identifier("".join(held))
        if rest is not None and own != rest:
            self._append(out, rest)
            return False
        for piece in held:
            if piece:
                self._append(out, piece)
        return True

    def _after_stop(self, out: Segmented) -> tuple[str | None, dict[str, float] | None]:
        """The token the model writes where the segment stopped at a stop string (None
        for nothing: the stop was its end of text), and, where the walk ranks on the
        server's log-probabilities and that token is a lone ``.``, the k likeliest
        tokens after it: one greedy request of two tokens, where the name's start would
        otherwise cost a request of its own. Without ranking, one token and no
        log-probabilities (on llama-cpp-python's server those cost a whole prompt
        evaluation)."""
        assert self.walk is not None
        if not self.walk.ranks:
            probe = self.api.complete(self.prompt + out.text, self.deadline, max_tokens=1)
            return probe.text or None, None
        probe = self.api.complete(
            self.prompt + out.text, self.deadline, max_tokens=2, logprobs=TOP_K
        )
        if not probe.tokens:  # no tokens told: the text decides, as a one-token probe's
            return probe.text or None, None
        first = probe.tokens[0]
        after = dict(probe.top[1]) if first == "." and len(probe.top) > 1 else None
        return first or None, after

    def _top(self, written: str) -> dict[str, float]:
        """The k likeliest next tokens after ``written``."""
        probe = self.api.complete(
            self.prompt + written, self.deadline, max_tokens=1, logprobs=TOP_K
        )
        return dict(probe.top[0]) if probe.top else {}

    def _picker(self, written: str) -> Callable[[list[str]], str | None] | None:
        """The model's choice among names (the rests to write after ``written``),
        constrained by the server, where it constrains."""
        if not self.api.capabilities.constraint:
            return None

        def pick(rests: list[str]) -> str | None:
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
