"""What a completion job takes and how it can fail: plain data, no torch import.

The server imports these at startup; torch and transformers load on the model
worker, so ``initialize`` is answered before they are imported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from steerlsp.models.steering.ranking.relevance import RankWeights
from steerlsp.prompts.context import ChatContext

_WEIGHTS = RankWeights()  # the ranking's defaults live there, tuned (bench/tune_rank.py)


@dataclass(frozen=True)
class Sampling:
    """Greedy when ``temperature`` is 0."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")


@dataclass(frozen=True)
class CompletionRequest:
    prefix: str  # document text before the cursor (code points)
    suffix: str  # document text after the cursor
    path: str | None = None  # workspace-relative path for the prompt header
    # The whole document around the cursor, for the language server's view of
    # the speculative text; None: ``prefix`` and ``suffix`` are the whole document.
    document: Document | None = None
    context: ChatContext = field(default_factory=ChatContext)  # above the current function
    # What the user has typed at the cursor since the request was made, read as the
    # decoding goes (the completion menu's generations outlive keystrokes); a generation
    # that stops agreeing with it is abandoned. None: the typing is not followed.
    typed: Callable[[], str] | None = None


@dataclass(frozen=True)
class Document:
    """A snapshot of a document's lines (with terminators) and the cursor, in code points.

    Taking it costs a list copy on the event loop; the text is joined on the worker.
    """

    lines: tuple[str, ...]
    line: int
    column: int  # code points into ``lines[line]``

    def split(self) -> tuple[str, str]:
        """The whole text before the cursor and after it."""
        current = self.lines[self.line] if self.line < len(self.lines) else ""
        before = "".join(self.lines[: self.line]) + current[: self.column]
        after = current[self.column :] + "".join(self.lines[self.line + 1 :])
        return before, after


@dataclass(frozen=True)
class SteeringOptions:
    """How the decode loop consults the language server (see ``models/steering/steerer.py``).

    Defaults, and why: an answer that is due is waited for, not raced past, so
    that a document version and position get the same completion whatever the
    machine's load (issue 23 found 4 of 24 positions writing another name from
    run to run when the loop gave each answer 250 ms). ``budget`` caps all that
    waiting in one generated line (4 s: a cold Jedi's first question on a library
    takes 0.6-0.8 s on 2 quiet cores, two or three times that on busy ones, and on
    a slow 2-core machine pandas' ``DataFrame`` list, its documentation and its
    definitions took 2.2-2.8 s together), and
    ``max_queries`` its questions; ``budget_total`` and ``max_queries_total`` cap
    a whole completion, so that every line of a body is steered and none waits
    long. ``query_timeout`` is one question's own limit (3 s), counted from when its
    answer is due (a question asked before the prefill has the prefill); at 2 s the
    same ``DataFrame`` list answered in one run and not in the next on that machine
    (``bench/next_identifier.py`` twice). A tuned pylsp
    answers at ``obj.`` on a small class in 36 ms and on pydantic's ``BaseModel``
    in 180-260 ms, and a question overlaps the forward pass (or prefill) it was
    started before. Six queries cover a line's attribute accesses and calls (the
    task suite's 8-line solutions have a median of 3 in all); two interrupts
    (each a re-prefill of one line, ~85 ms) keep the worst case within about
    four decode steps. Past a budget the rest (of the line, or of the
    completion) is decoded unsteered.
    """

    enabled: bool = True
    walk: bool = True  # steer the identifier after ``.`` along the completion items
    rank: bool = True  # rank the items (model log-probability, intent, metadata)
    mode: str = "auto"  # "boost", "mask", or "auto": mask only for statically known receivers
    follow: int = 1  # how many of the best-ranked items the walk boosts
    delta: float = 7.0
    escape_margin: float = 5.0
    deprecation: bool = True  # demote deprecated items (read from their source)
    # Also import their module in a sandboxed child of the project's interpreter to find
    # what only running code shows (models/deprecation/runtime.py). Opt-in: the server
    # enables it only in a trusted workspace (``python.trustWorkspace``).
    runtime_deprecation: bool = False
    # Interrupt with signature and deprecation hints. Off by default: the embedded 270M
    # model does not read them, and they cost a re-prefill each. On the task suite
    # (bench/run_tasks.py --configs baseline,steered,no-names,no-hints) the default
    # steering with hints was 90% static-valid at 1.18x the unsteered median latency,
    # without them 93% at 1.13x, tests passed 6% either way.
    hints: bool = False
    # At each statement's end, a name it reads that nothing defines is written again
    # (``models/steering/stages/scope.py``): up to ``max_rewinds`` times per completion.
    names: bool = True
    # A keyword argument the callee does not take (no ``**kwargs``) is written again
    # along the ones it does (``models/steering/stages/keywords.py``), also up to
    # ``max_rewinds`` times per completion.
    keywords: bool = True
    # No token closes a bracket that is not open (``models/steering/stages/brackets.py``).
    brackets: bool = True
    # No token glues a word to a string just closed, nor ends an f-string from inside its
    # field (``models/steering/stages/strings.py``).
    strings: bool = True
    # Where an operand starts, a name the document imports and does not use yet gets a
    # bonus (``models/steering/stages/imports.py``).
    imports: bool = True
    max_rewinds: int = 2
    follow_kind: bool = True  # ``(`` after a method, none after an attribute
    query_timeout: float = 3.0  # seconds: one question's own limit, from when it is due
    max_queries: int = 6  # per generated line
    max_interrupts: int = 2
    budget: float = 4.0  # seconds of waiting for due answers per generated line
    # The caps over a whole completion: a body's later lines are steered too, within them.
    max_queries_total: int = 24
    budget_total: float = 8.0
    rank_logprob: float = _WEIGHTS.logprob
    rank_relevance: float = _WEIGHTS.relevance
    rank_deprecated: float = _WEIGHTS.deprecated
    rank_private: float = _WEIGHTS.private
    rank_dunder: float = _WEIGHTS.dunder
    rank_expected_type: float = _WEIGHTS.expected_type
    rank_usage: float = _WEIGHTS.usage

    def rank_weights(self) -> RankWeights:
        return RankWeights(
            logprob=self.rank_logprob,
            relevance=self.rank_relevance,
            deprecated=self.rank_deprecated,
            private=self.rank_private,
            dunder=self.rank_dunder,
            expected_type=self.rank_expected_type,
            usage=self.rank_usage,
        )

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "boost", "mask"):
            raise ValueError(f"steering mode must be auto, boost or mask, got {self.mode!r}")


OFF = SteeringOptions(enabled=False)


@dataclass(frozen=True)
class CompletionOptions:
    max_new_tokens: int = 48
    max_lines: int = 8
    prefix_tokens: int = 1024
    suffix_tokens: int = 256
    sampling: Sampling = Sampling()
    steering: SteeringOptions = OFF
    context_tokens: int = 256  # the most the ChatLSP context block may take
    # How many distinct completions to return (the first, then sampled ones), and the
    # seconds the sampled ones may take in all after the first (see models/decoding/completer.py).
    alternatives: int = 1
    alternatives_budget: float = 1.5
    # Greedy decoding verifies tokens drafted from the prompt and the text after the
    # cursor several at a time (``models/decoding/lookup.py`` Lookup): the same output, sooner.
    lookup: bool = True
    # The most comment lines in a row a multi-line completion may write
    # (``models/steering/processors/comments.py`` CommentRuns); None: any number.
    comment_lines: int | None = 1

    def __post_init__(self) -> None:
        if self.alternatives < 1:
            raise ValueError(f"alternatives must be >= 1, got {self.alternatives!r}")
        if self.alternatives_budget < 0:
            raise ValueError(f"alternatives_budget must be >= 0, got {self.alternatives_budget!r}")
        if self.comment_lines is not None and self.comment_lines < 0:
            raise ValueError(f"comment_lines must be >= 0 or None, got {self.comment_lines!r}")


class ModelOutOfMemory(Exception):
    """Generation ran out of memory; the cache was dropped and the next request may work."""
