"""Build ordering for a tiny task runner."""

import graphlib


def build_order(deps: dict[str, set[str]]) -> list[str]:
    """Return every target in an order where each one comes after all of its
    dependencies.

    ``deps`` maps a target to the set of targets it depends on; a dependency
    that is not itself a key is still part of the result. Raise ``ValueError``
    if the dependencies contain a cycle.
    """
    