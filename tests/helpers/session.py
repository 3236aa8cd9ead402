"""A real ``steerlsp`` session over stdio, as the e2e and real-model tests drive it.

:func:`start` launches the server through the ``start_raw`` fixture and
initializes it; :func:`ready` waits for the embedded model; the rest send the
requests an editor sends (inline completion, ``steerlsp/explain``).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from tests.helpers.rawclient import RawClient, steerlsp_command

REQUEST_CANCELLED, REQUEST_FAILED = -32800, -32803
CAPS = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {"inlineCompletion": {}},
    "window": {"workDoneProgress": True},
}
LOOP = (
    "import os\n\n\ndef list_python_files(folder):\n"
    '    """Print every .py file in folder."""\n'
    "    for name in os.listdir(folder):\n        "
)
CALL = (
    'import os\n\n\ndef config_path(home):\n    """The config file under home."""\n'
    "    return os.path.join(home, "
)


async def start(
    start_raw, root: Path, *flags: str, caps: dict | None = None, options: dict | None = None
) -> RawClient:
    """Start ``steerlsp`` with ``flags`` and initialize it on ``root`` (inline completion on)."""
    client = await start_raw(steerlsp_command(*flags))
    reply = await client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": caps or CAPS,
            "initializationOptions": options or {},
        },
    )
    assert "inlineCompletionProvider" in reply["result"]["capabilities"]
    client.notify("initialized", {})
    return client


async def ready(client: RawClient, timeout: float = 600) -> None:
    """Wait until the embedded model is loaded; a failed load fails the test."""

    async def poll():
        while True:
            model = (await client.request("steerlsp/status"))["result"]["model"]
            assert model["state"] != "failed", model
            if model["state"] == "ready":
                return
            await asyncio.sleep(0.2)

    await asyncio.wait_for(poll(), timeout)


def inline(client: RawClient, uri: str, text: str, trigger: int = 1) -> object:
    """Send an inline completion request at the end of ``text``; returns its id."""
    lines = text.split("\n")
    return client.send_request(
        "textDocument/inlineCompletion",
        {
            "textDocument": {"uri": uri},
            "position": {"line": len(lines) - 1, "character": len(lines[-1])},
            "context": {"triggerKind": trigger},
        },
    )


def opened(client: RawClient, tmp_path: Path, text: str, name: str = "main.py") -> str:
    """Open ``text`` as ``tmp_path/name``; returns its URI."""
    uri = (tmp_path / name).as_uri()
    client.open(uri, text)
    return uri


async def generating(client: RawClient, timeout: float = 60) -> None:
    """Until the model worker is running a job (forces "change while running")."""

    async def poll() -> None:
        while not (await client.request("steerlsp/status"))["result"]["model"]["worker"]["running"]:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


# Generous budgets: the machine running the tests may be busy, and a slow
# answer would leave the completion unsteered (traced, but not what this tests).
PATIENT = {"steering": {"queryTimeoutMs": 5000, "budgetMs": 10000}}


def cursor(text: str) -> dict[str, int]:
    """The LSP position at the end of ``text``."""
    lines = text.split("\n")
    return {"line": len(lines) - 1, "character": len(lines[-1])}


async def explain(client, uri: str) -> dict:
    """The ``steerlsp/explain`` result for ``uri``'s last completion."""
    reply = await client.request("steerlsp/explain", {"textDocument": {"uri": uri}})
    assert "result" in reply, reply
    return reply["result"]


async def complete(client, uri: str, text: str) -> str:
    """An invoked inline completion at the end of ``text``: the first item's text, or ""."""
    reply = await client.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": cursor(text), "context": {"triggerKind": 1}},
        timeout=120,
    )
    assert "result" in reply, reply
    items = reply["result"]["items"]
    return items[0]["insertText"] if items else ""


async def warm_analysis(client, timeout: float = 60) -> dict:
    """The analysis instance is started when the model is ready, before any completion."""

    async def poll() -> dict:
        while True:
            analysis = (await client.request("steerlsp/status"))["result"]["analysis"]
            if analysis["state"] == "running":
                return analysis
            await asyncio.sleep(0.2)

    return await asyncio.wait_for(poll(), timeout)


async def started_logging(tmp_path: Path, level: str, *flags: str) -> tuple[RawClient, Path]:
    """A server whose stderr goes to a file, initialized (open a file with ``opened``)."""
    log = tmp_path / f"stderr-{level}.txt"
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            *steerlsp_command("--log-level", level, *flags),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
        )
    client = RawClient(proc)
    reply = await client.request(
        "initialize",
        {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": CAPS},
        timeout=60,
    )
    assert "result" in reply, reply
    client.notify("initialized", {})
    return client, log


async def stopped_logging(client: RawClient, log: Path) -> str:
    """The whole of stderr, once the server has exited."""
    try:
        assert await client.shutdown() == 0
    finally:
        await client.close()
    return log.read_text(encoding="utf-8", errors="replace")


TASKS = Path(__file__).parents[2] / "bench" / "tasks"
# As the task suite runs a task: a whole block (96 tokens), one item; patient steering.
TASK_OPTIONS = {**PATIENT, "completion": {"maxNewTokens": 96, "alternatives": 1}}


async def open_task(
    start_raw, task: str, root: Path, after: str = ""
) -> tuple[RawClient, str, str]:
    """A copy of the task suite's ``task`` at ``root``, a server on it with
    :data:`TASK_OPTIONS`, the model loaded and the analysis running, and the task's
    prompt open with ``after`` written after it. -> (client, uri, buffer)"""
    shutil.copytree(TASKS / task, root)
    buffer = (root / "prompt.py").read_text() + after
    client = await start(start_raw, root, options={"steerlsp": TASK_OPTIONS})
    await ready(client)
    await warm_analysis(client)
    uri = (root / "prompt.py").as_uri()
    client.open(uri, buffer)
    return client, uri, buffer
