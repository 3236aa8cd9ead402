"""One thread that runs every model job in order, never the event loop.

A job is a function of its :class:`CancelToken`; the decode loop checks the
token at every step, so cancelling stops a generation within one step. A job
cancelled before it starts never runs, and its future is settled at once.

Every future is settled exactly once, whoever gets there first: the worker, a
cancel, or an awaiting ``asyncio.wrap_future`` that cancels the future when
its task is cancelled. Nothing a job or a cancel does can end the thread; if
it ends anyway, a watcher fails every job that was waiting on it and starts a
new one.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

# Restarts are for a bug in the worker's own machinery; one that keeps firing
# must not become a busy loop of thread starts.
MAX_RESTARTS = 10


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


class WorkerDied(Exception):
    """The model thread ended while the job waited or ran; a new one was started."""


class JobFailed(Exception):
    """A job raised a ``BaseException`` that is not an ``Exception`` (``SystemExit``...).

    Delivered in its place: re-raised in an asyncio task, ``SystemExit`` would
    stop the event loop.
    """


class Job(Generic[T]):
    """A submitted job: its token and the future of its result."""

    def __init__(self, fn: Callable[[CancelToken], T]) -> None:
        self.fn = fn
        self.token = CancelToken()
        self.future: Future[T] = Future()
        # Orders "the worker starts it" against "a cancel settles it unstarted".
        self._lock = threading.Lock()
        self._started = False

    def cancel(self) -> None:
        """Stop it at the next decode step; if it has not started, settle it now."""
        with self._lock:
            self.token.cancel()
            if not self._started:
                self.settle(error=JobCancelled())

    def claim(self) -> bool:
        """The worker's check before running: False if it was cancelled or settled."""
        with self._lock:
            if self.token.cancelled:
                self.settle(error=JobCancelled())
                return False
            if self.future.done():
                return False
            self._started = True
            return self.future.set_running_or_notify_cancel()

    def settle(self, result: Any = None, error: BaseException | None = None) -> bool:
        """Set the result or error unless the future is already done; True if set."""
        try:
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)
        except InvalidStateError:  # cancelled or settled meanwhile: the first answer stands
            return False
        return True


class ModelWorker:
    """A FIFO of jobs served by one daemon thread, replaced if it ever dies."""

    def __init__(self, name: str = "steerlsp-model") -> None:
        self.name = name
        self.restarts = 0
        self.submitted = 0
        self.gave_up: str | None = None  # why no thread serves jobs any more
        self._jobs: queue.Queue[Job[Any] | None] = queue.Queue()
        self._lock = threading.RLock()
        self._stopped = False
        self._current: Job[Any] | None = None  # until settled: a dying thread's job fails
        self._busy = False  # until its result is known: what status reports
        self._thread = self._start()

    def submit(self, fn: Callable[[CancelToken], T]) -> Job[T]:
        """Queue ``fn``; returns at once."""
        job: Job[T] = Job(fn)
        with self._lock:
            self.submitted += 1
            if not self._thread.is_alive() and not self._stopped:
                self._replace(self._thread)  # the watcher has not got there yet
            if self.gave_up is not None or self._stopped:
                job.settle(error=WorkerDied(self.gave_up or "the model worker was stopped"))
                return job
            self._jobs.put(job)
        return job

    def stop(self) -> None:
        """Finish the current job, then end the thread."""
        with self._lock:
            self._stopped = True
            self._jobs.put(None)

    def busy(self) -> bool:
        """Whether a job is running or waiting."""
        return self._busy or not self._jobs.empty()

    def health(self) -> dict[str, Any]:
        """For ``steerlsp/status``: is a thread serving jobs, and how busy is it."""
        return {
            "alive": self._thread.is_alive() and self.gave_up is None,
            "restarts": self.restarts,
            "queued": self._jobs.qsize(),
            "running": self._busy,
            "submitted": self.submitted,
        }

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        thread.start()
        threading.Thread(
            target=self._watch, args=(thread,), name=f"{self.name}-watch", daemon=True
        ).start()
        return thread

    def _watch(self, thread: threading.Thread) -> None:
        thread.join()
        with self._lock:
            if not self._stopped:
                self._replace(thread)

    def _replace(self, dead: threading.Thread) -> None:
        """``dead`` ended unasked: fail what waited on it and start another thread."""
        if dead is not self._thread or self.gave_up is not None:
            return  # already replaced (by submit or the watcher)
        waiting = [self._current] if self._current is not None else []
        self._current = None
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                waiting.append(job)
        self.restarts += 1
        if self.restarts > MAX_RESTARTS:
            self.gave_up = f"the model thread died {self.restarts} times; restart steerlsp"
        log.error(
            "the model thread died; failing %d waiting job(s), %s",
            len(waiting),
            self.gave_up or "starting a new one",
        )
        for job in waiting:
            job.settle(error=WorkerDied(self.gave_up or "the model thread died and was restarted"))
        if self.gave_up is None:
            self._thread = self._start()

    def _run(self) -> None:
        try:
            while (job := self._jobs.get()) is not None:
                try:
                    self._serve(job)
                except BaseException:  # our own bookkeeping failed; the job still gets an answer
                    log.exception("model worker error")
                    job.settle(error=WorkerDied("internal error in the model worker"))
                finally:
                    self._current = None
        except BaseException:  # logged here; the watcher fails the waiting jobs and replaces us
            log.exception("the model thread failed")

    def _serve(self, job: Job[Any]) -> None:
        if not job.claim():
            return
        self._current, self._busy = job, True
        result: Any = None
        error: BaseException | None = None
        try:
            result = job.fn(job.token)
        except Exception as exc:  # reported to the awaiting request, never lost
            error = exc
        except BaseException as exc:
            error = JobFailed(f"the model job raised {exc!r}")
        finally:
            self._busy = False  # before the answer, so a status read after it is idle
        job.settle(result, error)
