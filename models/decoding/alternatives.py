"""An invoked completion's alternatives, for both completers: further completions
sampled warm with fixed seeds (the same prompt gets the same alternatives), distinct
from the first and from each other, until enough are found or the time is up."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from steerlsp.models.options import Sampling

# Warm enough to differ from the greedy completion, with the nucleus cutting the tail
# a 270M model puts much mass on. Sample ``n`` uses seed ``n``.
ALTERNATIVE_SAMPLING = Sampling(temperature=0.7, top_p=0.95)
# Draws per wanted alternative: a draw can repeat one already found, or be empty.
DRAWS_PER_ALTERNATIVE = 2


def distinct_draws(
    first: str,
    wanted: int,
    draw: Callable[[Sampling], str | None],
    expired: Callable[[], bool],
) -> tuple[str, ...]:
    """Up to ``wanted`` texts from ``draw`` (one sampled completion, finished; None: the
    time ran out mid-draw and nothing more is drawn), distinct from ``first`` and from
    each other after trailing whitespace, none empty. No draw starts once ``expired()``."""
    seen = {first.rstrip()}
    found: list[str] = []
    for seed in range(1, wanted * DRAWS_PER_ALTERNATIVE + 1):
        if len(found) >= wanted or expired():
            break
        text = draw(dataclasses.replace(ALTERNATIVE_SAMPLING, seed=seed))
        if text is None:
            break
        if text.strip() and text.rstrip() not in seen:
            seen.add(text.rstrip())
            found.append(text)
    return tuple(found)
