"""The stdin reader thread: the session is deaf without it, so nothing may end it early."""

from __future__ import annotations

import asyncio
import os

from steerlsp.server.lsp import transport
from steerlsp.server.lsp.framing import FrameDecoder, encode_frame


async def test_the_reader_survives_a_framing_bug_and_reads_on(monkeypatch):
    calls = {"n": 0}
    real_feed = FrameDecoder.feed

    def flaky_feed(self, data):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("a bug in the decoder")
        return real_feed(self, data)

    monkeypatch.setattr(FrameDecoder, "feed", flaky_feed)
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    events: list[bytes] = []
    eof = asyncio.Event()
    thread = transport.start_reader(
        lambda n: os.read(read_fd, n), read_fd, loop, events.extend, eof.set
    )
    os.write(write_fd, encode_frame(b'{"first": 1}'))
    while calls["n"] < 1:
        await asyncio.sleep(0.01)
    os.write(write_fd, encode_frame(b'{"second": 2}'))
    os.close(write_fd)
    await asyncio.wait_for(eof.wait(), 5)
    thread.join(5)
    os.close(read_fd)
    assert events == [b'{"second": 2}']
    assert not thread.is_alive()
