"""Two builds of the compiled server (impl/native/server) compared on the server's cost per committed transaction,
the way `bench_server.py` and `cachegrind_txn.sh` measure kcoord: ``python benchmarks/compiled_server/cost.py
cpu|instructions OLD_BINARY NEW_BINARY [--workloads txn2,txn] [--pairs 5] [--seconds 3] [--counts 500,2500]``.

* ``cpu``: `--pairs` runs of each binary, alternating (old, new, old, ...), each a fresh server in `os` mode under
  `bench_server.sample` (8 connections in 2 client processes for `--seconds`): the server process's user + system
  CPU over the measured window (/proc/PID/stat) per committed transaction, and the rate; medians, the load average
  before and after. Depends on the machine's load.
* ``instructions``: each binary under valgrind's cachegrind (instruction counts only) serving exactly N committed
  transactions of the workload over one connection (bench_clients.py's own `txn`/`txn2` loop, run N times), for the
  two N of `--counts`: (Ir(N2) - Ir(N1)) / (N2 - N1), so start-up and set-up cancel out. The server's user-space
  instructions only (its system calls are the kernel's, uncounted); independent of the load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_clients
from bench_clients import create_topics, measure
from bench_server import Server, sample


def _start(binary: str, data_dir: Path, prefix: tuple[str, ...] = ()) -> Server:
    process = subprocess.Popen([*prefix, binary, str(data_dir), "os"], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    bootstrap = process.stdout.readline().strip()
    if not bootstrap:
        raise SystemExit(f"{binary} exited ({process.wait()}) before listening")

    def stopped() -> None:
        process.terminate()
        process.wait(120)

    return Server(Path(binary).name, bootstrap, process.pid, stopped)


def cpu(binaries: dict[str, str], workloads: list[str], pairs: int, seconds: float) -> None:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for workload in workloads:
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in binaries}
        for n in range(pairs):
            for name, binary in binaries.items():
                with tempfile.TemporaryDirectory(prefix="kcoord-cost-") as tmp:
                    server = _start(binary, Path(tmp))
                    try:
                        asyncio.run(create_topics(server.bootstrap))
                        s = sample(server, workload, 8, 2, f"{name}{n}", seconds)
                    finally:
                        server.stop()
                runs[name].append((s.cpu_us_per_unit, s.per_s))
                print(f"  {workload} pair {n} {name}: {s.cpu_us_per_unit:.1f} server CPU-µs/txn, {s.per_s:,.0f}/s",
                      flush=True)
        old, new = (statistics.median(us for us, _ in runs[name]) for name in binaries)
        rates = [statistics.median(r for _, r in runs[name]) for name in binaries]
        print(f"{workload}: server CPU-µs per committed transaction, median of {pairs}: old {old:.1f}, new {new:.1f}, "
              f"new/old {new / old:.3f}; rates {rates[0]:,.0f}/s and {rates[1]:,.0f}/s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _counted_clock(real: Any) -> Any:
    """bench_clients' `time`, but `perf_counter` advancing by one a call: a loop `while perf_counter() < deadline`
    whose deadline is `started + n + 1` runs n times (one connection)."""
    ticks = iter(range(1 << 62))
    clock = types.SimpleNamespace(**{k: getattr(real, k) for k in dir(real) if not k.startswith("__")})
    clock.perf_counter = lambda: float(next(ticks))
    return clock


def _transactions(bootstrap: str, workload: str, n: int) -> None:
    asyncio.run(create_topics(bootstrap))
    real = bench_clients.time
    bench_clients.time = _counted_clock(real)
    try:
        counts = asyncio.run(measure(bootstrap, workload, 1, "cg", n + 1))
    finally:
        bench_clients.time = real
    assert counts.done == n and counts.retries == 0, (counts.done, n, counts.retries)


def instructions(binaries: dict[str, str], workloads: list[str], counts: tuple[int, int]) -> None:
    for workload in workloads:
        per_txn = {}
        for name, binary in binaries.items():
            irs = []
            for n in counts:
                with tempfile.TemporaryDirectory(prefix="kcoord-cost-") as tmp:
                    log = Path(tmp) / "valgrind.log"
                    prefix = ("valgrind", "--tool=cachegrind", "--cache-sim=no", f"--log-file={log}",
                              f"--cachegrind-out-file={tmp}/cg.out")
                    server = _start(binary, Path(tmp) / "data", prefix)
                    try:
                        _transactions(server.bootstrap, workload, n)
                    finally:
                        server.stop()
                    match = re.search(r"I\s+refs:\s+([\d,]+)", log.read_text())
                    assert match, log.read_text()
                    irs.append(int(match.group(1).replace(",", "")))
            per_txn[name] = (irs[1] - irs[0]) / (counts[1] - counts[0])
            print(f"  {workload} {name}: Ir {irs[0]:,} ({counts[0]} txns), {irs[1]:,} ({counts[1]}): "
                  f"{per_txn[name]:,.0f} instructions per committed transaction", flush=True)
        old, new = per_txn.values()
        print(f"{workload}: server instructions per committed transaction: old {old:,.0f}, new {new:,.0f}, "
              f"new/old {new / old:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("cpu", "instructions"))
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--workloads", default="txn2,txn")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--counts", default="500,2500")
    args = parser.parse_args()
    binaries = {"old": args.old, "new": args.new}
    workloads = args.workloads.split(",")
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}: {args.mode}, old {args.old}, new {args.new}")
    if args.mode == "cpu":
        cpu(binaries, workloads, args.pairs, args.seconds)
    else:
        low, high = (int(x) for x in args.counts.split(","))
        instructions(binaries, workloads, (low, high))


if __name__ == "__main__":
    main()
