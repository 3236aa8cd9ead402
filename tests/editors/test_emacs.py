"""Emacs, when it is on PATH (Debian: apt-get install emacs-nox elpa-eglot): batch
sessions load the shipped editor-configs/emacs/steerlsp.el, start steerlsp on a copy
of the example project, and check what a user gets.

Eglot has no inline completion, so the AI suggestion is the "✨" item that steerlsp
adds to textDocument/completion once the model is ready; the session asks again
(as a keystroke would) until it is there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.rawclient import steerlsp_command

REPO = Path(__file__).resolve().parents[2]
STEERLSP_EL = REPO / "editor-configs" / "emacs" / "steerlsp.el"
SESSIONS = Path(__file__).parent / "emacs"
EMACS = shutil.which("emacs")
needs_emacs = pytest.mark.skipif(
    EMACS is None, reason="emacs is not on PATH (apt-get install emacs-nox elpa-eglot)"
)


def _has(feature: str) -> bool:
    """Whether batch Emacs can load ``feature`` (site-lisp packages included)."""
    assert EMACS is not None
    probe = f"(kill-emacs (if (require '{feature} nil t) 0 1))"
    done = subprocess.run(
        [EMACS, "--batch", "--eval", probe], capture_output=True, timeout=60, check=False
    )
    return done.returncode == 0


def _session(script: str, root: Path, tmp_path: Path, *flags: str) -> dict:
    assert EMACS is not None
    out = tmp_path / "facts.json"
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),  # no user init, no saved lsp-mode session
        "STEERLSP_EL": str(STEERLSP_EL),
        "STEERLSP_CMD": json.dumps(steerlsp_command(*flags)),
        "STEERLSP_ROOT": str(root),
        "STEERLSP_OUT": str(out),
        "STEERLSP_MODEL_TIMEOUT": "600",
    }
    done = subprocess.run(
        [EMACS, "--batch", "-l", str(SESSIONS / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert out.exists(), done.stderr[-3000:]
    facts = json.loads(out.read_text())
    assert "error" not in facts, f"{facts['error']}\n{done.stderr[-3000:]}"
    return facts


@pytest.fixture
def root(shop, tmp_path) -> Path:
    copy = tmp_path / "shop"
    shutil.copytree(shop, copy)
    return copy


def test_steerlsp_el_byte_compiles_cleanly(tmp_path):
    if EMACS is None:
        pytest.skip("emacs is not on PATH")
    copy = tmp_path / "steerlsp.el"
    shutil.copy(STEERLSP_EL, copy)
    done = subprocess.run(
        [EMACS, "--batch", "-f", "batch-byte-compile", str(copy)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr


@needs_emacs
@pytest.mark.timeout(1000)
def test_eglot_session(root, tmp_path):
    if not _has("eglot"):
        pytest.skip("Eglot is not installed (Emacs 29+ has it; on 28: apt-get install elpa-eglot)")
    facts = _session("session.el", root, tmp_path)
    assert facts["server"] == "steerlsp"
    assert facts["major_mode"] == "python-mode"
    assert "textDocument/expectedType" in facts["chatlsp"]
    # Hover is pylsp's, through steerlsp.
    assert "discount(price: Price, percent: float) -> Price" in facts["hover"]
    # The ChatLSP commands (workspace/executeCommand) in the help buffer.
    assert "\n    Price\n" in facts["expected_type"]
    assert "class Price:" in facts["relevant_types"]
    assert "Needs repair." in facts["error_report"]
    assert facts["first_state"] in ("loading", "ready")
    assert facts["model_state"] == "ready"
    # pylsp's items for `cart.` and the AI item on top.
    assert {"total", "sale", "items", "add"} <= set(facts["items"])
    assert facts["ai_item"] and facts["ai_item"].startswith("✨ ")
    assert facts["items"][0] == facts["ai_item"], "the AI item sorts first"
    assert "steered: " in facts["explain"]


@needs_emacs
@pytest.mark.timeout(300)
def test_lsp_mode_registration_and_commands(root, tmp_path):
    """lsp-mode, where installed (not in CI): the client and a ChatLSP command.
    Debian's lsp-mode 8.0 has no inline completion; the setup says so."""
    if not _has("lsp-mode"):
        pytest.skip("lsp-mode is not installed (apt-get install elpa-lsp-mode, or MELPA)")
    facts = _session("lsp_session.el", root, tmp_path, "--no-model")
    assert facts["registered"] is True
    assert facts["server"] == "steerlsp"
    assert "\n    Price\n" in facts["expected_type"]
    assert facts["state"] == "disabled"
