"""Simulator throughput and memory: trace rows per second and the peak resident set at growing run lengths.

    .venv/bin/python -m benchmarks.bench_sim [--sizes 1e6,1e7] [--runs 1] [--format parquet] [--json F]
    .venv/bin/python benchmarks/bench_sim.py --quick

Each run is `kcoord simulate`'s engine in a fresh process (so the peak resident set, `ru_maxrss`, is that run's):
a mixed workload (transactional producers TV1/TV2, Streams-like tasks, classic and KIP-848 consumers, veteran ids)
with every fault on, writing Parquet traces to a scratch folder on disk and the coordinator logs to /dev/shm (the
simulator's default: fsync on tmpfs costs nothing, and the simulated cluster never really crashes). Memory must not
grow with the number of events: rows stream to disk, and the simulated state is bounded by the number of clients.
The process runs with `kcoord simulate`'s garbage-collector setting (`impl/runtime/process.py`).
The figure per size is the median of `--runs` runs. Prints a markdown table; `run(quick)` returns the figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.child import last_json

WORKLOAD = {"producers": 12, "streams": 8, "classic_consumers": 6, "consumers": 6, "veterans": 2}


def child(events: int, seed: int, fmt: str, scratch: Path) -> dict[str, Any]:
    """One run in this process; prints its figures as JSON."""
    from kcoord.impl.runtime.process import tune_gc
    from kcoord.impl.sim import SimConfig, simulate

    tune_gc()  # as `kcoord simulate` does
    data = Path(tempfile.mkdtemp(prefix="bench-sim-data-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    try:
        started = time.perf_counter()
        checkpoints: list[dict[str, float]] = []
        every = max(events // 10, 10_000)

        def progress(done: int, total: int) -> None:
            if not checkpoints or done - checkpoints[-1]["events"] >= every:
                point = {"events": done, "seconds": time.perf_counter() - started,
                         "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
                checkpoints.append(point)
                print(json.dumps({"checkpoint": point}), file=sys.stderr, flush=True)

        summary = simulate(SimConfig(seed=seed, events=events, **WORKLOAD), scratch / "traces", data, fmt=fmt,
                           progress=progress)
        elapsed = time.perf_counter() - started
    finally:
        shutil.rmtree(data, ignore_errors=True)
    trace_bytes = sum(f.stat().st_size for f in (scratch / "traces").rglob("*") if f.is_file())
    return {"events": summary.events, "seconds": elapsed, "events_per_s": summary.events / elapsed,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "trace_mb": trace_bytes / 2**20,
            "simulated_s": summary.simulated_ms / 1000, "txns_committed": summary.committed,
            "checkpoints": checkpoints}


def run_child(events: int, seed: int, fmt: str) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-sim-"))
    try:
        # the checkpoints go to stderr, shown as they come
        return last_json("benchmarks.bench_sim", str(events), "--seed", str(seed), "--format", fmt,
                         "--scratch", str(scratch), stderr=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def bench(sizes: list[int], runs: int = 1, fmt: str = "parquet", seed: int = 1, log: bool = True) -> dict[str, Any]:
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if log else (lambda text: None)
    results = []
    for size in sizes:
        measured = []
        for r in range(runs):
            figures = run_child(size, seed + r, fmt)
            say(f"{size:>12,} events, run {r + 1}: {figures['events_per_s']:,.0f} events/s, "
                f"peak RSS {figures['peak_rss_mb']:.0f} MB, {figures['seconds']:.0f} s")
            measured.append(figures)
        numbers = [k for k in measured[0] if k != "checkpoints"]
        results.append({"size": size, "runs": runs, **{k: statistics.median(m[k] for m in measured) for k in numbers},
                        "checkpoints": measured[0]["checkpoints"]})
    return {"format": fmt, "workload": WORKLOAD, "results": results}


def table(figures: dict[str, Any]) -> str:
    lines = ["| events | events/s | peak RSS (MB) | wall (s) | trace size (MB) | simulated (s) | txns committed |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in figures["results"]:
        lines.append(f"| {r['size']:,} | {r['events_per_s']:,.0f} | {r['peak_rss_mb']:.0f} | {r['seconds']:.0f} | "
                     f"{r['trace_mb']:.0f} | {r['simulated_s']:.0f} | {r['txns_committed']:,.0f} |")
    return "\n".join(lines)


def run(quick: bool = False) -> dict[str, Any]:
    """The figures for `benchmarks/__main__.py`: quick = 20k and 100k events (3 runs each); else 1M and 10M."""
    if quick:
        return bench([20_000, 100_000], runs=3, log=False)
    return bench([1_000_000, 10_000_000], runs=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e6,1e7")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--format", default="parquet", choices=["jsonl", "parquet"])
    parser.add_argument("--quick", action="store_true", help="20k and 100k events, 3 runs each")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.seed, args.format, args.scratch)))
        return
    if args.quick:
        figures = run(quick=True)
    else:
        figures = bench([int(float(s)) for s in args.sizes.split(",")], runs=args.runs, fmt=args.format,
                        seed=args.seed)
    print(table(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
