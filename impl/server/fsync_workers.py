"""The threads a `--durability fsync` round's fsyncs run on (`KcoordServer._start_flush`): `FsyncWorkers`.

A job is handed over with one `SimpleQueue.put` (which wakes one idle thread) and run as it is: no
`concurrent.futures` future, work item, condition or idle-semaphore per fsync, none of which the round needs (its
last fsync wakes the loop once itself). That is ~20 Python calls per fsync fewer, on the loop's thread and the
worker's. The threads start with the first job (again after a `close`) and end with `close`, which waits for the
jobs already handed over.
A job that raises is logged and the thread goes on (a round's fsync catches its own `OSError`: what escapes is a bug).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Final, Generic, TypeVar

__all__ = ("FsyncWorkers",)

_log = logging.getLogger(__name__)
_STOP: Final = None
T = TypeVar("T")


class FsyncWorkers(Generic[T]):
    """`size` threads taking jobs from one queue; `submit(job, arg)` runs `job(arg)` on one of them."""

    def __init__(self, size: int, name: str = "kcoord-fsync") -> None:
        assert size > 0, size
        self._size = size
        self._name = name
        self._queue: SimpleQueue[tuple[Callable[[T], None], T] | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []

    def submit(self, job: Callable[[T], None], arg: T) -> None:
        if not self._threads:
            self._start()
        self._queue.put((job, arg))

    def _start(self) -> None:
        for i in range(self._size):
            thread = threading.Thread(target=self._run, name=f"{self._name}-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _run(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is _STOP:
                return
            job, arg = item
            try:
                job(arg)
            except BaseException:  # (a bug: the thread stays, for the next round's fsyncs)
                _log.exception("fsync job failed")

    def close(self) -> None:
        """Let the jobs handed over finish, then end the threads."""
        for _ in self._threads:
            self._queue.put(_STOP)
        for thread in self._threads:
            thread.join()
        self._threads.clear()

    @property
    def threads(self) -> int:
        """How many threads run (0 before the first job and after `close`)."""
        return len(self._threads)
