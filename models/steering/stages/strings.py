"""The string stage: a completion's string literals end where the code can go on.

Right after a string closes, no token glues a name or a number to it; no name
runs into a quote that opens a string; inside an f-string's replacement field,
no token holds the f-string's own quote, a backslash or a ``#``
(``processors/strings.py``). The 270M model wrote each in the task suite: a
string closed early by the quote of a call inside it
(``"${context.get("name")}"``), the name that went on from there running into
the next quote (``is-template-name")}"``), and Python 3.12's nested quotes in a
project on 3.11 (``f"Invalid email: {form.get("email")}"``). Only where the
monitor began lexing at the document's start or a top-level line, so that it
knows which strings are open (``Written.lexed_whole``).
"""

from __future__ import annotations

import torch

from steerlsp.models.steering.processors.strings import (
    AfterString,
    FieldCharacters,
    QuoteAfterName,
    StringTables,
)
from steerlsp.models.steering.stages.base import Inputs, Stage, Step
from steerlsp.models.steering.stages.written import Written


class StringEnds(Stage):
    """Rules out what would end a string literal badly (see the module docstring)."""

    def __init__(self, written: Written, tables: StringTables) -> None:
        self.written = written
        self.tables = tables

    @classmethod
    def build(cls, inputs: Inputs) -> StringEnds | None:
        if not (inputs.options.strings and inputs.written.lexed_whole):
            return None
        return cls(inputs.written, inputs.facts.string_tables)

    def steer(self, step: Step, logits: torch.Tensor) -> torch.Tensor:
        monitor = self.written.monitor
        quotes = monitor.field_quotes()
        if quotes is not None:
            spec = monitor.in_format_spec()
            logits = FieldCharacters(self.tables, quotes, spec)(step.history, logits)
        word = monitor.after_string()
        if word is not None:
            logits = AfterString(self.tables, word)(step.history, logits)
        name = monitor.name_under_way()
        if name:
            logits = QuoteAfterName(self.tables, name)(step.history, logits)
        return logits
