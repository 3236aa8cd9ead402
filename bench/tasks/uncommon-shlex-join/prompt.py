"""Logging helpers for a deploy script."""

import shlex


def log_line(argv: list[str], cwd: str) -> str:
    """Return the log line ``"(<cwd>) $ <command>"`` for running ``argv``.

    ``<command>`` is ``argv`` rendered as one string that a POSIX shell would
    split back into exactly the same arguments, so it can be copy-pasted.
    """
    