"""`kcoord serve --durability group` against `--durability fsync`: transactions per second and CPU per transaction
from 1, 8 and 32 transactional producers, side by side in one run.

Run: ``.venv/bin/python benchmarks/bench_group_commit.py [--quick] [--seconds S] [--runs N] [--producers 1,8,32]
[--json PATH]``.

Two servers run at once, each in its own process (one node, Kafka 4.0's defaults): one fsyncs every write before it
answers, the other commits in groups (`--group-commit-ms 5`: writes that arrive together share one fsync, still
before any answer). The producers are `bench_server.py`'s raw-frame transactional clients (one request in flight per
connection; per transaction AddPartitionsToTxn, a transactional Produce of one record with acks=all, EndTxn commit,
every answer decoded and checked). For each producer count the runs alternate between the two servers (fsync, group,
fsync, group, ...), so both see the same machine load; the table gives the median of the runs: transactions per
second (wall), the serving process's CPU time (user + system, from /proc) per transaction, and its fsyncs per
transaction (counted in the server process): how many writes share an fsync does not vary with the machine's load,
wall time on a shared machine does.
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
from bench_server import GROUP_COMMIT_MS, _create_topic, _measure, _serve

MODES = ("fsync", "group")


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
    _serve(data_dir, mode, addresses, stop)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class _Server:
    process: multiprocessing.Process
    stop: multiprocessing.synchronize.Event
    bootstrap: str
    fsyncs: Any


def _sample(server: _Server, producers: int, run: int, seconds: float) -> Sample:
    assert server.process.pid is not None
    cpu_before, fsyncs_before = _cpu_s(server.process.pid), server.fsyncs.value
    rate = asyncio.run(_measure(server.bootstrap, "transactions", producers, run, seconds))
    cpu = _cpu_s(server.process.pid) - cpu_before
    transactions = max(rate.per_s * seconds, 1)
    return Sample(rate.per_s, 1000 * cpu / transactions, (server.fsyncs.value - fsyncs_before) / transactions,
                  rate.retries)


def _start(mode: str, data_dir: str) -> _Server:
    addresses: multiprocessing.Queue[str] = multiprocessing.Queue()
    stop = multiprocessing.Event()
    fsyncs = multiprocessing.Value("q", 0)
    process = multiprocessing.Process(target=_serve_counting, args=(data_dir, mode, addresses, stop, fsyncs),
                                      daemon=True)
    process.start()
    bootstrap = addresses.get(timeout=60)
    asyncio.run(_create_topic(bootstrap))
    return _Server(process, stop, bootstrap, fsyncs)


def _table(results: dict[tuple[str, int], list[Sample]], counts: list[int], runs: int, seconds: float) -> str:
    def median(mode: str, n: int, field: str) -> float:
        return statistics.median(getattr(s, field) for s in results[(mode, n)])

    lines = ["| producers | fsync txn/s | group txn/s | group / fsync | fsync server CPU ms/txn | "
             "group server CPU ms/txn | fsyncs per txn, fsync / group | "
             "CONCURRENT_TRANSACTIONS retries fsync / group |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in counts:
        f, g = median("fsync", n, "txn_per_s"), median("group", n, "txn_per_s")
        lines.append(f"| {n} | {f:,.1f} | {g:,.1f} | {g / f:.2f} | {median('fsync', n, 'cpu_ms_per_txn'):.2f} | "
                     f"{median('group', n, 'cpu_ms_per_txn'):.2f} | {median('fsync', n, 'fsyncs_per_txn'):.2f} / "
                     f"{median('group', n, 'fsyncs_per_txn'):.2f} | {median('fsync', n, 'retries'):.0f} / "
                     f"{median('group', n, 'retries'):.0f} |")
    return "\n".join(lines) + f"\n\n(median of {runs} runs of {seconds:g} s each, the two modes alternating)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 run of 1 s per configuration (a smoke test)")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--producers", default="1,8,32")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs, seconds = (1, 1.0) if args.quick else (args.runs, args.seconds)
    counts = [int(n) for n in args.producers.split(",")]

    results: dict[tuple[str, int], list[Sample]] = {}
    with tempfile.TemporaryDirectory(prefix="kcoord-bench-gc-") as tmp:
        servers = {mode: _start(mode, str(Path(tmp) / mode)) for mode in MODES}
        try:
            run = 0
            for n in counts:
                for _ in range(runs):
                    for mode in MODES:
                        run += 1
                        sample = _sample(servers[mode], n, run, seconds)
                        results.setdefault((mode, n), []).append(sample)
                        print(f"{mode} x {n}: {sample.txn_per_s:,.1f} txn/s, {sample.cpu_ms_per_txn:.2f} CPU ms/txn, "
                              f"{sample.fsyncs_per_txn:.2f} fsyncs/txn", file=sys.stderr, flush=True)
        finally:
            for server in servers.values():
                server.stop.set()
                server.process.join(30)
    print(_table(results, counts, runs, seconds))
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} on {os.cpu_count()} cpus at the end; group commit at most "
          f"{GROUP_COMMIT_MS} ms")
    if args.json:
        args.json.write_text(json.dumps({f"{m}/{n}": [s.__dict__ for s in ss] for (m, n), ss in results.items()}
                                        | {"loadavg_1m": load[0]}, indent=1) + "\n")


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
