"""One thread that runs every model job in order, never the event loop.

A job is a function of its :class:`CancelToken`; the decode loop checks the
token at every step, so cancelling stops a generation within one step. A job
cancelled before it starts never runs.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class CancelToken:
    """Set once; read at every decode step."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


class JobCancelled(Exception):
    """Raised by a job that saw its token set."""


class Job(Generic[T]):
    """A submitted job: its token and the future of its result."""

    def __init__(self, fn: Callable[[CancelToken], T]) -> None:
        self.fn = fn
        self.token = CancelToken()
        self.future: Future[T] = Future()

    def cancel(self) -> None:
        """Stop it at the next decode step (or before it starts)."""
        self.token.cancel()


class ModelWorker:
    """A FIFO of jobs served by one daemon thread."""

    def __init__(self, name: str = "steerlsp-model") -> None:
        self._jobs: queue.Queue[Job[Any] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[CancelToken], T]) -> Job[T]:
        """Queue ``fn``; returns at once."""
        job: Job[T] = Job(fn)
        self._jobs.put(job)
        return job

    def stop(self) -> None:
        """Finish the current job, then end the thread."""
        self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            if job.token.cancelled:
                job.future.set_exception(JobCancelled())
                continue
            if not job.future.set_running_or_notify_cancel():
                continue
            try:
                job.future.set_result(job.fn(job.token))
            except BaseException as exc:  # reported to the awaiting request, never lost
                job.future.set_exception(exc)
