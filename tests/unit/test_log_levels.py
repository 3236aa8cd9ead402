"""Log levels: library progress bars and warnings, and error replies."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled

from steerlsp.server.cli import drop_unfinished, quiet_libraries
from steerlsp.server.lsp.errors import RequestFailed
from steerlsp.server.lsp.pygls_adapter import answered_level
from steerlsp.server.upstream.pending import UpstreamError


@pytest.mark.parametrize("debug", [False, True])
def test_library_progress_bars_are_off_and_their_warnings_at_debug_only(debug, monkeypatch):
    monkeypatch.setattr(logging, "captureWarnings", lambda capture: None)
    monkeypatch.setattr(logging.getLogger("py.warnings"), "level", logging.NOTSET)
    environ = {"TQDM_DISABLE": "0"}  # a user's own choice wins
    quiet_libraries(debug=debug, environ=environ)
    assert environ["TQDM_DISABLE"] == "0" and environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert ("TRANSFORMERS_VERBOSITY" in environ) is not debug
    shown = logging.getLogger("py.warnings").isEnabledFor(logging.WARNING)
    assert shown is debug


@pytest.mark.parametrize(
    ("error", "level"),
    [
        (JsonRpcRequestCancelled("superseded"), logging.DEBUG),
        (JsonRpcException(code=-32801, message="content modified"), logging.DEBUG),
        (RequestFailed("the model is still loading", logging.INFO), logging.INFO),
        (RequestFailed("out of memory"), logging.WARNING),
        (JsonRpcInvalidParams("bad params"), logging.WARNING),
    ],
)
def test_error_replies_are_logged_at_their_level(error, level):
    assert answered_level(error) == level


async def _asked_ahead(started: asyncio.Event) -> None:
    """A question with the analysis pylsp when the session ends: that pylsp has just
    exited, so the task ends with its error, not the cancel."""
    started.set()
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        raise UpstreamError("The upstream language server exited (code 0).") from None


async def _session(drop: bool) -> None:
    started = asyncio.Event()
    question = asyncio.ensure_future(_asked_ahead(started))
    await started.wait()
    if drop:
        await drop_unfinished()
    assert question.done() is drop


def test_a_question_in_flight_at_exit_leaves_no_error_on_stderr(caplog):
    with caplog.at_level(logging.DEBUG):
        asyncio.run(_session(drop=False))  # what asyncio.run alone does with it
    assert "unhandled exception during asyncio.run() shutdown" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        asyncio.run(_session(drop=True))
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "ended with the session: UpstreamError" in caplog.text  # at debug level
