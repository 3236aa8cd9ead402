"""The one interface through which the decode loop consults a language server.

At a trigger point (after ``.``, inside an identifier, inside a call) the
monitor asks an :class:`Analysis` about the speculative text: the document
with what the model has written so far. Its questions are answered with
small frozen values and never with LSP types, so that the decode side knows
nothing of the protocol:

- :meth:`Analysis.completions_at`: the names that may be written here;
- :meth:`Analysis.documented`: the documentation of a few of them (each a
  separate inference for the server, so asked only for the names that can win);
- :meth:`Analysis.signature_at`: the signature of the call being written;
- :meth:`Analysis.definition_source`: where the name at the offset is defined,
  so that its source can be read (deprecation, see ``models/deprecation/static.py``).

An ``Analysis`` is bound to one document (its path and environment) for one
completion; ``text`` is that document's whole speculative text and
``offset`` an index into it in code points (a Python ``str`` index, not
UTF-16 units). "No result" is an empty list or None.

Every call is synchronous, made from the decode thread, and bounded by
``timeout`` seconds: past it, :class:`AnalysisTimeout` is raised, and the
caller goes on unsteered and records it for the explain trace. The real
implementation (a private upstream instance, issue 10 section 1) will submit
the query to the event loop with ``asyncio.run_coroutine_threadsafe`` and
wait on the returned future with that budget, cancelling it on a timeout;
it must never be called on the event loop thread itself. The unit tests use a
scripted implementation with fixed answers (``tests/doubles/analysis.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# A query's default time budget, in seconds: about three pylsp completions at
# ``obj.`` (62-67 ms each, measured), well under two decode steps' worth of
# waiting once prefetching overlaps it with the forward pass.
DEFAULT_TIMEOUT = 0.15


class AnalysisError(Exception):
    """The analysis could not answer (its server is down or gave an error)."""


class AnalysisTimeout(AnalysisError):
    """No answer within the time budget; the step goes on unsteered."""


@dataclass(frozen=True)
class CompletionCandidate:
    """One name the language server offers at an offset."""

    name: str
    kind: str = ""  # LSP CompletionItemKind name, lower case: "method", "property", ...
    detail: str = ""  # e.g. the signature or type, as the server words it
    documentation: str = ""  # the first line of its documentation only
    deprecated: bool = False  # as the server tagged it; static detection is separate
    returns: str = ""  # the return annotation in its signature, for callables that have one


@dataclass(frozen=True)
class Signature:
    """The signature of the call being written at an offset."""

    label: str  # e.g. "model_dump(self, *, mode='python') -> dict[str, Any]"
    parameters: tuple[str, ...] = ()  # each parameter's label, in order
    active_parameter: int | None = None  # index into ``parameters``, if known
    documentation: str = ""  # first line


@dataclass(frozen=True)
class DefinitionSource:
    """Where a name is defined: a file to read its source from."""

    path: str  # absolute file system path
    line: int  # 0-based line of the definition


class Analysis(Protocol):
    """A language server's view of one document's speculative text (see module doc)."""

    def completions_at(
        self,
        text: str,
        offset: int,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        documented: bool = True,
    ) -> list[CompletionCandidate]:
        """The completion items at ``offset`` of ``text``, in the server's order; without
        ``documented``, items need not carry their documentation (faster)."""
        ...

    def documented(
        self,
        text: str,
        offset: int,
        items: Sequence[CompletionCandidate],
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> list[CompletionCandidate]:
        """``items`` of the completion at ``offset``, with their documentation (and what
        they return) where the server gives it: the second half of
        ``completions_at(..., documented=False)``, for the few items that need it."""
        ...

    def signature_at(
        self, text: str, offset: int, *, timeout: float = DEFAULT_TIMEOUT
    ) -> Signature | None:
        """The active signature of the call around ``offset``, or None outside a call."""
        ...

    def definition_source(
        self, text: str, offset: int, *, timeout: float = DEFAULT_TIMEOUT
    ) -> DefinitionSource | None:
        """Where the name at ``offset`` is defined, or None when unknown or not in a file."""
        ...
