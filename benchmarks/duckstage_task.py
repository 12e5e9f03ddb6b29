"""The trace properties' phase 1 inside a `duckspark` task (`conformance/traces/duckstage.py`): its CPU per event
beside the task's row pass alone, and the driver's stitching of the staged rows (issue 33).

    .venv/bin/python -m benchmarks.duckstage_task [--sizes 1e6] [--unit-rows 500000] [--runs 1] [--scratch DIR]
        [--phases rows,rows+stage,pass,pass+stage,one,task,task-checked,task@REV]

Data: `bench_traces`' tiled Transaction traces (`make_base`: 20,000 generated rows, seed 1; `tile`: renamed keys,
disjoint producer ids, one row group per copy, 1M-row files; 0 violations), cut into `duckspark.units`. Each run is a
fresh process per phase, the phases taking turns; each runs every unit as `duckspark.task_function` does, in this
process (no Spark): pyarrow reads the unit's row groups, a DuckDB of one thread runs the pass.
- `rows`: the task as it is — `duckcheck.flag_rows` over the unit, then its hits (`hits_sql`) and boundary rows
  (`bounds_sql`) fetched as Arrow tables;
- `rows+stage`: the same, then `duckstage.unit_staged` and `unit_parts` over the unit's rows, fetched; and, after
  the units, the driver's `duckstage.stitch` over every unit's staged rows, parts and boundary rows (its CPU apart);
- `pass`: the task with the row pass materialised once (`duckcheck.pass_query`, every row, into a temporary table):
  its hits (one query per count's condition, as `duckspark.hits_sql`) and boundary rows (`_rn` 1 or the unit's rows
  of the partition, from `unit_parts`) read from it — the same answers as `rows`, another task shape;
- `pass+stage`: the same, then `duckstage.unit_staged_from` over the materialised pass (its window reused);
- `one`: `duckstage.unit_checked` — the pass's flagged/first/last rows and the staged rows from one query (one
  window, plus one ordered by `_rn` for `_last` and the timeline), read by `hits_sql`, `bounds_sql` and
  `unit_staged_of` as `rows` reads `flag_rows`' rows;
- `task`: `duckspark.task_function` itself over each unit, with the SQL `duckengine` gives it (validation, the row
  pass, the staged rows, the parts, the violations when a row is flagged, the boundary rows, Arrow IPC of each),
  the CPU of each query apart (execute and fetch: the `per query` lines; `other`: IPC, registering, Python);
  `task-checked`: the same with `duckstage.unit_checked` (the pass not materialised).
`PHASE@REV` runs a phase with commit REV's code (`bench_traces.checkout`): e.g. `--phases task@2aabb57,task`.
CPU is the process's (getrusage) from after its imports to the last row fetched, without the Parquet read (timed
apart, the same in both); CPU-µs per event divide it by the trace's rows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_traces import ROOT, checkout
from benchmarks.trace_data import MACHINE, make_base, pq_rows, tile


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def hits_sql(m: Any, source: str) -> str:
    """`source`'s rows (`duckcheck.flag_rows`' columns) as one row per flag: key, seq, count name, `_rn`, `_unit`."""
    from kcoord.conformance.traces.duckcheck import count_names
    from kcoord.model import sqltree as q

    return " UNION ALL ".join(f"SELECT key, seq, {q.DUCKDB.string(n)} AS name, _rn, {{unit}} AS _unit FROM {source} "
                              f"WHERE {q.DUCKDB.quote('_f_' + n)}" for n in count_names(m))


def measure(phase: str, data: str, unit_rows: int) -> dict[str, Any]:
    """Every unit of `data` as a task runs it (`phase`: one of `PHASES`), in this process."""
    if phase.startswith("task"):
        return measure_task(phase, data, unit_rows)
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kcoord.conformance.traces import duckprops, duckspark, duckstage
    from kcoord.conformance.traces.duckcheck import flag_rows, pass_query
    from kcoord.conformance.traces.sparkprops import needs
    from kcoord.conformance.traces.sparkread import typed_columns
    from kcoord.model import sqltree as q
    from kcoord.model.loader import bundled_machines

    machines = bundled_machines()
    m = machines[MACHINE]
    plans = duckprops.expression_plans(machines)
    plan, need = plans[MACHINE], needs(plans)[MACHINE]
    work = duckspark.units(sorted(Path(data).rglob("*.parquet")), unit_rows)
    sql, hits, bounds = flag_rows(m, "t"), hits_sql(m, "r"), duckspark.bounds_sql(m, "r")
    staged, staged_from = duckstage.unit_staged(plan, need, "t"), duckstage.unit_staged_from(plan, need, "s")
    assert staged is not None and staged_from is not None
    checked, staged_of = duckstage.unit_checked(plan, need, "t"), duckstage.unit_staged_of(need, "r")
    passed, conditions = pass_query(m, "t")
    pass_hits = " UNION ALL ".join(f"SELECT key, seq, {q.DUCKDB.string(n)} AS name, _rn, {{unit}} AS _unit FROM s "
                                   f"WHERE {q.DUCKDB.render(e)}" for e, n in conditions)
    kept = ", ".join(f"s.{q.DUCKDB.quote(n)}" for n, _ in typed_columns(m))
    pass_bounds = (f"SELECT {kept}, {{unit}} AS _unit, s._rn = 1 AS _first, s._rn = c._rows AS _last FROM s "
                   "JOIN c ON c.key = s.key AND c._neg = (s.seq < 0) WHERE s._rn = 1 OR s._rn = c._rows")
    out: dict[str, Any] = {"units": len(work), "read_s": 0.0, "hits": 0, "staged": 0, "bounds": 0}
    tables: dict[str, list[Any]] = {"staged": [], "parts": [], "bounds": []}
    start = _cpu()
    for unit, (path, groups) in enumerate(work):
        before = _cpu()
        t = pq.ParquetFile(path).read_row_groups(groups)
        out["read_s"] += _cpu() - before
        con = duckdb.connect(config={"threads": 1})
        try:
            con.register("t", t)
            if phase == "one":  # (`unit_checked`: the pass's rows and the staged rows from one query)
                con.register("r", con.execute(checked).to_arrow_table())
                out["hits"] += con.execute(hits.replace("{unit}", str(unit))).to_arrow_table().num_rows
                tables["bounds"].append(con.execute(bounds.replace("{unit}", str(unit))).to_arrow_table())
                tables["staged"].append(con.execute(staged_of.replace("{unit}", str(unit))).to_arrow_table())
                tables["parts"].append(con.execute(duckstage.unit_parts("t", str(unit))).to_arrow_table())
            elif phase.startswith("rows"):
                con.register("r", con.execute(sql).to_arrow_table())
                out["hits"] += con.execute(hits.replace("{unit}", str(unit))).to_arrow_table().num_rows
                tables["bounds"].append(con.execute(bounds.replace("{unit}", str(unit))).to_arrow_table())
            else:  # (the pass materialised once: its hits, its boundary rows, and the staged rows from it)
                con.execute(f"CREATE TEMP TABLE s AS {passed}")
                con.register("c", con.execute(duckstage.unit_parts("t", str(unit))).to_arrow_table())
                out["hits"] += con.execute(pass_hits.replace("{unit}", str(unit))).to_arrow_table().num_rows
                tables["bounds"].append(con.execute(pass_bounds.replace("{unit}", str(unit))).to_arrow_table())
            if phase.endswith("+stage"):
                query = staged if phase.startswith("rows") else staged_from
                tables["staged"].append(con.execute(query.replace("{unit}", str(unit))).to_arrow_table())
                tables["parts"].append(con.execute(duckstage.unit_parts("t", str(unit))).to_arrow_table())
        finally:
            con.close()
    out["cpu_s"] = _cpu() - start - out["read_s"]
    out["bounds"] = sum(b.num_rows for b in tables["bounds"])
    if phase.endswith("+stage") or phase == "one":
        out["staged"] = sum(s.num_rows for s in tables["staged"])
        before = _cpu()
        got = duckstage.stitch(plan, need, *(pa.concat_tables(tables[k]) for k in ("staged", "parts", "bounds")))
        out["stitch_s"] = _cpu() - before
        assert not isinstance(got, duckstage.Refused), got.reason
        out["staged_after_stitch"] = got.num_rows
    out["load_avg"] = os.getloadavg()[0]
    return out


def measure_task(phase: str, data: str, unit_rows: int) -> dict[str, Any]:
    """Every unit of `data` through `duckspark.task_function` itself, in this process, with the SQL `duckengine`
    gives it (validation, the row pass, the staged rows from it, the parts; `task-checked`: the pass's rows and the
    staged rows from one query, `duckstage.unit_checked`), one unit per call as one Spark task runs it; CPU per
    query (`_Timed`: execute and fetch), the Parquet read apart, the rest (Arrow IPC, registering, Python) as
    `other`."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kcoord.conformance.traces import duckprops, duckspark, duckstage
    from kcoord.conformance.traces.duckfound import read_columns
    from kcoord.conformance.traces.duckvalid import layout, reasoned
    from kcoord.conformance.traces.sparkprops import needs
    from kcoord.model.loader import bundled_machines

    m = bundled_machines()[MACHINE]
    plans = duckprops.expression_plans({MACHINE: m})
    plan, need = plans[MACHINE], needs(plans)[MACHINE]
    files = sorted(str(f) for f in Path(data).rglob("*.parquet"))
    valid = {f: reasoned(m, f, layout(m, f), relation="t", source=f"file://{os.path.abspath(f)}") for f in files}
    parts = duckstage.unit_parts("t")
    if phase == "task-checked":
        checked = duckstage.unit_checked(plan, need, "{source}", keep=read_columns(m))
        sql = duckspark.task_sql(m, valid, duckstage.unit_staged_of(need, "r"), parts, checked=checked)
    else:
        sql = duckspark.task_sql(m, valid, duckstage.unit_staged_from(plan, need, "s"), parts)
    work = duckspark.units([Path(f) for f in files], unit_rows)
    spent: dict[str, float] = {}
    unit = 0

    def label(query: str) -> str:
        if query.startswith("CREATE OR REPLACE TEMP TABLE s"):
            return "pass (materialised)"
        if "_reason IS NOT NULL" in query[-40:]:
            return "valid: malformed rows"
        if "_reason IS NULL" in query[-40:]:
            return "valid: valid rows"
        if query.startswith("SELECT count(*), max(ts_ms)"):
            return "count"
        if query in sql["valid"].values():
            return "valid"
        for k, t in sql.items():
            if isinstance(t, str) and query == t.replace("{source}", "t").replace("{unit}", str(unit)):
                return k
        return "other query"

    class _Timed:
        """A DuckDB connection whose queries' CPU (execute and fetch) is added to `spent` by `label`."""

        def __init__(self, con: Any) -> None:
            self.con, self.what = con, ""

        def execute(self, query: str) -> Any:
            self.what = label(query)
            before = time.process_time()
            self.con.execute(query)
            spent[self.what] = spent.get(self.what, 0.0) + time.process_time() - before
            return self

        def _fetch(self, how: str) -> Any:
            before = time.process_time()
            out = getattr(self.con, how)()
            spent[self.what] = spent.get(self.what, 0.0) + time.process_time() - before
            return out

        def to_arrow_table(self) -> Any:
            return self._fetch("to_arrow_table")

        def fetchone(self) -> Any:
            return self._fetch("fetchone")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.con, name)

    class _TimedFile(pq.ParquetFile):  # type: ignore[misc]
        def read_row_groups(self, *args: Any, **kwargs: Any) -> Any:
            before = time.process_time()
            out = super().read_row_groups(*args, **kwargs)
            spent["read"] = spent.get("read", 0.0) + time.process_time() - before
            return out

    connect = duckdb.connect
    duckdb.connect = lambda *a, **k: _Timed(connect(*a, **k))  # type: ignore[assignment]
    pq.ParquetFile = _TimedFile  # type: ignore[misc]
    fn = duckspark.task_function(work, sql)
    got: dict[str, int] = {"found": 0, "staged": 0, "bounds": 0}
    start = time.process_time()
    for unit in range(len(work)):
        (row,) = [b.to_pylist()[0] for b in fn(iter([pa.RecordBatch.from_pydict({"id": [unit]})]))]
        assert row["error"] is None, row["error"]
        for k in got:
            got[k] += duckspark._table(row[k]).num_rows if row[k] else 0
    total = time.process_time() - start
    spent["other (IPC, registering, Python)"] = total - sum(spent.values())
    read = spent.pop("read", 0.0)
    return {"units": len(work), "read_s": read, "cpu_s": total - read, "hits": got["found"], "staged": got["staged"],
            "bounds": got["bounds"], "per_query": {k: round(v, 3) for k, v in sorted(spent.items())},
            "load_avg": os.getloadavg()[0]}


def run_child(phase: str, data: Path, unit_rows: int, scratch: Path) -> dict[str, Any]:
    """One phase in a fresh process; `PHASE@REV`: with the code of commit REV (`bench_traces.checkout`), this file's
    own `measure_task` run there."""
    phase, _, rev = phase.partition("@")
    argv = ["duckstage_task", "--child", phase, str(data), str(unit_rows)]
    cmd = [sys.executable, "-c", f"import runpy, sys; sys.path.insert(0, '.'); sys.argv = {argv!r}; "
                                 f"runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')"]
    done = subprocess.run(cmd, cwd=checkout(rev, scratch) if rev else ROOT, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1e6", help="tiled Transaction traces of these sizes")
    p.add_argument("--unit-rows", type=int, default=500_000)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--phases", default="rows,rows+stage,pass,pass+stage,one")
    p.add_argument("--base", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scratch")
    p.add_argument("--child", nargs=3, metavar=("PHASE", "DATA", "UNIT_ROWS"))
    args = p.parse_args()
    if args.child:
        phase, data, unit_rows = args.child
        print(json.dumps(measure(phase, data, int(unit_rows))))
        return
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="bench-duckstage-"))
    base = scratch / "base" / MACHINE / "part-0.parquet"
    if not base.exists():
        make_base(scratch / "base", args.base, args.seed)
    print("| events | units | phase | CPU s (runs) | **CPU-µs/event** | rows out | driver stitch CPU s | load |")
    print("|---:|---:|---|---|---:|---|---:|---:|")
    for size in (int(float(s)) for s in args.sizes.split(",") if s):
        data = scratch / f"data-{size}"
        if not data.is_dir():
            tile(base, data, size)
        rows = sum(pq_rows(f) for f in data.rglob("*.parquet"))
        measured: dict[str, list[dict[str, Any]]] = {p: [] for p in args.phases.split(",")}
        for _ in range(args.runs):
            for phase in measured:
                measured[phase].append(run_child(phase, data, args.unit_rows, scratch))
                print(size, phase, json.dumps(measured[phase][-1]), file=sys.stderr, flush=True)
        for phase, runs in measured.items():
            cpu = sorted(r["cpu_s"] for r in runs)[len(runs) // 2]
            last = runs[-1]
            out = f"{last['hits']} hits, {last['bounds']:,} boundary rows" + (
                f", {last['staged']:,} staged ({last['staged_after_stitch']:,} after the stitch)"
                if "staged_after_stitch" in last else "")
            stitch = f"{last['stitch_s']:.2f}" if "stitch_s" in last else ""
            each = ", ".join(f"{r['cpu_s']:.2f}" for r in runs)
            print(f"| {rows:,} | {last['units']} | {phase} | {each} "
                  f"| **{cpu * 1e6 / rows:.3f}** | {out} | {stitch} "
                  f"| {min(r['load_avg'] for r in runs):.1f}–{max(r['load_avg'] for r in runs):.1f} |", flush=True)
        for phase, runs in measured.items():
            if "per_query" in runs[0]:
                keys = sorted({k for r in runs for k in r["per_query"]})
                each = {k: sorted(r["per_query"].get(k, 0.0) for r in runs)[len(runs) // 2] for k in keys}
                print(f"per query, {phase}, CPU s (median of {len(runs)}; read {runs[-1]['read_s']:.2f} apart): "
                      + ", ".join(f"{k} {v:.2f}" for k, v in sorted(each.items(), key=lambda kv: -kv[1])), flush=True)


if __name__ == "__main__":
    main()
