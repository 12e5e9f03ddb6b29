"""Trace checking throughput: Spark and the Python reference checker on the same Parquet traces.

    .venv/bin/python -m benchmarks.bench_traces [--sizes 1e6,1e7,5e7] [--runs 3] [--python-max 5e7] [--json F]
        [--no-floors | --floors-only] [--sim 1e6 | --sim-dir DIR] [--sim-engines spark-read,spark,python]
        [--cli-sim 1e4] [--no-duckdb] [--engines spark,spark-c1,spark-c2,spark-twice] [--against REV]
        [--tiny 1e4] [--keep-data]   # engines also: spark-plan, spark-plan-c2, spark-uN (units of N rows)
    .venv/bin/python -m benchmarks.bench_traces --stages 1e7 [--runs 3]   # the full check's cost by stage

Data (`trace_data`): random valid traces of the Transaction machine (the largest guards and effects with a
cross-key `monotonic` and a `within` property), generated once in Python (`--base` rows), then tiled to each
size, every tile an independent trace (a small tiled sample is checked with the reference checker first).
Each measurement runs in a fresh process, so peak memory is per size: the driver JVM's
peak resident set (VmHWM) and the Python process's (ru_maxrss). Spark's start-up (JVM + session) is reported
separately; checked events/s exclude it. Beside the check, three Spark jobs that do less than any check can
(`FLOORS`: read every column; read, then shuffle and sort by key and seq; pair each row with its key's previous row
on a copy already bucketed and sorted by key, so with no shuffle and no sort at all) give the ceiling a Spark check
has on this machine.
Beside Spark, DuckDB (`duckdb_peer`: the illegal-transition, discontinuity and one-invariant checks, the Spark
checker's own expression trees rendered in DuckDB's dialect) on the same files: the single-machine peer. Its counts
are first compared with the Python checker's on mutated traces (the benchmark stops if they differ).
Then both engines check one simulator run (`--sim` rows of `kcoord simulate` with every fault, Parquet): traces of
five machines from the real coordinators, mostly transitions, with the cross-machine properties checked too; and a
small one (`--cli-sim` rows) is checked by `kcoord check-traces` as a user runs it, in a fresh process, with
`--engine spark` and `--engine auto` (wall time including the interpreter's and Spark's start-up).
`--against REV` measures each engine also with commit REV's code (`ENGINE@REV`, a `git archive` of it), in the same
rounds: before and after side by side.
Every figure is the median of `--runs` fresh processes (the engines take turns, round after round); CPU seconds are
those of the measuring process and of every process it started, the JVM and its Python workers included, orphaned or
not (`cpu_tree`), so CPU-µs per event is robust to the machine's load (noted per row).
`--tiny N` measures N events first (the fixed cost a run pays, to subtract), with each engine and with the large
inputs' JIT ("-c2"); each run also records the peak memory of Spark's Python processes (`cpu_tree.PeakMemory`).
Prints a markdown table (and each run's line on stderr); `run(quick)` returns the figures, `--json` writes them
with every run's own (`each`).
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

from benchmarks.child import last_json
from benchmarks.cpu_tree import (
    CPUACCT,
    Cgroup,
    PeakMemory,
    Reaper,
    adopt_orphans,
    jvm_tree_cpu_s,
    peak_rss_mb,
    thread_cpu_s,
    tree_cpu_s,
)
from benchmarks.trace_data import MACHINE, make_base, make_sim, pq_rows, tile, validate_peer, validate_tiling

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- one measurement (in its own process)


#: Spark jobs that do less than any check can, on the same files: reading every column of every row, and reading
#: then ordering every key's rows by seq (one shuffle and sort, as the check's window pass does first). Their
#: events/s bound what a Spark check can reach on this machine.
FLOORS = {"spark-read": "Spark: read every column (floor)",
          "spark-sort": "Spark: read + shuffle and sort by key, seq (floor)",
          "spark-prev-clustered": "Spark: each row + its previous row, input clustered by key (floor)"}

#: buckets of the clustered copy the "spark-prev-clustered" floor reads (one file each, sorted by key and seq)
CLUSTER_BUCKETS = 16


def clustered_copy(spark: Any, path: str, out: str) -> Any:
    """The traces rewritten as a bucketed table (by key, one file per bucket, sorted by key and seq), read back so
    that Spark knows the layout: a window per key over it needs neither a shuffle nor a sort. The best layout a
    trace could have for a check; writing it is not timed (it costs a shuffle and sort of its own)."""
    spark.conf.set("spark.sql.legacy.bucketedTableScan.outputOrdering", "true")  # one file per bucket: sorted
    spark.sql("DROP TABLE IF EXISTS bench_clustered")
    spark.read.parquet(os.path.join(path, MACHINE)).repartition(CLUSTER_BUCKETS, "key").write \
        .bucketBy(CLUSTER_BUCKETS, "key").sortBy("key", "seq").option("path", os.path.join(out, "clustered")) \
        .format("parquet").saveAsTable("bench_clustered")
    return spark.table("bench_clustered")


def with_previous(df: Any) -> Any:
    """Each row with its key's previous row (every column a check compares: state, seq, epoch, time, variables)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    first_variable = df.columns.index("producer_id")
    prev = F.struct(*[F.col(c) for c in ("to_state", "seq", "coordinator_epoch", "ts_ms",
                                         *df.columns[first_variable:])])
    return df.select("*", F.lag(prev, 1).over(Window.partitionBy("key").orderBy("seq")).alias("prev"))


#: `--stages`: the full check's pass cut after each of its stages (`MachinePlan.pass_stages`, the real plan's own
#: frames), each prefix forced by a noop write of all its columns in a fresh process, cumulative; "read" is the
#: reader's raw scan (`sparkread._read`: the typed files' columns, codes remapped), "staged" the whole pass with its
#: checkpoint (`MachinePlan.staged`), then the full check (engine "spark": + violations, witnesses, final table)
STAGES = {"read": "read: the typed files' columns (the reader's scan)",
          "validated": "+ validation (the reason column, its filter, the typed row)",
          "observed": "+ observation (counting rows, malformed rows, latest ts)",
          "local": "+ row-local checks on the map side (table, spec row, error, invariants)",
          "windowed": "+ shuffle, sort and window (lags, row number)",
          "pre": "+ pre-state (fresh, pre_known, pre_*, pos)",
          "checks": "+ checks (conditions, effects, frame, steps) and flags",
          "filtered": "+ filter to the staged rows and their columns (the pass, forced by a noop write)",
          "staged": "the pass as the check runs it (its local checkpoint)"}


def stage_action(spark: Any, path: str, stage: str) -> float:
    """The check's pass cut after `stage` (see STAGES), built as `job.run_spark` builds it and run once: the rows."""
    from kcoord.conformance.traces import session, sparkprops
    from kcoord.conformance.traces.checks import Spec
    from kcoord.conformance.traces.readers import discover
    from kcoord.conformance.traces.sparkcheck import MachinePlan
    from kcoord.conformance.traces.sparkread import _read, read_machine, typed_columns
    from kcoord.model.loader import bundled_machines

    machine = bundled_machines()[MACHINE]
    sources = discover([path], {MACHINE: machine}, [])
    rows = sum(pq_rows(Path(s.path)) for s in sources)
    session.tune(spark, rows)  # (as `job._session` does for the check: generated code at these sizes)
    plan = MachinePlan(spark, Spec.of(machine), read_machine(spark, machine, sources))
    plan.needs = sparkprops.needs({MACHINE: plan})[MACHINE]
    if stage == "staged":
        plan.staged()
        plan.release()
        return float(plan.read.tally().rows)
    if stage == "read":
        frames = [_read(spark, machine, g) for g in plan.read.groups]
        df = frames[0] if len(frames) == 1 else frames[0].unionByName(*frames[1:])
        df = df.select(*(n for n, _ in typed_columns(machine)))
    else:
        df = dict(plan.pass_stages())[stage]
    df.write.format("noop").mode("overwrite").save()  # every column of every row, then dropped
    return float(rows)


#: the driver JVM's heap in each measured process (`--driver-memory`; the children read it from their environment)
DRIVER_MEMORY = "KCOORD_BENCH_DRIVER_MEMORY"


def measure(engine: str, path: str, out: str, scope: str = "one") -> dict[str, float]:
    """One measurement; `scope` "one": the Transaction machine's traces, "all": every bundled machine's."""
    from kcoord.conformance.traces.job import Config, run
    from kcoord.model.loader import bundled_machines

    adopt_orphans()  # (before any process is started: every one of them stays in this process's tree)
    cgroup = Cgroup(f"kcoord-bench-{os.getpid()}")  # (the kernel's count of the same, where a cgroup can be made)
    machines = dict(bundled_machines()) if scope == "all" else {MACHINE: bundled_machines()[MACHINE]}
    result: dict[str, float] = {}
    spark = None
    if engine in ("spark", "spark-plan", "spark-spread", "spark-c1", "spark-c2", "spark-plan-c2", "spark-twice",
                  *FLOORS) or engine.startswith(("stage:", "spark-u")):
        from kcoord.conformance.traces.session import SMALL_INPUT_ROWS, local_session

        started = time.monotonic()
        rows: int | None = None  # (the large inputs' JIT, as `session.jit_options` chooses it above `SMALL_INPUT_ROWS`)
        if engine == "spark-c1":  # the small inputs' JIT (C1 only) whatever the size
            rows = SMALL_INPUT_ROWS
        if engine in ("spark", "spark-plan", "spark-spread", "spark-twice") or engine.startswith("spark-u"):
            # (the CLI's JIT for this size; "spark-c2", "spark-plan-c2": the large inputs' whatever the size)
            from kcoord.conformance.traces.job import estimated_rows
            from kcoord.conformance.traces.readers import discover

            rows = estimated_rows(discover([path], machines, [out]), 10**12)
        spark = local_session("local[*]", driver_memory=os.environ.get(DRIVER_MEMORY, "8g"), rows=rows)
        spark.range(1).count()
        result["startup_s"] = time.monotonic() - started
    jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()) if spark else None  # type: ignore[union-attr]
    reaper = Reaper(keep={jvm_pid} if jvm_pid is not None else set()).start()  # (orphans: see `cpu_tree`)
    workers = PeakMemory(skip={jvm_pid} if jvm_pid is not None else set()).start()  # (Spark's Python processes)
    clustered = None
    if engine == "spark-prev-clustered":
        clustered = with_previous(clustered_copy(spark, path, out))
        plan = clustered._jdf.queryExecution().executedPlan().toString()
        assert "Exchange" not in plan and "Sort [" not in plan, f"the clustered copy is shuffled or sorted:\n{plan}"
    cpu, cpu_jvm_tree, cpu_cgroup = tree_cpu_s(), jvm_tree_cpu_s(jvm_pid), cgroup.usage_s()
    threads = thread_cpu_s(jvm_pid) if jvm_pid is not None else {}
    started = time.monotonic()
    if engine == "duckdb":
        from benchmarks.duckdb_peer import count

        found = count(machines[MACHINE], os.path.join(path, MACHINE, "*.parquet"), threads=os.cpu_count())
        result["rows"] = float(sum(pq_rows(f) for f in Path(path, MACHINE).glob("*.parquet")))
        result["violations"] = float(sum(found.values()))
    elif engine.startswith("stage:"):
        result["rows"] = stage_action(spark, path, engine.removeprefix("stage:"))
        result["violations"] = 0.0
    elif engine in FLOORS:
        assert spark is not None
        folders = [MACHINE] if scope == "one" else sorted(p.name for p in Path(path).iterdir() if p.is_dir())
        for folder in folders:  # ("all": each machine's files, one job each: their columns differ)
            df = clustered if clustered is not None else spark.read.parquet(os.path.join(path, folder))
            if engine == "spark-sort":
                df = df.repartition("key").sortWithinPartitions("key", "seq")
            df.write.format("noop").mode("overwrite").save()  # every column of every row, then dropped
        result["rows"] = float(sum(pq_rows(f) for d in folders for f in Path(path, d).glob("*.parquet")))
        result["violations"] = 0.0
    elif engine == "spark-twice":  # the same check twice in one session: the second's cost is a warm session's
        config = Config([path], out, engine="spark", max_witnesses=10)
        run(config, machines, spark=spark)
        result["first_cpu_s"] = tree_cpu_s() - cpu
        cpu, cpu_jvm_tree, cpu_cgroup = tree_cpu_s(), jvm_tree_cpu_s(jvm_pid), cgroup.usage_s()
        started = time.monotonic()
        outcome = run(config, machines, spark=spark)
        result["rows"] = float(sum(outcome.summary.rows_read.values()))
        result["violations"] = float(outcome.summary.violations_total)
    else:  # ("spark-c1", "spark-c2": the check with the small or the large inputs' JIT whatever the size;
        # "spark": DuckDB in Spark's tasks where the input allows it, whatever its size; "spark-spread": the same
        # with the trace properties' phase 2 in Spark's tasks however few the staged rows; "spark-plan": the Spark
        # SQL plan always, "spark-plan-c2" with the large inputs' JIT; "spark-uN": "spark" in units of N rows)
        said: list[str] = []
        units = {"unit_rows": int(engine.removeprefix("spark-u"))} if engine.startswith("spark-u") else {}
        outcome = run(Config([path], out, engine=engine.split("-")[0], max_witnesses=10,
                             duckdb_tasks=not engine.startswith("spark-plan"), duckdb_tasks_max_rows=2**62,
                             **({"phase2_driver_max_rows": 0} if engine == "spark-spread" else {}), **units),
                      machines, spark=spark, say=said.append)
        result["engine"] = outcome.summary.engine  # type: ignore[assignment]
        result["fell_back"] = said  # type: ignore[assignment]
        result["rows"] = float(sum(outcome.summary.rows_read.values()))
        result["violations"] = float(outcome.summary.violations_total)
        result["spilled"] = float(sum(outcome.summary.spilled.values()))  # buckets, when the Python checker spilled
    result["check_s"] = time.monotonic() - started
    result["cpu_s"] = tree_cpu_s() - cpu  # the checking's CPU seconds, every process's: robust under load
    result["cpu_s_jvm_tree"] = jvm_tree_cpu_s(jvm_pid) - cpu_jvm_tree  # (i33p's count, which missed orphans)
    if cpu_cgroup is not None:
        result["cpu_s_cgroup"] = (cgroup.usage_s() or 0.0) - cpu_cgroup
    reaper.stop()
    workers.stop()
    result |= {"orphans_reaped": reaper.reaped, "workers_peak_mb": workers.one_mb, "workers_sum_mb": workers.sum_mb}
    if jvm_pid is not None:
        result |= {f"threads:{k}": v - threads.get(k, 0.0) for k, v in thread_cpu_s(jvm_pid).items()}
    result["load_avg"] = os.getloadavg()[0]
    result["python_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if spark is not None:
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()  # type: ignore[union-attr]
        result["jvm_peak_mb"] = peak_rss_mb(int(pid))
        spark.stop()
    return result


def run_child(engine: str, path: Path, scratch: Path, scope: str = "one") -> dict[str, float]:
    """One measurement in a fresh process; `ENGINE@REV`: ENGINE with the code of commit REV (`checkout`)."""
    out = scratch / f"out-{engine}"
    shutil.rmtree(out, ignore_errors=True)
    engine, _, rev = engine.partition("@")
    before = {p.name for p in CPUACCT.glob("kcoord-bench-*")}
    try:
        return last_json("benchmarks.bench_traces", engine, str(path), str(out), scope,  # type: ignore[return-value]
                         cwd=checkout(rev, scratch) if rev else ROOT)
    finally:
        for made in {p.name for p in CPUACCT.glob("kcoord-bench-*")} - before:  # (the child's `Cgroup`)
            Cgroup.remove(made)


def checkout(rev: str, scratch: Path) -> Path:
    """Commit `rev`'s files (`git archive`) under `scratch`, importable as `kcoord` by a process started there: the
    package's folders linked into `kcoord/` as pyproject's package-dir maps them (the venv's editable install maps
    `kcoord` to this checkout, and comes after the working directory on the import path)."""
    out = scratch / f"rev-{rev}"
    if not (out / "kcoord").is_dir():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
        for sub in ("model", "impl", "conformance", "spec"):
            (out / "kcoord" / sub).symlink_to(Path("..") / sub)
    return out


# ---------------------------------------------------------------- the table


def bench(sizes: list[int], runs: int = 3, python_max: float = 5e7, base_rows: int = 20_000, seed: int = 1,
          scratch: Path | None = None, log: bool = True, floors: bool = True, sim: int = 0,
          checks: bool = True, duckdb: bool = True, cli_sim: int = 0, sim_dir: Path | None = None,
          sim_engines: tuple[str, ...] = ("spark", "python"),
          only: tuple[str, ...] | None = None, tiny: int = 0, keep_data: bool = False) -> dict[str, Any]:
    """Measure both engines (and the floors, and DuckDB) at each size, then on `sim` simulator rows and `cli_sim`
    ones through the CLI (0: not); returns the figures (one record per size and engine). `tiny` events first (0:
    not), with each engine and, for "spark" and "spark-plan", also with the large inputs' JIT ("-c2"): the fixed
    cost to subtract. `keep_data`: tiled folders already in `scratch` with the right rows are reused, and kept."""
    scratch = scratch or Path(tempfile.mkdtemp(prefix="bench-traces-"))
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if log else (lambda text: None)
    say(f"seed {seed}; scratch {scratch}")
    started = time.monotonic()
    base = make_base(scratch / "base", base_rows, seed)
    validate_tiling(base, scratch)
    if duckdb:
        validate_peer(scratch, seed)
    say(f"base traces: {base_rows} rows in {time.monotonic() - started:.1f} s")
    results: list[dict[str, Any]] = []
    engines = only or (*(FLOORS if floors else ()), *(("spark", "python") if checks else ()),
                       *(("duckdb",) if duckdb else ()))
    with_c2 = (*engines, *(f"{e}-c2" for e in engines if e in ("spark", "spark-plan")))
    for size, at_size in ([(tiny, with_c2)] if tiny else []) + [(size, engines) for size in sizes]:
        data = scratch / f"data-{size}"
        if not (keep_data and data.is_dir() and sum(pq_rows(f) for f in data.rglob("*.parquet")) == size):
            shutil.rmtree(data, ignore_errors=True)
            tile(base, data, size)
        here = [e for e in at_size if e != "python" or size <= python_max]
        results += [{"events": size, "engine": e, "skipped": "above python_max"} for e in at_size if e not in here]
        measured: dict[str, list[dict[str, float]]] = {e: [] for e in here}
        for round_ in range(runs):  # (rounds of every engine in turn: side by side, each sees the same load)
            for engine in here:
                if engine != "python" or round_ == 0:
                    measured[engine].append(run_child(engine, data, scratch))
                    say(said(f"{size:,} {engine}", measured[engine][-1]))
        for engine in here:
            results.append(_record(size, engine, measured[engine]))
            say(table_row(results[-1]))
        if not keep_data:
            shutil.rmtree(data, ignore_errors=True)
    if sim or sim_dir:
        data = sim_dir or make_sim(scratch / "sim", sim, seed)
        on_sim: dict[str, list[dict[str, float]]] = {e: [] for e in sim_engines}
        for round_ in range(runs):  # (rounds of every engine in turn, as above)
            for engine in sim_engines:
                if engine != "python" or round_ == 0:
                    on_sim[engine].append(run_child(engine, data, scratch, "all"))
                    say(said(f"simulator {engine}", on_sim[engine][-1]))
        for engine in sim_engines:
            record = _record(int(on_sim[engine][0]["rows"]), engine, on_sim[engine]) | {"traces": "simulator"}
            results.append(record)
            say(table_row(record))
        if sim_dir is None:
            shutil.rmtree(data, ignore_errors=True)
    cli = []
    if cli_sim:
        data = make_sim(scratch / "cli-sim", cli_sim, seed)
        rows = sum(pq_rows(f) for f in data.rglob("*.parquet"))
        for engine in ("spark", "auto", "python"):
            record = _cli_record(rows, engine, [run_cli(engine, data, scratch) for _ in range(runs)])
            cli.append(record)
            say(cli_row(record))
        shutil.rmtree(data, ignore_errors=True)
    return {"machine": MACHINE, "cores": os.cpu_count(), "spark_runs": runs, "results": results, "cli": cli}


def said(what: str, last: dict[str, float]) -> str:
    """One run's line on stderr: its CPU by each count, wall, load and the driver's peaks."""
    return (f"{what}: {last['cpu_s']:.1f} CPU s ({last.get('cpu_s_jvm_tree', 0):.1f} without orphans, "
            f"{last.get('orphans_reaped', 0)} reaped; cgroup {last.get('cpu_s_cgroup', float('nan')):.1f}), "
            f"{last['check_s']:.0f} s, load {last['load_avg']:.1f}; driver peaks: JVM "
            f"{last.get('jvm_peak_mb', 0):,.0f} MB, Python {last['python_peak_mb']:,.0f} MB; Python workers: peak "
            f"{last.get('workers_peak_mb', 0):,.0f} MB, sum {last.get('workers_sum_mb', 0):,.0f} MB")


def bench_stages(size: int, runs: int, scratch: Path, base_rows: int = 20_000, seed: int = 1,
                 engines: tuple[str, ...] = (*(f"stage:{s}" for s in STAGES), "spark")) -> list[dict[str, Any]]:
    """The full check's pass cut after each stage (`STAGES`), then the full check, at `size` events: `runs` fresh
    processes each, alternating (stage 1, 2, ..., full, stage 1, ...), so that each stage sees the same load."""
    data = scratch / f"data-{size}"
    if not data.is_dir():
        tile(make_base(scratch / "base", base_rows, seed), data, size)
    measured: dict[str, list[dict[str, float]]] = {e: [] for e in engines}
    for _ in range(runs):
        for engine in engines:
            measured[engine].append(run_child(engine, data, scratch))
            print(engine, json.dumps(measured[engine][-1]), file=sys.stderr, flush=True)
    return [_record(size, e, m) for e, m in measured.items()]


STAGE_HEADER = ["| stage (cumulative) | CPU s (median) | runs, CPU s | CPU-µs/event | over the previous | "
                "check s | load avg |", "|---|---:|---|---:|---:|---:|---:|"]


def stage_rows(records: list[dict[str, Any]]) -> list[str]:
    out, previous = [], None
    for r in records:
        per_event = r["cpu_s"] * 1e6 / r["rows"]
        name = STAGES.get(r["engine"].removeprefix("stage:"), "the full check")
        more = f"{per_event - previous:+.2f}" if previous is not None else ""
        runs = ", ".join(f"{c:.1f}" for c in r["runs_cpu_s"])
        out.append(f"| {name} | {r['cpu_s']:.1f} | {runs} | {per_event:.2f} | {more} | {r['check_s']:.1f} | "
                   f"{r['load_avg']:.1f} |")
        previous = per_event
    return out


def run_cli(engine: str, path: Path, scratch: Path) -> dict[str, float]:
    """`kcoord check-traces <path> --engine <engine>` in a fresh process: its wall time from exec to exit and its CPU
    (its own and its children's: the driver JVM)."""
    out = scratch / f"out-cli-{engine}"
    shutil.rmtree(out, ignore_errors=True)
    kcoord = str(Path(sys.executable).parent / "kcoord")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    log = scratch / f"cli-{engine}.log"
    with log.open("w") as sink, subprocess.Popen([kcoord, "check-traces", str(path), "--engine", engine, "--out",
                                                  str(out)], stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT) as cli:
        jvm_cpu = sum(watch_children(cli))
    wall = time.monotonic() - started
    stderr = log.read_text(errors="replace")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert cli.returncode in (0, 1), stderr[-2000:]
    chosen = next((line for line in stderr.splitlines() if line.startswith("engine: ")), f"engine: {engine}")
    summary = json.loads((out / "summary.json").read_text())
    own = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime  # the CLI's Python process
    return {"wall_s": wall, "cpu_s": own + jvm_cpu,
            "violations": float(summary.get("violations_total", 0)), "chosen": chosen,  # type: ignore[dict-item]
            "load_avg": os.getloadavg()[0]}


def watch_children(parent: subprocess.Popen[bytes], others: tuple[int, ...] = ()) -> tuple[float, float]:
    """The CPU seconds of `parent`'s child processes (the driver JVM py4j starts: it is not waited for, so no
    rusage counts it) and of the children of the processes `others` (a standalone worker's executors), sampled from
    /proc until `parent` exits: (the last sample of each of the first, of each of the second)."""
    last: dict[int, tuple[bool, float]] = {}
    while parent.poll() is None:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                ppid = int(fields[1])
                if ppid == parent.pid or ppid in others:
                    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
                    last[int(stat.parent.name)] = (ppid == parent.pid, cpu)
            except (OSError, IndexError, ValueError):  # (a process that ended meanwhile)
                continue
        time.sleep(0.5)
    return (sum(cpu for own, cpu in last.values() if own), sum(cpu for own, cpu in last.values() if not own))


def _cli_record(rows: int, engine: str, measured: list[dict[str, Any]]) -> dict[str, Any]:
    return {"rows": rows, "engine": engine, "runs": len(measured),
            "wall_s": statistics.median(r["wall_s"] for r in measured),
            "cpu_s": statistics.median(r["cpu_s"] for r in measured), "violations": int(measured[0]["violations"]),
            "chosen": measured[0]["chosen"], "load_avg": statistics.median(r["load_avg"] for r in measured)}


CLI_HEADER = ["| simulator rows | kcoord check-traces | wall s incl. start-up (median) | CPU s | violations | "
              "load avg |", "|---:|---|---:|---:|---:|---:|"]


def cli_row(r: dict[str, Any]) -> str:
    return (f"| {r['rows']:,} | --engine {r['engine']} ({r['chosen']}) | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
            f"{r['violations']} | {r['load_avg']:.1f} |")


def _record(size: int, engine: str, measured: list[dict[str, float]]) -> dict[str, Any]:
    check_s = statistics.median(r["check_s"] for r in measured)
    return {"events": size, "engine": engine, "runs": len(measured), "check_s": check_s,
            "events_per_s": measured[0]["rows"] / check_s,
            "startup_s": statistics.median(r.get("startup_s", 0.0) for r in measured),
            "jvm_peak_mb": max(r.get("jvm_peak_mb", 0.0) for r in measured),
            "python_peak_mb": max(r["python_peak_mb"] for r in measured),
            "violations": int(measured[0]["violations"]), "rows": int(measured[0]["rows"]),
            "spilled": int(measured[0].get("spilled", 0)), "cpu_s": statistics.median(r["cpu_s"] for r in measured),
            "load_avg": statistics.median(r["load_avg"] for r in measured),
            "runs_cpu_s": [r["cpu_s"] for r in measured], "each": measured,  # (every run's figures, for --json)
            "checked_by": measured[0].get("engine"), "fell_back": measured[0].get("fell_back"),
            **{k: statistics.median(r.get(k, 0.0) for r in measured) for k in measured[0]  # (medians: the threads, ...)
               if k.startswith("threads:") or k in ("first_cpu_s", "cpu_s_jvm_tree", "cpu_s_cgroup",
                                                    "orphans_reaped")}}


HEADER = ["| events | engine | check s (median) | events/s | CPU s | CPU-µs/event | Spark start-up s | "
          "driver JVM peak MB | Python peak MB | violations | load avg |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]


def table_row(r: dict[str, Any]) -> str:
    if "skipped" in r:
        return f"| {r['events']:,} | {r['engine']} | not run ({r['skipped']}) | | | | | | | | |"
    on_spark = r["engine"] not in ("python", "duckdb")
    startup = f"{r['startup_s']:.1f}" if on_spark else ""
    jvm = f"{r['jvm_peak_mb']:,.0f}" if on_spark else ""
    engine = f"{r['engine']} (from disk, {r['spilled']} buckets)" if r.get("spilled") else r["engine"]
    engine = {**FLOORS, "duckdb": "DuckDB: illegal transition + discontinuity + 1 invariant"}.get(engine, engine)
    if r.get("traces") == "simulator":
        engine += ", simulator traces (5 machines)"
    if r.get("checked_by"):
        engine += f" [{r['checked_by']}{'; fell back: ' + r['fell_back'][0] if r.get('fell_back') else ''}]"
    return (f"| {r['events']:,} | {engine} | {r['check_s']:.1f} | {r['events_per_s']:,.0f} | {r['cpu_s']:.0f} | "
            f"{r['cpu_s'] * 1e6 / r['rows']:.2f} | "
            f"{startup} | {jvm} | {r['python_peak_mb']:,.0f} | {r['violations']} | {r['load_avg']:.1f} |")


def run(quick: bool = False) -> dict[str, Any]:
    """The figures for `benchmarks/__main__.py`: quick = 50k events and 5k simulated, one Spark run; else 1M, 10M and
    50M events, 1M simulated and 10k simulated through the CLI."""
    if quick:
        return bench([50_000], runs=1, python_max=5e4, base_rows=2_000, log=False, floors=False, sim=5_000)
    return bench([1_000_000, 10_000_000, 50_000_000], runs=3, sim=1_000_000, cli_sim=10_000)


def _engines(engines: str | None, against: str | None) -> tuple[str, ...] | None:
    if not against:
        return tuple(engines.split(",")) if engines else None
    chosen = engines.split(",") if engines else ["spark"]
    return tuple(e for engine in chosen for e in (f"{engine}@{against}", engine))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e6,1e7,5e7")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python-max", type=float, default=5e7, help="largest size the Python checker runs on (it "
                        "checks from spill files past 2M rows of a machine, so its memory stays bounded)")
    parser.add_argument("--base", type=int, default=20_000, help="rows generated in Python, then tiled")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--json", default=None, help="also write the figures here")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-floors", action="store_true", help="skip the Spark floors (read only, sort only, "
                       "previous row on a clustered copy)")
    which.add_argument("--floors-only", action="store_true", help="only the Spark floors (no check, no simulator)")
    parser.add_argument("--sim", type=float, default=1e6, help="then both engines on this many rows of one "
                        "simulation (0: skip)")
    parser.add_argument("--cli-sim", type=float, default=1e4, help="then `kcoord check-traces` with --engine spark, "
                        "auto and python on this many rows of one simulation, wall time incl. start-up (0: skip)")
    parser.add_argument("--no-duckdb", action="store_true", help="skip the DuckDB peer")
    parser.add_argument("--sim-dir", default=None, help="an existing `kcoord simulate --format parquet` folder to "
                        "check instead of simulating --sim rows (kept)")
    parser.add_argument("--sim-engines", default="spark,python", help="what runs on the simulator traces (also "
                        "spark-read: the read floor of every machine's files)")
    parser.add_argument("--engines", default=None, help="only these, at --sizes (e.g. spark or spark,spark-c2)")
    parser.add_argument("--against", default=None, help="a commit: each engine also with that commit's code "
                        "(ENGINE@REV), side by side in the same rounds")
    parser.add_argument("--tiny", type=float, default=0, help="first this many events (e.g. 1e4) with each engine, "
                        "and with the large inputs' JIT: the fixed cost a run pays whatever its size (0: skip)")
    parser.add_argument("--keep-data", action="store_true", help="reuse the tiled folders already in --scratch "
                        "(data-SIZE with SIZE rows), and keep them")
    parser.add_argument("--stages", type=float, default=0, help="only the per-stage split of the full check at "
                        "this many events: the pass cut after each stage, then the full check (see STAGES)")
    parser.add_argument("--driver-memory", default=None, help="the driver JVM's heap in every Spark run (default "
                        "8g; a smaller one shows what the check keeps on the driver)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver_memory:
        os.environ[DRIVER_MEMORY] = args.driver_memory
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    if args.stages:
        scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="bench-traces-"))
        records = bench_stages(int(args.stages), args.runs, scratch, args.base, args.seed)
        if args.json:
            Path(args.json).write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
        print(f"\nThe full check's pass by stage, {int(args.stages):,} {MACHINE} events (median of {args.runs} "
              f"fresh processes, JVM CPU):\n")
        print("\n".join([*STAGE_HEADER, *stage_rows(records)]))
        return
    sizes = [int(float(s)) for s in args.sizes.split(",") if float(s or 0)]  # ("0": only the simulator's traces)
    figures = bench(sizes, args.runs, args.python_max, args.base, args.seed,
                    Path(args.scratch) if args.scratch else None, floors=not args.no_floors,
                    sim=0 if args.floors_only else int(args.sim), checks=not args.floors_only,
                    duckdb=not args.no_duckdb, cli_sim=0 if args.floors_only else int(float(args.cli_sim)),
                    sim_dir=Path(args.sim_dir) if args.sim_dir else None,
                    sim_engines=tuple(args.sim_engines.split(",")),
                    only=_engines(args.engines, args.against), tiny=int(args.tiny), keep_data=args.keep_data)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"\nTrace checking, {MACHINE} traces, {figures['cores']} cores (median of {args.runs} Spark runs; "
          f"Python checker once):\n")
    print("\n".join([*HEADER, *(table_row(r) for r in figures["results"])]))
    if figures["cli"]:
        print(f"\nA small simulator trace through the CLI (fresh process each, median of {args.runs}):\n")
        print("\n".join([*CLI_HEADER, *(cli_row(r) for r in figures["cli"])]))


if __name__ == "__main__":
    main()
