"""The Spark engine's DuckDB-in-Spark path (issue 33: "Spark schedules, DuckDB checks"): every machine's typed
Parquet traces checked by `duckspark` (one Spark task per work unit, each validating its rows with `duckvalid`,
checking them with the DuckDB row pass and, for a machine a trace property reads, staging its unit's rows from the
same window (`duckstage.unit_checked`'s one query) and counting its rows per window partition (`unit_parts`)),
the keys that cross units stitched (the row checks by `duckspark.stitch` on the driver; the staged rows, which the
tasks write under `<out>/_staged/`, with `duckstage.prepare`'s tables: the driver reads only the tasks' parts and
boundary rows), the trace properties' phase 2 (`duckprops.violations`: on the driver over at most
`PHASE2_DRIVER_MAX_ROWS` staged rows, in Spark's tasks over more: `duckspread`), and the same outputs as the Spark
SQL plan's: `Summary` counts, `<out>/violations/` (`output.VIOLATION_FIELDS`, ids as `checks.violation_id`; the
violations kept as one Arrow table, counted, ordered and written by DuckDB: a Python object only for each of the
first `max_witnesses`), witnesses for those (their rows read again by key on the driver, in DuckDB) and the
quarantine under `<out>/quarantine/`.

Owns: `why_not` (why a run cannot take this path: one line, or None), `check` (the path: a result, or `Fallback`
with one line saying why the run must take the Spark SQL plan instead — a key whose units interleave
(`duckspark.NotClustered`, `duckstage.Refused`), a unit pyarrow cannot read (`duckspark.Unreadable`), a staged value
that reads the key's whole sequence (`duckstage.refusal`), or Spark's Python workers without duckdb or pyarrow),
`witness_fetcher` (the rows around chosen violations, by key, from the Parquet files).
Not here: JSON Lines and v1 Parquet inputs, coordinator logs' record pairs (the caller takes the Spark SQL plan
for them), the CLI. Must not import: duckdb at import time (imported when a run takes this path), kcoord.cli.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcoord.model import ir
from kcoord.model.traceschema import codes

from . import duckprops, duckspark, duckspread, duckstage, output
from .checks import CHECKS
from .duckcheck import window_order
from .duckfound import read_columns
from .duckvalid import layout, reasoned
from .readers import Source, columns
from .sparkread import TYPED, typed_columns

ENGINE = "spark (duckdb tasks)"
Fetch = Callable[[str, list[tuple[str, int, int]]], dict[str, dict[int, dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class Fallback:
    """The run must take the Spark SQL plan (`reason`: one line)."""

    reason: str


@dataclass(slots=True)
class Result:
    summary: output.Summary
    found: Any  # every violation (`sparkcheck.VIOLATION_COLUMNS`): an Arrow table, or None (no violation)
    first: list[dict[str, Any]]  # the first `max_witnesses` of them, in the report's order
    fetch: Fetch  # the witnesses' rows


def why_not(machines: Mapping[str, ir.Machine], sources: Sequence[Source], pairs: str | None) -> str | None:
    """Why this run cannot take the DuckDB path (one line), or None: every input must be typed (v2) Parquet of a
    known machine, with the spec's names, and `duckdb` must import."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return "duckdb is not installed"
    if pairs is not None:
        return "coordinator logs' record pairs are checked by the Spark SQL plan only"
    for s in sources:
        if s.format != "parquet" or s.machine not in machines:
            return f"{s.path} is not typed Parquet of a known machine"
        try:
            how = layout(machines[s.machine], s.path)
        except ValueError as e:  # (a typed footer whose names differ from the spec's)
            return str(e)
        if how.problem is not None or how.layout != TYPED or how.machine != s.machine:
            return f"{s.path} is not typed (v2) Parquet of {s.machine}"
    return None


#: phase 2 of the trace properties runs on the driver over at most this many staged rows, in Spark's tasks over
#: more (`duckspread`: the driver never holds them)
PHASE2_DRIVER_MAX_ROWS = 2_000_000


def check(spark: Any, machines: Mapping[str, ir.Machine], sources: Sequence[Source], out: str,
          unit_rows: int, phase2_driver_max_rows: int = PHASE2_DRIVER_MAX_ROWS,
          max_witnesses: int = 1000, phase2_tasks: int | None = None) -> Result | Fallback:
    """Every machine of `sources` (all of which `why_not` accepts) checked in Spark's tasks; the quarantine written
    under `<out>/quarantine/` (only once no machine falls back). The tasks write the staged rows under
    `<out>/_staged/` (removed when done). `phase2_tasks`: the tasks of phase 2 in Spark (None: `duckspread`'s
    choice)."""
    scratch = os.path.join(out, "_staged")
    try:
        return _check(spark, machines, sources, out, unit_rows, (phase2_driver_max_rows, phase2_tasks), scratch,
                      max_witnesses)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _check(spark: Any, machines: Mapping[str, ir.Machine], sources: Sequence[Source], out: str, unit_rows: int,
           phase2: tuple[int, int | None], scratch: str, max_witnesses: int) -> Result | Fallback:
    names = sorted({s.machine for s in sources})
    plans = duckprops.expression_plans({n: machines[n] for n in names})
    from .sparkprops import needs

    wants = needs(plans)
    results: dict[str, duckspark.Checked] = {}
    staged: dict[str, duckspread.Staged] = {}
    for name in names:
        m, plan, need = machines[name], plans[name], wants[name]
        why = duckstage.refusal(plan, need) if need.rows else None
        if why is not None:
            return Fallback(why)
        files = sorted(s.path for s in sources if s.machine == name)
        valid = {f: reasoned(m, f, layout(m, f), relation="t", source=f"file://{os.path.abspath(f)}") for f in files}
        # (the pass's rows and the staged rows from one query: the pass is not materialised for both)
        checked = duckstage.unit_checked(plan, need, "{source}", keep=read_columns(m))
        folder, spill = os.path.join(scratch, name), os.path.join(scratch, f"{name}.bounds")
        os.makedirs(spill, exist_ok=True)  # (each unit's boundary rows and parts: read by the driver from disk)
        if checked is None:
            sql = duckspark.task_sql(m, valid, bounds_to=spill)
        else:
            os.makedirs(folder, exist_ok=True)
            sql = duckspark.task_sql(m, valid, duckstage.unit_staged_of(need, "r"), duckstage.unit_parts("t"),
                                     checked=checked, staged_to=folder, bounds_to=spill)
        try:
            got = duckspark.check(spark, m, [Path(f) for f in files], unit_rows, sql=sql)
        except Exception as e:  # (a worker that cannot import what the task needs: the Spark SQL plan needs neither)
            missing = _missing_module(e)
            if missing is None:
                raise
            return Fallback(f"Spark's Python workers have no {missing} (the DuckDB tasks need duckdb and pyarrow)")
        if isinstance(got, duckspark.NotClustered | duckspark.Unreadable):
            return Fallback(got.reason)
        if checked is not None and got.units:  # (phase 1 of the keys that cross units, put together: `duckstage`)
            ready = duckstage.prepare(plan, need, got.parts, got.bounds)
            if isinstance(ready, duckstage.Refused):
                return Fallback(ready.reason)
            staged[name] = _kept(ready, folder, got.units)
        results[name] = got
    summary = output.Summary(ENGINE)
    for name, got in results.items():
        summary.rows_read[name] = got.rows
        _quarantine(machines[name], got.bad, os.path.join(out, "quarantine"), summary)
        summary.not_checked += duckprops.not_checked(plans[name], plans)
    ends = {n: got.trace_end for n, got in results.items()}
    tables = [got.violations for got in results.values() if got.violations is not None]
    tables.append(_property_table(spark, plans, staged, ends, *phase2))
    found = _violations_table(tables)
    summary.violations, first = _tally(found, max_witnesses)
    return Result(summary, found, first, witness_fetcher(machines, sources))


def _kept(ready: duckstage.Prepared, folder: str, units: int) -> duckspread.Staged:
    """A machine's staged rows as its tasks wrote them under `folder`, with `ready`'s tables written beside them."""
    import pyarrow.parquet as pq

    files = {u: os.path.join(folder, f"unit-{u}.parquet") for u in range(units)}
    assert all(os.path.exists(f) for f in files.values()), f"a unit's staged rows are missing from {folder}"
    tables = os.path.join(folder, "_units.parquet"), os.path.join(folder, "_again.parquet")
    pq.write_table(ready.units, tables[0])
    pq.write_table(ready.again, tables[1])
    return duckspread.Staged(files, ready, *tables)


def _missing_module(e: Exception) -> str | None:
    """duckdb or pyarrow when `e` (a task's failure, as Spark raises it on the driver) says a worker could not import
    it, else None."""
    found = re.search(r"No module named '(duckdb|pyarrow)", str(e))
    return found.group(1) if found else None


def _property_table(spark: Any, plans: Mapping[str, Any], staged: Mapping[str, duckspread.Staged],
                    ends: Mapping[str, int | None], driver_max_rows: int, tasks: int | None) -> Any:
    """Phase 2 of the trace properties over every unit's staged rows (`sparkcheck.VIOLATION_COLUMNS`, an Arrow table,
    or None): an in-process DuckDB on the driver over at most `driver_max_rows` of them, else Spark's tasks
    (`duckspread`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .checks import location

    if not staged:
        return None
    rows = sum(pq.read_metadata(f).num_rows for s in staged.values() for f in s.files.values())
    if rows > driver_max_rows:
        found = duckspread.violations(spark, plans, staged, ends, tasks or duckspread.bucket_count(spark, rows))
    else:
        found = _on_driver(plans, staged, ends)
    if found is None:
        return None
    at = pa.table({"machine": [n for n, plan in sorted(plans.items()) for _ in plan.m.traces],
                   "name": [p.name for _, plan in sorted(plans.items()) for p in plan.m.traces],
                   "location": [location(p.span) for _, plan in sorted(plans.items()) for p in plan.m.traces]})
    return _sql('SELECT f.machine, key, "check", f.name, seq, seq AS seq_from, seq AS seq_to, location, message, '
                "pos, CAST(NULL AS VARCHAR) AS row_json FROM f JOIN locs l ON l.machine = f.machine "
                "AND l.name = f.name",
                f=found, locs=at)


def _sql(query: str, **tables: Any) -> Any:
    """`query`'s rows (an Arrow table) over `tables` (name → Arrow table), in an in-process DuckDB."""
    import duckdb

    con = duckdb.connect()
    try:
        for name, table in tables.items():
            con.register(name, table)
        return con.execute(query).to_arrow_table()
    finally:
        con.close()


def _violations_table(tables: Sequence[Any]) -> Any:
    """The tables' violations as one Arrow table of `sparkcheck.VIOLATION_COLUMNS` (None: no violation)."""
    import pyarrow as pa

    from .sparkcheck import VIOLATION_COLUMNS

    schema = pa.schema([(c, pa.int64() if c in ("seq", "seq_from", "seq_to", "pos") else pa.string())
                        for c in VIOLATION_COLUMNS])
    kept = [t.select(list(VIOLATION_COLUMNS)).cast(schema) for t in tables if t is not None and t.num_rows]
    return pa.concat_tables(kept) if kept else None


def _order() -> str:
    """The report's order of violations (machine, check in `CHECKS`' order, key, seq, name), as SQL."""
    checks = ", ".join(duckprops.DUCKDB.string(c) for c in CHECKS)
    return f'machine, list_position([{checks}], "check"), key, seq, name'


def _tally(found: Any, max_witnesses: int) -> tuple[dict[str, dict[str, int]], list[dict[str, Any]]]:
    """The violations per machine and check (in `CHECKS`' order), and the first `max_witnesses` in the report's
    order."""
    if found is None:
        return {}, []
    per: dict[str, dict[str, int]] = {}
    counts = _sql('SELECT machine, "check", count(*) AS n FROM f GROUP BY ALL', f=found).to_pylist()
    for r in sorted(counts, key=lambda r: (r["machine"], CHECKS.index(r["check"]))):
        per.setdefault(r["machine"], {})[r["check"]] = r["n"]
    return per, _sql(f"SELECT * FROM f ORDER BY {_order()} LIMIT {int(max_witnesses)}", f=found).to_pylist()


def _on_driver(plans: Mapping[str, Any], staged: Mapping[str, duckspread.Staged],
               ends: Mapping[str, int | None]) -> Any:
    """Phase 2 over every machine's staged rows, read here and stitched (an in-process DuckDB): the violations as
    one Arrow table, or None."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    try:
        relations = {}
        for i, (name, s) in enumerate(sorted(staged.items())):
            files = tuple(f for _, f in sorted(s.files.items()))  # (read from disk by DuckDB: not on the Python heap)
            con.register(f"staged_{i}", duckstage.stitch_with(s.prepared, files))
            relations[name] = f"staged_{i}"
        found = []
        for name, plan in sorted(plans.items()):
            sql = duckprops.violations(plans, plan, relations, ends.get(name))
            if sql is not None:
                found.append(con.execute(sql).to_arrow_table())
        return pa.concat_tables(found) if found else None
    finally:
        con.close()


def _quarantine(m: ir.Machine, bad: Any, folder: str, summary: output.Summary) -> None:
    """The malformed rows as the Spark plan writes them (JSON lines: machine, source, line, reason, raw — the row's
    non-null columns, names as names), counted per reason code."""
    if bad is None or not bad.num_rows:
        return
    names = codes(m)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"part-duckdb-{m.name}.json"), "w", encoding="utf-8") as f:
        for r in bad.to_pylist():
            raw = {n: _named(r[n], names.get(n)) for n, _ in columns(m) if r.get(n) is not None}
            if "machine" in raw:
                raw["machine"] = r["machine"]
            row = {"machine": m.name, "source": r["source"], "reason": r["_reason"],
                   "raw": json.dumps(raw, separators=(",", ":"), ensure_ascii=False)}
            f.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n")
            code = r["_reason"].split(":")[0]
            summary.quarantined[code] = summary.quarantined.get(code, 0) + 1


def _named(value: Any, names: Sequence[str] | None) -> Any:
    """A code as its name (`#<code>` past the names), elementwise for a set; other values as they are."""
    if names is None or value is None:
        return value
    if isinstance(value, list):
        return [_named(v, names) for v in value]
    return names[value] if 0 <= value < len(names) else f"#{value}"


def witness_fetcher(machines: Mapping[str, ir.Machine], sources: Sequence[Source]) -> Fetch:
    """machine, [(key, lo, hi)] → key → position → row (`sparkread.witness_rows`' rows: every trace column, names as
    names, sets sorted) of the valid rows with seq >= 0 of those keys, positions in the row pass's order."""
    def fetch(name: str, wanted: list[tuple[str, int, int]]) -> dict[str, dict[int, dict[str, Any]]]:
        import duckdb

        m = machines[name]
        files = sorted(s.path for s in sources if s.machine == name)
        typed = [n for n, _ in typed_columns(m)]
        d = duckprops.DUCKDB
        picked = ", ".join(d.quote(n) for n in typed)
        rows = " UNION ALL ".join(f"SELECT {picked} FROM ({reasoned(m, f, layout(m, f))}) v "
                                  "WHERE _reason IS NULL AND seq >= 0" for f in files)
        keys = ", ".join(d.string(k) for k in sorted({k for k, _, _ in wanted}))
        con = duckdb.connect()
        try:
            found = con.execute(f"SELECT *, row_number() OVER (PARTITION BY key ORDER BY seq, {window_order(m)}) - 1 "
                                f"AS _pos FROM ({rows}) r WHERE key IN ({keys})").to_arrow_table().to_pylist()
        finally:
            con.close()
        spans: dict[str, list[tuple[int, int]]] = {}
        for k, lo, hi in wanted:
            spans.setdefault(k, []).append((lo, hi))
        names = codes(m)
        out: dict[str, dict[int, dict[str, Any]]] = {}
        for r in found:
            pos = r.pop("_pos")
            if any(lo <= pos <= hi for lo, hi in spans[r["key"]]):
                row = {"machine": name, **{n: _sorted(_named(r[n], names.get(n))) for n in typed}}
                out.setdefault(r["key"], {})[pos] = row
        return out
    return fetch


def _sorted(value: Any) -> Any:
    return sorted(value) if isinstance(value, list) else value


def write_violations(found: Any, witnessed: Mapping[str, tuple[str, str]], out: str) -> None:
    """`<out>/violations/` as one Parquet file (`output.VIOLATION_FIELDS`; the Spark plan writes a folder of parts,
    readers read either), in the report's order: each violation with its id (`checks.violation_id`, in SQL) and its
    witness (JSON and text) when it is among the witnessed ones (else null, as the Spark plan writes them). Written by
    DuckDB from the Arrow table, not row by row."""
    import duckdb
    import pyarrow as pa

    folder = os.path.join(out, "violations")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    ids = sorted(witnessed)
    shown = pa.table({"id": pa.array(ids, pa.string()), "witness": [witnessed[i][0] for i in ids],
                      "witness_rows": [witnessed[i][1] for i in ids]}, schema=pa.schema(
                          [("id", pa.string()), ("witness", pa.string()), ("witness_rows", pa.string())]))
    vid = "substr(sha1(concat_ws('|', machine, key, \"check\", name, CAST(seq AS VARCHAR))), 1, 12)"
    fields = ", ".join(("w." if n in ("witness", "witness_rows") else "v.") + duckprops.DUCKDB.quote(n)
                       for n, _ in output.VIOLATION_FIELDS)
    path = duckprops.DUCKDB.string(os.path.join(folder, "part-00000.parquet"))
    con = duckdb.connect()
    try:
        con.register("f", found)
        con.register("w", shown)
        con.execute(f"COPY (SELECT {fields} FROM (SELECT *, {vid} AS id FROM f) v LEFT JOIN w ON w.id = v.id "
                    f"ORDER BY {_order()}) TO {path} (FORMAT parquet)")
    finally:
        con.close()
