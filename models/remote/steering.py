"""Steering through the API: what the in-process stages know, asked between segments.

``RemoteSteering`` holds the monitor over the text written so far and the explain
trace, and runs the remote stages, which share one question budget
(``questions.py``): at a member access, the member walk (``walk.py``); after each
segment, the argument audit (``arguments.py``) and the name audit (``undefined.py``),
which write again what the segment got wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from steerlsp.models.options import SteeringOptions
from steerlsp.models.remote.arguments import ArgumentAudit, Pick, Picker
from steerlsp.models.remote.questions import Questions
from steerlsp.models.remote.stage import Inputs
from steerlsp.models.remote.undefined import NameAudit
from steerlsp.models.remote.walk import MemberWalk
from steerlsp.models.steering.analysis import Analysis
from steerlsp.models.steering.monitor import MonitorState, Trigger

__all__ = ["Picker", "RemoteSteering"]


class RemoteSteering:
    """Steering through the API for one completion: the monitor over the written text,
    the member walk at a ``.``, the audits after each segment (arguments, undefined
    names), their questions within the caps, and the trace."""

    def __init__(
        self,
        analysis: Analysis,
        options: SteeringOptions,
        *,
        window: str,
        before: str,
        after: str,
        rank: bool = True,
        members: bool = True,
    ) -> None:
        self.members = members and options.walk  # the walk at ``.`` (else the audits only)
        self.window = window
        self.monitor = MonitorState()
        self.monitor.update(window)
        self.trace: dict[str, Any] = {
            "backend": "openai",
            "rankings": [],
            "queries": [],
            "rewinds": [],
            "notes": [],
        }
        self.questions = Questions(options, self.trace["queries"])
        inputs = Inputs(analysis, options, self.questions, self.trace, window, before, after)
        self.walk = MemberWalk(inputs, rank=rank)
        self.arguments = ArgumentAudit(inputs)
        self.names = (
            NameAudit(inputs, self.monitor) if options.names and options.max_rewinds > 0 else None
        )
        self._mark: tuple[MonitorState, int] = (self.monitor.fork(), 0)  # see ``mark``

    @property
    def ranks(self) -> bool:
        """Whether the member walk ranks on the server's log-probabilities."""
        return self.walk.rank

    def open(self) -> bool:
        """Whether steering may still ask (the completion's caps)."""
        return self.questions.open()

    def saw(self, piece: str, written: str) -> None:
        """``piece`` was written, and ``written`` is all the segments wrote so far."""
        point = self.monitor.update(piece)
        if point.trigger is Trigger.CALL_ARGUMENT and point.call is not None:
            self.arguments.argument_started(point.call, written)

    def mark(self, written: str) -> None:
        """A segment starts after ``written``: what ``audit`` reads from."""
        self._mark = (self.monitor.fork(), len(written))

    def audit(self, written: str, picker: Picker) -> str | None:
        """``written`` with what the last segment got wrong written again and the rest
        dropped: an argument the callee does not take, or a name a statement reads that
        nothing defines. None when all stands (or the caps are reached)."""
        mark, start = self._mark
        rewritten = self.arguments.audit(mark, start, written, picker)
        if rewritten is None and self.names is not None:
            rewritten = self.names.audit(self.monitor, written, picker)
        if rewritten is not None:
            self.arguments.forget_after(len(self.window) + len(rewritten))
            if len(rewritten) >= start:  # cut within the segment: lex on from its start
                self.monitor = mark.fork()
                self.monitor.update(rewritten[start:])
            else:  # a statement begun in an earlier segment: lex it all again
                self.monitor = MonitorState()
                self.monitor.update(self.window + rewritten)
        return rewritten

    def due(self) -> bool:
        """Whether the text ends where a member's name is written: after ``obj.``, or in
        the name after it."""
        point = self.monitor.point()
        return point.trigger is Trigger.COMPLETIONS_AFTER_DOT or (
            point.trigger is Trigger.INSIDE_IDENTIFIER and point.after_dot
        )

    def at_dot(
        self, written: str, top_of: Callable[[], dict[str, float]], pick: Pick | None
    ) -> str | None:
        """What to write of the member's name after ``written`` (which ends in ``.`` or
        in the part of the name written, at the cursor), or None for the model's own.
        ``top_of`` asks the k likeliest next tokens (once there are items to rank);
        ``pick`` is the model's constrained choice among the rests of names."""
        if not self.due():
            return None
        return self.walk.choose(written, self.monitor.point().partial, top_of, pick)
