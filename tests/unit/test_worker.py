"""The model worker: one thread, FIFO, cancellable jobs, errors delivered."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from typing import Any

import pytest

from steerlsp.models.decoding import worker as worker_module
from steerlsp.models.decoding.worker import Job, JobCancelled, JobFailed, ModelWorker, WorkerDied
from steerlsp.server.config import Settings
from steerlsp.server.documents.workspace import SteerDocument
from steerlsp.server.lsp.errors import RequestFailed
from tests.helpers.completions import completion_of, completions_over, workspace_with


def test_jobs_run_in_order_on_one_thread():
    worker = ModelWorker()
    names = []
    jobs = [
        worker.submit(lambda token, i=i: names.append((i, threading.current_thread().name)))
        for i in range(5)
    ]
    for job in jobs:
        job.future.result(5)
    assert [i for i, _ in names] == list(range(5))
    assert {name for _, name in names} == {"steerlsp-model"}
    worker.stop()


def test_a_job_cancelled_before_it_starts_never_runs():
    worker = ModelWorker()
    gate = threading.Event()
    blocker = worker.submit(lambda token: gate.wait(5))
    ran = []
    queued = worker.submit(lambda token: ran.append(1))
    queued.cancel()
    gate.set()
    blocker.future.result(5)
    with pytest.raises(JobCancelled):
        queued.future.result(5)
    assert not ran
    worker.stop()


def test_a_running_job_sees_its_token_cancelled_at_once():
    worker = ModelWorker()
    running = threading.Event()
    seen = {}

    def loop(token):
        seen["token"] = token
        running.set()
        while not token.cancelled:
            time.sleep(0.001)
        return "stopped"

    job = worker.submit(loop)
    assert running.wait(5)
    job.cancel()
    assert seen["token"].cancelled  # set by cancel() itself, before the loop's next turn
    assert job.future.result(5) == "stopped"
    worker.stop()


def test_errors_reach_the_caller_and_the_worker_survives():
    worker = ModelWorker()
    failing = worker.submit(lambda token: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.future.result(5)
    assert worker.submit(lambda token: "still here").future.result(5) == "still here"
    worker.stop()


# ---- interleavings of cancels, failures and a dying thread ----------------


def blocked(worker: ModelWorker) -> tuple[threading.Event, Job[Any]]:
    """A running job that holds the thread until the gate opens."""
    gate, started = threading.Event(), threading.Event()
    job = worker.submit(lambda token: started.set() or gate.wait(5))
    assert started.wait(5)
    return gate, job


def test_a_future_cancelled_by_its_consumer_while_queued_never_runs():
    # asyncio.wrap_future cancels the concurrent future when the awaiting task
    # is cancelled; the token is set right after. The worker used to call
    # set_exception on that cancelled future and die of InvalidStateError.
    worker = ModelWorker()
    gate, blocker = blocked(worker)
    ran = []
    queued = worker.submit(lambda token: ran.append(1))
    assert queued.future.cancel()
    queued.cancel()
    gate.set()
    blocker.future.result(5)
    assert worker.submit(lambda token: "alive").future.result(5) == "alive"
    assert not ran and queued.future.cancelled()
    assert worker.health()["alive"] and worker.health()["restarts"] == 0
    worker.stop()


def test_a_future_cancelled_by_its_consumer_without_the_token():
    worker = ModelWorker()
    gate, _ = blocked(worker)
    queued = worker.submit(lambda token: "never")
    assert queued.future.cancel()
    gate.set()
    assert worker.submit(lambda token: "alive").future.result(5) == "alive"
    worker.stop()


def test_cancelling_a_queued_job_answers_at_once():
    worker = ModelWorker()
    gate, _ = blocked(worker)
    queued = worker.submit(lambda token: "never")
    queued.cancel()
    with pytest.raises(JobCancelled):
        queued.future.result(0)  # settled by the cancel, not behind the running job
    assert worker.health() | {"submitted": 0} == {
        "alive": True,
        "restarts": 0,
        "queued": 1,
        "running": True,
        "submitted": 0,
    }
    gate.set()
    assert worker.submit(lambda token: "alive").future.result(5) == "alive"
    worker.stop()


def test_cancel_while_running_and_cancel_after_the_result():
    worker = ModelWorker()
    started = threading.Event()

    def loop(token):
        started.set()
        while not token.cancelled:
            time.sleep(0.001)
        raise JobCancelled()

    job = worker.submit(loop)
    assert started.wait(5)
    job.cancel()
    job.future.cancel()  # a running future cannot be cancelled: no effect
    with pytest.raises(JobCancelled):
        job.future.result(5)
    done = worker.submit(lambda token: "done")
    assert done.future.result(5) == "done"
    done.cancel()  # too late: the result stands
    assert done.future.result(0) == "done"
    assert worker.submit(lambda token: "alive").future.result(5) == "alive"
    worker.stop()


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()])
def test_a_job_raising_a_base_exception_is_reported_and_survived(exc):
    worker = ModelWorker()

    def job(token):
        raise exc

    failing = worker.submit(job)
    with pytest.raises(JobFailed, match=type(exc).__name__):
        failing.future.result(5)
    assert worker.submit(lambda token: "alive").future.result(5) == "alive"
    assert worker.health()["restarts"] == 0
    worker.stop()


def test_a_dead_thread_fails_what_waited_on_it_and_is_replaced(monkeypatch):
    worker = ModelWorker()
    first = worker._thread
    gate, blocker = blocked(worker)
    real_get = worker._jobs.get
    calls = []

    def dying_get(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:  # the worker's own machinery fails once: the thread ends
            raise SystemExit
        return real_get(*args, **kwargs)

    monkeypatch.setattr(worker._jobs, "get", dying_get)
    waiting = [worker.submit(lambda token: "stranded") for _ in range(2)]
    gate.set()
    assert blocker.future.result(5) is True
    for job in waiting:
        with pytest.raises(WorkerDied):
            job.future.result(5)
    first.join(5)
    assert worker.submit(lambda token: "revived").future.result(5) == "revived"
    health = worker.health()
    assert health["alive"] and health["restarts"] == 1 and worker._thread is not first
    worker.stop()


def test_a_thread_that_keeps_dying_is_given_up_on(monkeypatch):
    monkeypatch.setattr(worker_module, "MAX_RESTARTS", 2)
    worker = ModelWorker()

    def dying_get(*args, **kwargs):
        if kwargs.get("block", True):
            raise SystemExit
        raise queue.Empty

    monkeypatch.setattr(worker._jobs, "get", dying_get)
    worker._jobs.put(None)  # wake the idle thread into the failing get

    def given_up():
        return worker.gave_up is not None

    deadline = time.monotonic() + 5
    while not given_up() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert given_up() and not worker.health()["alive"]
    with pytest.raises(WorkerDied, match="restart steerlsp"):
        worker.submit(lambda token: "never").future.result(1)


# ---- the server's side: a waiting request gets RequestFailed, the next works --


class GatedCompleter:
    """Stands in for the model: the first completion holds the thread until released."""

    def __init__(self) -> None:
        self.gate, self.started = threading.Event(), threading.Event()

    def complete(self, request, options, token):
        if not self.started.is_set():
            self.started.set()
            self.gate.wait(5)
        return completion_of("x = 1")


async def test_requests_waiting_on_a_dead_thread_fail_and_the_next_one_works(monkeypatch):
    docs = {
        uri: SteerDocument(uri, "", "utf-16", version=1)
        for uri in ("file:///w/a.py", "file:///w/b.py")
    }
    completer = GatedCompleter()
    completions = completions_over(workspace_with(docs), Settings(), completer)
    worker = completions.host.worker

    running = asyncio.ensure_future(
        completions.generate("file:///w/a.py", 1, "", "", debounce=False)
    )
    await asyncio.to_thread(completer.started.wait, 5)
    waiting = asyncio.ensure_future(
        completions.generate("file:///w/b.py", 1, "", "", debounce=False)
    )
    await asyncio.sleep(0)  # submitted: queued behind the running job
    assert completions.host.status()["worker"]["queued"] == 1

    real_get = worker._jobs.get
    calls = []

    def dying_get(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise SystemExit
        return real_get(*args, **kwargs)

    monkeypatch.setattr(worker._jobs, "get", dying_get)
    completer.gate.set()
    assert await asyncio.wait_for(running, 5) == ("x = 1",)
    with pytest.raises(RequestFailed) as failed:
        await asyncio.wait_for(waiting, 5)
    assert failed.value.code == -32803 and "restarted" in failed.value.message
    again = completions.generate("file:///w/b.py", 1, "", "", debounce=False)
    assert await asyncio.wait_for(again, 5) == ("x = 1",)
    status = completions.host.status()
    assert status["state"] == "ready"
    assert status["worker"] | {"submitted": 0} == {
        "alive": True,
        "restarts": 1,
        "queued": 0,
        "running": False,
        "submitted": 0,
    }
    worker.stop()


def test_a_job_submitted_after_stop_is_answered():
    worker = ModelWorker()
    worker.stop()
    with pytest.raises(WorkerDied, match="stopped"):
        worker.submit(lambda token: "never").future.result(1)
