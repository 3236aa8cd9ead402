"""The argument audit of the remote steering: after each segment, the calls it wrote
are checked against their callee's signature, and the first argument the callee
cannot take is written again (the text after it dropped):

- a keyword the callee does not take, or one already given: one it takes, cut after
  its ``=`` (the model's choice among them where the server constrains);
- a positional argument past the callee's positional parameters: a keyword;
- a call closed without a required parameter: that parameter, before the ``)``.

The signature of a call is asked on a thread as soon as its first argument begins,
so that pylsp answers while the server streams on, and the audit finds it there.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from steerlsp.models.remote.keywords import Closed, Keyword, arguments_written
from steerlsp.models.remote.questions import Asked
from steerlsp.models.remote.stage import Inputs, Stage
from steerlsp.models.steering.monitor import CallContext, MonitorState
from steerlsp.models.steering.parameters import CallShape, argument_spans
from steerlsp.models.steering.stages.keywords import counted, given_arguments, shape_of

# The model's constrained choice among names written after a text, where the server
# constrains: ``picker(text)(names)``.
Pick = Callable[[list[str]], str | None]
Picker = Callable[[str], Pick | None]
# An argument given by keyword (``name=``, not ``==``).
_KEYWORD_ARGUMENT = re.compile(r"[A-Za-z_]\w*\s*=(?!=)")


class ArgumentAudit(Stage):
    """The calls one completion writes, checked against their signatures (see the
    module doc). Offsets into the document's window are monitor offsets."""

    def __init__(self, inputs: Inputs) -> None:
        super().__init__(inputs)
        self.rewinds = 0  # arguments written again
        # Signatures asked as soon as a call's argument starts, by its ``(``.
        self._signatures: dict[int, Asked] = {}

    def argument_started(self, call: CallContext, written: str) -> None:
        """A call's argument begins at the end of ``written``: ask its signature now,
        once per call, for calls the completion writes."""
        if (
            call.open_bracket in self._signatures
            or call.open_bracket < len(self.window)
            or not self.options.keywords
            or not counted(call)
            or not self.questions.open()
        ):
            return
        text = self.before + written + self.after
        offset = len(self.before) + len(written)
        self._signatures[call.open_bracket] = self.questions.send(
            lambda limit: self.analysis.signature_at(text, offset, timeout=limit)
        )

    def forget_after(self, end: int) -> None:
        """The text from monitor offset ``end`` on was dropped: so are its calls."""
        self._signatures = {k: v for k, v in self._signatures.items() if k < end}

    def audit(self, mark: MonitorState, start: int, written: str, picker: Picker) -> str | None:
        """``written`` with the first argument written since ``start`` (where the
        monitor stood at ``mark``) that the callee does not take written again; None
        when all stand."""
        if not self.options.keywords or self.rewinds >= self.options.max_rewinds:
            return None
        fed = self.window + written[:start]
        for event in arguments_written(mark, fed, written[start:]):
            if not self.questions.open():
                return None
            if isinstance(event, Closed):
                rewritten = self._closed(written, event, picker)
            else:
                cut = event.start - len(self.window)
                if cut < 0:
                    continue  # the name was typed before the cursor: the user's, not ours
                rewritten = self._keyword(written, event, cut, picker(written[:cut]))
            if rewritten is not None:
                self.rewinds += 1
                return rewritten
        return None

    def _shape(self, written: str, end: int, call: CallContext) -> CallShape | None:
        """The callee's parameters, from the signature of the call being written: the
        one asked when its argument started, or asked now at ``end`` (an offset into
        ``written``)."""
        offset = len(self.before) + end
        asked = self._signatures.get(call.open_bracket)
        if asked is not None:
            signature = self.questions.answer("signature", asked, offset)
        else:
            text = self.before + written[:end] + self.after
            signature = self.questions.ask(
                "signature",
                offset,
                lambda limit: self.analysis.signature_at(text, offset, timeout=limit),
            )
        return shape_of(signature, call.callee) if signature is not None else None

    def _closed(self, written: str, closed: Closed, picker: Picker) -> str | None:
        """A call the segment closed, its positional arguments past the callee's
        capacity or a required parameter missing written again; None when it stands."""
        call = closed.call
        if not counted(call):
            return None
        params = (self.window + written)[call.open_bracket + 1 : closed.close]
        spans, _ = argument_spans(params)
        given, positional = given_arguments(params)
        by_position = [
            (a, b)
            for a, b in spans
            if not _KEYWORD_ARGUMENT.match(params[a:b]) and not params[a:b].startswith("*")
        ]
        if not by_position:
            return None  # as in-process: the signature is asked once an argument is a value
        close = closed.close - len(self.window)
        shape = self._shape(written, close, call)
        if shape is None:
            return None
        capacity = shape.positional_capacity()
        if capacity is not None and len(by_position) > capacity:
            extra = by_position[capacity]
            start = call.open_bracket + 1 + extra[0] - len(self.window)
            offered = shape.wanted(given, capacity)
            if start < 0 or not offered:
                return None
            chosen = pick_among(offered, picker(written[:start]))
            self._traced(
                "positional argument", call.callee, params[extra[0] : extra[1]], offered, chosen
            )
            return written[:start] + chosen + "="
        if len(shape.overloads) != 1:
            return None
        required = shape.required(given, positional)
        if not required:
            return None
        lead = ", " if params.strip() else ""
        self._traced("missing argument", call.callee, ")", required, required[0])
        return written[:close] + lead + required[0] + "="

    def _keyword(self, written: str, keyword: Keyword, cut: int, pick: Pick | None) -> str | None:
        """``written`` up to ``keyword``, then one the callee takes and its ``=``; None
        when the callee takes it (or its parameters cannot be read)."""
        shape = self._shape(written, keyword.end - len(self.window), keyword.call)
        if shape is None:
            return None
        opened = keyword.call.open_bracket + 1
        given, positional = given_arguments(
            (self.window + written)[opened : keyword.call.argument_start]
        )
        if shape.accepts(keyword.name) and keyword.name not in given:
            return None
        offered = shape.wanted(given, positional)
        if not offered:
            return None
        chosen = pick_among(offered, pick)
        self._traced("keyword", keyword.call.callee, keyword.name, offered, chosen)
        return written[:cut] + chosen + "="

    def _traced(self, kind: str, callee: str, wrote: str, offered: list[str], now: str) -> None:
        self.trace["rewinds"].append(
            {"kind": kind, "callee": callee, "wrote": wrote, "offered": offered[:10], "now": now}
        )


def pick_among(offered: list[str], pick: Pick | None) -> str:
    """The model's choice among ``offered`` where the server constrains, else the first
    (a required parameter, or the signature's order)."""
    chosen = pick(offered) if pick is not None and len(offered) > 1 else None
    return chosen if chosen in offered else offered[0]
