"""steerlsp's settings: one tree of typed dataclasses, validated once at the boundary.

Sources, later ones winning: defaults, CLI flags, ``initializationOptions``
(either ``{"steerlsp": {...}}`` or the object itself) and
``workspace/didChangeConfiguration`` (section ``steerlsp``). Keys are
camelCase on the wire. An invalid value is reported, saying which value is
kept instead (the one it would have had), and never raised.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from steerlsp.models.options import CompletionOptions, Sampling, SteeringOptions
from steerlsp.prompts.fim import load_templates

DEVICES = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
# model.endpoint: "" (unset) or an http(s) URL without credentials or spaces.
ENDPOINTS = re.compile(r"^(|https?://[^\s/@]+(/\S*)?)$")
# model.apiKeyEnv: "" or an environment variable's name.
ENV_NAMES = re.compile(r"^(|[A-Za-z_][A-Za-z0-9_]*)$")
# "auto" detects the format from the tokenizer; "none" means prefix-only prompts.
FIM_TEMPLATES = ("auto", "none", *load_templates())
# Values quoted in a problem are cut to this many characters.
SHOWN_CHARS = 40


@dataclass(frozen=True)
class ModelSettings:
    name: str = "default"  # "default" (embedded Gemma 3 270M), a hub id, a directory or a .gguf
    device: str = field(default="auto", metadata={"pattern": DEVICES})
    dtype: str = field(
        default="auto", metadata={"choices": ("auto", "float32", "bfloat16", "float16")}
    )
    allow_downloads: bool = False
    trust_remote_code: bool = False
    fim_template: str = field(default="auto", metadata={"choices": FIM_TEMPLATES})
    low_precision_head: bool = True  # a low-precision LM head on CPU (false: fp32)
    head_precision: str = field(default="int8", metadata={"choices": ("int8", "bf16")})
    # The decoder's linear layers on CPU: bf16 where the CPU has native bf16 ("auto").
    body_precision: str = field(default="auto", metadata={"choices": ("auto", "bf16", "fp32")})
    # Where the weights run: "inprocess" (this process, as above) or "openai": a shared
    # server's OpenAI-compatible completions API (llama.cpp's server, vLLM) at
    # ``endpoint``, e.g. http://gpu-box:8000/v1, serving ``remote_model`` ("": the one it
    # serves). The key is read from the environment variable ``api_key_env`` names,
    # never from settings. ``timeout_ms`` bounds one completion's requests together;
    # ``fallback``: complete in-process while the server cannot be reached.
    backend: str = field(default="inprocess", metadata={"choices": ("inprocess", "openai")})
    endpoint: str = field(default="", metadata={"pattern": ENDPOINTS})
    api_key_env: str = field(default="", metadata={"pattern": ENV_NAMES})
    remote_model: str = ""
    timeout_ms: int = field(default=10_000, metadata={"min": 200, "max": 120_000})
    fallback: bool = False


@dataclass(frozen=True)
class CompletionSettings:
    enabled: bool = True
    max_new_tokens: int = field(default=48, metadata={"min": 1, "max": 1024})
    max_lines: int = field(default=8, metadata={"min": 1, "max": 200})
    temperature: float = field(default=0.0, metadata={"min": 0.0, "max": 2.0})
    top_p: float = field(default=0.95, metadata={"min": 0.01, "max": 1.0})
    prefix_tokens: int = field(default=1024, metadata={"min": 16, "max": 32768})
    suffix_tokens: int = field(default=256, metadata={"min": 0, "max": 32768})
    debounce_ms: int = field(default=75, metadata={"min": 0, "max": 5000})
    # Distinct items an Invoked inline completion returns (the greedy one, then sampled
    # ones the editor cycles through), and the time the sampled ones may take after it.
    alternatives: int = field(default=3, metadata={"min": 1, "max": 8})
    alternatives_budget_ms: int = field(default=1500, metadata={"min": 0, "max": 10000})
    prompt_lookup: bool = True  # greedy decoding verifies tokens drafted from the prompt
    # The most comment lines in a row a multi-line completion may write; >= maxLines: any.
    comment_lines: int = field(default=1, metadata={"min": 0, "max": 200})
    fallback: bool = True  # an AI item in textDocument/completion for clients without inline
    # How long a menu request may wait for its item. 0: never; the item comes with a later
    # request (server/completion/menu.py), and pylsp's menu is never slowed.
    fallback_wait_ms: int = field(default=0, metadata={"min": 0, "max": 30000})


@dataclass(frozen=True)
class PythonSettings:
    environment: str = ""  # a venv or interpreter for imports; "" = auto-detect
    trust_workspace: bool = False  # allow using (so executing) a .venv found in the workspace


@dataclass(frozen=True)
class UpstreamSettings:
    """Bounds on the upstream language servers (the editor's pylsp and the private one)."""

    # The most memory each may use (MiB; 0: no limit). The default pylsp gets it as its
    # address-space limit; a process past it is restarted like a crashed one.
    memory_limit_mb: int = field(default=2048, metadata={"min": 0, "max": 1 << 20})
    # Larger documents reach the upstream as an empty text (steerlsp keeps theirs), and
    # no larger file is read by Jedi, parso or pylsp's config readers (at their start).
    max_document_bytes: int = field(default=5 * 1024 * 1024, metadata={"min": 1024, "max": 1 << 30})

    def memory_limit(self) -> int | None:
        """The limit in MiB, or None for none."""
        return self.memory_limit_mb or None


# The decode loop's own defaults (models/options.py), so that the two never drift.
_STEER = SteeringOptions()


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


@dataclass(frozen=True)
class SteeringSettings:
    """How the language server steers the model (``SteeringOptions``; times in ms here)."""

    enabled: bool = True
    walk: bool = _STEER.walk
    rank: bool = _STEER.rank
    mode: str = field(default=_STEER.mode, metadata={"choices": ("auto", "boost", "mask")})
    follow: int = field(default=_STEER.follow, metadata={"min": 1, "max": 10})
    delta: float = field(default=_STEER.delta, metadata={"min": 0.1, "max": 50.0})
    escape_margin: float = field(default=_STEER.escape_margin, metadata={"min": 0.0, "max": 50.0})
    deprecation: bool = _STEER.deprecation
    runtime_deprecation: bool = _STEER.runtime_deprecation  # also needs python.trustWorkspace
    hints: bool = _STEER.hints
    names: bool = _STEER.names
    keywords: bool = _STEER.keywords
    brackets: bool = _STEER.brackets
    strings: bool = _STEER.strings
    imports: bool = _STEER.imports
    max_rewinds: int = field(default=_STEER.max_rewinds, metadata={"min": 0, "max": 8})
    follow_kind: bool = _STEER.follow_kind
    query_timeout_ms: int = field(
        default=_ms(_STEER.query_timeout), metadata={"min": 10, "max": 5000}
    )
    max_queries: int = field(default=_STEER.max_queries, metadata={"min": 0, "max": 64})
    max_interrupts: int = field(default=_STEER.max_interrupts, metadata={"min": 0, "max": 16})
    budget_ms: int = field(default=_ms(_STEER.budget), metadata={"min": 0, "max": 10000})
    max_queries_total: int = field(
        default=_STEER.max_queries_total, metadata={"min": 0, "max": 256}
    )
    budget_total_ms: int = field(
        default=_ms(_STEER.budget_total), metadata={"min": 0, "max": 60000}
    )
    rank_logprob: float = field(default=_STEER.rank_logprob, metadata={"min": 0.0, "max": 20.0})
    rank_relevance: float = field(default=_STEER.rank_relevance, metadata={"min": 0.0, "max": 50.0})
    rank_deprecated: float = field(
        default=_STEER.rank_deprecated, metadata={"min": -100.0, "max": 0.0}
    )
    rank_private: float = field(default=_STEER.rank_private, metadata={"min": -100.0, "max": 0.0})
    rank_dunder: float = field(default=_STEER.rank_dunder, metadata={"min": -100.0, "max": 0.0})
    rank_expected_type: float = field(
        default=_STEER.rank_expected_type, metadata={"min": 0.0, "max": 50.0}
    )
    rank_usage: float = field(default=_STEER.rank_usage, metadata={"min": 0.0, "max": 50.0})

    def options(self) -> SteeringOptions:
        """The decode loop's options: the same names, and milliseconds become seconds."""
        same = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(SteeringOptions)
            if hasattr(self, f.name)
        }
        return SteeringOptions(
            **same,
            query_timeout=self.query_timeout_ms / 1000,
            budget=self.budget_ms / 1000,
            budget_total=self.budget_total_ms / 1000,
        )


@dataclass(frozen=True)
class ChatLspSettings:
    """The ChatLSP methods, and their context in steerlsp's own completions."""

    enabled: bool = True
    timeout_ms: int = field(default=5000, metadata={"min": 50, "max": 60000})
    # What of it goes into steerlsp's own completion prompts, as a comment block above
    # the current function: "none", "types" (expected type and relevant types) or
    # "headers" (those and the relevant headers). Off by default: with the embedded
    # 270M base model the block lowered static validity on the task suite (83% with
    # none, 79% with types, 76% with headers; tests passed 6%, 5%, 5%; bench/run_tasks.py
    # --configs chat-none,chat-types,chat-headers,chat-repair). A larger model may use it.
    prompt_context: str = field(default="none", metadata={"choices": ("none", "types", "headers")})
    context_tokens: int = field(default=256, metadata={"min": 0, "max": 4096})
    # Error rounds in inline completions. Off by default: each round is a whole second
    # generation, which doubles a completion's latency on a CPU; llmCompletionResolveErrors
    # (asked for explicitly) uses ``repair_rounds`` all the same.
    repair_inline: bool = False
    repair_rounds: int = field(default=2, metadata={"min": 0, "max": 5})
    # Jedi parses in steerlsp's own process: a 1 MB document took over 5 s and held the
    # event loop up to 0.7 s (the collector's passes over the tree); 512 KiB: 0.1 s.
    max_document_bytes: int = field(default=512 * 1024, metadata={"min": 1024, "max": 1 << 30})


@dataclass(frozen=True)
class Settings:
    model: ModelSettings = ModelSettings()
    completion: CompletionSettings = CompletionSettings()
    python: PythonSettings = PythonSettings()
    steering: SteeringSettings = SteeringSettings()
    chatlsp: ChatLspSettings = ChatLspSettings()
    upstream: UpstreamSettings = UpstreamSettings()

    def completion_options(self, alternatives: int = 1) -> CompletionOptions:
        """What one completion job is given: the completion, steering and ChatLSP
        settings, and how many completions it makes (the first and its alternatives)."""
        c = self.completion
        return CompletionOptions(
            max_new_tokens=c.max_new_tokens,
            max_lines=c.max_lines,
            prefix_tokens=c.prefix_tokens,
            suffix_tokens=c.suffix_tokens,
            sampling=Sampling(temperature=c.temperature, top_p=c.top_p),
            steering=self.steering.options(),
            context_tokens=self.chatlsp.context_tokens,
            alternatives=alternatives,
            alternatives_budget=c.alternatives_budget_ms / 1000,
            lookup=c.prompt_lookup,
            comment_lines=c.comment_lines if c.comment_lines < c.max_lines else None,
        )


def runtime_deprecation(settings: Settings) -> tuple[bool, str | None]:
    """Whether the runtime deprecation check runs, and, when it was asked for but does
    not, why. It imports project code, so it needs ``python.trustWorkspace`` as well as
    ``steering.runtimeDeprecation`` (and steering's deprecation reading on)."""
    steering = settings.steering
    if not (steering.enabled and steering.deprecation and steering.runtime_deprecation):
        return False, None
    if not settings.python.trust_workspace:
        return False, (
            "steering.runtimeDeprecation is off: it imports project code, "
            "so it needs python.trustWorkspace"
        )
    return True, None


def camel(name: str) -> str:
    """``max_new_tokens`` -> ``maxNewTokens``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def section(raw: Any) -> Any:
    """The steerlsp part of initializationOptions or a didChangeConfiguration payload.

    ``{"steerlsp": {...}}`` (optionally under ``settings``), or steerlsp's sections at
    the top (``{"model": ...}``): then only those are read, for an editor sends every
    server the same object (Eglot's ``(:pylsp ...)``, Helix's ``config``), and another
    server's section is none of steerlsp's business. None when there is no part for it.
    """
    if isinstance(raw, dict) and isinstance(raw.get("settings"), dict):
        raw = raw["settings"]
    if not isinstance(raw, dict):
        return raw
    if "steerlsp" in raw:
        return raw["steerlsp"]
    own = {camel(f.name) for f in dataclasses.fields(Settings)}
    ours = {key: value for key, value in raw.items() if key in own}
    return ours or None


def merge(base: Settings, raw: Any) -> tuple[Settings, list[str]]:
    """``base`` updated with the camelCase object ``raw``; also the problems found.

    Each problem names the setting, the bad value (shortened, see ``shown``)
    and the value kept instead, e.g. ``steerlsp.completion.maxNewTokens: 1e+50
    is outside 1..1024; keeping 48``.
    """
    problems: list[str] = []
    if raw is None:
        return base, problems
    if not isinstance(raw, dict):
        return base, [
            f"steerlsp settings must be an object, got {shown(raw)}; keeping the current settings"
        ]
    merged = _merge_dataclass(base, raw, "steerlsp", problems)
    return merged, problems


def shown(value: Any) -> str:
    """``value`` as a problem quotes it: JSON spelling, huge numbers short, cut to 40 chars."""
    if isinstance(value, bool) or value is None:
        text = {True: "true", False: "false", None: "null"}[value]
    elif isinstance(value, (int, float)) and abs(value) >= 1e15:
        try:
            text = f"{float(value):.3g}"
        except OverflowError:
            text = "a number too large for a float"
    else:
        text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _merge_dataclass(base: Any, raw: dict[str, Any], path: str, problems: list[str]) -> Any:
    changes: dict[str, Any] = {}
    known = {camel(f.name): f for f in dataclasses.fields(base)}
    for key, value in raw.items():
        spec = known.get(key)
        where = f"{path}.{key}"
        if spec is None:
            problems.append(f"unknown setting {where} (ignored)")
            continue
        current = getattr(base, spec.name)
        if dataclasses.is_dataclass(current):
            if isinstance(value, dict):
                changes[spec.name] = _merge_dataclass(current, value, where, problems)
            else:
                problems.append(
                    f"{where} must be an object, got {shown(value)}; keeping the current {where}"
                )
            continue
        checked = _check(value, current, spec.metadata)
        if isinstance(checked, _Invalid):
            problems.append(f"{where}: {checked.reason}; keeping {shown(current)}")
        else:
            changes[spec.name] = checked
    return dataclasses.replace(base, **changes)


@dataclass(frozen=True)
class _Invalid:
    reason: str


def _check(value: Any, current: Any, meta: Any) -> Any:
    kind = type(current)
    if kind is bool:
        if not isinstance(value, bool):
            return _Invalid(f"expected true or false, got {shown(value)}")
    elif kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _Invalid(f"expected a number, got {shown(value)}")
        whole = isinstance(value, int) or value.is_integer()  # no float(): ints may be huge
        if kind is int and not whole:
            return _Invalid(f"expected a whole number, got {shown(value)}")
        low, high = meta.get("min"), meta.get("max")
        if (low is not None and value < low) or (high is not None and value > high):
            return _Invalid(f"{shown(value)} is outside {low}..{high}")
        value = kind(value)
    elif kind is str:
        if not isinstance(value, str) or (not value and current):
            return _Invalid(f"expected a non-empty string, got {shown(value)}")
        if "choices" in meta and value not in meta["choices"]:
            return _Invalid(f"{shown(value)} is not one of {', '.join(meta['choices'])}")
        if "pattern" in meta and not meta["pattern"].match(value):
            return _Invalid(f"{shown(value)} is not a valid value")
    return value
