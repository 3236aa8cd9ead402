"""The text a completion has so far: the document around the cursor, the generated
tokens, and the monitor that reads them (``models/steering/monitor.py``)."""

from __future__ import annotations

from steerlsp.models.steering.lexing import TOP_LEVEL
from steerlsp.models.steering.monitor import MonitorState, Trigger, TriggerPoint

# The monitor lexes at least this much of the code before the cursor, and at most this
# much more to start where the lexer's state is known (see :func:`steering_window`).
WINDOW = 8_000
WINDOW_REACH = 64_000


def steering_window(prefix: str, size: int = WINDOW, reach: int = WINDOW_REACH) -> str:
    """The end of ``prefix`` the monitor lexes: its last ``size`` characters, reaching
    back to where a lexer can start (the document's start, or a top-level ``def``,
    ``class`` or decorator line) within ``reach`` more. A cut inside a docstring or
    any string would make the lexer read its text as code and the code after it as
    text, and then no trigger of the whole completion is seen. Where no such line is
    in reach, the plain cut (rare: a top-level statement over 64k characters)."""
    if len(prefix) <= size:
        return prefix
    cut = len(prefix) - size
    if cut <= reach:
        return prefix
    start = None
    for match in TOP_LEVEL.finditer(prefix, cut - reach, cut + 1):
        start = match.start()
    return prefix[start if start is not None else cut :]


class Written:
    """The window the prompt ends with, what was generated after it, and where each
    generated token ends; every stage reads it, only the Steerer moves it on."""

    def __init__(self, *, window: str, before: str, after: str) -> None:
        if not before.endswith(window):  # an inconsistent snapshot: the window is all we know
            before = window
        self.before, self.after = before, after  # the whole document around the cursor
        self.window = window  # the prompt's code up to the cursor (what the monitor read)
        # The monitor began where a lexer can: the document's start, or a top-level line
        # (``steering_window``): the brackets it says are open are the code's.
        self.lexed_whole = len(window) == len(before) or bool(TOP_LEVEL.match(window))
        self.prefix_monitor = MonitorState()
        self.prefix_monitor.update(window)
        self.monitor = self.prefix_monitor.fork()
        self.text = ""
        self.tokens: list[int] = []
        self.ends: list[int] = []  # the generated text's length after each token

    def observe(self, token: int, text: str) -> TriggerPoint:
        """``token`` was chosen and the generated text is now ``text``: where it stands."""
        self.tokens.append(token)
        if text.startswith(self.text):
            point = self.monitor.update(text[len(self.text) :])
        else:  # a multi-byte character completed differently: lex the text again
            self.monitor = self.prefix_monitor.fork()
            point = self.monitor.update(text)
        self.text = text
        self.ends.append(len(text))
        return point

    def kept(self, keep: int) -> str:
        """The generated text of the first ``keep`` tokens."""
        return self.text[: self.ends[keep - 1]] if keep else ""

    def rewind(self, keep: int) -> None:
        """Back to the first ``keep`` generated tokens."""
        kept = self.kept(keep)
        del self.tokens[keep:], self.ends[keep:]
        self.text = kept
        self.monitor = self.prefix_monitor.fork()
        self.monitor.update(kept)

    @property
    def whole(self) -> str:
        """The window and the generated text: what monitor offsets count into."""
        return self.window + self.text

    def generated(self, window_offset: int) -> int:
        """A monitor offset (into window + generated) as an offset into the generated text."""
        return window_offset - len(self.window)

    def speculative(self, window_offset: int, insert: str = "") -> tuple[str, int]:
        """The document with the generated text up to the offset (and ``insert``) in place."""
        head = self.before[: len(self.before) - len(self.window)]
        written = self.whole[:window_offset] + insert
        return head + written + self.after, len(head) + len(written)

    def line_context(self) -> str:
        """The current line up to the cursor and what was generated: a trie's context."""
        whole = self.whole
        return whole[whole.rfind("\n") + 1 :]

    def current_partial(self, point: TriggerPoint) -> bool:
        """Whether the identifier ``point`` began is still the one being written."""
        now = self.monitor.point()
        return now.trigger is Trigger.INSIDE_IDENTIFIER and now.partial_start == point.partial_start
