"""The example project of ``make demo`` and of the end-to-end tests: a small shop.

:func:`project` is its root (the directory that holds the ``shop`` package). It
ships with steerlsp as package data, so the demo runs from an installed wheel
as it does from a checkout; the demo and the tests that edit it work on a copy.
"""

from pathlib import Path


def project() -> Path:
    """The example project's root directory."""
    return Path(__file__).resolve().parent / "project"
