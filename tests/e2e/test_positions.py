"""Columns after astral characters are right in both directions, with real pylsp.

pylsp 1.15 counts code points; the editor counts UTF-16 (or UTF-8) units.
"""

from __future__ import annotations

import pytest

from tests.helpers.rawclient import RawClient, steerlsp_command

TEXT = 'def greet(name):\n    return name\n\n\nx = "😋"\n'


def units(text: str, encoding: str) -> int:
    return len(text.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(text.encode())


@pytest.fixture(params=["utf-16", "utf-8"])
async def session(request, start_raw, tmp_path) -> tuple[RawClient, str, str]:
    encoding = request.param
    client = await start_raw(steerlsp_command())
    caps = await client.initialize(tmp_path, {"general": {"positionEncodings": [encoding]}})
    assert caps["capabilities"]["positionEncoding"] == encoding
    uri = (tmp_path / "emoji.py").as_uri()
    client.open(uri, TEXT)
    return client, uri, encoding


def _diagnostics(client: RawClient, uri: str, version: int):
    notes = [
        n["params"]
        for n in client.notifications_of("textDocument/publishDiagnostics")
        if n["params"]["uri"] == uri and n["params"].get("version", version) == version
    ]
    return notes[-1]["diagnostics"] if notes else None


async def test_incremental_edit_after_an_emoji_lands_where_the_editor_put_it(session):
    client, uri, encoding = session
    line = 'x = "😋"'
    end = units(line, encoding)  # UTF-16: 8, UTF-8: 10; pylsp would see 6 code points
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [
                {
                    "range": {
                        "start": {"line": 4, "character": end},
                        "end": {"line": 4, "character": end},
                    },
                    "text": "; y = greet(undefined_thing)",
                }
            ],
        },
    )
    diagnostics = await client.wait_for(
        lambda: [
            d for d in (_diagnostics(client, uri, 2) or []) if "undefined_thing" in d["message"]
        ]
    )
    full = line + "; y = greet(undefined_thing)"
    start = units(full[: full.index("undefined_thing")], encoding)
    assert diagnostics[0]["range"]["start"] == {"line": 4, "character": start}
    # pyflakes ranges run to the end of the line, newline included, past the text.
    assert diagnostics[0]["range"]["end"] == {"line": 4, "character": units(full, encoding) + 1}

    # And requests after the emoji point at the right identifier.
    column = units(full[: full.index("greet(")] + "gr", encoding)
    hover = await client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 4, "character": column}},
    )
    assert "greet(name)" in hover["result"]["contents"]["value"]
    highlights = await client.request(
        "textDocument/documentHighlight",
        {"textDocument": {"uri": uri}, "position": {"line": 4, "character": column}},
    )
    on_line_4 = [h["range"] for h in highlights["result"] if h["range"]["start"]["line"] == 4]
    start = units(full[: full.index("greet(")], encoding)
    assert on_line_4 == [
        {
            "start": {"line": 4, "character": start},
            "end": {"line": 4, "character": start + len("greet")},
        }
    ]


async def test_rename_edits_after_an_emoji(session):
    client, uri, encoding = session
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": TEXT + 'z = "🛒🛒"; greet(z)\n'}],
        },
    )
    line = 'z = "🛒🛒"; greet(z)'
    column = units(line[: line.index("greet")], encoding)
    reply = await client.request(
        "textDocument/rename",
        {
            "textDocument": {"uri": uri},
            "position": {"line": 5, "character": column + 1},
            "newName": "salute",
        },
    )
    edits = reply["result"].get("documentChanges") or []
    assert edits, reply
    ranges = [e["range"] for change in edits for e in change["edits"]]
    # Jedi rewrites the whole file in one edit; its end is past the last line.
    assert ranges[0]["start"] == {"line": 0, "character": 0}
    new_text = edits[0]["edits"][0]["newText"]
    assert 'z = "🛒🛒"; salute(z)' in new_text and "def salute(name)" in new_text
