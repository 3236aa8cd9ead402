"""The explain store: the last completion of each document and what steered it, for
``steerlsp/explain``. Bounded; a closed document's entry is dropped."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any

from steerlsp.server.completion.replies import Explained, printable

# Documents whose last completion ``steerlsp/explain`` can still describe.
EXPLAINED_DOCUMENTS = 64


class ExplainStore:
    """The last completion per document, the least recently completed dropped first."""

    def __init__(self, capacity: int = EXPLAINED_DOCUMENTS) -> None:
        self.capacity = capacity
        self._explained: OrderedDict[str, Explained] = OrderedDict()

    def remember(
        self,
        uri: str,
        version: int | None,
        text: str,
        trace: dict[str, Any] | None,
        **more: Any,
    ) -> None:
        """Keep ``text`` as the last completion of ``uri`` (``trace`` None: unsteered)."""
        self._explained[uri] = Explained(uri, version, text, trace is not None, trace, **more)
        self._explained.move_to_end(uri)
        while len(self._explained) > self.capacity:
            self._explained.popitem(last=False)

    def repaired(self, uri: str, text: str, rounds: int) -> None:
        """The error rounds replaced the last completion of ``uri`` with ``text``."""
        explained = self._explained.get(uri)
        if explained is not None and rounds:
            self._explained[uri] = dataclasses.replace(explained, completion=text, rounds=rounds)

    def forget(self, uri: str) -> None:
        """``didClose``: its explanation is no longer asked for."""
        self._explained.pop(uri, None)

    def explain(self, uri: str) -> dict[str, Any]:
        """``steerlsp/explain``: the last completion of ``uri`` and what steered it."""
        explained = self._explained.get(uri)
        if explained is None:
            return {"uri": printable(uri), "completion": None, "steered": False, "trace": None}
        return explained.as_dict()
