"""Shared fixtures, and the tier markers: each test is marked after its folder.

- ``unit``: pure and fast: in-process, or small helper processes (the fake upstream,
  the lint worker); never a ``steerlsp`` process or the embedded model;
- ``e2e``: real processes: ``steerlsp`` over stdio, pylsp, the tasks' venvs; no model;
- ``model``: the embedded default model;
- ``editors``: Neovim, Emacs, VS Code and Helix.

``make test-unit`` and the other ``test-*`` targets select a tier by its folder;
``-m`` selects by marker across folders.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from steerlsp import example
from tests.helpers.fuzzing import INLINE_CAPS, FuzzClient
from tests.helpers.rawclient import RawClient

SHOP = example.project()
TIERS = ("unit", "e2e", "model", "editors")
HERE = Path(__file__).parent

StartRaw = Callable[[list[str]], Awaitable[RawClient]]


@pytest.fixture
def shop() -> Path:
    """The example project shared by the e2e tests and ``make demo``."""
    return SHOP


@pytest_asyncio.fixture
async def start_raw() -> AsyncIterator[StartRaw]:
    """Start byte-level clients; every process is killed at teardown."""
    clients: list[RawClient] = []

    async def start(command: list[str]) -> RawClient:
        client = await RawClient.start(command)
        clients.append(client)
        return client

    yield start
    for client in clients:
        await client.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its tier: the first folder under tests/."""
    for item in items:
        tier = item.path.relative_to(HERE).parts[0]
        if tier in TIERS:
            item.add_marker(tier)


@pytest_asyncio.fixture
async def start_fuzz() -> AsyncIterator[Callable[..., Awaitable[FuzzClient]]]:
    """Starts FuzzClients (initialized, inline-completion capabilities by default); all
    closed after the test (tests/e2e/test_fuzz.py, tests/model/test_cancel_burst.py)."""
    clients: list[FuzzClient] = []

    async def start(
        command: list[str], root: Path, caps: dict = INLINE_CAPS, options=None
    ) -> FuzzClient:
        client = await FuzzClient.start(command)
        clients.append(client)
        params = {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": caps,
            "initializationOptions": options or {},
        }
        assert "result" in await client.request("initialize", params, "setup-initialize")
        client.notify("initialized", {})
        return client

    yield start
    for client in clients:
        await client.close()
