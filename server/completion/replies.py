"""What steerlsp's completion requests answer with, built from plain values.

Pure converters: the inline list, the completion-menu item and its merge into
pylsp's list, the document snapshot steering reads, the position of forwarded
params, and the printable text every reply is cut to. Nothing here holds
state or talks to the model.
"""

from __future__ import annotations

import dataclasses
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from steerlsp.models.decoding.engine import Generation
from steerlsp.models.options import Document
from steerlsp.server.documents.encodings import to_code_points
from steerlsp.server.documents.text import bare

ACCEPTED_COMMAND = "steerlsp.accepted"
# Sorts before every letter, digit and "_" (pylsp's sortText starts with "a"
# or "z"), in byte order and in ICU collation alike; printable, not
# whitespace an editor might trim. A NUL sort text did the same, but Emacs'
# JSON parser rejects NUL and drops the whole reply.
FIRST = "!"
# LSP lines end at these only; str.splitlines also splits at \x0c, \x1c, \x85...
# C0 and C1 controls and DEL, but tab and the line ends: the model can emit
# them, and some editors' JSON parsers reject the reply that carries them.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Explained:
    """The last completion of one document, for ``steerlsp/explain``."""

    uri: str
    version: int | None
    completion: str
    steered: bool
    trace: dict[str, Any] | None  # what steered it (the steerer's Trace); None: unsteered
    prompt_tokens: int = 0
    context: tuple[str, ...] = ()  # the ChatLSP parts its prompt had ("expected_type", ...)
    rounds: int = 0  # error rounds before it
    # Where its time went (ms): the prefill, the decode loop, and within the loop the
    # steering (its processors, questions waited for and scoring passes included).
    timing: dict[str, float] = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The JSON result of ``steerlsp/explain``, every string printable: the trace
        quotes token texts, library docstrings and error messages."""
        return printable_json(dataclasses.asdict(self))  # type: ignore[no-any-return]


def timing_of(generation: Generation) -> dict[str, float]:
    """:attr:`Explained.timing` of one generation, in milliseconds."""
    return {
        "prefill_ms": round(generation.prefill_seconds * 1000, 1),
        "decode_ms": round(generation.decode_seconds * 1000, 1),
        "steering_ms": round(generation.timings.get("steering", 0.0) * 1000, 1),
        "reused_tokens": generation.reused_tokens,
        "tokens": len(generation.token_ids),
        "drafted": generation.drafted,  # verified several at a time (a walked name, lookup)
        "accepted": generation.accepted,
    }


def printable(text: str) -> str:
    """``text`` without control characters other than tab, CR and LF."""
    return _CONTROL.sub("", text)


def printable_json(value: Any) -> Any:
    """``value`` (JSON-shaped) with :func:`printable` applied to every string and key."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, list | tuple):
        return [printable_json(item) for item in value]
    if isinstance(value, dict):
        return {printable_json(key): printable_json(item) for key, item in value.items()}
    return value


def inline_list(
    texts: Sequence[str],
    start: types.Position,
    end: types.Position,
    selected: types.SelectedCompletionInfo | None,
) -> types.InlineCompletionList:
    """The inline reply: one item per non-empty text, in order (editors cycle through
    them), each inserted at the cursor.

    ``start``..``end`` is the replaced range: the selected menu item's start to
    the cursor, whose text leads the insert, or the cursor alone.
    """
    lead = selected.text if selected else ""
    return types.InlineCompletionList(
        items=[
            types.InlineCompletionItem(
                insert_text=printable(lead + text),
                range=types.Range(start=start, end=end),
                command=types.Command(
                    title="steerlsp: accepted",
                    command=ACCEPTED_COMMAND,
                    arguments=[uuid.uuid4().hex[:12]],
                ),
            )
            for text in texts
            if text
        ]
    )


def typed_ahead(
    prefix: str, suffix: str, texts: Sequence[str], now_prefix: str, now_suffix: str
) -> tuple[str, ...]:
    """What is left of each of ``texts`` (suggested at ``prefix``|``suffix``) once the
    user has typed on to ``now_prefix``|``now_suffix``: the rests of those the typed
    text begins, in order, without repeats (after trailing whitespace) or blanks; ()
    when nothing was typed, the suffix changed, or the typing left the suggestions.
    """
    if now_suffix != suffix or not now_prefix.startswith(prefix):
        return ()
    typed = now_prefix[len(prefix) :]
    if not typed:
        return ()
    rests: dict[str, str] = {}  # by the rest without trailing whitespace: the first kept
    for text in texts:
        rest = text[len(typed) :]
        if text.startswith(typed) and rest.strip():
            rests.setdefault(rest.rstrip(), rest)
    return tuple(rests.values())


def completion_item(text: str, position: types.Position) -> types.CompletionItem:
    """The labelled AI item of the completion menu, inserting ``text`` at ``position``."""
    text = printable(text)
    first = (text.strip().splitlines() or [""])[0]
    label = first if len(first) <= 40 else first[:39] + "…"
    return types.CompletionItem(
        label=f"✨ {label}",
        kind=types.CompletionItemKind.Snippet,
        detail="steerlsp AI suggestion",
        documentation=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=f"```python\n{text}\n```"
        ),
        sort_text=FIRST,
        filter_text=first,
        # Plain, whatever the list's itemDefaults say: "$" in code is no tab stop.
        insert_text_format=types.InsertTextFormat.PlainText,
        text_edit=types.TextEdit(range=types.Range(start=position, end=position), new_text=text),
        command=types.Command(
            title="steerlsp: accepted", command=ACCEPTED_COMMAND, arguments=["fallback"]
        ),
    )


def merged_completions(
    result: Any, item: dict[str, Any] | None, still_working: bool
) -> dict[str, Any]:
    """pylsp's completion ``result`` (list, CompletionList or null) with ``item`` first.

    Every other key of a CompletionList (``itemDefaults``...) is kept.
    Incomplete while a generation runs: the editor asks again as the user
    types, and gets the suggestion once it is ready.
    """
    merged = dict(result) if isinstance(result, dict) else {}
    items = merged.get("items") if isinstance(result, dict) else result
    items = list(items) if isinstance(items, list) else []
    merged["items"] = [item, *items] if item is not None else items
    merged["isIncomplete"] = still_working or bool(merged.get("isIncomplete"))
    return merged


def document_with(
    lines: Sequence[str],
    start: types.Position,
    end: types.Position,
    insert: str,
    encoding: str,
) -> Document | None:
    """A snapshot of ``lines`` with ``insert`` replacing ``start``..``end``, the cursor
    right after it (code points). Positions are in ``encoding`` units.

    Cheap on the event loop: a tuple of the same line strings, one line rebuilt.
    None for what it does not model: a range over several lines, a multi-line
    insert, or a position outside the document.
    """
    if start.line != end.line or not 0 <= start.line < len(lines):
        return None
    if "\n" in insert or "\r" in insert:
        return None
    current = lines[start.line]
    text = bare(current)
    first = to_code_points(text, start.character, encoding)
    last = to_code_points(text, end.character, encoding)
    if not first <= last <= len(text):
        return None
    if first == last and not insert:
        return Document(tuple(lines), start.line, first)
    replaced = current[:first] + insert + current[last:]
    edited = (*lines[: start.line], replaced, *lines[start.line + 1 :])
    return Document(edited, start.line, first + len(insert))


def request_position(params: Any) -> tuple[str | None, types.Position | None]:
    """The uri and position of forwarded (untyped, possibly malformed) params."""
    try:
        uri, raw = params["textDocument"]["uri"], params["position"]
        line, character = raw["line"], raw["character"]
    except (KeyError, TypeError):
        return None, None
    if not isinstance(uri, str):
        return None, None
    if type(line) is not int or type(character) is not int or line < 0 or character < 0:
        return uri, None
    return uri, types.Position(line=line, character=character)


def relative_path(uri: str, root: str | None) -> str | None:
    """The prompt header's path of ``uri``: relative to the workspace ``root`` when it
    lies inside it, else the file's name; None for a uri that is no file."""
    path = to_fs_path(uri)
    if path is None:
        return None
    if root and PurePath(path).is_relative_to(root):
        return os.path.relpath(path, root)
    return os.path.basename(path)
