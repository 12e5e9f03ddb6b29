"""Spark as the scheduler, DuckDB per task: a measured prototype for issue 33's "flat from 1M" target.

    .venv/bin/python -m benchmarks.vectorised_tasks [--sizes 1e6,1e7] [--runs 3] [--scratch DIR] [--group-rows N]
        [--designs spark-sql,tasks,tasks-all,scan-arrow,tasks-rowcounts,tasks-rows,tasks-stitched,spark-full,
         warm-tasks,duckdb-three,...]
    .venv/bin/python -m benchmarks.vectorised_tasks --every-machine [--seed 7]

Owns: `combined` (the illegal-transition, discontinuity and one-invariant checks as one counting query, rendered in
DuckDB's or Spark's dialect from the Spark checker's own expression trees, as `duckdb_peer.queries` renders them),
`count_tasks` (a counting query in Spark's tasks, one per work unit of `duckspark.units`: pyarrow reads the unit's row
groups and an in-process DuckDB of one thread counts, through `mapInArrow`; "tasks:ROWS" sets the unit size; right only
when every key's rows lie inside one unit), `scan_counts` (Spark's own scan feeding `mapInArrow`), `sql_counts` (the
three checks as one Spark SQL plan, whole-stage code generation), `measure_duckdb` (DuckDB alone), `regroup` (a trace's
files rewritten in smaller row groups, so that keys cross units), and the benchmark that runs the designs in fresh
processes, alternating, after checking each one's counts against the Python checker's on mutated traces
("warm-DESIGN": the Python workers started before the measure). Uses the checker's `MachinePlan` only for its
expression trees (no session, no frame) and changes nothing in the checker. "Every row check" is
`kcoord.conformance.traces.duckcheck.row_pass` (counted: "tasks-rowcounts", i33h's "tasks-rows") or the product's
runner `kcoord.conformance.traces.duckspark.check` (the flagged rows returned: "tasks-rows" unstitched, right only when
every key lies in one unit; "tasks-stitched" with keys that cross units stitched on the driver; its differential test is
tests/conformance/traces/test_duckspark.py).

The counting designs need what the issue's moonshot asks of the writer: **traces clustered by key**, every key's rows
inside one work unit (`bench_traces.tile` writes one row group per tiled copy, and every copy has keys of its own).
"tasks-stitched" needs only that a key's units do not interleave its rows (`--group-rows` cuts the copies across
units; a layout that interleaves is refused, and the run fails).
CPU is counted as the issue counts it, start-up excluded (the JVM, the session and `range(1).count()`): the driver
JVM (/proc), the Python workers Spark starts (the daemon and its forks, reaped ones included: cutime) and the driver's
own Python process (where it runs code of the check: rendering, listing the units, summing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.child import last_json
from benchmarks.cpu_tree import cpu_s as _cpu_s
from benchmarks.trace_data import MACHINE, make_base, mutated_traces, pq_rows, tile
from kcoord.conformance.traces.duckcheck import row_pass
from kcoord.conformance.traces.duckspark import Checked, check, counts, units
from kcoord.model import ir
from kcoord.model import sqltree as q

CHECKS = ("illegal_transition", "discontinuity", "invariant")


def combined(m: ir.Machine, source: str, dialect: q.Dialect) -> str:
    """One query over the relation `source` counting the three checks' violations (one window per key, one
    aggregate): the conditions are `duckdb_peer`'s (the checker's `legal`, `fresh`, `discontinuity` and the
    machine's first invariant compiled by `SparkCompiler`), rendered in `dialect`."""
    from benchmarks.duckdb_peer import _plan
    from kcoord.conformance.traces.sparkcheck import POST
    from kcoord.model.spark_backend import SparkCompiler

    plan = _plan(m)
    broken = q.and_(q.binary(">=", q.col("seq"), q.lit(0)), q.not_(SparkCompiler(POST).holds(m.invariants[0].expr)))
    windowed = (f"SELECT *, lag(to_state) OVER k AS p_to_state, lag(seq) OVER k AS p_seq, "
                f"lag(coordinator_epoch) OVER k AS p_coordinator_epoch FROM {source} "
                f"WINDOW k AS (PARTITION BY key, seq < 0 ORDER BY seq)")
    fresh = f"SELECT *, {dialect.render(plan.fresh())} AS fresh FROM ({windowed}) w"
    counts = {"illegal_transition": q.not_(plan.legal()), "discontinuity": q.holds(plan.discontinuity()),
              "invariant": q.holds(broken)}
    picked = ", ".join(f"count_if({dialect.render(e)}) AS {name}" for name, e in counts.items())
    return f"SELECT {picked}, count(*) AS rows_checked FROM ({fresh}) f"


def columns_read(sql: str, schema_names: list[str]) -> list[str]:
    """The columns of the files `sql` refers to (what DuckDB's projection pushdown would read)."""
    words = set(re.findall(r'"?([A-Za-z_][A-Za-z0-9_]*)"?', sql))
    return [n for n in schema_names if n in words]


def count_function(work: list[tuple[str, list[int]]], sql: str, names: list[str],
                   columns: list[str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`mapInArrow`'s function: for each unit id of its input, the unit's row groups read with pyarrow (only
    `columns`) and counted by `sql` (its result columns: `names`) in DuckDB with one thread (the task's core). A
    closure, so cloudpickle ships it by value: the worker needs pyarrow and duckdb, not this package."""
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import duckdb
        import pyarrow as pa
        import pyarrow.parquet as pq

        con = duckdb.connect(config={"threads": 1})
        try:
            for batch in batches:
                for unit in batch.column(0).to_pylist():
                    path, groups = work[unit]
                    t = pq.ParquetFile(path).read_row_groups(groups, columns=columns)  # noqa: F841 (DuckDB reads it)
                    row = con.execute(sql.replace("{source}", "t")).fetchone()
                    yield pa.RecordBatch.from_pydict({n: [int(v)] for n, v in zip(names, row, strict=True)})
        finally:
            con.close()
    return run


def count_tasks(spark: Any, m: ir.Machine, files: list[Path], unit_rows: int, query: str = "three",
                every_column: bool = False) -> dict[str, int]:
    """Design (b), counting: one Spark job of one partition per unit; each task counts its units with DuckDB. `query`:
    "three" (`combined`: the peer's three checks, reading only the columns they name, or `every_column`) or "rows"
    (`row_pass`: every row check, every column)."""
    import duckdb
    import pyarrow.parquet as pq

    work = units(files, unit_rows)
    sql = combined(m, "{source}", q.DUCKDB) if query == "three" else row_pass(m, "{source}")
    all_names = pq.read_schema(files[0]).names
    columns = all_names if every_column or query == "rows" else columns_read(sql, all_names)
    empty = pq.ParquetFile(files[0]).schema_arrow.empty_table().select(columns)  # noqa: F841 (the result's names)
    names = [d[0] for d in duckdb.connect().execute(sql.replace("{source}", "empty")).description]
    schema = ", ".join(f"{n} long" for n in names)
    fn = count_function(work, sql, names, columns)
    rows = spark.range(0, len(work), 1, len(work)).mapInArrow(fn, schema).collect()
    return {n: sum(int(r[n]) for r in rows) for n in names}


def scan_function(sql: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`mapInArrow`'s function when Spark reads the rows: the partition's batches (whole row groups, so whole keys)
    gathered into one table and counted by DuckDB with one thread."""
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import duckdb
        import pyarrow as pa

        t = pa.Table.from_batches(list(batches))
        if t.num_rows == 0:
            return
        con = duckdb.connect(config={"threads": 1})
        try:
            row = con.execute(sql.replace("{source}", "t")).fetchone()
        finally:
            con.close()
        names = (*CHECKS, "rows_checked")
        yield pa.RecordBatch.from_pydict({name: [int(v)] for name, v in zip(names, row, strict=True)})
    return run


def scan_counts(spark: Any, m: ir.Machine, folder: Path) -> dict[str, int]:
    """Design (b2): Spark's own Parquet scan (row groups never split; files cut at 16 MB so both cores get tasks),
    its rows shipped to the Python workers as Arrow batches (`mapInArrow`), DuckDB per partition. Only the columns
    the query names are read (Spark prunes them from the select)."""
    import pyarrow.parquet as pq

    spark.conf.set("spark.sql.files.maxPartitionBytes", str(16 * 1024 * 1024))
    sql = combined(m, "{source}", q.DUCKDB)
    first = sorted(folder.glob("*.parquet"))[0]
    columns = columns_read(sql, pq.read_schema(first).names)
    df = spark.read.parquet(str(folder)).select(*columns)
    schema = ", ".join(f"{c} long" for c in (*CHECKS, "rows_checked"))
    rows = df.mapInArrow(scan_function(sql), schema).collect()
    return {c: sum(int(r[c]) for r in rows) for c in (*CHECKS, "rows_checked")}


def sql_counts(spark: Any, m: ir.Machine, folder: Path) -> dict[str, int]:
    """Design (a): the same query as one Spark SQL plan over `spark.read.parquet` (whole-stage code generation)."""
    spark.read.parquet(str(folder)).createOrReplaceTempView("traces")
    row = spark.sql(combined(m, "traces", q.SPARK)).collect()[0]
    return {c: int(row[c]) for c in (*CHECKS, "rows_checked")}


# ---------------------------------------------------------------- one measurement, in a fresh process


def _tree_cpu_s(root: int) -> float:
    """CPU seconds of `root`'s descendants (not `root`), each with its reaped children's (cutime, cstime): the
    Python daemon Spark starts and the workers it forks."""
    parents: dict[int, tuple[int, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)
        except (OSError, IndexError, ValueError):
            continue
    below, total, frontier = set(), 0.0, {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in parents.items() if ppid in frontier and pid not in below}
        below |= frontier
    for pid in below:
        total += parents[pid][1]
    return total


def measure_duckdb(design: str, path: str) -> dict[str, Any]:
    """No Spark: one DuckDB process over the files (`read_parquet`, its own threads: both cores), "duckdb-three"
    the three checks (`combined`), "duckdb-rows" every row check (`row_pass`): the single-machine peer of (b)."""
    import duckdb

    from kcoord.model.loader import bundled_machines

    machine = bundled_machines()[MACHINE]
    files = sorted(Path(path, MACHINE).glob("*.parquet"))
    source = f"read_parquet({q.DUCKDB.string(str(Path(path, MACHINE, '*.parquet')))})"
    before, started = _cpu_s(None), time.monotonic()
    sql = combined(machine, source, q.DUCKDB) if design == "duckdb-three" else row_pass(machine, source)
    con = duckdb.connect(config={"threads": os.cpu_count() or 1})
    cur = con.execute(sql)
    found = {d[0]: int(v) for d, v in zip(cur.description, cur.fetchone(), strict=True)}
    con.close()
    cpu = _cpu_s(None) - before
    return {"rows": sum(pq_rows(f) for f in files), "counts": found, "check_s": time.monotonic() - started,
            "startup_s": 0.0, "jvm_cpu_s": 0.0, "workers_cpu_s": 0.0, "driver_py_cpu_s": cpu, "cpu_s": cpu,
            "load_avg": os.getloadavg()[0],
            "python_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _warm_up(batches: Iterator[Any]) -> Iterator[Any]:
    import duckdb
    import pyarrow.parquet  # noqa: F401 (what the tasks import)

    duckdb.connect().close()
    yield from batches


def measure(design: str, path: str) -> dict[str, Any]:
    if design.startswith("duckdb-"):
        return measure_duckdb(design, path)
    from kcoord.conformance.traces.session import local_session, tune
    from kcoord.model.loader import bundled_machines

    machine = bundled_machines()[MACHINE]
    files = sorted(Path(path, MACHINE).glob("*.parquet"))
    rows = sum(pq_rows(f) for f in files)
    # (pyspark ships its workers' interpreter with each function, from PYSPARK_PYTHON, not from the session's
    # `spark.pyspark.python`, which only spark-submit reads: without it the workers run `python3`, outside the venv)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    started = time.monotonic()
    spark = local_session("local[*]", driver_memory="8g", rows=rows)  # (the JIT the CLI chooses at this size)
    tune(spark, rows)
    spark.range(1).count()
    startup_s = time.monotonic() - started
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    warm = design.startswith("warm-")
    if warm:  # ("warm-DESIGN": the Python workers started and their imports done before the measure, as a
        design = design.removeprefix("warm-")  # long-lived session has them; the JVM is as fresh as the others')
        spark.range(0, 2, 1, 2).mapInArrow(_warm_up, "id long").collect()
    before = (_cpu_s(jvm), _tree_cpu_s(jvm), _cpu_s(None))
    started = time.monotonic()
    design, _, unit = design.partition(":")
    stitching: dict[str, int] = {}
    if design in ("tasks", "tasks-all", "tasks-rowcounts"):
        found = count_tasks(spark, machine, files, int(float(unit or 500_000)),
                            "rows" if design == "tasks-rowcounts" else "three", every_column=design == "tasks-all")
    elif design in ("tasks-rows", "tasks-stitched"):
        result = check(spark, machine, files, int(float(unit or 500_000)), stitch_keys=design == "tasks-stitched")
        if not isinstance(result, Checked):
            raise SystemExit(result.reason)
        found = counts(machine, result)
        stitching = {"units": result.units, "boundary_rows": result.boundary_rows, "stitched": result.stitched}
    elif design == "scan-arrow":
        found = scan_counts(spark, machine, Path(path, MACHINE))
    else:
        found = sql_counts(spark, machine, Path(path, MACHINE))
    check_s = time.monotonic() - started
    after = (_cpu_s(jvm), _tree_cpu_s(jvm), _cpu_s(None))
    spark.stop()
    jvm_s, workers_s, driver_py_s = (a - b for a, b in zip(after, before, strict=True))
    return {"rows": rows, "counts": found, **stitching, "check_s": check_s, "startup_s": startup_s, "warm": warm,
            "jvm_cpu_s": jvm_s,
            "workers_cpu_s": workers_s, "driver_py_cpu_s": driver_py_s, "cpu_s": jvm_s + workers_s + driver_py_s,
            "load_avg": os.getloadavg()[0],
            "python_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_child(design: str, path: Path) -> dict[str, Any]:
    """One measurement in a fresh process. "spark-full": today's full check (`bench_traces`' engine "spark", the
    CLI's JIT for the size), whose figure is its driver JVM's CPU (it starts no Python worker)."""
    if design == "spark-full":
        from benchmarks import bench_traces

        got = bench_traces.run_child("spark", path, path.parent)
        return {**got, "jvm_cpu_s": got["cpu_s"], "workers_cpu_s": 0.0, "driver_py_cpu_s": 0.0,
                "counts": {"violations": int(got["violations"])}}
    return last_json("benchmarks.vectorised_tasks", design, str(path))


def validate(scratch: Path, seed: int, designs: list[str]) -> dict[str, dict[str, int]]:
    """Each design counts what the Python checker finds on traces with every mutation (and DuckDB's peer too)."""
    root, expected = mutated_traces(scratch, seed)
    every = python_counts(root)
    got: dict[str, dict[str, int]] = {"python checker": expected, "python checker, every row check": every}
    for design in designs:
        if design == "spark-full":  # (today's checker: the differential tests hold it to the Python checker's)
            continue
        if "stitched" in design:  # (sorted by key, in row groups and units of 40 rows: most keys cross units)
            found = run_child(design.split(":")[0] + ":40", regroup(root, scratch / "peer-40", 40, "key"))["counts"]
        else:
            found = run_child(design, root)["counts"]
        want = every if design.split(":")[0].endswith(("-rows", "-rowcounts", "-stitched")) else expected
        got[design] = {c: found[c] for c in want}
        assert got[design] == want, f"{design} counts {got[design]}, the Python checker {want}"
    return got


def regroup(src: Path, dst: Path, group_rows: int, order: str = "") -> Path:
    """`src`'s trace files (of `MACHINE`) rewritten under `dst` in row groups of `group_rows` rows, one file at a time,
    each file first sorted by key and seq (`order` "key") or by seq and key ("seq": every key of a file spans the whole
    file, so a unit boundary inside the file cuts them all), or as it is (""): where a unit boundary falls inside a
    key's rows, the key crosses units."""
    import pyarrow.parquet as pq

    (dst / MACHINE).mkdir(parents=True, exist_ok=True)
    for f in sorted((src / MACHINE).glob("*.parquet")):
        table = pq.read_table(f)
        if order:
            table = table.sort_by([(c, "ascending") for c in ("key", "seq")[::1 if order == "key" else -1]])
        pq.write_table(table, dst / MACHINE / f.name, row_group_size=group_rows)
    return dst


def python_counts(root: Path) -> dict[str, int]:
    """The Python reference checker's violations of each row check on the traces under `root`, named as `row_pass`
    names its counts (`duckcheck.count_names`)."""
    from kcoord.conformance.traces.duckcheck import count_name, count_names
    from kcoord.conformance.traces.pycheck import check_paths
    from kcoord.model.loader import bundled_machines

    m = bundled_machines()[MACHINE]
    out = dict.fromkeys(count_names(m), 0)
    for v in check_paths([str(root)], {MACHINE: m}).violations:
        if (name := count_name(m, v.check, v.name)) in out:
            out[name] += 1
    return out


def validate_every_machine(scratch: Path, seed: int) -> list[str]:
    """`row_pass` in DuckDB (no Spark) against the Python checker on traces of every bundled machine with every
    mutation (5 rounds of each): one line per machine, its row checks' counts equal or not; raises if any differs.
    The trace properties (cross-key: not row checks) are listed, not compared."""
    import random

    import duckdb

    from kcoord.conformance.traces.checks import ROW_CHECKS
    from kcoord.conformance.traces.duckcheck import count_name
    from kcoord.conformance.traces.generate import Options, generate
    from kcoord.conformance.traces.mutations import mutate_every
    from kcoord.conformance.traces.pycheck import check_paths
    from kcoord.conformance.traces.writers import write_parquet
    from kcoord.model.loader import bundled_machines

    machines = dict(bundled_machines())
    traces, _ = generate(machines, seed, Options(keys=40, rows=3_000))
    rng = random.Random(seed)
    traces = mutate_every(traces, machines, rng, rounds=5)
    root = scratch / "every-machine"
    write_parquet(traces, machines, str(root))
    python: dict[tuple[str, str], int] = {}
    for v in check_paths([str(root)], machines).violations:
        name = count_name(machines[v.machine], v.check, v.name)
        python[v.machine, name] = python.get((v.machine, name), 0) + 1
    out, con = [], duckdb.connect()
    for name, m in machines.items():
        source = f"read_parquet({q.DUCKDB.string(str(root / name / '*.parquet'))})"
        cur = con.execute(row_pass(m, source))
        got = {n[0]: int(v) for n, v in zip(cur.description, cur.fetchone(), strict=True) if n[0] != "rows_checked"}
        want = {n: python.get((name, n), 0) for n in got}
        others = {c: n for (mm, c), n in python.items() if mm == name and c not in got}
        assert all(c not in ROW_CHECKS for c in others), others
        assert got == want, f"{name}: DuckDB {got}, the Python checker {want}"
        out.append(f"{name}: {sum(want.values())} row-check violations, equal; not row checks: {others or 'none'}")
    return out


def violations(counts: dict[str, int]) -> int:
    return sum(v for k, v in counts.items() if k != "rows_checked")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1e6,1e7")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--designs", default="spark-sql,tasks")
    parser.add_argument("--base", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--group-rows", type=int, default=0,
                        help="rewrite the tiled files in row groups of N rows (0: one row group per tiled copy)")
    parser.add_argument("--group-order", choices=("", "key", "seq"), default="",
                        help="with --group-rows: sort each file by key, or by seq, first (`regroup`)")
    parser.add_argument("--every-machine", action="store_true", help="only `validate_every_machine`")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.every_machine:
        print("\n".join(validate_every_machine(Path(tempfile.mkdtemp(prefix="bench-vtasks-")), args.seed)))
        return
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="bench-vtasks-"))
    designs = args.designs.split(",")
    print(f"seed {args.seed}; scratch {scratch}", file=sys.stderr, flush=True)
    print("mutated traces:", json.dumps(validate(scratch, args.seed, designs)), file=sys.stderr, flush=True)
    base = scratch / "base" / MACHINE / "part-0.parquet"
    if not base.exists():
        make_base(scratch / "base", args.base, args.seed)
    for size in (int(float(s)) for s in args.sizes.split(",")):
        data = scratch / f"data-{size}"
        if not data.is_dir():
            tile(base, data, size)
        if args.group_rows:
            tiled, data = data, scratch / f"data-{size}-g{args.group_rows}{args.group_order}"
            if not data.is_dir():
                regroup(tiled, data, args.group_rows, args.group_order)
        measured: dict[str, list[dict[str, Any]]] = {d: [] for d in designs}
        for _ in range(args.runs):  # (the designs take turns: side by side)
            for design in designs:
                measured[design].append(run_child(design, data))
                print(size, design, json.dumps(measured[design][-1]), file=sys.stderr, flush=True)
        for design, runs in measured.items():
            cpu = statistics.median(r["cpu_s"] for r in runs)
            mid = min(runs, key=lambda r: abs(r["cpu_s"] - cpu))
            each = ", ".join(f"{r['cpu_s']:.1f}" for r in runs)
            print(f"| {size:,} | {design} | {each} | "
                  f"{mid['jvm_cpu_s']:.1f} + {mid['workers_cpu_s']:.1f} + {mid['driver_py_cpu_s']:.1f} | "
                  f"**{cpu * 1e6 / size:.2f}** | {statistics.median(r['check_s'] for r in runs):.1f} | "
                  f"{statistics.median(r['startup_s'] for r in runs):.1f} | {violations(runs[0]['counts'])} | "
                  f"{mid.get('units', '')} / {mid.get('boundary_rows', '')} / {mid.get('stitched', '')} | "
                  f"{min(r['load_avg'] for r in runs):.1f}–{max(r['load_avg'] for r in runs):.1f} |", flush=True)


if __name__ == "__main__":
    main()
