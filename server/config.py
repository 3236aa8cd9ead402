"""steerlsp's settings: one tree of typed dataclasses, validated once at the boundary.

Sources, later ones winning: defaults, CLI flags, ``initializationOptions``
(either ``{"steerlsp": {...}}`` or the object itself) and
``workspace/didChangeConfiguration`` (section ``steerlsp``). Keys are
camelCase on the wire. An invalid value is reported and replaced by the value
it would have had, never raised.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

DEVICES = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


@dataclass(frozen=True)
class ModelSettings:
    name: str = "default"  # "default" (embedded Gemma 3 270M), a hub id, a directory or a .gguf
    device: str = field(default="auto", metadata={"pattern": DEVICES})
    dtype: str = field(
        default="auto", metadata={"choices": ("auto", "float32", "bfloat16", "float16")}
    )
    allow_downloads: bool = False
    trust_remote_code: bool = False
    fim_template: str = "auto"  # "auto", "none", or a template name from prompts/templates.toml
    low_precision_head: bool = True  # bf16 LM head on CPU


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
    fallback: bool = True  # an AI item in textDocument/completion for clients without inline
    fallback_wait_ms: int = field(default=1500, metadata={"min": 0, "max": 30000})


@dataclass(frozen=True)
class PythonSettings:
    environment: str = ""  # a venv or interpreter for imports; "" = auto-detect
    trust_workspace: bool = False  # allow using (so executing) a .venv found in the workspace


@dataclass(frozen=True)
class Settings:
    model: ModelSettings = ModelSettings()
    completion: CompletionSettings = CompletionSettings()
    python: PythonSettings = PythonSettings()


def camel(name: str) -> str:
    """``max_new_tokens`` -> ``maxNewTokens``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def section(raw: Any) -> Any:
    """The steerlsp part of initializationOptions or a didChangeConfiguration payload."""
    if isinstance(raw, dict) and isinstance(raw.get("settings"), dict):
        raw = raw["settings"]
    if isinstance(raw, dict) and "steerlsp" in raw:
        return raw["steerlsp"]
    return raw


def merge(base: Settings, raw: Any) -> tuple[Settings, list[str]]:
    """``base`` updated with the camelCase object ``raw``; also the problems found."""
    problems: list[str] = []
    if raw is None:
        return base, problems
    if not isinstance(raw, dict):
        return base, [f"steerlsp settings must be an object, got {type(raw).__name__}"]
    merged = _merge_dataclass(base, raw, "steerlsp", problems)
    return merged, problems


def _merge_dataclass(base: Any, raw: dict[str, Any], path: str, problems: list[str]) -> Any:
    changes: dict[str, Any] = {}
    known = {camel(f.name): f for f in dataclasses.fields(base)}
    for key, value in raw.items():
        spec = known.get(key)
        where = f"{path}.{key}"
        if spec is None:
            problems.append(f"unknown setting {where}")
            continue
        current = getattr(base, spec.name)
        if dataclasses.is_dataclass(current):
            if isinstance(value, dict):
                changes[spec.name] = _merge_dataclass(current, value, where, problems)
            else:
                problems.append(f"{where} must be an object, got {value!r}")
            continue
        checked = _check(value, current, spec.metadata)
        if isinstance(checked, _Invalid):
            problems.append(f"{where}: {checked.reason}")
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
            return _Invalid(f"expected true or false, got {value!r}")
    elif kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _Invalid(f"expected a number, got {value!r}")
        if kind is int and not float(value).is_integer():
            return _Invalid(f"expected a whole number, got {value!r}")
        value = kind(value)
        if ("min" in meta and value < meta["min"]) or ("max" in meta and value > meta["max"]):
            return _Invalid(f"{value!r} is outside {meta.get('min')}..{meta.get('max')}")
    elif kind is str:
        if not isinstance(value, str) or (not value and current):
            return _Invalid(f"expected a non-empty string, got {value!r}")
        if "choices" in meta and value not in meta["choices"]:
            return _Invalid(f"{value!r} is not one of {', '.join(meta['choices'])}")
        if "pattern" in meta and not meta["pattern"].match(value):
            return _Invalid(f"{value!r} is not a valid value")
    return value
