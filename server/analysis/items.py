"""Pure conversions for the analysis instance: LSP results in, the values of
``models/steering/analysis.py`` out, and the ranged change that brings a private
document from one text to the next.

Columns here are code points (Python ``str`` indexes) and lines are split as
pylsp splits them (``str.splitlines``): the analysis instance is always pylsp,
which advertises no ``positionEncoding`` and indexes Python strings.
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.uris import to_fs_path

from steerlsp.models.steering.analysis import CompletionCandidate, DefinitionSource, Signature
from steerlsp.models.steering.ranking.relevance import summary_line
from steerlsp.server.documents.text import has_odd_breaks

_converter = get_converter()
_NAME = re.compile(r"\w+")
_KINDS = {int(kind): kind.name.lower() for kind in types.CompletionItemKind}
_DEPRECATED = int(types.CompletionItemTag.Deprecated)


def candidate_from(item: dict[str, Any]) -> CompletionCandidate | None:
    """A completion item (raw JSON) as a candidate, or None when it names nothing.

    Read from the raw dict, not structured into ``types.CompletionItem``: that
    costs ~28 µs an item, 11 ms for a 400-item list, on the decode thread's
    critical path. The name is ``insertText`` (else the label) without
    parameters or snippet syntax: ``with_vat(rate)`` and ``x=`` give
    ``with_vat`` and ``x``.
    """
    raw = item.get("insertText") or item.get("label") or ""
    found = _NAME.match(raw) if isinstance(raw, str) else None
    if found is None:
        return None
    name = found.group()
    kind = item.get("kind")
    tags = item.get("tags") or ()
    return CompletionCandidate(
        name=name,
        kind=_KINDS.get(kind, "") if isinstance(kind, int) else "",
        detail=item.get("detail") or "",
        documentation=first_doc_line(item.get("documentation"), name),
        deprecated=bool(item.get("deprecated")) or _DEPRECATED in tags,
        returns=returned_type(item.get("documentation"), name),
    )


def candidates_from(result: Any) -> list[CompletionCandidate]:
    """The candidates of a completion result (a ``CompletionList``, a list of items or None)."""
    items = result.get("items") if isinstance(result, dict) else result
    if not isinstance(items, list):
        return []
    found = (candidate_from(item) for item in items if isinstance(item, dict))
    return [candidate for candidate in found if candidate is not None]


def first_doc_line(documentation: Any, name: str = "") -> str:
    """The first line of the docstring in a documentation string or ``MarkupContent``.

    pylsp puts the signatures first (``with_vat(rate: float=...) -> Price``,
    then a blank line, then the docstring); a first paragraph whose lines all
    start with ``name(`` or ``name:`` is that signature block and is skipped.
    """
    if isinstance(documentation, dict):
        documentation = documentation.get("value")
    if not isinstance(documentation, str):
        return ""
    paragraphs = [p for p in re.split(r"\n\s*\n", documentation.strip()) if p.strip()]
    if len(paragraphs) > 1 and name and _is_signature_block(paragraphs[0], name):
        paragraphs = paragraphs[1:]
    # The first line that describes: pydantic's "Usage docs: https://..." says nothing.
    for paragraph in paragraphs[:4]:
        described = summary_line("\n".join(_unfenced(paragraph)))
        if described:
            return described
    for line in _unfenced(paragraphs[0]) if paragraphs else ():
        return line
    return ""


def returned_type(documentation: Any, name: str) -> str:
    """The return annotation of ``name``'s signature at the top of its documentation:
    ``model_dump(self, *, mode='python') -> dict[str, Any]`` gives ``dict[str, Any]``."""
    if isinstance(documentation, dict):
        documentation = documentation.get("value")
    if not isinstance(documentation, str) or not name:
        return ""
    head = re.split(r"\n\s*\n", documentation.strip(), maxsplit=1)[0]
    for line in _unfenced(head):
        if line.startswith(name + "("):
            found = _RETURNS.search(line)
            return found.group(1).strip() if found else ""
    return ""


_RETURNS = re.compile(r"\)\s*->\s*(.+?)\s*$")


def _unfenced(paragraph: str) -> list[str]:
    """The non-empty lines of ``paragraph`` without code fences or backticks."""
    lines = (line.strip() for line in paragraph.splitlines())
    return [line.strip("`").strip() for line in lines if line and not line.startswith("```")]


def _is_signature_block(paragraph: str, name: str) -> bool:
    return all(line.startswith((name + "(", name + ":")) for line in _unfenced(paragraph))


def signature_from(result: Any) -> Signature | None:
    """The active signature of a ``SignatureHelp`` (raw JSON), or None."""
    if not isinstance(result, dict) or not result.get("signatures"):
        return None
    help_ = _converter.structure(result, types.SignatureHelp)
    active = help_.active_signature or 0
    signature = help_.signatures[min(active, len(help_.signatures) - 1)]
    parameters = tuple(
        _parameter_label(signature.label, parameter.label)
        for parameter in signature.parameters or ()
    )
    parameter = signature.active_parameter
    if parameter is None:
        parameter = help_.active_parameter
    return Signature(
        label=signature.label,
        parameters=parameters,
        active_parameter=parameter
        if parameter is not None and parameter < len(parameters)
        else None,
        documentation=first_doc_line(_doc_value(signature.documentation)),
    )


def _parameter_label(signature: str, label: str | tuple[int, int]) -> str:
    """A parameter's label, from a string or (start, end) offsets into the signature."""
    if isinstance(label, str):
        return label
    start, end = label
    return signature[start:end]


def _doc_value(documentation: str | types.MarkupContent | None) -> str:
    if isinstance(documentation, types.MarkupContent):
        return documentation.value
    return documentation or ""


def definition_from(result: Any) -> DefinitionSource | None:
    """The first file location of a definition result (a Location, a list of Locations
    or LocationLinks), with its 0-based line; None when there is none in a file."""
    entries = result if isinstance(result, list) else [result] if result else []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        if "targetUri" in entry:
            link = _converter.structure(entry, types.LocationLink)
            uri, line = link.target_uri, link.target_selection_range.start.line
        else:
            location = _converter.structure(entry, types.Location)
            uri, line = location.uri, location.range.start.line
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path:
            return DefinitionSource(path=path, line=line)
    return None


# ---- positions and sync ---------------------------------------------------


def position_at(text: str, offset: int) -> types.Position:
    """The LSP position of ``offset`` in ``text``: lines as ``str.splitlines`` splits
    them (pylsp's model), columns in code points."""
    prefix = text[:offset]
    if has_odd_breaks(prefix):
        lines = prefix.splitlines(True)
        last = lines[-1]
        if last.splitlines()[0] != last:  # the prefix ends with a line break
            return types.Position(line=len(lines), character=0)
        return types.Position(line=len(lines) - 1, character=len(last))
    line = prefix.count("\n") + prefix.count("\r") - prefix.count("\r\n")
    start = max(prefix.rfind("\n"), prefix.rfind("\r")) + 1
    return types.Position(line=line, character=offset - start)


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix: a binary search of C-speed slice compares."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    low, high = 0, min(len(a), len(b), limit)
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid - 1
    return low


def ranged_change(old: str, new: str) -> types.TextDocumentContentChangePartial | None:
    """One change that turns ``old`` into ``new``, replacing only the part between
    their common prefix and suffix (the speculative insertion); None if equal.

    Never cuts a ``\\r\\n`` in two: pylsp would then see different lines.
    """
    if old == new:
        return None
    start = common_prefix(old, new)
    if start and old[start - 1] == "\r":
        start -= 1
    tail = common_suffix(old, new, min(len(old), len(new)) - start)
    if tail and old[len(old) - tail] == "\n" and old[len(old) - tail - 1 : len(old) - tail] == "\r":
        tail -= 1
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=position_at(old, start), end=position_at(old, len(old) - tail)),
        text=new[start : len(new) - tail],
    )


def unstructure(value: Any) -> Any:
    """An lsprotocol value as JSON, for the wire."""
    return _converter.unstructure(value)
