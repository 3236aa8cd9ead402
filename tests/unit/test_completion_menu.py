"""The completion menu's AI item, with a scripted completer: never waited for, served
from typed-ahead, one generation per document that typing on keeps and a jump supersedes."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

import pytest
from lsprotocol import converters, types

from steerlsp.models.decoding.prompting import agrees
from steerlsp.models.decoding.worker import JobCancelled
from steerlsp.server.completion.host import ModelState
from steerlsp.server.completion.menu import CompletionMenu, _At, continues
from steerlsp.server.config import Settings
from steerlsp.server.documents.workspace import SteerDocument
from tests.helpers.completions import completion_of, completions_over, workspace_with

URI = "file:///w/a.py"
PYLSP = {"isIncomplete": False, "items": [{"label": "append"}]}
AI = "steerlsp AI suggestion"


class Completer:
    """Writes ``texts[prefix]`` (default "zzz"); holds each job until ``release`` while
    ``held``, and abandons it as the real decode loop does once the typing disagrees
    with its text; records the prefix of every job, and those cancelled or abandoned."""

    def __init__(self, texts: dict[str, str], held: bool = False) -> None:
        self.texts, self.held = texts, held
        self.release = threading.Event()
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.abandoned: list[str] = []

    def complete(self, request, options, token):
        self.started.append(request.prefix)
        text = self.texts.get(request.prefix, "zzz")
        while self.held and not self.release.is_set():
            if token.cancelled:
                self.cancelled.append(request.prefix)
                raise JobCancelled()
            if request.typed is not None and not agrees(text, request.typed()):
                self.abandoned.append(request.prefix)
                raise JobCancelled()
            time.sleep(0.001)
        return completion_of(text)


class Editor:
    """The menu over a Completions with one open document, as the proxy would call it."""

    def __init__(self, completer: Completer, text: str, **completion) -> None:
        settings = Settings()
        settings = dataclasses.replace(
            settings, completion=dataclasses.replace(settings.completion, **completion)
        )
        self.completer = completer
        self.version = 1
        self.workspace = workspace_with({URI: SteerDocument(URI, text, "utf-16", version=1)})
        self.completions = completions_over(self.workspace, settings, completer)
        self.host = self.completions.host
        self.menu = CompletionMenu(
            self.completions,
            self.host,
            settings=lambda: settings,
            client_capabilities=types.ClientCapabilities,  # no inline completion
            unstructure=converters.get_converter().unstructure,
        )
        self.text = text

    def type(self, text: str) -> None:
        """didChange to ``text``, the cursor at its end."""
        self.version += 1
        self.text = text
        self.workspace.text_documents[URI] = SteerDocument(
            URI, text, "utf-16", version=self.version
        )
        self.completions.document_changed(URI)

    async def ask(self) -> tuple[dict, float]:
        """textDocument/completion at the end of the text, as the proxy handles it
        (prepare as it arrives, rewrite with pylsp's answer): the list and its latency."""
        lines = self.text.split("\n")
        params = {
            "textDocument": {"uri": URI},
            "position": {"line": len(lines) - 1, "character": len(lines[-1])},
        }
        method = types.TEXT_DOCUMENT_COMPLETION
        started = time.perf_counter()
        assert self.menu.rewrites(method)
        prepared = self.menu.prepare(method, params)
        result = await self.menu.rewrite(method, prepared, PYLSP)
        return result, time.perf_counter() - started

    def stop(self) -> None:
        self.host.stop()


def ai(result: dict) -> str | None:
    found = [i for i in result["items"] if i.get("detail") == AI]
    return found[0]["textEdit"]["newText"] if found else None


async def settled(editor: Editor) -> None:
    """Until no menu generation runs."""
    for _ in range(500):
        if not editor.menu._runs:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("a menu generation never ended")


@pytest.fixture
def editors():
    made: list[Editor] = []
    yield made
    for editor in made:
        editor.completer.release.set()
        editor.stop()


def editor_for(editors: list[Editor], completer: Completer, text: str, **completion) -> Editor:
    editor = Editor(completer, text, **completion)
    editors.append(editor)
    return editor


def test_continues_means_typed_on_with_the_text_after_unchanged():
    at = _At(URI, types.Position(line=0, character=6), 1, "x = fo", "\n")
    assert continues(at, "x = fo", "\n") and continues(at, "x = foo(", "\n")
    assert not continues(at, "x = f", "\n")  # a deletion
    assert not continues(at, "x = foo", ")\n")  # the text after the cursor changed


async def test_the_menu_never_waits_and_says_it_is_incomplete(editors):
    completer = Completer({"x = ": "foo(1)"}, held=True)
    editor = editor_for(editors, completer, "x = ")
    result, _ = await editor.ask()
    # The model is held (a generation that never ends until released): pylsp's menu
    # came back all the same, so the menu did not wait for it.
    assert not completer.release.is_set()
    assert result == {"isIncomplete": True, "items": PYLSP["items"]}
    assert PYLSP["isIncomplete"] is False  # the upstream's list is not changed in place
    completer.release.set()
    await settled(editor)
    result, _ = await editor.ask()  # asked again at the same place: the finished item
    assert ai(result) == "foo(1)" and result["isIncomplete"] is True
    assert result["items"][1:] == PYLSP["items"]


async def test_typed_ahead_serves_the_rest_without_generating(editors):
    completer = Completer({"x = ": "foo(1)"})
    editor = editor_for(editors, completer, "x = ")
    await editor.ask()
    await settled(editor)
    editor.type("x = fo")
    result, _ = await editor.ask()
    assert ai(result) == "o(1)"
    assert completer.started == ["x = "]  # no new generation


async def test_typing_on_keeps_the_running_generation_and_an_edit_does_not_stop_it(editors):
    completer = Completer({"x = ": "foo(1)"}, held=True)
    editor = editor_for(editors, completer, "x = ")
    await editor.ask()
    while not completer.started:
        await asyncio.sleep(0.005)
    for typed in ("x = f", "x = fo"):  # didChange, then the menu, per keystroke
        editor.type(typed)
        result, _ = await editor.ask()
        assert ai(result) is None and result["isIncomplete"] is True
    completer.release.set()
    await settled(editor)
    # It suggested what was typed: the newest cursor is covered, nothing else runs.
    assert completer.started == ["x = "] and not completer.cancelled
    result, _ = await editor.ask()
    assert ai(result) == "o(1)"


async def test_a_generation_the_typing_leaves_is_abandoned_for_the_newest_cursor(editors):
    completer = Completer({"x = ": "bar", "x = f": "oo(2)", "x = fo": "o(2)"}, held=True)
    editor = editor_for(editors, completer, "x = ")
    await editor.ask()
    while not completer.started:
        await asyncio.sleep(0.005)
    editor.type("x = f")  # not what "bar" begins with: abandoned at once
    await editor.ask()
    while len(completer.started) < 2:
        await asyncio.sleep(0.005)
    assert completer.abandoned == ["x = "] and not completer.cancelled
    editor.type("x = fo")  # agrees with "oo(2)", made at "x = f": it goes on
    await editor.ask()
    completer.release.set()
    await settled(editor)
    assert completer.started == ["x = ", "x = f"]
    result, _ = await editor.ask()
    assert ai(result) == "o(2)"


async def test_the_newest_cursor_is_generated_next_when_the_suggestion_ran_out(editors):
    completer = Completer({"x = ": "f", "x = fo": "o(2)"}, held=True)
    editor = editor_for(editors, completer, "x = ")
    await editor.ask()
    for typed in ("x = f", "x = fo"):  # "f" agrees with both: it goes on, and ends short
        editor.type(typed)
        await editor.ask()
    completer.release.set()
    await settled(editor)
    assert completer.started == ["x = ", "x = fo"]  # the newest cursor, not every keystroke
    assert not completer.abandoned and not completer.cancelled
    result, _ = await editor.ask()
    assert ai(result) == "o(2)"


async def test_a_jump_supersedes_the_running_generation(editors):
    completer = Completer({"x = ": "foo(1)", "x =": " 2"}, held=True)
    editor = editor_for(editors, completer, "x = ")
    await editor.ask()
    while not completer.started:
        await asyncio.sleep(0.005)
    editor.type("x =")  # a deletion: the running suggestion can no longer be typed ahead
    await editor.ask()
    while len(completer.started) < 2:
        await asyncio.sleep(0.005)
    assert completer.cancelled == ["x = "]
    completer.release.set()
    await settled(editor)
    result, _ = await editor.ask()
    assert ai(result) == " 2"


async def test_a_wait_budget_answers_from_the_same_request(editors):
    completer = Completer({"x = ": "foo(1)"})
    editor = editor_for(editors, completer, "x = ", fallback_wait_ms=5000)
    result, _ = await editor.ask()
    assert ai(result) == "foo(1)"


async def test_nothing_to_add_leaves_the_list_alone(editors):
    completer = Completer({"x = ": ""})
    editor = editor_for(editors, completer, "x = ")
    await editor.ask()
    await settled(editor)
    result, _ = await editor.ask()  # an empty suggestion here: no item, no new generation
    assert result is PYLSP and completer.started == ["x = "]
    editor.host.state = ModelState.LOADING
    editor.type("y = ")
    result, _ = await editor.ask()
    assert result is PYLSP  # no model yet: pylsp's list as it came


async def test_a_late_answer_is_for_the_cursor_its_request_was_made_at(editors):
    # pylsp may answer after the user typed on: the item and the generation are those
    # of the document as it was when the request came, never the text typed since.
    completer = Completer({"x = ": "foo(1)"}, held=True)
    editor = editor_for(editors, completer, "x = ")
    method, lines = types.TEXT_DOCUMENT_COMPLETION, editor.text.split("\n")
    params = {
        "textDocument": {"uri": URI},
        "position": {"line": len(lines) - 1, "character": len(lines[-1])},
    }
    prepared = editor.menu.prepare(method, params)
    editor.type("x = fo")  # before pylsp's answer to that request
    result = await editor.menu.rewrite(method, prepared, PYLSP)
    assert ai(result) is None and result["isIncomplete"] is True
    await editor.ask()  # the next keystroke's request continues the same generation
    completer.release.set()
    await settled(editor)
    assert completer.started == ["x = "] and not completer.cancelled
    result = await editor.menu.rewrite(method, prepared, PYLSP)
    assert ai(result) == "foo(1)"
    assert result["items"][0]["textEdit"]["range"]["start"] == params["position"]
