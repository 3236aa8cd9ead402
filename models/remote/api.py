"""The OpenAI completions API as steering uses it: which model, what the server can
do (probed once), one-shot completions with log-probabilities, and streams.

Only ``/v1/models`` and ``/v1/completions`` are used, the two that llama.cpp's
servers (``llama-server``, llama-cpp-python's ``llama_cpp.server``) and vLLM all
serve. What differs between them is probed at start, never assumed:

- ``top_logprobs``: the ``logprobs: k`` of a completion (the k likeliest tokens at
  each step), which steering ranks the first token of a name by;
- a constraint: a GBNF ``grammar`` per request (llama.cpp) or ``guided_choice``
  (vLLM), which lets the model choose among names that its first token cannot
  tell apart, or among all the valid ones when there is nothing to rank by.

Whole names are not scored through ``echo``: llama.cpp's servers give the prompt's
log-probabilities only when started with ``--logits_all``, which computes the whole
vocabulary's logits for every prompt token (Gemma's 262,144 rows made a 1,000-token
prefill several times slower on 2 cores).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from steerlsp.models.remote.client import Client, Deadline, RemoteError, RemoteRejected

# Log-probabilities asked per step: the most both engines give by default (vLLM's
# max_logprobs is 20).
TOP_K = 20

# The k likeliest read from llama.cpp's sampler after its top-k (``post_sampling_probs``),
# where the server takes it: it then sorts the k instead of the whole vocabulary, which
# for Gemma's 262,144 tokens cost 27 ms a step on 2 cores, as much as evaluating the
# token. With temperature 1 and no other filter they are the softmax of the k likeliest
# logits: every log-probability is raised by the same amount (minus the log of the k's
# total probability), so no ranking among them changes. The one token it samples is not
# read.
SAMPLER_TOP = {
    "post_sampling_probs": True,
    "top_k": TOP_K,
    "top_p": 1.0,
    "min_p": 0.0,
    "typical_p": 1.0,
    "temperature": 1.0,
}


@dataclass(frozen=True)
class Capabilities:
    """What the server was found to support (``steerlsp/status`` shows it)."""

    top_logprobs: bool = False
    constraint: str = ""  # "grammar" (llama.cpp), "guided_choice" (vLLM), or "" for none
    # Whether a request with ``logprobs`` reuses the server's prefix cache. llama-cpp-python's
    # server evaluates the whole prompt again for one (1.8 s for a 700-token prompt on 2
    # cores, against 0.06 s without): there, steering asks the model to choose under a
    # constraint instead.
    logprobs_cached: bool = False
    # Whether the k likeliest come from the sampler (:data:`SAMPLER_TOP`), at no extra cost.
    sampler_top: bool = False

    @property
    def ranks(self) -> bool:
        """Steering ranks names on the server's log-probabilities (else, where it can,
        the model chooses among them under a constraint)."""
        return self.top_logprobs and (self.logprobs_cached or not self.constraint)

    def stages(self) -> dict[str, str]:
        """Steering's stages as they run against this server: how, or why not."""
        if self.ranks:
            members = "ranked: the first token's log-probabilities, relevance, expected type"
            if self.sampler_top:
                members += " (log-probabilities of the sampler's top-k)"
            if self.constraint:
                members += f"; names sharing a first token chosen by the model ({self.constraint})"
        elif self.constraint:
            members = (
                f"the model's choice among the listed names ({self.constraint}); not ranked: "
                + (
                    "log-probabilities cost a whole prompt evaluation on this server"
                    if self.top_logprobs
                    else "the server gives no log-probabilities"
                )
            )
        else:
            members = "off: the server gives neither log-probabilities nor constraints"
        off = "in-process only, not yet through the API"
        keywords = (
            "audited after each segment against the signature: a keyword the callee does "
            "not take, an argument past its positional ones, a missing required one is "
            "written again as "
            + (
                f"the model's choice among those it does ({self.constraint})"
                if self.constraint
                else "the first it takes"
            )
        )
        names = (
            "audited at each statement's end; a name nothing defines is written again as "
            f"the model's choice among the names in scope ({self.constraint})"
            if self.constraint
            else "off: written again only under a constraint, which this server lacks"
        )
        return {
            "members": members,
            "keywords": keywords,
            "names": names,
            "signatures": off,
            "repetition": "the stop rule (a third repeat); the repeated-line stage in-process only",
        }


@dataclass(frozen=True)
class Choice:
    """One completion's text, why it ended, and its tokens' log-probabilities where asked."""

    text: str
    finish: str  # "stop", "length", or "" when the server did not say
    tokens: tuple[str, ...] = ()
    token_logprobs: tuple[float, ...] = ()  # nan where the server gives none (the first)
    top: tuple[dict[str, float], ...] = ()  # the k likeliest tokens at each step
    offsets: tuple[int, ...] = ()  # each token's start in prompt + text (echo) or text
    evaluated: int | None = None  # prompt tokens the server evaluated, where it says
    sampled: bool = False  # whether the k likeliest came from the sampler (``top_probs``)


@dataclass
class Api:
    """One server, one model: the calls steering makes."""

    client: Client
    model: str
    capabilities: Capabilities = field(default_factory=Capabilities)

    def complete(
        self,
        prompt: str,
        deadline: Deadline,
        *,
        max_tokens: int,
        logprobs: int = 0,
        sampling: dict[str, Any] | None = None,
        choices: tuple[str, ...] = (),
        then_end: bool = False,
    ) -> Choice:
        """One completion, whole. ``choices``: the text must be one of them (the server's
        constraint; only where :attr:`Capabilities.constraint` is set), followed by a
        character that ends an identifier with ``then_end``. With ``logprobs``, the k
        likeliest come from the sampler where :attr:`Capabilities.sampler_top` says so
        (then the text is a sample: only the log-probabilities are to be read)."""
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            **(sampling or {"temperature": 0.0}),
        }
        if logprobs:
            body["logprobs"] = logprobs
            if self.capabilities.sampler_top:
                body.update(SAMPLER_TOP)
        if choices:
            body.update(constrained(self.capabilities.constraint, choices, then_end=then_end))
        answer = self.client.post("/completions", body, deadline)
        return choice_of(answer)

    def stream(
        self,
        prompt: str,
        deadline: Deadline,
        *,
        max_tokens: int,
        sampling: dict[str, Any] | None = None,
    ) -> Iterator[tuple[str, str]]:
        """(text piece, finish reason or "") as the server streams them."""
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            **(sampling or {"temperature": 0.0}),
        }
        for event in self.client.stream("/completions", body, deadline):
            first = _first_choice(event)
            yield str(first.get("text") or ""), str(first.get("finish_reason") or "")


def served_models(client: Client, deadline: Deadline) -> list[str]:
    """The ids ``/models`` lists."""
    answer = client.get("/models", deadline)
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise RemoteRejected(f"{client.endpoint.shown}/models did not list models", 200)
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


def connect(client: Client, wanted: str, deadline: Deadline) -> Api:
    """The API for ``wanted`` (or the only model served, when ""), its capabilities
    probed. Raises :class:`RemoteError` saying what to fix."""
    served = served_models(client, deadline)
    if wanted and wanted not in served:
        listed = ", ".join(served[:8]) or "none"
        raise RemoteRejected(
            f"{client.endpoint.shown} does not serve the model {wanted!r} "
            f"(model.remoteModel); it serves: {listed}",
            404,
        )
    if not wanted:
        if not served:
            raise RemoteRejected(f"{client.endpoint.shown} serves no model", 404)
        wanted = served[0]
    api = Api(client, wanted)
    api.capabilities = probe(api, deadline)
    return api


# A few tokens of code: the probes' prompt.
_PROBE = "def add(a, b):\n    return a +"


def probe(api: Api, deadline: Deadline) -> Capabilities:
    """Ask the server what it supports, with a few short requests."""

    def has_top(from_sampler: bool) -> bool:
        answer = api.complete(_PROBE, deadline, max_tokens=1, logprobs=5)
        return _has_top(answer) and (answer.sampled or not from_sampler)

    # A server that takes the sampler's fields without giving its top-k (llama-cpp-python)
    # is asked as before: its answer would be the same, the fields' claim false.
    api.capabilities = Capabilities(sampler_top=True)
    sampler = _supports(lambda: has_top(True))
    api.capabilities = Capabilities()
    top = sampler or _supports(lambda: has_top(False))
    constraint = ""
    for kind in ("grammar", "guided_choice"):
        api.capabilities = Capabilities(top, kind, sampler_top=sampler)
        if _supports(
            lambda: (
                api.complete(_PROBE, deadline, max_tokens=4, choices=(" zebra",)).text == " zebra"
            )
        ):
            constraint = kind
            break
    api.capabilities = Capabilities(top, constraint, sampler_top=sampler)
    cached = top and _logprobs_cached(api, deadline)
    return Capabilities(top, constraint, cached, sampler)


# A prompt long enough that evaluating it again shows (about 300 tokens).
_LONG_PROBE = "".join(f"def scale_{i}(value):\n    return value * {i}\n\n\n" for i in range(24))


def _logprobs_cached(api: Api, deadline: Deadline) -> bool:
    """Whether a ``logprobs`` request on a prompt the server has just seen is served by
    its prefix cache. Where the answer says how many prompt tokens were evaluated
    (llama.cpp's ``timings.prompt_n``), that decides, whatever the machine's load;
    elsewhere the request is timed against a plain one (once: the probe shares the
    first completion's deadline)."""
    api.complete(_LONG_PROBE, deadline, max_tokens=1)  # now cached
    started = time.perf_counter()
    api.complete(_LONG_PROBE, deadline, max_tokens=1)
    plain = time.perf_counter() - started
    started = time.perf_counter()
    answer = api.complete(_LONG_PROBE, deadline, max_tokens=1, logprobs=5)
    with_logprobs = time.perf_counter() - started
    if answer.evaluated is not None:
        return answer.evaluated <= _CACHED_AT_MOST
    return with_logprobs < 3 * plain + 0.1


# A prompt the cache served leaves a token or so to evaluate (of about 300).
_CACHED_AT_MOST = 32


def _prompt_evaluated(answer: Any) -> int | None:
    """How many prompt tokens the server evaluated for ``answer``, where it says."""
    timings = answer.get("timings") if isinstance(answer, dict) else None
    evaluated = timings.get("prompt_n") if isinstance(timings, dict) else None
    return evaluated if isinstance(evaluated, int) and not isinstance(evaluated, bool) else None


def constrained(kind: str, choices: tuple[str, ...], *, then_end: bool = False) -> dict[str, Any]:
    """The request fields that make the completion one of ``choices``; with ``then_end``,
    one of them followed by a character that cannot continue an identifier, so that a
    name that begins another (``cache``, ``cached_property``) can be chosen where the
    model would end it."""
    if kind == "grammar":
        names = " | ".join(_gbnf_string(c) for c in choices)
        return {"grammar": f"root ::= ({names}) [^a-zA-Z0-9_]" if then_end else f"root ::= {names}"}
    if kind == "guided_choice":
        if then_end:
            names = "|".join(re.escape(c) for c in choices)
            return {"guided_regex": f"({names})[^A-Za-z0-9_]"}
        return {"guided_choice": list(choices)}
    return {}


def choice_of(answer: Any) -> Choice:
    """The first choice of a completions answer. Its ``logprobs`` come in the legacy
    completions shape (``tokens``, ``token_logprobs``, ``top_logprobs`` as one mapping a
    step: llama-cpp-python, vLLM) or in the chat shape (``content``, a list of steps each
    with its ``top_logprobs`` list: llama.cpp's ``llama-server``; ``top_probs``, each a
    ``prob``, from its sampler)."""
    first = _first_choice(answer)
    logprobs = first.get("logprobs") or {}
    if isinstance(logprobs.get("content"), list):
        steps = [s for s in logprobs["content"] if isinstance(s, dict)]
        tokens = tuple(str(s.get("token", "")) for s in steps)
        values = tuple(_number(s.get("logprob")) for s in steps)
        top = tuple(_step_top(s) for s in steps)
        offsets: tuple[int, ...] = ()
        sampled = any("top_probs" in s for s in steps)
    else:
        tokens = tuple(str(t) for t in logprobs.get("tokens") or ())
        values = tuple(_number(v) for v in logprobs.get("token_logprobs") or ())
        top = tuple(
            {str(k): _number(v) for k, v in (entry or {}).items()}
            for entry in logprobs.get("top_logprobs") or ()
        )
        offsets = tuple(int(o) for o in logprobs.get("text_offset") or ())
        sampled = False
    return Choice(
        str(first.get("text") or ""),
        str(first.get("finish_reason") or ""),
        tokens,
        values,
        top,
        offsets,
        _prompt_evaluated(answer),
        sampled,
    )


def _step_top(step: dict[str, Any]) -> dict[str, float]:
    """One step's k likeliest tokens and their log-probabilities (from ``prob`` where
    the sampler gave them; a token it gave no probability is left out)."""
    top: dict[str, float] = {}
    for entry in step.get("top_logprobs") or step.get("top_probs") or ():
        if not isinstance(entry, dict):
            continue
        if "logprob" in entry:
            top[str(entry.get("token", ""))] = _number(entry["logprob"])
        elif isinstance(entry.get("prob"), int | float) and entry["prob"] > 0:
            top[str(entry.get("token", ""))] = math.log(entry["prob"])
    return top


def _first_choice(answer: Any) -> dict[str, Any]:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise RemoteRejected("the server's answer has no choices", 200)
    return choices[0]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def _has_top(choice: Choice) -> bool:
    return bool(choice.top) and len(choice.top[0]) >= 2


def _supports(check: Any) -> bool:
    try:
        return bool(check())
    except RemoteRejected:
        return False
    except RemoteError:
        raise


def _gbnf_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
