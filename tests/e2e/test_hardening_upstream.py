"""The upstream cannot run workspace code, stall the server, or be left for dead unsaid.

Issue 9, items 2, 3, 4 and 10, each driven over stdio against the real
``steerlsp`` process (real pylsp where its behaviour is the point, the
scripted ``fake_upstream.py`` where a fault has to happen on demand).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from tests.helpers.rawclient import FAKE_UPSTREAM, RawClient, steerlsp_command

REQUEST_FAILED = -32803

# Everything pylsp 1.15 imports at start, on initialize (the preload plugin's
# list), or for formatting and diagnostics, that a project could shadow.
SHADOWED = [
    "pylsp",
    "ujson",
    "black",
    "autopep8",
    "yapf",
    "pyflakes",
    "pycodestyle",
    "mccabe",
    "pydocstyle",
    "pylint",
    "flake8",
    "rope",
    "jedi",
    "parso",
    "pluggy",
    "docstring_to_markdown",
    "whatthepatch",
    "sitecustomize",
    "usercustomize",
    "OpenGL",
    "PIL",
    "numpy",
    "pandas",
    "matplotlib",
    "scipy",
    "sklearn",
    "sympy",
    "networkx",
    "nose",
    "mpmath",
    "statsmodels",
    "skimage",
    "wx",
    "cPickle",
]


def _console_script() -> list[str]:
    """How editors start steerlsp: the console script, which puts no cwd on sys.path."""
    script = Path(sys.executable).with_name("steerlsp")
    return [str(script)] if script.exists() else [sys.executable, "-I", "-m", "steerlsp"]


async def _start_in(cwd: Path, command: list[str]) -> RawClient:
    proc = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    return RawClient(proc)


async def _status(client: RawClient) -> dict:
    return (await client.request("steerlsp/status", timeout=10))["result"]


# ---- item 2: no workspace module is imported by the upstream ----------------


async def test_pylsp_never_imports_workspace_modules(tmp_path):
    workspace, markers = tmp_path / "project", tmp_path / "markers"
    workspace.mkdir()
    markers.mkdir()
    for name in SHADOWED:
        marker = str(markers / name)
        (workspace / f"{name}.py").write_text(f"open({marker!r}, 'w').close()\n")
    doc = workspace / "main.py"
    text = "import os\nx=1\n"
    doc.write_text(text)

    client = await _start_in(workspace, [*_console_script(), "--no-model"])
    try:
        await client.initialize(workspace)
        client.open(doc.as_uri(), text)
        diagnostics = await client.wait_for(
            lambda: [
                n
                for n in client.notifications_of("textDocument/publishDiagnostics")
                if n["params"]["uri"] == doc.as_uri() and n["params"]["diagnostics"]
            ],
            timeout=30,
        )
        formatted = await client.request(
            "textDocument/formatting",
            {
                "textDocument": {"uri": doc.as_uri()},
                "options": {"tabSize": 4, "insertSpaces": True},
            },
        )
        status = await _status(client)
    finally:
        await client.close()
    assert sorted(os.listdir(markers)) == []
    # pylsp did run, with its plugins: pyflakes/pycodestyle and autopep8.
    messages = [d["message"] for d in diagnostics[-1]["params"]["diagnostics"]]
    assert any("imported but unused" in m for m in messages), messages
    assert formatted["result"] and "x = 1" in formatted["result"][0]["newText"]
    assert status["upstream"]["restarts"] == 0
    assert "-I" in status["upstream"]["command"]


# ---- item 3: a Location in a FIFO or /dev/zero neither blocks nor exhausts ---


@pytest.fixture
async def utf16_fake(start_raw, shop) -> RawClient:
    client = await start_raw(steerlsp_command("--no-model", upstream=FAKE_UPSTREAM))
    caps = await client.initialize(shop, {"general": {"positionEncodings": ["utf-16"]}})
    assert caps["capabilities"]["positionEncoding"] == "utf-16"
    return client


def _location(uri: str) -> dict:
    where = {"line": 0, "character": 3}
    return {"locations": [{"uri": uri, "range": {"start": where, "end": where}}]}


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "nul-in-path"])
async def test_location_in_a_special_file_keeps_the_server_answering(utf16_fake, tmp_path, kind):
    client = utf16_fake
    if kind == "fifo":
        path = tmp_path / "pipe.py"
        os.mkfifo(path)
        uri = path.as_uri()
    elif kind == "dev-zero":
        uri = "file:///dev/zero"
    else:  # os.stat raises ValueError, which used to drop the reply
        uri = (tmp_path / "a").as_uri() + "%00b.py"
    # The upstream's result names the file; converting it must not read it on the loop.
    slow = client.send_request("fake/echo", _location(uri))
    reply = await client.request("fake/echo", {"ping": 1}, timeout=5)
    assert reply["result"] == {"ping": 1}
    answer = await client.response(slow, timeout=10)
    assert answer["result"] == _location(uri)  # not a regular file: left unconverted
    status = await _status(client)
    assert status["upstream"]["ready"]


async def test_location_in_an_unopened_file_is_converted_after_reading_it(utf16_fake, tmp_path):
    path = tmp_path / "lib.py"
    path.write_text("a = '😋'; b = 1\n", encoding="utf-8")
    where = {"line": 0, "character": 10}  # code points: just before "b"
    result = {"locations": [{"uri": path.as_uri(), "range": {"start": where, "end": where}}]}
    reply = await utf16_fake.request("fake/echo", result, timeout=10)
    moved = reply["result"]["locations"][0]["range"]
    assert moved["start"] == moved["end"] == {"line": 0, "character": 11}  # UTF-16 units


async def test_one_reply_when_cancelled_or_crashed_while_files_are_read(utf16_fake, tmp_path):
    client = utf16_fake
    locations = []
    for i in range(8):  # enough text that reading it overlaps the cancel and the crash
        path = tmp_path / f"big{i}.py"
        path.write_text("s = '😋'\n" * 100_000, encoding="utf-8")
        where = {"line": 99_999, "character": 6}
        locations.append({"uri": path.as_uri(), "range": {"start": where, "end": where}})
    echo = client.send_request("fake/echo", {"locations": locations})
    # The fake answers in order: once this reply is back, the first answer has reached
    # the proxy, which is reading its files; the cancel and the crash come during that.
    assert (await client.request("fake/echo", {"sync": 1}, timeout=20))["result"] == {"sync": 1}
    client.notify("$/cancelRequest", {"id": echo})
    crash = client.send_request("fake/crash")
    reply = await client.response(echo, timeout=20)
    await client.response(crash, timeout=20)
    assert reply["result"]["locations"][0]["range"]["start"] == {"line": 99_999, "character": 7}
    # After the restart, later requests are answered and the first got no second reply.
    assert (await client.request("fake/echo", {"after": 1}, timeout=30))["result"] == {"after": 1}
    assert [r["id"] for r in client.responses].count(echo) == 1
    assert [r["id"] for r in client.responses].count(crash) == 1


# ---- item 4: stderr is drained whatever its line length ----------------------


@pytest.mark.parametrize("level", ["warning", "debug"])
async def test_a_huge_stderr_line_does_not_stall_forwarding(start_raw, shop, tmp_path, level):
    log_file = tmp_path / "steerlsp.log"
    client = await start_raw(
        steerlsp_command(
            "--no-model",
            "--log-level",
            level,
            "--log-file",
            str(log_file),
            upstream=FAKE_UPSTREAM,
        )
    )
    await client.initialize(shop)
    first = await client.request("fake/stderr", {"size": 200 * 1024}, timeout=10)
    assert first["result"] == 200 * 1024
    # Far more than a pipe buffer in all: each write blocks unless we keep reading.
    for _ in range(40):
        reply = await client.request("fake/stderr", {"size": 8 * 1024}, timeout=10)
        assert reply["result"] == 8 * 1024
    assert (await client.request("fake/echo", {"still": "here"}, timeout=10))["result"] == {
        "still": "here"
    }
    if level == "debug":
        logged = log_file.read_text()
        assert f"upstream stderr: {'e' * 100}" in logged
        assert f"({200 * 1024} bytes)" in logged and f"({8 * 1024} bytes)" in logged
        assert max(map(len, logged.splitlines())) < 200 * 1024  # lines are capped


# ---- item 10: past the restart limit, the upstream is said to be gone -------


async def test_after_the_restart_limit_the_upstream_is_reported_gone(start_raw, shop):
    client = await start_raw(
        steerlsp_command("--no-model", "--max-restarts", "1", upstream=FAKE_UPSTREAM)
    )
    await client.initialize(shop)
    pid = (await _status(client))["upstream"]["pid"]
    await client.response(client.send_request("fake/crash"))

    async def restarted() -> None:
        while True:
            upstream = (await _status(client))["upstream"]
            if upstream["ready"] and upstream["pid"] not in (None, pid):
                return
            await asyncio.sleep(0.05)

    await asyncio.wait_for(restarted(), 30)
    hanging = client.send_request("fake/hang", {})
    crash = client.send_request("fake/crash", {})
    for msg_id in (hanging, crash):
        error = (await client.response(msg_id))["error"]
        assert error["code"] == REQUEST_FAILED
        assert "restarted" not in error["message"] and "gone" in error["message"]

    def gone() -> list[str]:
        return [
            n["params"]["message"]
            for n in client.notifications_of("window/showMessage")
            if n["params"]["type"] == 1
        ]

    shown = await client.wait_for(gone, timeout=10)
    assert len(shown) == 1
    assert "being restarted" not in shown[0] and "restart" in shown[0]
    assert ":LspRestart" in shown[0]
    later = await client.request("fake/echo", {})
    assert later["error"]["code"] == REQUEST_FAILED and "gone" in later["error"]["message"]
    upstream = (await _status(client))["upstream"]
    assert upstream["pid"] is None and upstream["ready"] is False
    assert upstream["state"] == "gone" and upstream["restarts"] == 2
