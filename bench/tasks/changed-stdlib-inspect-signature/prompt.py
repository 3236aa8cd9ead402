"""Tiny command dispatcher: checks CLI options against handler functions."""
import inspect
from typing import Callable


def required_params(func: Callable) -> list[str]:
    """Return the names of the parameters of ``func`` that a caller must
    supply by keyword: positional-or-keyword and keyword-only parameters
    without a default value, in declaration order. ``*args``/``**kwargs``
    and positional-only parameters are skipped.

    ``func`` may be a plain function, a bound method (``self`` is not
    reported) or a ``functools.partial`` (arguments it already binds are
    not reported).
    """
    