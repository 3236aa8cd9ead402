from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import pytest_asyncio

from steerlsp import example
from tests.helpers.rawclient import RawClient

SHOP = example.project()

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
