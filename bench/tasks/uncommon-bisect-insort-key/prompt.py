"""A small in-memory job queue ordered by priority."""

import bisect
from dataclasses import dataclass


@dataclass
class Job:
    name: str
    priority: int


def enqueue(queue: list[Job], job: Job) -> None:
    """Insert ``job`` into ``queue`` in place.

    ``queue`` is already sorted by ascending ``priority``. Keep it sorted and
    put ``job`` after any jobs with the same priority, so equal-priority jobs
    run in arrival order. Find the position by binary search.
    """
    