"""The unit costs behind `--durability fsync`'s extra loop-thread CPU, each measured apart, in process (issue 31's
fifteenth session): a cluster poll while coordinator shards and data partitions wait for a round in flight; the loop
thread's CPU for one wake-up by another thread (as a round's end wakes it); a queue put that wakes a blocked thread
(as each fsync job is handed over); a request parked on a `Completion` and resumed, against one answered at once;
an EndTxn's bounded wait for its markers (`BrokerContext.wait_at_most`, released by its completion).

Run: ``.venv/bin/python benchmarks/fsync_loop_costs.py [--shards 8] [--partitions 4]`` (``PYTHONPATH=TREE``: another
checkout's kcoord, laid out as the installed package; run from outside the repository). Best of 5 for the poll and
the park (the least disturbed by other processes), medians of 3 for the wake-ups.
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import statistics
import tempfile
import threading
import time
from pathlib import Path

from kcoord.impl.cluster import Cluster, ClusterConfig
from kcoord.impl.runtime.clock import SystemClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.server.broker import BrokerContext
from kcoord.impl.server.peer import run_soon
from kcoord.impl.storage.batch import Record, RecordBatch
from kcoord.impl.storage.log import Durability


def waiting_poll_us(shards: int, partitions: int, polls: int = 20_000) -> float:
    """CPU µs per `Cluster.poll` while `shards` transaction shards and `partitions` data partitions wait for a round."""
    with tempfile.TemporaryDirectory(prefix="kcoord-loop-costs-") as tmp:
        cluster = Cluster(Path(tmp), SystemClock(), config=ClusterConfig(durability=Durability.fsync(),
                                                                          check_records=False))
        cluster.start()
        cluster.create_topics([("out", max(partitions, 1))])
        while cluster.poll():
            pass
        txn = cluster.nodes[0].txn
        ids: dict[int, str] = {}
        n = 0
        while len(ids) < shards:  # one transactional id per shard
            ids.setdefault(txn.runtime.partition_for(f"t{n}"), f"t{n}")
            n += 1
        waits = [txn.init_producer_id(tid, 60_000) for tid in ids.values()]
        waits += [cluster.partitions.produce("out", p, RecordBatch.of([Record(0, 1_000, b"k", b"v")]), acks=-1)
                  for p in range(partitions)]
        cluster.poll()
        tickets = cluster.begin_flush()  # the round in flight: every write above waits for it
        assert len(tickets) == shards + partitions and not any(w.done for w in waits)
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            for _ in range(polls):
                cluster.poll()
            best = min(best, 1e6 * (time.process_time() - start) / polls)
        for ticket in tickets:
            ticket.fsync()
        cluster.end_flush(tickets)
        cluster.close()
    return best


async def _wake_up_us(n: int) -> float:
    """The loop thread's CPU per wake-up by another thread's `call_soon_threadsafe` while it sleeps in epoll (and
    the semaphore release that hands that thread its next job)."""
    loop = asyncio.get_running_loop()
    go = threading.Semaphore(0)
    box: list[asyncio.Future[None]] = []

    def helper() -> None:
        for _ in range(n):
            go.acquire()
            time.sleep(0.0002)  # the loop is asleep in epoll by then, as when a round's fsyncs end
            loop.call_soon_threadsafe(box[-1].set_result, None)

    thread = threading.Thread(target=helper)
    thread.start()
    start = time.thread_time()
    for _ in range(n):
        box.append(loop.create_future())
        go.release()
        await box[-1]
    spent = time.thread_time() - start
    thread.join()
    return 1e6 * spent / n


def queue_put_us(n: int = 5_000) -> float:
    """CPU µs of a `SimpleQueue.put` that wakes a thread blocked in `get` (one per fsync job handed over)."""
    jobs: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    taken = threading.Semaphore(0)

    def worker() -> None:
        while jobs.get() is not None:
            taken.release()

    thread = threading.Thread(target=worker)
    thread.start()
    spent = 0.0
    for _ in range(n):
        time.sleep(0.0002)  # the worker is blocked in get
        start = time.thread_time()
        jobs.put(1)
        spent += time.thread_time() - start
        taken.acquire()
    jobs.put(None)
    thread.join()
    return 1e6 * spent / n


async def _park_us(n: int, parked: bool) -> float:
    """CPU µs per request driven by `run_soon`: parked on a `Completion` set later on the loop (`as_future`, the
    future's callback resuming it a loop turn later), or answered at once."""
    answers: list[object] = []

    async def waits(c: Completion[int]) -> int:
        return await c.as_future()

    async def at_once() -> int:
        return 1

    start = time.thread_time()
    for i in range(n):
        if parked:
            c: Completion[int] = Completion()
            run_soon(waits(c), answers.append, print)
            c.set(i)
        else:
            run_soon(at_once(), answers.append, print)
        if i % 8 == 7:
            await asyncio.sleep(0)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(answers) == n, len(answers)
    return 1e6 * (time.thread_time() - start) / n


class _NoKick:
    def kick(self) -> None:
        pass


async def _bounded_wait_us(n: int) -> float:
    """CPU µs per `BrokerContext.wait_at_most(completion, 1 s)` released by its completion, set a loop turn later (as
    a parked request's `as_future` in `_park_us`)."""
    ctx = BrokerContext(_NoKick(), 0)  # type: ignore[arg-type]
    answers: list[object] = []
    start = time.thread_time()
    for i in range(n):
        c: Completion[int] = Completion()
        run_soon(ctx.wait_at_most(c, 1.0), answers.append, print)
        asyncio.get_running_loop().call_soon(c.set, i)
        if i % 8 == 7:
            await asyncio.sleep(0)
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(answers) == n, len(answers)
    return 1e6 * (time.thread_time() - start) / n


async def _loop_costs() -> tuple[float, float, float, float]:
    wake = statistics.median([await _wake_up_us(3_000) for _ in range(3)])
    parked = min([await _park_us(50_000, True) for _ in range(5)])
    at_once = min([await _park_us(50_000, False) for _ in range(5)])
    bounded = min([await _bounded_wait_us(20_000) for _ in range(5)])
    return wake, parked, at_once, bounded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()
    idle = waiting_poll_us(0, 0)
    waiting = waiting_poll_us(args.shards, args.partitions)
    print(f"cluster.poll, nothing waiting: {idle:.2f} µs; {args.shards} shards + {args.partitions} partitions "
          f"waiting for a round: {waiting:.2f} µs")
    print(f"SimpleQueue.put waking a blocked thread: {queue_put_us():.1f} µs")
    wake, parked, at_once, bounded = asyncio.run(_loop_costs())
    print(f"loop-thread CPU per wake-up by another thread: {wake:.1f} µs")
    print(f"a request parked and resumed: {parked:.2f} µs, answered at once: {at_once:.2f} µs "
          f"(+{parked - at_once:.2f})")
    print(f"an EndTxn's bounded wait (wait_at_most) released by its completion: {bounded:.2f} µs")


if __name__ == "__main__":
    main()
