"""Group commit across connections: `kcoord serve --durability fsync` (acknowledged = on disk; the writes that
arrive while an fsync runs share the next, one fsync per log, side by side on threads) against `--durability os`
(acknowledged = in the page cache, no fsync) and against the previous fsync mode (an fsync inside every append,
`per-batch`): transactions per second and CPU per transaction from 1, 8 and 32 transactional producers, in one run.

Run: ``.venv/bin/python benchmarks/bench_group_commit.py [--quick] [--seconds S] [--runs N] [--producers 1,8,32]
[--modes fsync,per-batch,os] [--json PATH]``.

One server per mode runs at once, each in its own process (one node, Kafka 4.0's defaults). The producers are
`bench_clients.py`'s raw-frame transactional clients (per transaction AddPartitionsToTxn of 2 partitions, one
transactional Produce to both, AddOffsetsToTxn, TxnOffsetCommit, EndTxn commit; every answer checked). For each
producer count the runs alternate between the servers, so all see the same machine load; the table gives the median
of the runs: transactions per second (wall), the serving process's CPU time (user + system, from /proc) per
transaction, and its fsyncs per transaction (counted in the server process): how many writes share an fsync does
not vary with the machine's load, wall time on a shared machine does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import multiprocessing.synchronize
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_clients import create_topics, measure
from bench_server import cpu_s, serve_kcoord

MODES = ("fsync", "per-batch", "os")


@dataclass(frozen=True)
class Sample:
    txn_per_s: float
    cpu_ms_per_txn: float
    fsyncs_per_txn: float
    retries: int


def _serve_counting(data_dir: str, mode: str, addresses: multiprocessing.Queue[str],
                    stop: multiprocessing.synchronize.Event, fsyncs: Any) -> None:
    """`bench_server._serve`, with every fsync of the server process counted into `fsyncs` (a shared integer):
    how many writes shared one is what group commit is for, and unlike wall time it does not vary with the load."""
    real = os.fsync

    def counted(fd: int) -> None:
        with fsyncs.get_lock():
            fsyncs.value += 1
        real(fd)

    os.fsync = counted
    if mode == "per-batch":  # the fsync mode before issue 31: an fsync inside every append
        from kcoord.impl.storage.log import Durability

        Durability.named = staticmethod(lambda name: Durability.per_batch())  # type: ignore[method-assign]
    serve_kcoord(data_dir, "fsync" if mode == "per-batch" else mode, addresses, stop)


@dataclass
class _Server:
    process: multiprocessing.Process
    stop: multiprocessing.synchronize.Event
    bootstrap: str
    fsyncs: Any


def _sample(server: _Server, producers: int, run: int, seconds: float) -> Sample:
    pid = server.process.pid
    assert pid is not None
    fsyncs_before = server.fsyncs.value
    counts = asyncio.run(measure(server.bootstrap, "txn", producers, f"gc{run}", seconds, cpu=lambda: cpu_s(pid)))
    transactions = max(counts.done, 1)
    return Sample(counts.done / counts.elapsed_s, 1000 * counts.server_cpu_s / transactions,
                  (server.fsyncs.value - fsyncs_before) / transactions, counts.retries)


def _start(mode: str, data_dir: str) -> _Server:
    addresses: multiprocessing.Queue[str] = multiprocessing.Queue()
    stop = multiprocessing.Event()
    fsyncs = multiprocessing.Value("q", 0)
    process = multiprocessing.Process(target=_serve_counting, args=(data_dir, mode, addresses, stop, fsyncs),
                                      daemon=True)
    process.start()
    bootstrap = addresses.get(timeout=60)
    asyncio.run(create_topics(bootstrap))
    return _Server(process, stop, bootstrap, fsyncs)


def _table(results: dict[tuple[str, int], list[Sample]], modes: list[str], counts: list[int], runs: int,
           seconds: float) -> str:
    def median(mode: str, n: int, field: str) -> float:
        return statistics.median(getattr(s, field) for s in results[(mode, n)])

    lines = ["| producers | " + " | ".join(f"{m} txn/s" for m in modes) + " | "
             + " | ".join(f"{m} server CPU ms/txn" for m in modes) + " | fsyncs per txn (" + " / ".join(modes)
             + ") | CONCURRENT_TRANSACTIONS retries (" + " / ".join(modes) + ") |",
             "|---:|" + "---:|" * (2 * len(modes) + 2)]
    for n in counts:
        lines.append(f"| {n} | " + " | ".join(f"{median(m, n, 'txn_per_s'):,.1f}" for m in modes) + " | "
                     + " | ".join(f"{median(m, n, 'cpu_ms_per_txn'):.2f}" for m in modes) + " | "
                     + " / ".join(f"{median(m, n, 'fsyncs_per_txn'):.2f}" for m in modes) + " | "
                     + " / ".join(f"{median(m, n, 'retries'):.0f}" for m in modes) + " |")
    return "\n".join(lines) + f"\n\n(median of {runs} runs of {seconds:g} s each, the modes alternating)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 run of 1 s per configuration (a smoke test)")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--producers", default="1,8,32")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs, seconds = (1, 1.0) if args.quick else (args.runs, args.seconds)
    counts = [int(n) for n in args.producers.split(",")]
    modes = [m for m in args.modes.split(",") if m]

    results: dict[tuple[str, int], list[Sample]] = {}
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-gc-") as tmp:
        servers = {mode: _start(mode, str(Path(tmp) / mode)) for mode in modes}
        try:
            run = 0
            for n in counts:
                for _ in range(runs):
                    for mode in modes:
                        run += 1
                        sample = _sample(servers[mode], n, run, seconds)
                        results.setdefault((mode, n), []).append(sample)
                        print(f"{mode} x {n}: {sample.txn_per_s:,.1f} txn/s, {sample.cpu_ms_per_txn:.2f} CPU ms/txn, "
                              f"{sample.fsyncs_per_txn:.2f} fsyncs/txn", file=sys.stderr, flush=True)
        finally:
            for server in servers.values():
                server.stop.set()
                server.process.join(30)
    print(_table(results, modes, counts, runs, seconds))
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} on {os.cpu_count()} cpus at the end")
    if args.json:
        args.json.write_text(json.dumps({f"{m}/{n}": [s.__dict__ for s in ss] for (m, n), ss in results.items()}
                                        | {"loadavg_1m": load[0]}, indent=1) + "\n")


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
