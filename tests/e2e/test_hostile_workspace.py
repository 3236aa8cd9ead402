"""A cloned repository can neither run code nor stall or exhaust any process of steerlsp.

Issue 21's table, one test per row (each failed on main before the fix), driven
over stdio against the real ``steerlsp`` process started in the hostile
workspace, as editors start it, with real pylsp behind it (the scripted
``fake_upstream.py`` only where a fault must happen on demand). Shadowing
modules write a marker file when they run; the markers must stay absent.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.helpers.rawclient import FAKE_UPSTREAM, RawClient

INVALID_PARAMS, REQUEST_FAILED = -32602, -32803
CAPS = {
    "general": {"positionEncodings": ["utf-16"]},
    "notebookDocument": {"synchronization": {}},
    "textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]}},
}
# A signature black wraps over several lines in pylsp's hover (88 columns).
LONG_SIGNATURE = (
    "def compute_the_total(first_argument: int, second_argument: int = 2, "
    "third_argument: int = 3) -> int:\n"
    '    """Add."""\n'
    "    return first_argument + second_argument + third_argument\n"
)


def _console_script() -> list[str]:
    """How editors start steerlsp: the console script."""
    script = Path(sys.executable).with_name("steerlsp")
    return [str(script)] if script.exists() else [sys.executable, "-I", "-m", "steerlsp"]


@pytest.fixture
async def start_in():
    """Start steerlsp with the given working directory (the workspace, as editors do)."""
    clients: list[RawClient] = []

    async def start(cwd: Path, *flags: str, upstream: list[str] | None = None) -> RawClient:
        command = [*_console_script(), *flags]
        if upstream is not None:
            command += ["--upstream", *upstream]
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=cwd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        client = RawClient(proc)
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()


def _marking(markers: Path, name: str) -> str:
    """Module source that leaves a marker named ``name`` when it runs."""
    return f"open({str(markers / name)!r}, 'w').close()\n"


def _hostile(tmp_path: Path) -> tuple[Path, Path]:
    workspace, markers = tmp_path / "project", tmp_path / "markers"
    workspace.mkdir()
    markers.mkdir()
    return workspace, markers


async def _status(client: RawClient) -> dict:
    return (await client.request("steerlsp/status", timeout=30))["result"]


MAIN = "import os\nos.getcwd()\n"


async def _main_session(start_in, workspace: Path) -> tuple[RawClient, Path, str]:
    """steerlsp without a model in ``workspace``, initialized, with ``main.py`` open."""
    doc = workspace / "main.py"
    doc.write_text(MAIN)
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.open(doc.as_uri(), MAIN)
    return client, doc, MAIN


def _position(text: str, needle: str, into: int = 0) -> dict:
    before = text[: text.index(needle) + into]
    return {"line": before.count("\n"), "character": len(before.rsplit("\n", 1)[-1])}


def _at(uri: str, text: str, needle: str, into: int = 0) -> dict:
    return {"textDocument": {"uri": uri}, "position": _position(text, needle, into)}


async def _still_answers(client: RawClient, uri: str, text: str, needle: str) -> dict:
    """A hover that must come back (from pylsp) within a generous time."""
    reply = await client.request("textDocument/hover", _at(uri, text, needle, 2), timeout=60)
    assert "result" in reply, reply
    return reply


# ---- row 1: `make demo` on a fresh clone -------------------------------------------------


# ---- row 2: pylsp's own children see no workspace module ---------------------------------


async def test_no_workspace_module_runs_in_what_pylsp_starts(start_in, tmp_path):
    workspace, markers = _hostile(tmp_path)
    for name in ("black", "ruff", "json", "autopep8", "yapf"):
        (workspace / f"{name}.py").write_text(_marking(markers, name))
    (workspace / "pylint").mkdir()
    (workspace / "pylint" / "__init__.py").write_text(_marking(markers, "pylint"))
    init_hook = f"init-hook={_marking(markers, 'init-hook').strip()}\n"
    (workspace / "pylintrc").write_text("[MAIN]\n" + init_hook)
    (workspace / ".pylintrc").write_text("[MAIN]\n" + init_hook)
    doc = workspace / "main.py"
    text = "import os\n\n\n" + LONG_SIGNATURE + "\n\nx=compute_the_total(1)\n"
    doc.write_text(text)
    uri = doc.as_uri()

    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"pylsp": {"plugins": {"pylint": {"enabled": True}}}}},
    )
    client.open(uri, text)
    hover = await client.request(
        "textDocument/hover", _at(uri, text, "compute_the_total(1)", 3), timeout=60
    )
    options = {"tabSize": 4, "insertSpaces": True}
    formatted = await client.request(
        "textDocument/formatting", {"textDocument": {"uri": uri}, "options": options}, timeout=60
    )
    everything = {"start": {"line": 0, "character": 0}, "end": _position(text, "x=")}
    ranged = await client.request(
        "textDocument/rangeFormatting",
        {"textDocument": {"uri": uri}, "range": everything, "options": options},
        timeout=60,
    )
    renamed = await client.request(
        "textDocument/rename", {**_at(uri, text, "x="), "newName": "y"}, timeout=60
    )
    actions = await client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": everything,
            "context": {"diagnostics": []},
        },
        timeout=60,
    )
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})

    def linted_by_pylint() -> bool:
        return any(
            d.get("source") == "pylint"
            for n in client.notifications_of("textDocument/publishDiagnostics")
            if n["params"]["uri"] == uri
            for d in n["params"]["diagnostics"]
        )

    await client.wait_for(linted_by_pylint, timeout=90)  # pylint did run, from site-packages
    for reply in (formatted, ranged, renamed, actions):
        assert "result" in reply, reply
    assert sorted(os.listdir(markers)) == []
    # The signature in the hover is still formatted, by the installed black.
    shown = hover["result"]["contents"]
    shown = shown["value"] if isinstance(shown, dict) else str(shown)
    assert "compute_the_total(\n    first_argument: int," in shown, shown
    assert "x = compute_the_total(1)" in formatted["result"][0]["newText"]
    assert (await _status(client))["upstream"]["restarts"] == 0


async def test_a_trusted_workspace_keeps_its_pylint_configuration(start_in, tmp_path):
    """With ``python.trustWorkspace``, pylsp's pylint runs in the project as before: the
    project's pylintrc counts (its init-hook runs, which is what trust allows)."""
    workspace, markers = _hostile(tmp_path)
    (workspace / "pylintrc").write_text(f"[MAIN]\ninit-hook={_marking(markers, 'hook').strip()}\n")
    doc = workspace / "main.py"
    text = "import os\n"
    doc.write_text(text)
    client = await start_in(workspace, "--no-model")
    await client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": workspace.as_uri(),
            "capabilities": CAPS,
            "initializationOptions": {"steerlsp": {"python": {"trustWorkspace": True}}},
        },
    )
    client.notify("initialized", {})
    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"pylsp": {"plugins": {"pylint": {"enabled": True}}}}},
    )
    client.open(doc.as_uri(), text)
    client.notify("textDocument/didSave", {"textDocument": {"uri": doc.as_uri()}, "text": text})
    await client.wait_for(lambda: (markers / "hook").exists(), timeout=90)


# ---- rows 3 to 6: special files never read ------------------------------------------------


@pytest.mark.parametrize("target", ["fifo", "dev-stdin"])
async def test_a_request_about_an_unopened_special_file_is_refused(start_in, tmp_path, target):
    workspace, _ = _hostile(tmp_path)
    if target == "fifo":
        os.mkfifo(workspace / "pipe.py")
        special = (workspace / "pipe.py").as_uri()
    else:
        special = "file:///dev/stdin"
    client, doc, text = await _main_session(start_in, workspace)
    where = {"line": 0, "character": 0}
    for method in ("textDocument/definition", "textDocument/hover", "textDocument/references"):
        params = {"textDocument": {"uri": special}, "position": where}
        if method.endswith("references"):
            params["context"] = {"includeDeclaration": True}
        reply = await client.request(method, params, timeout=30)
        assert reply["error"]["code"] == INVALID_PARAMS, reply
        assert "not a regular file" in reply["error"]["message"]
    await _still_answers(client, doc.as_uri(), text, "getcwd")
    assert (await _status(client))["upstream"]["restarts"] == 0


@pytest.mark.parametrize("device", ["/dev/stdin", "/dev/zero"])
async def test_a_config_symlinked_to_a_device_does_not_stall_initialize(start_in, tmp_path, device):
    workspace, _ = _hostile(tmp_path)
    for name in ("setup.cfg", "tox.ini", ".flake8"):
        (workspace / name).symlink_to(device)
    doc = workspace / "main.py"
    text = "import os\nos.getcwd()\n"
    doc.write_text(text)
    client = await start_in(workspace, "--no-model")
    started = asyncio.get_running_loop().time()
    await client.initialize(workspace, CAPS)
    assert asyncio.get_running_loop().time() - started < 20  # not the 30 s initialize limit
    client.open(doc.as_uri(), text)
    await _still_answers(client, doc.as_uri(), text, "getcwd")
    # pyflakes and pycodestyle ran (pylsp reads those files for their settings).
    await client.wait_for(
        lambda: [
            n
            for n in client.notifications_of("textDocument/publishDiagnostics")
            if n["params"]["uri"] == doc.as_uri()
        ],
        timeout=60,
    )
    upstream = (await _status(client))["upstream"]
    assert upstream["state"] == "running" and upstream["restarts"] == 0


@pytest.mark.parametrize("device", ["/dev/stdin", "/dev/zero"])
async def test_buildout_scripts_symlinked_to_a_device_are_not_read(start_in, tmp_path, device):
    workspace, _ = _hostile(tmp_path)
    (workspace / "buildout.cfg").write_text("[buildout]\n")
    (workspace / "bin").mkdir()
    (workspace / "bin" / "x").symlink_to(device)
    client, doc, text = await _main_session(start_in, workspace)
    hover = await _still_answers(client, doc.as_uri(), text, "import os")
    assert hover["result"] is not None  # Jedi resolved os, past the bin/ scan
    await _still_answers(client, doc.as_uri(), text, "getcwd")
    upstream = (await _status(client))["upstream"]
    assert upstream["restarts"] == 0 and upstream["memory_restarts"] == 0


@pytest.mark.parametrize("device", ["/dev/stdin", "/dev/zero"])
async def test_a_module_symlinked_to_a_device_beside_code_is_not_read(start_in, tmp_path, device):
    """Jedi searches every ``*.py`` for callers of a parameter, in pylsp and in
    steerlsp's own ChatLSP thread, where ``/dev/stdin`` was the editor's pipe."""
    workspace, _ = _hostile(tmp_path)
    (workspace / "zz.py").symlink_to(device)
    doc = workspace / "main.py"
    text = "def compute(value):\n    result = value.\n    return result\n"
    doc.write_text(text)
    uri = doc.as_uri()
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.open(uri, text)
    completion = await client.request(
        "textDocument/completion", _at(uri, text, "value.", 6), timeout=60
    )
    assert "result" in completion, completion
    expected = await client.request(
        "textDocument/expectedType", _at(uri, text, "value.", 6), timeout=60
    )
    assert "result" in expected or expected["error"]["code"] != INVALID_PARAMS, expected
    await _still_answers(client, uri, text, "compute")
    status = await _status(client)
    assert status["upstream"]["restarts"] == 0
    assert _rss_mib(client.proc.pid) < 900  # reading /dev/zero took it past a gigabyte
    assert await client.shutdown() == 0  # `exit` was not read away from the editor


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


# ---- row 7: a huge document ---------------------------------------------------------------


async def test_a_huge_document_reaches_pylsp_empty(start_in, tmp_path):
    workspace, _ = _hostile(tmp_path)
    huge = workspace / "generated.py"
    text = "x = [" + "1, " * (6 * 1024 * 1024 // 3) + "]\n"  # one line of 6 MiB
    other = workspace / "main.py"
    other_text = "import os\nos.getcwd()\n"
    other.write_text(other_text)
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.open(huge.as_uri(), text)
    client.open(other.as_uri(), other_text)
    hover = await client.request(
        "textDocument/hover", _at(other.as_uri(), other_text, "getcwd", 2), timeout=30
    )
    assert hover["result"] is not None
    status = await _status(client)
    assert (status["upstream"]["pid"] and _rss_mib(status["upstream"]["pid"])) < 1024
    # steerlsp keeps the text for its own features: a position deep in it is answered.
    far = {"line": 0, "character": len(text) - 3}
    reply = await client.request(
        "textDocument/hover", {"textDocument": {"uri": huge.as_uri()}, "position": far}
    )
    assert "result" in reply, reply
    # Back under the limit, pylsp gets the whole text again (and reports on it).
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": huge.as_uri(), "version": 2},
            "contentChanges": [{"text": "import sys\n"}],
        },
    )

    def unused_import() -> bool:
        return any(
            "imported but unused" in d["message"]
            for n in client.notifications_of("textDocument/publishDiagnostics")
            if n["params"]["uri"] == huge.as_uri()
            for d in n["params"]["diagnostics"]
        )

    await client.wait_for(unused_import, timeout=60)


# ---- row 8: notebook sync reads no disk -----------------------------------------------


async def test_a_notebook_cell_naming_an_unopened_fifo_is_not_read(start_in, tmp_path):
    workspace, _ = _hostile(tmp_path)
    os.mkfifo(workspace / "cell.py")
    fifo = (workspace / "cell.py").as_uri()
    notebook = (workspace / "nb.ipynb").as_uri()
    cell = notebook.replace("file:", "vscode-notebook-cell:") + "#c1"
    other = workspace / "main.py"
    other_text = "import os\nos.getcwd()\n"
    other.write_text(other_text)
    client = await start_in(workspace, "--no-model", upstream=FAKE_UPSTREAM)
    await client.initialize(workspace, CAPS)
    client.notify(
        "notebookDocument/didOpen",
        {
            "notebookDocument": {
                "uri": notebook,
                "notebookType": "jupyter-notebook",
                "version": 1,
                "cells": [{"kind": 2, "document": cell}],
            },
            "cellTextDocuments": [{"uri": cell, "languageId": "python", "version": 1, "text": "1"}],
        },
    )
    client.notify(
        "notebookDocument/didChange",
        {
            "notebookDocument": {"uri": notebook, "version": 2},
            "change": {
                "cells": {
                    "textContent": [
                        {
                            "document": {"uri": fifo, "version": 2},
                            "changes": [{"text": "2"}],
                        }
                    ]
                }
            },
        },
    )
    assert (await client.request("fake/echo", {"alive": 1}, timeout=10))["result"] == {"alive": 1}
    # A restart replays what the client opened, and reads nothing from disk.
    await client.response(client.send_request("fake/crash"), timeout=30)

    async def back() -> dict:
        while True:
            reply = await client.request("fake/received", timeout=30)
            if "result" in reply and any(
                m.get("method") == "notebookDocument/didOpen" for m in reply["result"]
            ):
                return reply
            await asyncio.sleep(0.1)

    received = (await asyncio.wait_for(back(), 60))["result"]
    opened = [m for m in received if m.get("method") == "notebookDocument/didOpen"]
    assert [d["uri"] for d in opened[0]["params"]["cellTextDocuments"]] == [cell]
    assert stat.S_ISFIFO(os.stat(workspace / "cell.py").st_mode)


# ---- row 9: settings that cannot be forwarded ----------------------------------------------


async def test_settings_nested_too_deep_are_rejected_and_restarts_keep_working(start_in, tmp_path):
    workspace, _ = _hostile(tmp_path)
    client = await start_in(workspace, "--no-model", upstream=FAKE_UPSTREAM)
    await client.initialize(workspace, CAPS)
    deep: dict = {}
    for _ in range(500):
        deep = {"a": deep}
    client.notify("workspace/didChangeConfiguration", {"settings": {"pylsp": deep}})
    shown = await client.wait_for(
        lambda: [
            n["params"]["message"]
            for n in client.notifications_of("window/showMessage")
            if "settings" in n["params"]["message"]
        ],
        timeout=10,
    )
    assert len(shown) == 1 and "cannot be serialised" in shown[0]
    client.notify("workspace/didChangeConfiguration", {"settings": {"pylsp": {"ok": 1}}})
    await client.response(client.send_request("fake/crash"), timeout=30)

    async def running() -> None:
        while (await _status(client))["upstream"]["state"] != "running":
            await asyncio.sleep(0.1)

    await asyncio.wait_for(running(), 30)
    reply = await client.request("fake/echo", {"after": "restart"}, timeout=30)
    assert reply["result"] == {"after": "restart"}
    received = (await client.request("fake/received", timeout=30))["result"]
    configured = [m for m in received if m.get("method") == "workspace/didChangeConfiguration"]
    assert configured[-1]["params"]["settings"] == {"pylsp": {"ok": 1}}


# ---- row 10: the pylint plugin runs no workspace package ----------------------------------
# (test_no_workspace_module_runs_in_what_pylsp_starts enables it, with a pylint/ package and
# an init-hook in the workspace.)


# ---- the editor's pipe is the reader's alone -------------------------------------------


async def test_no_process_of_steerlsp_holds_the_editors_pipe(start_in, tmp_path):
    workspace, _ = _hostile(tmp_path)
    client, doc, text = await _main_session(start_in, workspace)
    await _still_answers(client, doc.as_uri(), text, "getcwd")
    editor_pipe = os.fstat(client.proc.stdin.get_extra_info("pipe").fileno()).st_ino
    steerlsp = client.proc.pid
    assert os.stat(f"/proc/{steerlsp}/fd/0").st_ino != editor_pipe  # /dev/null now
    children = _descendants(steerlsp)
    assert children  # pylsp, at least
    pylsp = (await _status(client))["upstream"]["pid"]
    assert os.readlink(f"/proc/{pylsp}/fd/0") == "/dev/null"  # its pipe is sys.stdin's alone
    for pid in children:
        assert os.stat(f"/proc/{pid}/fd/0").st_ino != editor_pipe, pid
        with open(f"/proc/{pid}/environ", "rb") as environ:
            assert b"PYTHONSAFEPATH=1" in environ.read().split(b"\0"), pid
        assert not os.readlink(f"/proc/{pid}/cwd").startswith(str(workspace)), pid


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat_file:
                    parents[int(entry)] = int(stat_file.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        for child, parent in parents.items():
            if parent == current:
                found.append(child)
                frontier.append(child)
    return found


# ---- memory limits ---------------------------------------------------------------------------


async def test_pylsp_runs_under_its_memory_limit_which_settings_change(start_in, tmp_path):
    workspace, _ = _hostile(tmp_path)
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    pid = (await _status(client))["upstream"]["pid"]
    assert _address_space_limit(pid) == 2048 * 1024 * 1024
    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"steerlsp": {"upstream": {"memoryLimitMb": 3000}}}},
    )

    async def raised() -> None:
        while _address_space_limit(pid) != 3000 * 1024 * 1024:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(raised(), 10)
    assert (await _status(client))["upstream"]["memory_limit_mb"] == 3000


def _address_space_limit(pid: int) -> int | None:
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max address space"):
                soft = line.split()[3]
                return None if soft == "unlimited" else int(soft)
    return None


async def test_an_upstream_past_its_memory_limit_is_restarted(start_in, tmp_path):
    """Any upstream command: its resident memory is watched (the scripted one here)."""
    workspace, _ = _hostile(tmp_path)
    client = await start_in(workspace, "--no-model", upstream=FAKE_UPSTREAM)
    await client.initialize(workspace, CAPS)
    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"steerlsp": {"upstream": {"memoryLimitMb": 200}}}},
    )
    pid = (await _status(client))["upstream"]["pid"]
    growing = client.send_request("fake/allocate", {"mb": 400})
    reply = await client.response(growing, timeout=60)
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "memory limit (200 MiB)" in reply["error"]["message"]

    async def restarted() -> dict:
        while True:
            upstream = (await _status(client))["upstream"]
            if upstream["state"] == "running" and upstream["pid"] != pid:
                return upstream
            await asyncio.sleep(0.1)

    upstream = await asyncio.wait_for(restarted(), 30)
    assert upstream["memory_restarts"] == 1 and upstream["restarts"] == 1
    assert (await client.request("fake/echo", {"ok": 1}, timeout=30))["result"] == {"ok": 1}


async def test_pylsp_dies_with_steerlsp_even_killed(start_in, tmp_path):
    """An orphaned pylsp busy on a hostile project ran on at 2 GB after its server died."""
    workspace, _ = _hostile(tmp_path)
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    pid = (await _status(client))["upstream"]["pid"]
    client.proc.kill()
    await client.proc.wait()

    async def gone() -> None:
        while os.path.exists(f"/proc/{pid}") and _state(pid) != "Z":
            await asyncio.sleep(0.05)

    await asyncio.wait_for(gone(), 10)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat_file:
            return stat_file.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


# ---- found by the hostile-workspace fuzz (bench/fuzz.py --hostile) --------------------------


@pytest.mark.parametrize("device", ["/dev/stdin", "/dev/stdout", "fifo"])
async def test_an_open_document_whose_path_is_special_is_linted_without_reading_it(
    start_in, tmp_path, device
):
    """CPython's compile() opens the file named after a syntax error to quote its line:
    pyflakes and mccabe passed the document's path, and pylsp read its own input, lost
    its output, or blocked for good on a FIFO. pylint read the path itself."""
    workspace, _ = _hostile(tmp_path)
    if device == "fifo":
        os.mkfifo(workspace / "zz.py")
    else:
        (workspace / "zz.py").symlink_to(device)
    doc = workspace / "main.py"
    text = "import os\nos.getcwd()\n"
    doc.write_text(text)
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"pylsp": {"plugins": {"pylint": {"enabled": True}}}}},
    )
    special = (workspace / "zz.py").as_uri()
    client.open(special, "import os\nos.\n")  # a syntax error
    client.notify("textDocument/didSave", {"textDocument": {"uri": special}})
    client.open(doc.as_uri(), text)
    await _still_answers(client, doc.as_uri(), text, "getcwd")
    errors = await client.wait_for(
        lambda: [
            d
            for n in client.notifications_of("textDocument/publishDiagnostics")
            if n["params"]["uri"] == special
            for d in n["params"]["diagnostics"]
        ],
        timeout=60,
    )
    assert errors  # the syntax error was reported, from the text
    assert await client.shutdown() == 0


async def test_a_request_cancelled_before_pylsp_starts_it_is_answered(start_in, tmp_path):
    """python-lsp-jsonrpc never answers a request cancelled before it started."""
    workspace, _ = _hostile(tmp_path)
    doc = workspace / "main.py"
    text = "x=1\n" * 50
    doc.write_text(text)
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.open(doc.as_uri(), text)
    params = {"textDocument": {"uri": doc.as_uri()}, "options": {"tabSize": 4}}
    sent = []
    for _ in range(100):
        sent.append(client.send_request("textDocument/formatting", params))
        client.notify("$/cancelRequest", {"id": sent[-1]})
    replies = [await client.response(msg_id, timeout=30) for msg_id in sent]
    cancelled = [r for r in replies if r.get("error", {}).get("code") == -32800]
    assert cancelled and all("result" in r or r in cancelled for r in replies)
    await _still_answers(client, doc.as_uri(), text, "x=1")
    assert [r["id"] for r in client.responses].count(sent[0]) == 1


async def test_what_pylsp_started_goes_when_steerlsp_exits(start_in, tmp_path):
    workspace, _ = _hostile(tmp_path)
    (workspace / "slow.py").write_text("x = 1\n")
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    pid = (await _status(client))["upstream"]["pid"]
    group = os.getpgid(pid)
    assert await client.shutdown() == 0
    alive = [p for p in _all_pids() if _group(p) == group]
    assert alive == []


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's idle scheduling class")
async def test_the_editors_pylsp_lints_in_our_session_on_idle_cores(start_in, tmp_path):
    """Linux's autogroup shares the CPU between sessions before priorities count: in a
    session of its own, pylsp's lint of a large file took half the cores from the
    model's decode loop. The default pylsp stays in ours (a process group of its own,
    for Ctrl-C and for the kill at exit); its requests keep their class, and its lints
    run in the idle one (``tests/unit/test_guard.py``). A command of the user's own
    gets a session of its own, as before."""
    workspace, _ = _hostile(tmp_path)
    doc = workspace / "lint_me.py"
    doc.write_text("import os\nx = os.getcwd( )\n")
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.open(doc.as_uri(), doc.read_text())
    await client.wait_for(  # it linted
        lambda: client.notifications_of("textDocument/publishDiagnostics"), timeout=60
    )
    pid = (await _status(client))["upstream"]["pid"]
    ours = client.proc.pid
    assert os.getsid(pid) == os.getsid(ours) and os.getpgid(pid) == pid != os.getpgid(ours)
    assert os.sched_getscheduler(pid) == os.SCHED_OTHER  # the thread that answers

    other = await start_in(workspace, "--no-model", upstream=[sys.executable, "-m", "pylsp"])
    await other.initialize(workspace, CAPS)
    theirs = (await _status(other))["upstream"]["pid"]
    assert os.getsid(theirs) == theirs != os.getsid(other.proc.pid)


async def test_chatlsp_refuses_a_document_too_large_to_analyse_quickly(start_in, tmp_path):
    workspace, _ = _hostile(tmp_path)
    doc = workspace / "big.py"
    text = "".join(f"v{n} = {n}\n" for n in range(80_000))  # ~900 KB
    client = await start_in(workspace, "--no-model")
    await client.initialize(workspace, CAPS)
    client.open(doc.as_uri(), text)
    reply = await client.request(
        "textDocument/expectedType",
        {"textDocument": {"uri": doc.as_uri()}, "position": {"line": 5, "character": 1}},
        timeout=10,
    )
    assert reply["error"]["code"] == REQUEST_FAILED
    assert "chatlsp.maxDocumentBytes" in reply["error"]["message"]


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
