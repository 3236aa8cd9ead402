"""Helpers for running build steps inside a project checkout."""

import contextlib
import os
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def run_in_dir(path: str | os.PathLike[str], step: Callable[[], T]) -> T:
    """Call ``step()`` with the process working directory set to ``path`` and
    return its result.

    The previous working directory is restored afterwards, even if ``step``
    raises.
    """
    