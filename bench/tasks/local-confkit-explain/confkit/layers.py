"""Where a setting came from, and reading one source of settings."""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum


class Origin(Enum):
    """Sources of settings; a higher value overrides a lower one."""

    SHIPPED_DEFAULT = 10
    SITE_FILE = 20
    ENV_OVERRIDE = 30
    COMMAND_LINE = 40


@dataclass(frozen=True)
class Layer:
    origin: Origin
    entries: Mapping[str, str]


def read_layer(text: str, *, origin: Origin) -> Layer:
    """Parse "key = value" lines; ";" starts a comment; keys are case-insensitive."""
    entries = {}
    for raw in text.splitlines():
        raw = raw.split(";", 1)[0].strip()
        if not raw:
            continue
        key, sep, value = raw.partition("=")
        if not sep:
            raise ValueError(f"not a setting: {raw!r}")
        entries[key.strip().lower()] = value.strip()
    return Layer(origin=origin, entries=entries)
