"""Decoding through the API, segment by segment: the thesis's interrupt strategy.

Each segment is one streamed completion that stops at ``.`` (the monitor's member
trigger). At a stop, one short greedy request tells what the model writes there
(with the name's first tokens after a lone ``.``, where the walk ranks): nothing
(the stop was its end), a ``.`` that begins no name (``...``, ``.5``), or a member
access. At a member access in code (the monitor decides, as
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

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from steerlsp.models.remote.api import TOP_K, Api
from steerlsp.models.remote.client import Deadline
from steerlsp.models.remote.members import continues
from steerlsp.models.remote.steering import RemoteSteering


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
        if self.walk is not None and self.walk.members and self.walk.open() and self.walk.due():
            self._steer(out)  # the cursor is after ``obj.`` (or in its name): the name first
        while out.pieces < self.max_tokens:
            steering = self.walk is not None and self.walk.members and self.walk.open()
            if self.walk is not None:
                self.walk.mark(out.text)
            finish = self._segment(out, (".",) if steering else ())
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
        assert self.walk is not None
        waited = time.perf_counter()
        top_of = (lambda: top) if top is not None else (lambda: self._top(out.text))
        rest = self.walk.at_dot(out.text, top_of, self._picker(out.text))
        out.steering_seconds += time.perf_counter() - waited
        if rest:
            self._append(out, rest)

    def _segment(self, out: Segmented, stop: tuple[str, ...]) -> str:
        """Stream one segment into ``out``: "stop_rule" when the text reached its end,
        "length" at the token limit, else the server's reason (a stop string or EOS)."""
        finish = ""
        for piece, reason in self.api.stream(
            self.prompt + out.text,
            self.deadline,
            max_tokens=self.max_tokens - out.pieces,
            stop=stop,
            sampling=self.sampling,
        ):
            if piece:
                self._append(out, piece)
                if self.ends(out.text):
                    return "stop_rule"  # leaving the stream closes it
            finish = reason or finish
        if out.pieces >= self.max_tokens:
            return "length"
        return "length" if finish == "length" else finish or "stop"

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
