"""The request policy of inline completions, with a scripted completer: alternatives on
Invoked, one item on Automatic, typed-ahead over every alternative."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pygls.workspace import Workspace

from steerlsp.models.decoding.worker import JobCancelled
from steerlsp.models.options import CompletionOptions
from steerlsp.server.completion.policy import Completions
from steerlsp.server.config import Settings
from steerlsp.server.documents.workspace import SteerDocument
from tests.helpers.completions import completion_of, completions_over, workspace_with

URI = "file:///w/a.py"
TEXT = "x = "
INVOKED, AUTOMATIC = (
    types.InlineCompletionTriggerKind.Invoked,
    types.InlineCompletionTriggerKind.Automatic,
)


class ScriptedCompleter:
    """Answers every job with ``texts`` (the first, then alternatives), cut to the
    number asked for; records the options of every job."""

    def __init__(self, *texts: str) -> None:
        self.texts = texts
        self.asked: list[CompletionOptions] = []

    def complete(self, request, options, token):
        self.asked.append(options)
        first, *others = self.texts
        return completion_of(first, tuple(others[: options.alternatives - 1]))


def completions_for(
    completer: ScriptedCompleter, text: str = TEXT, **completion
) -> tuple[Completions, Workspace]:
    settings = Settings()
    settings = dataclasses.replace(
        settings,
        completion=dataclasses.replace(settings.completion, debounce_ms=0, **completion),
    )
    workspace = workspace_with({URI: SteerDocument(URI, text, "utf-16", version=1)})
    return completions_over(workspace, settings, completer), workspace


def edit(workspace: Workspace, text: str, version: int) -> None:
    workspace.text_documents[URI] = SteerDocument(URI, text, "utf-16", version=version)


def params(text: str, trigger: types.InlineCompletionTriggerKind) -> types.InlineCompletionParams:
    lines = text.split("\n")
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=len(lines) - 1, character=len(lines[-1])),
        context=types.InlineCompletionContext(trigger_kind=trigger),
    )


def inserted(reply: types.InlineCompletionList) -> list[str]:
    return [item.insert_text for item in reply.items]  # type: ignore[misc]


@pytest.fixture
def stop_workers():
    made: list[Completions] = []
    yield made
    for completions in made:
        completions.host.stop()


async def test_invoked_gets_the_alternatives_and_automatic_one_item(stop_workers):
    completer = ScriptedCompleter("foo(1)", "format()", "bar")
    completions, workspace = completions_for(completer, alternatives=3, alternatives_budget_ms=700)
    stop_workers.append(completions)
    assert inserted(await completions.inline(params(TEXT, INVOKED))) == [
        "foo(1)",
        "format()",
        "bar",
    ]
    assert completer.asked[-1].alternatives == 3
    assert completer.asked[-1].alternatives_budget == 0.7
    assert completer.asked[-1].sampling.temperature == 0  # the first stays greedy

    edit(workspace, "y = ", 2)
    reply = await completions.inline(params("y = ", AUTOMATIC))
    assert inserted(reply) == ["foo(1)"] and completer.asked[-1].alternatives == 1


async def test_an_empty_first_completion_leaves_the_alternatives(stop_workers):
    completions, _ = completions_for(ScriptedCompleter("", "a", "b"))
    stop_workers.append(completions)
    assert inserted(await completions.inline(params(TEXT, INVOKED))) == ["a", "b"]


async def test_alternatives_setting_one_means_one_item_on_invoked(stop_workers):
    completer = ScriptedCompleter("foo(1)", "format()")
    completions, _ = completions_for(completer, alternatives=1)
    stop_workers.append(completions)
    assert inserted(await completions.inline(params(TEXT, INVOKED))) == ["foo(1)"]
    assert completer.asked[-1].alternatives == 1


async def test_typing_ahead_is_served_from_every_alternative(stop_workers):
    completer = ScriptedCompleter("foo(1)", "format()", "bar")
    completions, workspace = completions_for(completer)
    stop_workers.append(completions)
    await completions.inline(params(TEXT, INVOKED))
    jobs = len(completer.asked)

    edit(workspace, TEXT + "fo", 2)
    assert inserted(await completions.inline(params(TEXT + "fo", INVOKED))) == [
        "o(1)",
        "rmat()",
    ]
    edit(workspace, TEXT + "for", 3)
    assert inserted(await completions.inline(params(TEXT + "for", AUTOMATIC))) == ["mat()"]
    assert len(completer.asked) == jobs  # no new generation


async def test_invoked_after_an_automatic_suggestion_generates_its_alternatives(stop_workers):
    completer = ScriptedCompleter("foo(1)", "format()", "bar")
    completions, workspace = completions_for(completer)
    stop_workers.append(completions)
    await completions.inline(params(TEXT, AUTOMATIC))
    edit(workspace, TEXT + "f", 2)
    reply = await completions.inline(params(TEXT + "f", INVOKED))
    assert len(completer.asked) == 2 and completer.asked[-1].alternatives == 3
    assert inserted(reply) == ["foo(1)", "format()", "bar"]


async def test_an_invoked_request_is_cancelled_by_a_newer_one(stop_workers):
    class Held(ScriptedCompleter):
        def complete(self, request, options, token):
            while not token.cancelled:  # a long alternative, stopped only by its token
                time.sleep(0.001)
            raise JobCancelled()

    completions, _ = completions_for(Held("a", "b"))
    stop_workers.append(completions)
    first = asyncio.ensure_future(completions.inline(params(TEXT, INVOKED)))
    while not completions.host.worker.health()["running"]:
        await asyncio.sleep(0.01)
    completions.document_changed(URI)  # didChange
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(first, 5)
