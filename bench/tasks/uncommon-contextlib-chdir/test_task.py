import contextlib
import os
from pathlib import Path
from unittest.mock import patch

import pytest
from candidate import run_in_dir


def test_output_runs_in_dir_and_restores(tmp_path):
    before = os.getcwd()
    seen = run_in_dir(tmp_path, os.getcwd)
    assert os.path.realpath(seen) == os.path.realpath(tmp_path)
    assert os.getcwd() == before


def test_output_returns_result(tmp_path):
    (tmp_path / "VERSION").write_text("1.2.3")
    assert run_in_dir(str(tmp_path), lambda: Path("VERSION").read_text()) == "1.2.3"


def test_output_restores_on_error(tmp_path):
    before = os.getcwd()

    def boom():
        raise RuntimeError("step failed")

    with pytest.raises(RuntimeError, match="step failed"):
        run_in_dir(tmp_path, boom)
    assert os.getcwd() == before


def test_approach_uses_contextlib_chdir(tmp_path):
    before = os.getcwd()
    with patch.object(contextlib, "chdir", wraps=contextlib.chdir) as spy:
        run_in_dir(tmp_path, lambda: None)
    spy.assert_called()
    assert os.getcwd() == before
