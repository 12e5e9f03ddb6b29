"""What one fsync of a small append costs the process in CPU on this machine, by where it runs: all on the calling
thread one after the other, or side by side on a thread pool as `kcoord serve --durability fsync --fsync-method fsync`
runs a round's (`KcoordServer._start_flush`: one pool task per log, the round's last fsync wakes the caller once),
against one syncfs(2) of the folder's file system for the round (`--fsync-method syncfs`, the default on Linux 5.8+).

Run: ``.venv/bin/python benchmarks/fsync_cost.py [--files 6] [--rounds 300] [--repeat 3] [--dir DIR]``.

Each round appends `--bytes` to each of `--files` files (as a round of the transaction workload appends a batch to each
log it fsyncs: ~6 logs per round there) and fsyncs each. The CPU is the process's (every thread, user + system:
`time.process_time`), the same clock `bench_server.py` reads from /proc for the server. If the CPU per fsync is the
same on one thread as on the pool, a round's thread hand-offs (a wake-up per pool task, the GIL taken back after the
fsync) cost little next to the fsync's own kernel work (the page writeback, the inode write, the cache flush, and
the waits for each), and fewer fsyncs, not cheaper threads, is what lowers the fsync mode's CPU.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kcoord.impl.storage import _files


def _round_on_pool(pool: ThreadPoolExecutor, fds: list[int]) -> None:
    done = threading.Event()
    left = [len(fds)]
    lock = threading.Lock()

    def fsync(fd: int) -> None:
        os.fsync(fd)
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            done.set()

    for fd in fds:
        pool.submit(fsync, fd)
    done.wait()


def _round_by_syncfs(pool: ThreadPoolExecutor, folder_fd: int) -> None:
    """One syncfs of the folder's file system on one pool thread, as `--fsync-method syncfs` (`RoundSync`)."""
    syncfs = _files._syncfs()
    assert syncfs is not None, "no syncfs here (Linux only)"
    if pool.submit(syncfs, folder_fd).result() != 0:
        raise OSError(ctypes.get_errno(), "syncfs failed")


def measure(where: str, folder: str, files: int, rounds: int, size: int) -> tuple[float, float]:
    """(CPU-µs per file synced, ms per round) of `rounds` rounds of appends and syncs, `where` = "thread", "pool"
    or "syncfs"."""
    fds = [os.open(os.path.join(folder, f"{where}-{i}"), os.O_CREAT | os.O_WRONLY | os.O_APPEND | os.O_TRUNC)
           for i in range(files)]
    payload = b"x" * size
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with ThreadPoolExecutor(8) as pool:
            _round_on_pool(pool, fds)  # (the pool's threads started outside the measure)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(rounds):
                for fd in fds:
                    os.write(fd, payload)
                if where == "pool":
                    _round_on_pool(pool, fds)
                elif where == "syncfs":
                    _round_by_syncfs(pool, folder_fd)
                else:
                    for fd in fds:
                        os.fsync(fd)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    finally:
        for fd in [*fds, folder_fd]:
            os.close(fd)
    return 1e6 * cpu / (rounds * files), 1e3 * wall / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--bytes", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", help="where the files go (default: a temporary folder under /tmp)")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    results: dict[str, list[tuple[float, float]]] = {"thread": [], "pool": [], "syncfs": []}
    with tempfile.TemporaryDirectory(prefix="kcoord-fsync-cost-", dir=args.dir) as folder:
        for _ in range(args.repeat):
            for where in results:  # (alternating, so both see the same machine load)
                results[where].append(measure(where, folder, args.files, args.rounds, args.bytes))
    print("| a round's files synced | CPU-µs per file (median) | runs | ms per round (median) |")
    print("|---|---:|---|---:|")
    labels = {"thread": "fsyncs one after the other on one thread",
              "pool": "fsyncs side by side on a pool (--fsync-method fsync)",
              "syncfs": "one syncfs on a pool thread (--fsync-method syncfs)"}
    for where, rows in results.items():
        label = labels[where]
        print(f"| {label} | {statistics.median(r[0] for r in rows):,.1f} | "
              f"{', '.join(f'{r[0]:,.0f}' for r in rows)} | {statistics.median(r[1] for r in rows):,.2f} |")
    print(f"\n({args.files} files, {args.rounds} rounds, {args.bytes} bytes per append; load average {load0:.2f} → "
          f"{os.getloadavg()[0]:.2f}, {os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
