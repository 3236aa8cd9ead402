"""Notebook cells get the same position handling and crash replay as files (real pylsp)."""

from __future__ import annotations

import os
import signal

from tests.helpers.rawclient import RawClient, steerlsp_command

CELL_TEXT = 'x = "🛒🛒" +  1\n'


def _cell_diagnostics(client: RawClient, uri: str, predicate) -> list:
    for note in reversed(client.notifications_of("textDocument/publishDiagnostics")):
        if note["params"]["uri"] == uri:
            found = [d for d in note["params"]["diagnostics"] if predicate(d)]
            if found:
                return found
    return []


async def _open_notebook(start_raw, tmp_path) -> tuple[RawClient, str]:
    client = await start_raw(steerlsp_command())
    await client.initialize(
        tmp_path,
        {"general": {"positionEncodings": ["utf-16"]}, "notebookDocument": {"synchronization": {}}},
    )
    notebook = (tmp_path / "nb.ipynb").as_uri()
    cell = notebook.replace("file:", "vscode-notebook-cell:") + "#c1"
    client.notify(
        "notebookDocument/didOpen",
        {
            "notebookDocument": {
                "uri": notebook,
                "notebookType": "jupyter-notebook",
                "version": 1,
                "cells": [{"kind": 2, "document": cell}],
            },
            "cellTextDocuments": [
                {"uri": cell, "languageId": "python", "version": 1, "text": CELL_TEXT}
            ],
        },
    )
    return client, cell


async def test_cell_diagnostics_are_in_utf16(start_raw, tmp_path):
    client, cell = await _open_notebook(start_raw, tmp_path)
    e222 = await client.wait_for(
        lambda: _cell_diagnostics(client, cell, lambda d: "E222" in d["message"])
    )
    # `+  1`: the second space after "+"; 10 code points before it, 12 UTF-16 units.
    assert e222[0]["range"]["start"] == {"line": 0, "character": 12}


async def test_incremental_cell_edit_after_emoji_and_replay_after_crash(start_raw, tmp_path):
    client, cell = await _open_notebook(start_raw, tmp_path)
    await client.wait_for(lambda: _cell_diagnostics(client, cell, lambda d: True))
    # Replace "1" (UTF-16 column 14) with an undefined name.
    client.notify(
        "notebookDocument/didChange",
        {
            "notebookDocument": {
                "uri": cell.split("#")[0].replace("vscode-notebook-cell:", "file:"),
                "version": 2,
            },
            "change": {
                "cells": {
                    "textContent": [
                        {
                            "document": {"uri": cell, "version": 2},
                            "changes": [
                                {
                                    "range": {
                                        "start": {"line": 0, "character": 14},
                                        "end": {"line": 0, "character": 15},
                                    },
                                    "text": "undefined_cell_name",
                                }
                            ],
                        }
                    ]
                }
            },
        },
    )
    found = await client.wait_for(
        lambda: _cell_diagnostics(client, cell, lambda d: "undefined_cell_name" in d["message"])
    )
    assert found[0]["range"]["start"]["character"] == 14

    pid = (await client.request("steerlsp/status"))["result"]["upstream"]["pid"]
    client.notifications.clear()
    os.kill(pid, signal.SIGKILL)
    # After the restart, pylsp re-lints the replayed notebook at its current text.
    found = await client.wait_for(
        lambda: _cell_diagnostics(client, cell, lambda d: "undefined_cell_name" in d["message"]),
        timeout=30,
    )
    assert found[0]["range"]["start"]["character"] == 14
