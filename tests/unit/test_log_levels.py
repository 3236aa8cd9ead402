"""Log levels: library progress bars and warnings, and error replies."""

from __future__ import annotations

import logging

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled

from steerlsp.server.cli import quiet_libraries
from steerlsp.server.lsp.errors import RequestFailed
from steerlsp.server.lsp.pygls_adapter import answered_level


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
