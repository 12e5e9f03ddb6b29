"""The trace properties' second phase in DuckDB (`conformance/traces/duckprops.py`): its CPU per event over the
staged rows of a tiled Transaction trace, beside the first phase that stages them (issue 33).

    .venv/bin/python -m benchmarks.duckprops_phase [--sizes 1e6,1e7] [--runs 3] [--threads 2] [--scratch DIR]
        [--data DIR ...]   # also every machine of a folder of traces (e.g. `kcoord simulate`'s)

Data: `bench_traces`' tiled Transaction traces (`make_base`: 20,000 generated rows, seed 1; `tile`: renamed keys,
disjoint producer ids, one row group per copy, 1M-row files; 0 violations). Each run is a fresh process per phase:
`--phases hits,task` measures the row pass's hits (`duckcheck.pass_query`, every row check) alone, and with the
staged rows taken from the same window in the same query (`duckprops.staged_from`: phase 1 fused into the task's
pass), both written to Parquet.
`--data` adds folders of traces of any machines (e.g. a simulator run: every machine, `before` checked too).
- `stage`: phase 1, `duckprops.staged` over all the files (every key whole in one DuckDB; in the Spark-scheduled
  design each task runs it over its unit, beside the row pass), writing the staged rows to one Parquet file and the
  trace's end (`trace_end`) beside it (one file per machine);
- `props`: phase 2, `duckprops.violations` of every property over the staged rows, read from those files (the
  driver's DuckDB; on the tiled traces `before` needs PartitionProducer's rows, absent: not checked, as the checkers
  report it).
CPU is the process's (getrusage, every DuckDB thread) from after its imports to the last row fetched; CPU-µs per event
divide it by the trace's rows (all of them, not the staged ones). Median of `--runs`; the load average per run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.child import last_json
from benchmarks.trace_data import MACHINE, make_base, pq_rows, tile


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(phase: str, data: str, staged: str, threads: int) -> dict[str, Any]:
    """One phase in this process over every machine folder under `data`: its CPU seconds, the rows staged (phase 1:
    one Parquet file per machine, `<staged>.<machine>`, and the machines' trace ends beside them) and the violations
    found (phase 2)."""
    import duckdb

    from kcoord.conformance.traces import duckprops
    from kcoord.model import sqltree as q
    from kcoord.model.loader import bundled_machines

    machines = {n: m for n, m in bundled_machines().items() if (Path(data) / n).is_dir()}
    plans = duckprops.expression_plans(machines)
    start = _cpu()
    con = duckdb.connect(config={"threads": threads})
    out: dict[str, Any] = {}
    if phase == "stage":
        sources = {n: f"read_parquet({q.DUCKDB.string(str(Path(data) / n / '**' / '*.parquet'))})" for n in machines}
        ends, out["rows_out"] = {}, {}
        for name, sql in duckprops.staged_all(machines, sources).items():
            target = q.DUCKDB.string(f"{staged}.{name}")
            con.execute(f"COPY ({sql}) TO {target} (FORMAT parquet)")
            (out["rows_out"][name],) = con.execute(f"SELECT count(*) FROM read_parquet({target})").fetchone() or (0,)
        for name, source in sources.items():
            (ends[name],) = con.execute(duckprops.trace_end(source)).fetchone() or (None,)
        Path(staged + ".json").write_text(json.dumps({"ends": ends, "staged": sorted(out["rows_out"])}))
    elif phase in ("hits", "task"):  # the row pass's hits alone, or with the staged rows from the same window
        from kcoord.conformance.traces import duckcheck
        from kcoord.conformance.traces.sparkprops import needs

        wants = needs(plans)
        out["rows_out"] = {}
        for name, m in machines.items():
            source = f"read_parquet({q.DUCKDB.string(str(Path(data) / name / '**' / '*.parquet'))})"
            sql, conditions = duckcheck.pass_query(m, source)
            query = " UNION ALL ".join(f"SELECT key, seq, {q.DUCKDB.string(n)} AS name, NULL AS staged FROM s "
                                       f"WHERE {q.DUCKDB.render(e)}" for e, n in conditions)
            rows = duckprops.staged_from(plans[name], wants[name], "s") if phase == "task" else None
            if rows is not None:
                query = f"WITH s AS MATERIALIZED ({sql}) {query} UNION ALL SELECT key, seq, NULL, t FROM ({rows}) t"
            else:
                query = f"WITH s AS ({sql}) {query}"
            (out["rows_out"][name],) = con.execute(
                f"COPY ({query}) TO {q.DUCKDB.string(f'{staged}.{phase}.{name}')} (FORMAT parquet)").fetchone() or (0,)
    else:
        meta = json.loads(Path(staged + ".json").read_text())
        relations = {n: f"read_parquet({q.DUCKDB.string(f'{staged}.{n}')})" for n in meta["staged"]}
        out["violations"], out["not_checked"] = {}, []
        for name in machines:
            sql = duckprops.violations(plans, plans[name], relations, meta["ends"][name])
            out["not_checked"] += duckprops.not_checked(plans[name], machines)
            if sql is not None:
                found = con.execute(f'SELECT machine, "check", name, count(*) FROM ({sql}) v GROUP BY ALL').fetchall()
                out["violations"] |= {f"{m}.{n}": k for m, _, n, k in found}
    out["cpu_s"] = _cpu() - start
    con.close()
    out["load_avg"] = os.getloadavg()[0]
    return out


def run_child(phase: str, data: Path, staged: Path, threads: int) -> dict[str, Any]:
    return last_json("benchmarks.duckprops_phase", phase, str(data), str(staged), str(threads))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1e6,1e7", help="tiled Transaction traces of these sizes ('' for none)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--phases", default="stage,props", help="of stage, props, hits, task (props reads stage's rows)")
    p.add_argument("--base", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scratch")
    p.add_argument("--data", action="append", help="also a folder of machine folders (e.g. a simulator run's)")
    p.add_argument("--child", nargs=4, metavar=("PHASE", "DATA", "STAGED", "THREADS"))
    args = p.parse_args()
    if args.child:
        phase, data, staged, threads = args.child
        print(json.dumps(measure(phase, data, staged, int(threads))))
        return
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="bench-duckprops-"))
    base = scratch / "base" / MACHINE / "part-0.parquet"
    if not base.exists():
        make_base(scratch / "base", args.base, args.seed)
    print("| events | phase | CPU s (runs) | **CPU-µs/event** | rows out (% of all) | violations | load |")
    print("|---:|---|---|---:|---:|---|---:|")
    datasets = [(int(float(s)), scratch / f"data-{int(float(s))}") for s in args.sizes.split(",") if s]
    datasets += [(0, Path(d)) for d in args.data or ()]
    for size, data in datasets:
        if size and not data.is_dir():
            tile(base, data, size)
        rows = sum(pq_rows(f) for f in data.rglob("*.parquet"))
        staged = scratch / f"staged-{data.name}"
        measured: dict[str, list[dict[str, Any]]] = {p: [] for p in args.phases.split(",")}
        for _ in range(args.runs):  # (the phases take turns; each props run reads the stage run's rows just before)
            for phase in measured:
                measured[phase].append(run_child(phase, data, staged, args.threads))
                print(data, phase, json.dumps(measured[phase][-1]), file=sys.stderr, flush=True)
        for phase, runs in measured.items():  # (rows out: what the phase wrote; props: what it read, stage's)
            by_machine = runs[-1].get("rows_out") or measured.get("stage", [{}])[-1].get("rows_out", {})
            n_staged = sum(by_machine.values())
            cpu = statistics.median(r["cpu_s"] for r in runs)
            found = runs[-1].get("violations", {})
            each = ", ".join(f"{r['cpu_s']:.2f}" for r in runs)
            print(f"| {rows:,} ({data.name}) | {phase} | {each} | **{cpu * 1e6 / rows:.3f}** "
                  f"| {n_staged:,} ({100 * n_staged / rows:.1f} %) | {sum(found.values()) if phase == 'props' else ''}"
                  f" | {min(r['load_avg'] for r in runs):.1f}–{max(r['load_avg'] for r in runs):.1f} |", flush=True)
            print(phase, "rows out per machine:", by_machine, file=sys.stderr)


if __name__ == "__main__":
    main()
