"""Run every benchmark and write `benchmarks/RESULTS.md`: `make bench` or `.venv/bin/python -m benchmarks`.

Each benchmark is its own script (`benchmarks/bench_*.py`, runnable alone, printing a markdown table); this runner
starts each in a fresh process (so one's memory or JIT warm-up does not colour the next), shows progress, and writes
the tables with the machine they ran on (CPU model, cores, memory, Python, Java, commit) into RESULTS.md. A benchmark
that fails is reported as failed in the file with its last lines of output; the others still run.

    python -m benchmarks                 # everything, full sizes (about an hour on 2 cores)
    python -m benchmarks --quick         # small sizes: a smoke test of every benchmark (a few minutes)
    python -m benchmarks --only txn,groups   # re-run these; the other sections of the file are kept

Each section records when, at which commit and under what load average it was measured, so a file merged from
several `--only` runs stays honest.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    title: str
    full: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()


BENCHES = (
    Bench("verify", "bench_verify.py", "`kcoord verify` on every machine (issue 3)", ("--runs", "5"), ("--runs", "1")),
    Bench("storage", "bench_storage.py", "Coordinator log encode/decode and load (issue 4)", (),
          ("--records", "100000", "--repeat", "1")),
    Bench("scan", "bench_scan.py", "Batch decoder: last-value scan and careful decode (issue 32)",
          ("--records", "200000", "--repeat", "5"), ("--records", "20000", "--repeat", "1")),
    Bench("topics", "bench_topics.py", "Data topics: making and reopening partitions (issue 8)", (),
          ("--partitions", "100", "--runs", "1")),
    Bench("txn", "bench_txn.py", "Transaction coordinator: committed transactions/s, log load, tracing (issue 4)",
          ("--runs", "5"), ("--quick", "--runs", "1")),
    Bench("groups", "bench_groups.py", "Group coordinator: heartbeats, rebalances, offsets load (issue 5)",
          ("--runs", "5"), ("--runs", "1", "--records", "100000")),
    Bench("assignors", "bench_assignors.py", "Assignors at 1,000 members x 10,000 partitions (issue 5)",
          ("--runs", "5"), ("--runs", "1", "--members", "100", "--topics", "10")),
    Bench("traces", "bench_traces.py", "Trace checking: Spark vs the Python reference checker (issue 6)",
          ("--sizes", "1e6,1e7,5e7", "--runs", "3"),
          ("--sizes", "1e5", "--runs", "1", "--python-max", "1e5", "--sim", "1e4")),
    Bench("sim", "bench_sim.py", "Simulator: events/s and memory (issue 6)", (), ("--quick",)),
    Bench("wire", "bench_wire.py", "Wire layer: ApiVersions round trips (issue 8)", (),
          ("--seconds", "1", "--runs", "1")),
    Bench("server", "bench_server.py", "`kcoord serve`: heartbeats and transactions per second (issue 8)", (),
          ("--quick",)),
    Bench("group_commit", "bench_group_commit.py",
          "`kcoord serve`: group commit against fsync, 1, 8 and 32 producers (issue 28)", (), ("--quick",)),
)


def when() -> str:
    """Date, commit and load average, for the line under each section's title."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    now = datetime.datetime.now().astimezone()
    return f"{now:%Y-%m-%d %H:%M %Z}, commit {commit.strip() or '?'}, load average {load:.2f}"


def kept_sections(path: Path, titles: set[str]) -> dict[str, list[str]]:
    """The sections (by title) of an earlier results file that are not being re-run."""
    if not path.exists():
        return {}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            title = line[3:]
            current = sections.setdefault(title, []) if title not in titles else None
        if current is not None:
            current.append(line)
    return sections


def machine() -> list[str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        java = "not found"
    return [
        f"- machine: {cpu}, {os.cpu_count()} cores, {memory} RAM, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; Java: {java}",
    ]


def run(bench: Bench, quick: bool) -> tuple[bool, str, float]:
    args = bench.quick if quick else bench.full
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE / bench.script), *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        return False, f"**failed** (exit {done.returncode}):\n\n```\n{tail}\n```", seconds
    return True, done.stdout.strip(), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes: check that every benchmark runs")
    parser.add_argument("--only", help="comma-separated names: " + ", ".join(b.name for b in BENCHES))
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md",
                        help="where to write the results (default benchmarks/RESULTS.md; --quick: build/bench.md)")
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHES if (HERE / b.script).exists()]
    if args.only:
        names = set(args.only.split(","))
        unknown = names - {b.name for b in BENCHES}
        if unknown:
            parser.error(f"unknown benchmark(s) {sorted(unknown)}; known: {[b.name for b in BENCHES]}")
        chosen = [b for b in chosen if b.name in names]
    out = args.out
    if args.quick and out == HERE / "RESULTS.md":
        out = ROOT / "build" / "bench.md"
    console = Console(stderr=True)
    kept = kept_sections(out, {b.title for b in chosen}) if args.only else {}
    fresh: dict[str, list[str]] = {}
    failed = []
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("benchmarks", total=len(chosen))
        for bench in chosen:
            bar.update(task, description=f"{bench.name} ({bench.script})")
            ok, text, seconds = run(bench, args.quick)
            if not ok:
                failed.append(bench.name)
            command = " ".join(["python", f"benchmarks/{bench.script}", *(bench.quick if args.quick else bench.full)])
            fresh[bench.title] = [f"## {bench.title}", "", f"`{command}` — {seconds:.0f} s; measured {when()}", "",
                                  text, ""]
            bar.advance(task)
    sections = ["# Benchmark results", "", *machine(), "",
                "Every figure is the median of several runs unless the table says otherwise; each benchmark's own",
                "docstring (`benchmarks/bench_*.py`) says exactly what is timed. Each section says when, at which",
                "commit and under what load average it ran. Regenerate with `make bench` (or `--only NAME`).", "",
                "> A section measured at a load average well above the core count shared the cores with other jobs",
                "> (test suites, simulations): read it as a lower bound. \"Per CPU s\" columns (`time.process_time`)",
                "> are less affected than wall-clock ones.", ""]
    for bench in BENCHES:
        sections += fresh.get(bench.title) or kept.pop(bench.title, [])
    for lines in kept.values():  # sections written by hand or by a benchmark since renamed: kept, at the end
        sections += lines
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(sections), encoding="utf-8")
    console.print(f"wrote {out}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
