"""The name audit of the remote steering: after each segment, the statements it
ended are checked for a name they read that nothing defines, and the first such
name is written again as one in scope, the model's choice under the server's
constraint (without a constraint, the statement stands). The names in scope are read
with ``ast`` where the document allows, else asked of the analysis, once."""

from __future__ import annotations

from steerlsp.models.remote.arguments import Picker
from steerlsp.models.remote.stage import Inputs, Stage
from steerlsp.models.steering.monitor import MonitorState
from steerlsp.models.steering.stages.names import (
    MAX_NAMES,
    scope_queries,
    statement_bindings,
    statement_query,
    statement_start,
    static_names,
)
from steerlsp.models.steering.stages.scope import NameCheck, names_in_scope


class NameAudit(Stage):
    """The statements one completion ends, checked for undefined names (see the module
    doc). Offsets are monitor offsets: into the window and what follows it."""

    def __init__(self, inputs: Inputs, monitor: MonitorState) -> None:
        super().__init__(inputs)
        self.check = NameCheck(statement_start=statement_start(self.window, monitor))
        self.rewinds = 0  # names written again
        self._loaded: bool | None = None
        self._checked_upto = len(self.window)  # statements ending here or before are checked

    def audit(self, monitor: MonitorState, written: str, picker: Picker) -> str | None:
        """``written`` up to the first name read by a statement ended since the last
        look that nothing defines, then one in scope; None when all stand."""
        check = self.check
        whole = self.window + written
        for end in [e for e in monitor.statement_ends if e > self._checked_upto]:
            self._checked_upto = end
            if self.rewinds < self.options.max_rewinds and self._known():
                found = check.check(whole, end, len(self.window))
                cut = found.offset - len(self.window) if found is not None else -1
                pick = picker(written[:cut]) if found is not None and cut >= 0 else None
                if found is not None and pick is not None:
                    names = sorted(n for n in check.known if n.isidentifier() and n != found.name)
                    chosen = pick(names[:MAX_NAMES]) if names else None
                    if chosen is not None:
                        self.rewinds += 1
                        self._checked_upto = found.offset
                        self.trace["rewinds"].append(
                            {"kind": "undefined name", "wrote": found.name, "now": chosen}
                        )
                        return written[:cut] + chosen
            check.advance(whole, end)
        return None

    def _known(self) -> bool:
        """Whether the names in scope at the cursor are known (read once)."""
        if self._loaded is None:
            questions = scope_queries(self.before, self.after)
            static = static_names(questions)
            if static is None:
                whole = statement_query(self.before, self.after)
                static = names_in_scope(whole.text, whole.offset) if whole is not None else None
                if whole is not None and static is not None:
                    static = static | statement_bindings(whole.statement, whole.cursor)
            if static is not None:
                self.check.known.update(static)
                self._loaded = True
            else:
                text, offset = questions[-1]
                items = self.questions.ask(
                    "scope",
                    offset,
                    lambda limit: self.analysis.completions_at(
                        text, offset, timeout=limit, documented=False
                    ),
                )
                self.check.known.update(c.name for c in items or [])
                self._loaded = bool(items)
        return bool(self._loaded)
