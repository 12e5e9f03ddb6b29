"""`FsyncWorkers`: a round's fsyncs run side by side on the workers' threads, a failing job leaves its thread
working, `close` lets the jobs handed over finish, and a job after it starts the threads again."""

from __future__ import annotations

import threading
import time

import pytest

from kcoord.impl.server.fsync_workers import FsyncWorkers


def test_jobs_run_side_by_side_on_the_workers_threads() -> None:
    workers: FsyncWorkers[int] = FsyncWorkers(4)
    assert workers.threads == 0  # (no thread before the first job)
    together = threading.Barrier(4 + 1, timeout=5)  # passes only once all four jobs run at once
    ran: list[tuple[int, str]] = []

    def job(n: int) -> None:
        together.wait()
        ran.append((n, threading.current_thread().name))

    for n in range(4):
        workers.submit(job, n)
    together.wait()
    workers.close()
    assert sorted(n for n, _ in ran) == [0, 1, 2, 3]
    assert len({name for _, name in ran}) == 4 and all(name.startswith("kcoord-fsync-") for _, name in ran)
    assert workers.threads == 0


def test_a_failing_job_leaves_its_thread_and_close_waits_for_the_jobs_handed_over(
        caplog: pytest.LogCaptureFixture) -> None:
    workers: FsyncWorkers[int] = FsyncWorkers(1)
    done: list[int] = []

    def job(n: int) -> None:
        if n == 0:
            raise ValueError("a bug")
        time.sleep(0.01)
        done.append(n)

    for n in range(4):
        workers.submit(job, n)
    workers.close()
    assert done == [1, 2, 3] and "fsync job failed" in caplog.text and workers.threads == 0
    workers.submit(job, 5)  # (a server started again: the threads too)
    workers.close()
    assert done == [1, 2, 3, 5]
