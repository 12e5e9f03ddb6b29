"""Data topics on disk: making a topic's partitions (CreateTopics) and opening them again (a node's start).

Run: ``.venv/bin/python benchmarks/bench_topics.py [--partitions 100,1000,9999] [--runs N]``.

Each run makes one topic of P partitions with `PartitionManager.create_topic` in a fresh directory on the disk the
tests use (the system's temp directory), closes the manager, and opens a new one on the same directory (discovery,
recovery and a new leader epoch for every partition). Both are synchronous on the node's event loop, so the time a
creation takes is time in which that node answers nothing else. Three ways to make the files durable, side by side
in one run (interleaved, each run after `sync` and a pause so one's write-back does not land in the next):

  * `syncfs`: kcoord's default on Linux: the last partition is made durable first, every other partition's files
    wait for one syncfs(2) of the data directory's file system;
  * `fsync-at-end`: the portable fallback of the same code (no syncfs): each waiting file, then each waiting
    directory, fsynced at the end;
  * `fsync-each`: the baseline: every file and directory fsynced as it is made (what kcoord did before `SyncLater`,
    give or take one fsync a partition).

The table shows the median of `--runs` runs (and the min/max) as milliseconds per partition and the whole
operation's seconds, and each mode's ratio to `fsync-each`. On a virtual disk the figures move a lot with the
host's I/O (making 10,000 directories of files costs seconds even with no fsync at all); the load average is
printed with them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from kcoord.impl.partition import PartitionManager
from kcoord.impl.runtime.clock import SystemClock
from kcoord.impl.storage import _files
from kcoord.impl.storage._files import SyncLater


def _once(partitions: int) -> tuple[float, float]:
    """Seconds to create a topic of `partitions` partitions, and to open them again."""
    directory = Path(tempfile.mkdtemp(prefix="kcoord-bench-topics-"))
    try:
        manager = PartitionManager(directory, clock=SystemClock())
        _settle()
        started = time.perf_counter()
        assert manager.create_topic("bench", partitions) == "NONE"
        created = time.perf_counter() - started
        manager.close()
        _settle()
        started = time.perf_counter()
        reopened = PartitionManager(directory, clock=SystemClock())
        opened = time.perf_counter() - started
        assert len(reopened.describe_topics(["bench"])[0].partitions) == partitions
        reopened.close()
        return created, opened
    finally:
        shutil.rmtree(directory)


def _settle() -> None:
    os.sync()
    time.sleep(1)


def _fsync_now(self: SyncLater, path: Path) -> None:
    _files.fsync_file(path)
    _files.fsync_dir(path.parent)


def _fsync_directory_now(self: SyncLater, path: Path) -> None:
    _files.fsync_dir(path)


@contextlib.contextmanager
def _mode(name: str) -> Iterator[None]:
    """`SyncLater` as the mode makes files durable."""
    real = _files._syncfs, SyncLater.file, SyncLater.directory
    try:
        if name == "fsync-at-end":
            _files._syncfs = lambda: None  # type: ignore[assignment]
        elif name == "fsync-each":
            SyncLater.file, SyncLater.directory = _fsync_now, _fsync_directory_now  # type: ignore[method-assign]
        yield
    finally:
        _files._syncfs, SyncLater.file, SyncLater.directory = real  # type: ignore[method-assign]


MODES = ("syncfs", "fsync-at-end", "fsync-each")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", default="100,1000,9999", help="comma-separated topic sizes")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if _files._syncfs() is None:
        raise SystemExit("this benchmark compares syncfs(2) with fsyncs: it needs Linux")
    print(f"- load average at start {os.getloadavg()[0]:.2f}; temp dir {tempfile.gettempdir()}")
    print()
    print("| partitions | mode | create: ms/partition (min–max) | create: s | vs fsync-each "
          "| reopen: ms/partition (min–max) | reopen: s | vs fsync-each |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size in (int(p) for p in args.partitions.split(",")):
        runs: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
        for _ in range(args.runs):
            for mode in MODES:
                with _mode(mode):
                    runs[mode].append(_once(size))
        base = [statistics.median(t[i] for t in runs["fsync-each"]) for i in (0, 1)]
        for mode in MODES:
            cells = []
            for i in (0, 1):
                per = [t[i] / size * 1000 for t in runs[mode]]
                median = statistics.median(t[i] for t in runs[mode])
                cells.append(f"{statistics.median(per):.2f} ({min(per):.2f}–{max(per):.2f}) | {median:.2f} "
                             f"| {base[i] / median:.1f}×")
            print(f"| {size:,} | {mode} | {' | '.join(cells)} |", flush=True)
    print(f"\n- load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
