"""Fill-in-the-middle prompt formats: loading, detection and lookup by name.

The formats live in the package data file ``templates.toml`` (its header documents
every field). Everything here is pure apart from reading that file once.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

# SentencePiece marks a word start with U+2581; CodeLlama's vocabulary spells its FIM
# markers that way ("▁<PRE>"), so a token also counts as present in that spelling.
WORD_START = "\u2581"
ORDERS = frozenset({"psm"})
_REQUIRED = (
    "order",
    "prefix_marker",
    "suffix_marker",
    "middle_marker",
    "detect_tokens",
    "stop_tokens",
)
_OPTIONAL = ("file_header",)


@dataclass(frozen=True)
class FimTemplate:
    """One FIM prompt format.

    The prompt is ``header + prefix_marker + prefix + suffix_marker + suffix +
    middle_marker`` (order "psm"); markers are literal text with their spacing.
    ``file_header`` (or None) contains ``{path}``. ``detect_tokens`` and ``stop_tokens`` are token
    spellings, resolved against a vocabulary with :func:`spelling_in`.
    """

    name: str
    order: str
    prefix_marker: str
    suffix_marker: str
    middle_marker: str
    detect_tokens: tuple[str, ...]
    stop_tokens: tuple[str, ...]
    file_header: str | None = None


def templates_from(text: str) -> dict[str, FimTemplate]:
    """Parse TOML text in the ``templates.toml`` layout, keeping the file's order.

    Raises ValueError, quoting the offending table or value, on a malformed table.
    """
    try:
        tables = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"FIM templates are not valid TOML: {error}") from error
    return {name: template_from(name, table) for name, table in tables.items()}


def template_from(name: str, table: Any) -> FimTemplate:
    """One parsed TOML table -> FimTemplate, validated (ValueError quoting the problem)."""
    if not isinstance(table, Mapping):
        raise ValueError(f"FIM template {name!r} must be a table, not {table!r}")
    missing = [key for key in _REQUIRED if key not in table]
    unknown = sorted(set(table) - set(_REQUIRED) - set(_OPTIONAL))
    if missing or unknown:
        raise ValueError(f"FIM template {name!r}: missing keys {missing}, unknown keys {unknown}")
    if table["order"] not in ORDERS:
        raise ValueError(f"FIM template {name!r}: unsupported order {table['order']!r}")
    header = table.get("file_header")
    if header is not None and "{path}" not in header:
        raise ValueError(f"FIM template {name!r}: file_header {header!r} lacks '{{path}}'")
    detect, stop = table["detect_tokens"], table["stop_tokens"]
    for key, tokens in (("detect_tokens", detect), ("stop_tokens", stop)):
        if not tokens or not all(isinstance(token, str) and token for token in tokens):
            raise ValueError(f"FIM template {name!r}: {key} {tokens!r} needs non-empty strings")
    return FimTemplate(
        name=name,
        order=table["order"],
        prefix_marker=table["prefix_marker"],
        suffix_marker=table["suffix_marker"],
        middle_marker=table["middle_marker"],
        detect_tokens=tuple(detect),
        stop_tokens=tuple(stop),
        file_header=header,
    )


@functools.cache
def _packaged() -> tuple[FimTemplate, ...]:
    text = resources.files(__package__).joinpath("templates.toml").read_text(encoding="utf-8")
    return tuple(templates_from(text).values())


def load_templates() -> dict[str, FimTemplate]:
    """The packaged templates by name, in file order (a fresh dict on each call)."""
    return {template.name: template for template in _packaged()}


def template_named(name: str) -> FimTemplate:
    """The packaged template called ``name``; ValueError quoting it when there is none."""
    templates = load_templates()
    if name not in templates:
        known = ", ".join(templates)
        raise ValueError(f"unknown FIM template {name!r} (known: {known})")
    return templates[name]


def spelling_in(token: str, vocabulary: Collection[str]) -> str | None:
    """How ``vocabulary`` spells ``token``: itself, its word-start form ("▁" + token), or None."""
    for spelling in (token, WORD_START + token):
        if spelling in vocabulary:
            return spelling
    return None


def detect_template(vocabulary: Collection[str]) -> FimTemplate | None:
    """The first packaged template whose ``detect_tokens`` are all in ``vocabulary``.

    ``vocabulary`` is every token string the tokenizer knows, e.g.
    ``set(tokenizer.get_vocab()) | set(tokenizer.all_special_tokens)``; pass a set or a
    dict's keys so that membership is cheap. None means no FIM format: build
    prefix-only prompts (the default Gemma 3 model has no FIM tokens).
    """
    for template in _packaged():
        if all(spelling_in(token, vocabulary) is not None for token in template.detect_tokens):
            return template
    return None
