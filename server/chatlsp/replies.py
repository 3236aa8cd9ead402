"""ChatLSP's results as LSP values: converters named after what they return.

The shapes follow the ChatLSP spec (hazelgrove/chatlsp-site, ``lspMethodSpecs.ts``),
so that existing ChatLSP clients read them; every text is plain text, ready to
go into a prompt. Lines here are 0-based like LSP's; columns are left at 0
(a definition's line is what matters), so no code-unit conversion is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from lsprotocol import types
from pygls.uris import from_fs_path

from steerlsp.server.chatlsp import ExpectedType, Header, Place, Problem, TypeDefinition

UNKNOWN_TYPE = "unknown: nothing at this position says which type is expected"


@attrs.define
class ExpectedTypeResult:
    content: types.MarkupContent
    location: types.Location


@attrs.define
class ContextListResult:
    """relevantTypes and relevantHeaders: the texts and where each is defined."""

    contents: list[types.MarkupContent]
    locations: list[types.Location]


@attrs.define
class TutorialResult:
    content: types.MarkupContent


@attrs.define
class ErrorReportResult:
    needs_repair: bool
    diagnostics: list[types.Diagnostic]
    content: types.MarkupContent


@attrs.define
class CompletionContext:
    """What an llmCompletion was given, each part as the prompt had it."""

    # No defaults: the converter leaves out fields at their defaults, and a client
    # should see an empty part (nothing known) as such.
    expected_type: str
    relevant_types: str
    relevant_headers: str
    rounds: list[str]  # each error round's feedback, in order


@attrs.define
class LlmCompletionResult:
    snippet: str
    context: CompletionContext


def plain(text: str) -> types.MarkupContent:
    return types.MarkupContent(kind=types.MarkupKind.PlainText, value=text)


def location_of(place: Place | None, fallback: types.Location) -> types.Location:
    """The LSP location of a 0-based ``place`` (column 0 of its line), else ``fallback``."""
    if place is None:
        return fallback
    uri = from_fs_path(place.path) or fallback.uri
    start = types.Position(line=max(place.line, 0), character=0)
    return types.Location(uri=uri, range=types.Range(start=start, end=start))


def expected_type_result(found: ExpectedType | None, hole: types.Location) -> ExpectedTypeResult:
    """The type, or a plain statement that none is known, located at its annotation
    (or at the hole itself)."""
    if found is None:
        return ExpectedTypeResult(plain(UNKNOWN_TYPE), hole)
    return ExpectedTypeResult(plain(found.annotation), location_of(found.place, hole))


def context_list_result(
    found: Sequence[TypeDefinition] | Sequence[Header], hole: types.Location
) -> ContextListResult:
    return ContextListResult(
        [plain(item.code) for item in found], [location_of(item.place, hole) for item in found]
    )


def diagnostic_of(problem: Problem) -> types.Diagnostic:
    """An Error diagnostic; its columns are code points (the caller converts for the client)."""
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=problem.line, character=problem.column),
            end=types.Position(line=problem.end_line, character=problem.end_column),
        ),
        message=problem.message,
        severity=types.DiagnosticSeverity.Error,
        code=problem.code,
        source=problem.source,
    )


def error_report_result(
    problems: Sequence[Problem], feedback: str, needs_repair: bool
) -> ErrorReportResult:
    return ErrorReportResult(
        needs_repair=needs_repair,
        diagnostics=[diagnostic_of(p) for p in problems],
        content=plain(feedback or "No static errors on the completion's lines."),
    )


def types_text(found: Sequence[TypeDefinition]) -> str:
    return "\n\n".join(item.code for item in found)


def headers_text(found: Sequence[Header]) -> str:
    return "\n".join(item.code for item in found)


def unstructured(value: Any) -> Any:
    """For tests and the demo: the result as it goes on the wire (camelCase keys)."""
    from lsprotocol.converters import get_converter

    return get_converter().unstructure(value)
