"""Nothing steerlsp writes to the editor holds a NUL (Emacs' JSON parser rejects the message).

A document with NUL characters goes through real pylsp: its hover, completion,
symbols and diagnostics quote that text, and an unknown method's error quotes
the method name. The guard sits where every byte to the editor passes.
"""

from __future__ import annotations

import asyncio
import sys

from tests.helpers.rawclient import RawClient, steerlsp_command

SOURCE = 'def f\x00oo(x):\n    """Doc with a \x00 in it."""\n    return x\n\n\nf\x00oo(1)\nf'


async def test_no_reply_or_notification_holds_a_nul(start_raw, shop):
    client: RawClient = await start_raw(steerlsp_command())
    await client.initialize(shop)
    uri = (shop / "nul_module.py").as_uri()
    client.open(uri, SOURCE)
    position = {"line": 5, "character": 1}
    for method, params in [
        ("textDocument/hover", {"textDocument": {"uri": uri}, "position": position}),
        ("textDocument/completion", {"textDocument": {"uri": uri}, "position": position}),
        ("textDocument/documentSymbol", {"textDocument": {"uri": uri}}),
        ("x/unknown\x00method", {}),
    ]:
        reply = await client.request(method, params, timeout=30)
        assert "result" in reply or "error" in reply
    await client.wait_for(lambda: client.notifications_of("textDocument/publishDiagnostics"))
    await asyncio.sleep(0.2)
    symbols = [r for r in client.responses if isinstance(r.get("result"), list)]
    assert symbols, "pylsp answered nothing that quotes the document"
    assert client.bodies
    for body in client.bodies:
        assert b"\\u0000" not in body and b"\x00" not in body, body[:200]


# steerlsp's own entry point, after a stray print, a raw write to descriptor 1 and a
# child process that inherits it, each carrying a NUL, once the session has started.
STRAY = """
import os, subprocess, sys
from steerlsp.server import cli

real = cli.serve

async def serve(*args, **kwargs):
    print("a library's stray print \\x00")
    os.write(1, b"raw bytes to descriptor 1 \\x00")
    subprocess.run([sys.executable, "-c", "import os; os.write(1, b'a child \\\\x00')"])
    return await real(*args, **kwargs)

cli.serve = serve
sys.argv = ["steerlsp"]
cli.main()
"""


async def test_stray_writes_to_stdout_never_reach_the_editor(start_raw, shop):
    """Descriptor 1 is the writer's alone: what else prints goes to stderr, so the
    editor reads only whole frames, none with a NUL."""
    client: RawClient = await start_raw([sys.executable, "-c", STRAY])
    await client.initialize(shop)
    reply = await client.request("textDocument/hover", HOVER_AT_NOTHING, timeout=30)
    assert "result" in reply or "error" in reply
    assert client.bodies  # every one a whole frame: RawClient asserts no framing error
    for body in client.bodies:
        assert b"\x00" not in body and b"\\u0000" not in body and b"stray" not in body


HOVER_AT_NOTHING = {
    "textDocument": {"uri": "file:///nowhere/absent.py"},
    "position": {"line": 0, "character": 0},
}
