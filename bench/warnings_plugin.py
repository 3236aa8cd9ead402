"""A pytest plugin the grader loads into a task's venv: the warnings the tests raised, as JSON.

Grading asks whether the completed code *ran* a deprecated API. Two sources, because
neither alone is enough:

- ``pytest_warning_recorded``: every warning pytest captured, with the file it names.
  This sees warnings raised from C (numpy), but a library that warns with the wrong
  ``stacklevel`` (pydantic 2's ``BaseModel.dict()`` names its own ``main.py``) hides the
  caller, and a test that turns warnings into errors leaves pytest nothing to record.
- ``warnings.warn`` wrapped: each call records its ``stacklevel``, the frame the warning
  names and that frame's caller, before any filter (``ignore``, ``error``) applies.

``tests.helpers.evaltasks.deprecated_uses`` decides which records count. The records go to the
file named by ``STEERLSP_WARNINGS``. This file is copied next to the task's tests and
loaded with ``-p``; it must import nothing but the standard library.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from types import FrameType
from typing import Any

_RECORDS: list[dict[str, Any]] = []
_CALLERS = 2  # the frame the warning names and its caller: a direct call of a deprecated API


def _record(category: type, message: Any, filename: str, lineno: int, **extra: Any) -> None:
    _RECORDS.append(
        {
            "category": category.__name__,
            "bases": [c.__name__ for c in category.__mro__],
            "message": str(message)[:300],
            "filename": str(filename),
            "lineno": lineno,
            **extra,
        }
    )


def pytest_warning_recorded(warning_message: Any, when: str, nodeid: str, location: Any) -> None:
    _record(
        warning_message.category,
        warning_message.message,
        warning_message.filename,
        warning_message.lineno,
        when=when,
        nodeid=nodeid,
    )


_warn = warnings.warn


def _recording_warn(
    message: Any, category: Any = None, stacklevel: int = 1, *args: Any, **kwargs: Any
) -> None:
    try:
        kind = type(message) if isinstance(message, Warning) else category or UserWarning
        frame: FrameType | None = sys._getframe(max(1, stacklevel))
        callers: list[tuple[str, int]] = []
        while frame is not None and len(callers) < _CALLERS:
            callers.append((frame.f_code.co_filename, frame.f_lineno))
            frame = frame.f_back
        if callers and isinstance(kind, type):
            (filename, lineno), *_ = callers
            _record(
                kind,
                message,
                filename,
                lineno,
                when="warn",
                stacklevel=stacklevel,
                callers=callers,
            )
    except Exception:  # recording must never change what the tests see
        pass
    _warn(message, category, stacklevel + 1, *args, **kwargs)


def pytest_configure(config: Any) -> None:
    warnings.warn = _recording_warn  # before the task's libraries are imported


def pytest_unconfigure(config: Any) -> None:
    warnings.warn = _warn
    path = os.environ.get("STEERLSP_WARNINGS")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(_RECORDS, out)
