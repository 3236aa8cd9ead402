"""The request policy over a real pygls workspace and a scripted completer, as
server/app.py wires it, for the unit tests of the completion components."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.workspace import Workspace

from steerlsp.models.decoding.completer import Completion
from steerlsp.models.decoding.engine import Generation
from steerlsp.prompts.postprocess import CompletionMode
from steerlsp.server.completion.explained import ExplainStore
from steerlsp.server.completion.host import ModelHost, ModelState
from steerlsp.server.completion.policy import Completions
from steerlsp.server.config import Settings
from steerlsp.server.documents.workspace import OpenDocuments

ROOT = "file:///w"


def workspace_with(documents: dict[str, Any]) -> Workspace:
    """A workspace rooted at /w holding ``documents`` (uri -> SteerDocument) as open."""
    workspace = Workspace(ROOT)
    workspace.text_documents.update(documents)
    return workspace


def ready_host(
    settings: Callable[[], Settings],
    completer: Any,
    shown: list[tuple[types.MessageType, str]] | None = None,
) -> ModelHost:
    """A model host whose model is ``completer``, loaded; messages to the user go to
    ``shown``."""
    host = ModelHost(
        settings,
        notify=lambda kind, text: (shown if shown is not None else []).append((kind, text)),
        python_environment=lambda: None,
    )
    host.completer = completer
    host.state = ModelState.READY
    return host


def completions_over(workspace: Workspace, settings: Settings, completer: Any) -> Completions:
    """The request policy over ``workspace`` with ``completer`` ready."""
    host = ready_host(lambda: settings, completer)
    return Completions(
        host, OpenDocuments(lambda: workspace), lambda: settings, explained=ExplainStore()
    )


def completion_of(text: str, alternatives: tuple[str, ...] = ()) -> Completion:
    """What the completer returns for ``text`` (and ``alternatives``), unsteered."""
    generation = Generation(
        token_ids=[],
        text=text,
        stop="eos",
        prompt_tokens=0,
        reused_tokens=0,
        prefill_seconds=0.0,
        decode_seconds=0.0,
    )
    return Completion(text, CompletionMode.SINGLE_LINE, generation, alternatives=alternatives)
