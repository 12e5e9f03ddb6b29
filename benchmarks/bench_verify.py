"""How long `kcoord verify` takes on the bundled specs: the whole run (what CI pays) and each machine alone.

Run: `.venv/bin/python benchmarks/bench_verify.py [--runs 5] [--json PATH]`. Wall-clock seconds, median of `--runs`
runs. The whole run is the real command (`kcoord verify`, a fresh process each time, machines in parallel on every
core); per-machine times are in-process (`verify_machine`, one core), with the number of obligations.
Target (issue 3): the whole run under 10 s on this 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kcoord.model.loader import bundled_machines
from kcoord.model.verify import verify_machine

ROOT = Path(__file__).resolve().parents[1]


def whole_run(runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run([str(ROOT / ".venv/bin/kcoord"), "verify"], capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"kcoord verify failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def per_machine(runs: int) -> dict[str, dict[str, float]]:
    out = {}
    for name, machine in sorted(bundled_machines().items()):
        times, obligations = [], 0
        for _ in range(runs):
            start = time.perf_counter()
            results = verify_machine(machine)
            times.append(time.perf_counter() - start)
            obligations = len(results)
        out[name] = {"median_s": statistics.median(times), "obligations": obligations}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args()
    whole = whole_run(args.runs)
    machines = per_machine(max(1, args.runs // 2))
    print(f"kcoord verify, all machines ({os.cpu_count()} cores), median of {args.runs} runs: "
          f"{whole['median_s']:.2f} s (min {whole['min_s']:.2f}, max {whole['max_s']:.2f})\n")
    print("| machine | obligations | seconds (one core) |")
    print("|---|---:|---:|")
    for name, row in machines.items():
        print(f"| {name} | {row['obligations']} | {row['median_s']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"whole": whole, "machines": machines}, indent=2))


if __name__ == "__main__":
    main()
