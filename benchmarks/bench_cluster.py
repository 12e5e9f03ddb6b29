"""Trace checking on a standalone Spark cluster against `local[2]`: the same job's CPU-µs per event (issue 33).

    .venv/bin/python -m benchmarks.bench_cluster [--events 1e6] [--runs 3] [--scratch DIR]

Data: bench_traces' tiled Transaction traces (`--events` rows, Parquet). Each run is `kcoord check-traces PATH
--engine spark --out O` in a fresh process, as a user runs it, alternately on `local[2]` (the driver runs the tasks
on 2 cores) and on a standalone cluster started from pyspark's jars (`conformance/traces/standalone.py`: a master
and two one-core workers on loopback, one one-core executor on each): the same two cores, the same spark-defaults
(driver 4 GB for local, executors 2 GB each) and the same JIT options (`session.jit_options` by input size: the
checker gives them to the local driver or to a cluster's executors). CPU is counted in every process the run uses:
the CLI, its driver JVM and, on the cluster, both executors (children of the workers, sampled from /proc until the
CLI exits); the master's and workers' own CPU is left out (the daemons idle between applications). Wall time
includes start-up (JVMs, session, executors), the CPU figure is the one to compare (the machine is shared): the
ratio cluster/local of the median CPU-µs per event is the issue's target (within 20 %).
Where a cpuacct cgroup can be made (`cpu_tree.Cgroup`), `cpu_s` is the kernel's count instead: the CLI runs in a
cgroup of its own (with every process it starts: the driver JVM, its Python daemon and workers, orphaned or not) and
the workers are moved into another before the first run (so every executor and its Python workers are in it), less
the workers' own CPU (their daemons' heartbeats): the sampled children miss the Python workers the DuckDB path runs
its tasks in (the JVMs' children, not the CLI's or the workers'). The sampled figures stay beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_traces import ROOT, watch_children
from benchmarks.cpu_tree import Cgroup, cpu_s
from benchmarks.trace_data import make_base, tile

#: the same for both: the local driver runs the tasks (so gets the memory the two executors get together)
SETTINGS = {"spark.driver.memory": "4g", "spark.executor.memory": "2g", "spark.executor.cores": "1",
            "spark.ui.enabled": "false"}


def run_cli(path: Path, out: Path, master: str, env: dict[str, str], workers: tuple[int, ...],
            on_workers: Cgroup | None = None) -> dict[str, Any]:
    """One `kcoord check-traces` on `master`: wall, CPU by process kind, violations; `on_workers`: the cgroup the
    workers are in (see the module's docstring)."""
    shutil.rmtree(out, ignore_errors=True)
    kcoord = str(Path(sys.executable).parent / "kcoord")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine = Cgroup(f"kcoord-bench-cli-{os.getpid()}-{out.name}", pids=())
    joined = mine.joiner()
    counted = _executors_s(on_workers, workers)
    started = time.monotonic()
    log = out.with_suffix(".log")
    try:
        with log.open("w") as sink, subprocess.Popen(
                [kcoord, "check-traces", str(path), "--engine", "spark", "--master", master, "--out", str(out)],
                stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT, env=env, preexec_fn=joined) as cli:
            driver, executors = watch_children(cli, workers)
        wall = time.monotonic() - started
        used = mine.usage_s()
        kernel = used + _executors_s(on_workers, workers) - counted if used is not None else None
    finally:
        if mine.path is not None:
            Cgroup.remove(mine.path.name)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert cli.returncode in (0, 1), log.read_text(errors="replace")[-2000:]
    assert not workers or executors > 0, "no executor of the workers was seen"
    summary = json.loads((out / "summary.json").read_text())
    own = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    sampled = own + driver + executors
    return {"wall_s": wall, "cli_cpu_s": own, "driver_cpu_s": driver, "executors_cpu_s": executors,
            "sampled_cpu_s": sampled, "cgroup_cpu_s": kernel, "cpu_s": sampled if kernel is None else kernel,
            "rows": sum(summary["rows_read"].values()),
            "violations": summary.get("violations_total", 0), "load_avg": os.getloadavg()[0]}


def _executors_s(on_workers: Cgroup | None, workers: tuple[int, ...]) -> float:
    """The CPU of the workers' cgroup less the workers' own: their executors' and those executors' children's."""
    used = on_workers.usage_s() if on_workers is not None else None
    return used - sum(cpu_s(w) for w in workers) if used is not None else 0.0


def bench(events: int, runs: int, scratch: Path, base_rows: int = 20_000) -> dict[str, list[dict[str, Any]]]:
    from kcoord.conformance.traces.standalone import Cluster

    path = tile(make_base(scratch / "base", base_rows, 1), scratch / "traces", events)
    cluster = Cluster(scratch / "cluster", "rootLogger.level = warn\n", SETTINGS, worker_memory="3g")
    cluster.start()
    on_workers = Cgroup(f"kcoord-bench-workers-{os.getpid()}", pids=cluster.worker_pids())  # (executors inherit it)
    local_conf = scratch / "local-conf"
    local_conf.mkdir(exist_ok=True)
    (local_conf / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in SETTINGS.items()))
    results: dict[str, list[dict[str, Any]]] = {"local[2]": [], "standalone, 2 one-core executors": []}
    try:
        for i in range(runs):
            for name in results:  # side by side: alternately
                local = name == "local[2]"
                env = os.environ | {"SPARK_CONF_DIR": str(local_conf)} if local else cluster.env
                measured = run_cli(path, scratch / f"out-{i}-{'local' if local else 'cluster'}",
                                   "local[2]" if local else cluster.master, env,
                                   () if local else tuple(cluster.worker_pids()), None if local else on_workers)
                print(name, json.dumps(measured), file=sys.stderr, flush=True)
                results[name].append(measured)
    finally:
        cluster.stop()
        if on_workers.path is not None:
            Cgroup.remove(on_workers.path.name)
    return results


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    rows = ["| master | events | violations | wall s incl. start-up | CPU s (sampled: CLI + driver + executors) | "
            "CPU-µs/event | ratio to local | load avg |", "|---|---:|---:|---:|---|---:|---:|---:|"]
    per_event = {name: statistics.median(r["cpu_s"] / r["rows"] * 1e6 for r in rs) for name, rs in results.items()}
    local = per_event["local[2]"]
    for name, rs in results.items():
        mid = sorted(rs, key=lambda r: r["cpu_s"])[len(rs) // 2]
        rows.append(f"| {name} | {mid['rows']:,} | {mid['violations']} | "
                    f"{statistics.median(r['wall_s'] for r in rs):.1f} | {mid['cpu_s']:.1f} ({mid['cli_cpu_s']:.1f}"
                    f" + {mid['driver_cpu_s']:.1f} + {mid['executors_cpu_s']:.1f} = {mid['sampled_cpu_s']:.1f}) | "
                    f"{per_event[name]:.2f} | "
                    f"{per_event[name] / local:.2f} | {statistics.median(r['load_avg'] for r in rs):.1f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=float, default=1e6)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scratch", default=None)
    args = parser.parse_args()
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        results = bench(int(args.events), args.runs, scratch)
    finally:
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nThe same check on local[2] and on a standalone cluster (median of {args.runs}, alternating):\n")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
