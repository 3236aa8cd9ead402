import shlex
from unittest.mock import patch

from candidate import log_line


def _command(line: str, cwd: str) -> str:
    prefix = f"({cwd}) $ "
    assert line.startswith(prefix)
    return line[len(prefix) :]


def test_output_simple():
    assert log_line(["git", "pull", "--rebase"], "/srv/app") == "(/srv/app) $ git pull --rebase"


def test_output_round_trips():
    argv = ["rsync", "-a", "my docs/", "it's here", "$HOME", "a;b", "", "*.txt"]
    line = log_line(argv, "/tmp")
    assert shlex.split(_command(line, "/tmp")) == argv


def test_output_empty_argument_is_kept():
    line = log_line(["echo", ""], "/")
    assert shlex.split(_command(line, "/")) == ["echo", ""]


def test_approach_uses_shlex_join():
    with patch.object(shlex, "join", wraps=shlex.join) as spy:
        assert log_line(["ls", "a b"], "/") == "(/) $ ls 'a b'"
    spy.assert_called()
