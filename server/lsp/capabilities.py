"""Pure helpers for the ``initialize`` exchange: merging capabilities, reading params."""

from __future__ import annotations

import copy
from typing import Any

from steerlsp.server.documents.encodings import UTF32

INCREMENTAL = 2


def merge_capabilities(upstream: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """Upstream's capabilities overlaid with steerlsp's own.

    steerlsp owns document sync (it keeps the authoritative text and forwards
    changes in the upstream's terms) and the position encoding. Command lists
    are unioned; nested option objects are merged with steerlsp's leaves winning.
    """
    merged = copy.deepcopy(upstream)
    for key, value in ours.items():
        if key == "executeCommandProvider":
            commands = list((merged.get(key) or {}).get("commands", []))
            commands += [c for c in value.get("commands", []) if c not in commands]
            merged[key] = {**(merged.get(key) or {}), **value, "commands": commands}
        elif key == "textDocumentSync":
            merged[key] = _sync_options(merged.get(key))
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _sync_options(upstream: Any) -> dict[str, Any]:
    options: dict[str, Any] = dict(upstream) if isinstance(upstream, dict) else {}
    options["openClose"] = True
    options["change"] = INCREMENTAL
    return options


def incremental_sync(capabilities: dict[str, Any]) -> bool:
    """Whether the upstream accepts ranged ``didChange`` events (sync kind Incremental).

    ``textDocumentSync`` is either the kind itself or options with ``change``.
    """
    sync = capabilities.get("textDocumentSync")
    kind = sync.get("change") if isinstance(sync, dict) else sync
    return kind == INCREMENTAL


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``top`` merged in (``top``'s leaves win); neither is mutated."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def upstream_encoding(capabilities: dict[str, Any]) -> str:
    """The encoding the upstream really counts columns in.

    A server that advertises nothing is UTF-16 by the spec, but pylsp (the
    default upstream) indexes Python strings, i.e. code points. We trust an
    explicit answer and otherwise assume pylsp's behaviour.
    """
    value = capabilities.get("positionEncoding")
    return value if isinstance(value, str) else UTF32


def document_uri(params: Any) -> str | None:
    """``params.textDocument.uri`` when present and a string."""
    if isinstance(params, dict):
        doc = params.get("textDocument")
        if isinstance(doc, dict) and isinstance(doc.get("uri"), str):
            return str(doc["uri"])
    return None


# Requests whose params are TextDocumentPositionParams: a position is required.
_AT_A_POSITION = frozenset(
    {
        "textDocument/hover",
        "textDocument/completion",
        "textDocument/signatureHelp",
        "textDocument/definition",
        "textDocument/declaration",
        "textDocument/typeDefinition",
        "textDocument/implementation",
        "textDocument/references",
        "textDocument/documentHighlight",
        "textDocument/rename",
        "textDocument/prepareRename",
        "textDocument/linkedEditingRange",
        "textDocument/moniker",
        "textDocument/prepareCallHierarchy",
        "textDocument/prepareTypeHierarchy",
    }
)


def shape_error(method: str, params: Any) -> str | None:
    """Why ``params`` cannot be forwarded for a document request, or None.

    Full validation is the upstream's job; the proxy checks only what it must
    read itself to route and convert positions.
    """
    if not method.startswith("textDocument/"):
        return None
    if not isinstance(params, dict):
        return "params must be an object"
    if document_uri(params) is None:
        return "params.textDocument.uri must be a string"
    position = params.get("position")
    if position is not None and not _is_position(position):
        return "params.position must be {line: int, character: int}"
    range_ = params.get("range")
    if range_ is not None and not (
        isinstance(range_, dict)
        and _is_position(range_.get("start"))
        and _is_position(range_.get("end"))
    ):
        return "params.range must be {start: Position, end: Position}"
    if position is None and method in _AT_A_POSITION:
        return "params.position is required"
    return None


def _is_position(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and type(value.get("line")) is int
        and type(value.get("character")) is int
        and value["line"] >= 0
        and value["character"] >= 0
    )
