"""The model worker: one thread, FIFO, cancellable jobs, errors delivered."""

from __future__ import annotations

import threading
import time

import pytest

from steerlsp.models.worker import JobCancelled, ModelWorker


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


def test_a_running_job_sees_its_token_with_timestamps():
    worker = ModelWorker()
    seen = {}

    def loop(token):
        while not token.cancelled:
            time.sleep(0.001)
        seen["stopped"] = time.perf_counter()
        return "stopped"

    job = worker.submit(loop)
    time.sleep(0.05)
    asked = time.perf_counter()
    job.cancel()
    assert job.future.result(5) == "stopped"
    assert seen["stopped"] - asked < 0.5  # one loop turn, with scheduling slack
    worker.stop()


def test_errors_reach_the_caller_and_the_worker_survives():
    worker = ModelWorker()
    failing = worker.submit(lambda token: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.future.result(5)
    assert worker.submit(lambda token: "still here").future.result(5) == "still here"
    worker.stop()
