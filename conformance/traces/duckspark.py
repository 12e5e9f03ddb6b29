"""Spark schedules, DuckDB checks: one machine's typed Parquet traces checked by the DuckDB row pass in Spark's tasks,
one task per work unit, and the keys whose rows cross units stitched on the driver (issue 33's design: i33h, i33j).

Owns: `units` (the files' row groups cut into work units), `task_sql` and `task_function` (what a task runs: pyarrow
reads its units; an in-process DuckDB of one thread validates each (`duckvalid.reasoned`, when asked: the malformed
rows returned, the rest checked), runs `duckcheck.flag_rows` over it and `duckfound.violation_rows` over the flagged
rows, and, when asked, stages what the trace properties read (the SQL `task_sql` is given: `duckstage.unit_staged_from`
over the same pass materialised, or `duckstage.unit_checked`'s one query, and `duckstage.unit_parts`); it returns the
unit's violations (each with its count name and its place in the unit; the violations' query, ~350 KB of SQL for
Transaction, only when the unit flags a row), its boundary rows, its malformed rows (the rows as read are checked, not
copied, when none is), its staged rows and parts and its latest ts_ms), `check` (the Spark job of one partition per
unit and the stitching: a `Checked` result, with every unit's staged rows, parts
and boundary rows for `duckstage.stitch`; `NotClustered`; or `Unreadable` when pyarrow cannot read a unit), `stitch`
(the driver's half of the row checks), `ranges_sql` (each partition's units in order, which `duckstage` orders them
by too), `counts` (a result's violations per count, as `duckcheck.row_pass` counts them).

Why the stitching is right. The row pass judges a row by the row and the one just before it in its window partition
(key, seq < 0, ordered by seq and then every typed column): every column it compares with the previous row is a
`lag` of one row, and `row_number` only gives `pos` (tests/conformance/traces/test_duckspark.py asserts the SQL has
no other window function). So a task judges every row of a unit as the whole trace would, except the first row of
each of the unit's window partitions, whose predecessor may lie in another unit — *if* no row of another unit lies
between a row and its predecessor in the unit, that is if, per partition, the units' [first, last] ranges do not
interleave. A task therefore returns its flags marked first or not, and per partition its first and last row
(every typed column: the post-state the next row's pre-state is taken from). The driver (`stitch`), in an in-process
DuckDB, ranks the boundary rows of each partition in the pass's own order (`dense_rank`: rows equal in every typed
column tie), orders each partition's units by their first and last rank and **proves** the ranges do not interleave
(each unit's last rank ≤ the next unit's first rank; consecutive pairs suffice, the ranges being sorted). If a
partition's ranges interleave, the answer is `NotClustered` with one line saying where, and the caller checks with the
Spark SQL plan: never a stitched answer over an unproven layout. Otherwise each unit-first row is judged again in a
pass over pairs (its predecessor unit's last row, it), each pair a window partition of its own (`_seg`), and its flags
from that pass replace the task's; a unit-first row with no predecessor unit is its key's first row in the trace,
and the task's flags stand. Ties: rows equal in every typed column are interchangeable (the pass reads nothing
else), so the units' concatenation in that order is a valid order of the whole trace and the pairs give what it gives.
Negative seqs (a window partition of their own per key) are stitched the same way as the rest.

Positions. A violation's `pos` is its row's place among its key's rows of the whole trace (the witness is cut
around it): the task gives its place in the unit; the driver adds the partition's rows in the units before it in
the partition's order of units (each unit's count is the `_rn` of its last boundary row), and a unit-first row judged
again is at that offset exactly.

Not here: the SQL of the trace properties' phase 1 and its stitching for keys that cross units (`duckstage`, called
by `duckengine` with what `check` returns), their phase 2, witnesses, the outputs (`duckengine`), the CLI.
Must not import: duckdb at import time (`stitch`, `check` and the tasks import it when they run), kcoord.cli.
The task is a closure that imports only pyarrow and duckdb, so cloudpickle ships it by value: a worker needs those
two packages, not this one.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcoord.model import ir
from kcoord.model import sqltree as q

from .duckcheck import count_names, flag_rows, pass_rows, window_order
from .duckfound import read_columns, violation_rows
from .sparkread import typed_columns

Unit = tuple[str, list[int]]  # a file and some of its consecutive row groups
Hit = tuple[str, int, str]  # (key, seq, count name), as `duckcheck.row_hits`
RESULT_SCHEMA = ("unit long, rows long, found binary, bounds binary, bad binary, staged binary, parts binary, "
                 "ts_end long, error string")
BOOKKEEPING = ("_unit", "_first", "_last", "_rn")  # the boundary rows' columns besides the typed ones


@dataclass(frozen=True, slots=True)
class Checked:
    """Every row check's flagged rows over all units, as the whole trace's pass flags them, and their violations
    (`violations`: `duckfound.COLUMNS` and `_unit`, `pos` the row's position in its key's whole sequence)."""

    hits: Counter[Hit]
    rows: int
    units: int
    boundary_rows: int = 0  # (the rows the tasks returned for the stitching)
    stitched: int = 0  # unit-first rows judged again against their predecessor in another unit
    violations: Any = None  # (a pyarrow Table; None when no row is flagged: no violations' query ran)
    bad: Any = None  # the malformed rows (validated tasks): `duckvalid.reasoned`'s columns, a pyarrow Table
    staged: Any = None  # every unit's phase 1 of the trace properties (`task_sql`'s `staged`), a pyarrow Table, or None
    parts: Any = None  # every unit's rows per window partition (`task_sql`'s `parts`), a pyarrow Table, or None
    bounds: Any = None  # every unit's boundary rows (`bounds_sql`), a pyarrow Table (None: unstitched runner)
    trace_end: int | None = None  # the latest ts_ms of the valid rows


@dataclass(frozen=True, slots=True)
class NotClustered:
    """The units' rows of a key interleave: no stitched answer (`reason`: one line); check with the Spark SQL plan."""

    reason: str


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A unit's row groups could not be read (`reason`: the file and pyarrow's error, one line): the Spark SQL plan's
    reader says which file and why (`job.UnreadableInput`)."""

    reason: str


def units(files: Sequence[Path], unit_rows: int) -> list[Unit]:
    """The files' row groups in units of at most ~`unit_rows` rows (a file's consecutive row groups; a row group is
    never split, and one larger than `unit_rows` is a unit of its own). A key's rows may lie in several units."""
    import pyarrow.parquet as pq

    out: list[Unit] = []
    for f in files:
        meta = pq.read_metadata(f)
        group: list[int] = []
        rows = 0
        for i in range(meta.num_row_groups):
            if group and rows + meta.row_group(i).num_rows > unit_rows:
                out.append((str(f), group))
                group, rows = [], 0
            group.append(i)
            rows += meta.row_group(i).num_rows
        if group:
            out.append((str(f), group))
    return out


def bounds_sql(m: ir.Machine, source: str) -> str:
    """`source`'s first and last rows of each window partition (`duckcheck.flag_rows`' columns): the typed columns,
    `_unit` (left as the placeholder `{unit}`), `_first`, `_last` and `_rn` (at `_last`: the partition's rows in the
    unit, which offset the positions of the units after it)."""
    kept = ", ".join(q.DUCKDB.quote(n) for n, _ in typed_columns(m))
    return f"SELECT {kept}, {{unit}} AS _unit, _rn = 1 AS _first, _last, _rn FROM {source} WHERE _rn = 1 OR _last"


def task_sql(m: ir.Machine, valid: Mapping[str, str] | None = None, staged: str | None = None,
             parts: str | None = None, checked: str | None = None, staged_to: str | None = None,
             bounds_to: str | None = None) -> dict[str, Any]:
    """What a task runs, as text with placeholders (`task_function`): `valid` (file → its rows with `_reason`,
    `duckvalid.reasoned` over `t`; None: the rows are taken as valid), the row pass `r` (the flagged, first and last
    rows: `flag_rows` over the unit; or, when `staged` is given, `flag_rows` over the pass `s` materialised once for
    both; or `checked`), `flagged` (whether `r` has a flag), its flagged rows' violations and boundary rows, `staged`
    (phase 1 of the trace properties: `duckstage.unit_staged_from` over the pass `s`, or `duckstage.unit_staged_of`
    over `r` when `checked` is given; or None) and `parts` (the unit's rows per window partition over its valid rows
    `t`: `duckstage.unit_parts`, or None). `checked`: `duckstage.unit_checked` over `{source}` (the pass's rows and
    the staged rows from one query, keeping `duckfound.read_columns`): the pass is then not materialised. Only the
    pass the task runs is rendered. `staged_to`: a folder each unit's staged rows are written to
    (`unit-<unit>.parquet`) instead of returned (None: returned); `bounds_to`: the same for its boundary rows and parts
    (`bounds-<unit>.parquet`, `parts-<unit>.parquet`), which the driver's DuckDB then reads from disk."""
    keep = read_columns(m)
    names = [n for n, _ in typed_columns(m)]
    flags = " OR ".join(q.DUCKDB.quote("_f_" + n) for n in count_names(m))
    if checked is not None:
        assert staged is not None, "`checked` gives `r`; `staged` (`duckstage.unit_staged_of` over `r`) reads it"
        passed, rows = None, checked
    elif staged is not None:  # (one window for both: the pass into a table, read by the flags and the staged rows)
        passed, rows = pass_rows(m, "{source}"), flag_rows(m, "{source}", keep=keep, passed="s")
    else:
        passed, rows = None, flag_rows(m, "{source}", keep=keep)
    return {"valid": dict(valid) if valid is not None else None, "typed": ", ".join(q.DUCKDB.quote(n) for n in names),
            "typed_names": names, "pass": passed, "rows": rows,
            "flagged": f"SELECT count(*) FROM r WHERE {flags}",
            "found": violation_rows(m, "r", carry=("{unit} AS _unit",)), "bounds": bounds_sql(m, "r"),
            "staged": staged, "parts": parts, "staged_to": staged_to, "bounds_to": bounds_to}


def task_function(work: list[Unit], sql: Mapping[str, Any],
                  bounds: bool = True) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`mapInArrow`'s function: for each unit id of its input, the unit's row groups read with pyarrow and, in DuckDB
    with one thread (the task's core), validated (`sql["valid"]`: the malformed rows returned, the rest checked),
    checked by the row pass (`task_sql`); one row per unit (`RESULT_SCHEMA`): its valid rows, its flagged rows'
    violations (empty when it flags nothing: the violations' query is not run), its boundary rows (unless not
    `bounds`), its malformed rows, its staged rows and its rows per window partition (when asked), each as an Arrow
    IPC stream, and its latest ts_ms. A closure of pyarrow and duckdb only."""
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import duckdb
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([("unit", pa.int64()), ("rows", pa.int64()), ("found", pa.binary()),
                            ("bounds", pa.binary()), ("bad", pa.binary()), ("staged", pa.binary()),
                            ("parts", pa.binary()), ("ts_end", pa.int64()), ("error", pa.string())])

        def ipc(table: Any) -> bytes:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            return bytes(sink.getvalue().to_pybytes())

        def record(unit: int, **given: Any) -> Any:  # (a unit's result: the columns not given empty)
            empty = {"rows": 0, "found": b"", "bounds": b"", "bad": b"", "staged": b"", "parts": b"", "ts_end": None,
                     "error": None}
            return pa.RecordBatch.from_pydict({"unit": [unit], **{c: [v] for c, v in (empty | given).items()}},
                                              schema=schema)

        def kept(query: str, unit: int, folder: str | None, file: str) -> bytes:  # returned, or written to `folder`
            rows = table(query, unit)  # (written: the driver reads the file from disk, never holds the rows)
            if folder is None:
                return ipc(rows)
            pq.write_table(rows, f"{folder}/{file}-{unit}.parquet")
            return b""

        def table(query: str, unit: int, name: str | None = None) -> Any:
            out = con.execute(query.replace("{source}", "t").replace("{unit}", str(unit))).to_arrow_table()
            if name is not None:
                con.register(name, out)
            return out

        con = duckdb.connect(config={"threads": 1})
        try:
            for batch in batches:
                for unit in batch.column(0).to_pylist():
                    path, groups = work[unit]
                    try:
                        rows_read = pq.ParquetFile(path).read_row_groups(groups)
                    except Exception as e:  # (pages that break partway: said, for the caller to fall back)
                        why = " ".join(f"{type(e).__name__}: {e}".split())
                        yield record(unit, error=why)
                        continue
                    con.register("t", rows_read)
                    bad = b""
                    if sql["valid"] is not None:  # (the valid rows replace `t`)
                        valid = sql["valid"][path]
                        malformed = table(f"SELECT * FROM ({valid}) v WHERE _reason IS NOT NULL", unit)
                        bad = ipc(malformed)
                        if malformed.num_rows or not set(sql["typed_names"]) <= set(rows_read.column_names):
                            table(f"SELECT {sql['typed']} FROM ({valid}) v WHERE _reason IS NULL", unit, "t")
                        else:  # (every row valid: the rows as read, no copy — the usual case)
                            con.register("t", rows_read.select(sql["typed_names"]))
                    if sql["pass"] is not None:
                        con.execute(f"CREATE OR REPLACE TEMP TABLE s AS {sql['pass'].replace('{source}', 't')}")
                    table(sql["rows"], unit, "r")
                    spill = sql["bounds_to"]
                    staged = kept(sql["staged"], unit, sql["staged_to"], "unit") if sql["staged"] is not None else b""
                    parts = kept(sql["parts"], unit, spill, "parts") if sql["parts"] is not None else b""
                    rows, end = con.execute("SELECT count(*), max(ts_ms) FROM t").fetchone()  # type: ignore[misc]
                    (flagged,) = con.execute(sql["flagged"]).fetchone()  # type: ignore[misc]
                    # (the violations' SQL is ~350 KB for Transaction: planned per unit, 0.4 CPU-s, only if needed)
                    found = ipc(table(sql["found"], unit)) if flagged else b""
                    edges = kept(sql["bounds"], unit, spill, "bounds") if bounds else b""
                    yield record(unit, rows=rows, found=found, bounds=edges, bad=bad, staged=staged, parts=parts,
                                 ts_end=end)
        finally:
            con.close()
    return run


def check(spark: Any, m: ir.Machine, files: Sequence[Path], unit_rows: int = 500_000,
          stitch_keys: bool = True, sql: Mapping[str, Any] | None = None) -> Checked | NotClustered | Unreadable:
    """Every row check of `m` over `files` (typed Parquet traces of `m` only): one Spark job of one partition per work
    unit (`units`), each task checking its units with DuckDB (`sql`: `task_sql`'s, by default no validation and no
    staged rows), then the stitching on the driver (`stitch`). `stitch_keys=False` is the unstitched runner (every
    task's flags kept as they are: right only when every key's rows lie inside one unit; for measurements)."""
    import pyarrow as pa

    work = units(files, unit_rows)
    if not work:
        return Checked(Counter(), 0, 0)
    names = [n for n, _ in typed_columns(m)]
    sql = sql if sql is not None else task_sql(m)
    fn = task_function(work, sql, bounds=stitch_keys)
    results = spark.range(0, len(work), 1, len(work)).mapInArrow(fn, RESULT_SCHEMA).collect()
    assert sorted(int(r["unit"]) for r in results) == list(range(len(work))), "a unit's result is missing"
    broken = sorted((int(r["unit"]), r["error"]) for r in results if r["error"] is not None)
    if broken:
        return Unreadable(f"pyarrow cannot read {work[broken[0][0]][0]}: {broken[0][1]}")
    rows = sum(int(r["rows"]) for r in results)
    found = _tables([r["found"] for r in results])  # (None: no unit flagged a row)
    ends = [int(r["ts_end"]) for r in results if r["ts_end"] is not None]
    spill = sql["bounds_to"]
    extra = {"bad": _tables([r["bad"] for r in results]), "staged": _tables([r["staged"] for r in results]),
             "parts": _tables([r["parts"] for r in results]), "trace_end": max(ends) if ends else None}
    if spill is not None and sql["parts"] is not None:
        extra["parts"] = tuple(f"{spill}/parts-{u}.parquet" for u in range(len(work)))
    if not stitch_keys:
        return Checked(_hits(found) if found is not None else Counter(), rows, len(work), violations=found, **extra)
    if spill is not None:  # (the tasks' files: read by the driver's DuckDB, never on the Python heap)
        bounds: Any = tuple(f"{spill}/bounds-{u}.parquet" for u in range(len(work)))
    else:
        bounds = pa.concat_tables([_table(r["bounds"]) for r in results])
        assert bounds.column_names == [*names, *BOOKKEEPING], bounds.column_names
    got = stitch(m, work, rows, found, bounds)
    return got if isinstance(got, NotClustered) else dataclasses.replace(got, bounds=bounds, **extra)


def _table(ipc: bytes | bytearray) -> Any:
    import pyarrow as pa

    return pa.ipc.open_stream(pa.py_buffer(bytes(ipc))).read_all()


def _tables(streams: Sequence[bytes | bytearray]) -> Any:
    """The non-empty streams' tables as one, or None."""
    import pyarrow as pa

    tables = [_table(s) for s in streams if s]
    return pa.concat_tables(tables) if tables else None


def _hits(found: Any) -> Counter[Hit]:
    return Counter(zip(found["key"].to_pylist(), found["seq"].to_pylist(), found["_count"].to_pylist(), strict=True))


def stitch(m: ir.Machine, work: Sequence[Unit], rows: int, found: Any, bounds: Any) -> Checked | NotClustered:
    """The driver's half (see the module's docstring): `found` (the tasks' flagged rows' violations,
    `duckfound.COLUMNS` and `_unit`) and `bounds` (every unit's first and last row of each window partition) → the
    whole trace's violations, each row's `pos` offset by its key's rows in the units before it, or `NotClustered`
    when the units' ranges of a partition interleave."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        relation(con, "b", bounds)
        con.execute(ranges_sql(m))
        bad = con.execute("SELECT key, _neg, _prev, _prev_sl, _unit, _sf, _sl FROM o WHERE _prev_rl > _rf "
                          "ORDER BY key, _neg, _unit LIMIT 1").fetchone()
        if bad is not None:
            return NotClustered(_interleaved(m, work, bad))
        pairs = ("(SELECT o._unit AS _seg, b.* EXCLUDE (_unit, _first, _last, _rn) FROM o JOIN b ON b.key = o.key "
                 "AND (b.seq < 0) = o._neg AND ((b._unit = o._prev AND b._last) OR (b._unit = o._unit AND b._first)) "
                 "WHERE o._prev IS NOT NULL)")
        # (the pass into a table first: `violation_rows` reads its source once per count, and a subquery there would
        # be planned and run once per count — 4.2 CPU-s for 4 pairs of Transaction, the pass's SQL being 123 KB)
        con.execute(f"CREATE TEMP TABLE p AS {flag_rows(m, pairs, partition=('_seg',), keep=read_columns(m))}")
        flags = " OR ".join(q.DUCKDB.quote("_f_" + n) for n in count_names(m))
        (again_flagged,) = con.execute(f"SELECT count(*) FROM p WHERE _rn = 2 AND ({flags})").fetchone() or (0,)
        # a unit's rows of a partition come after the rows of the units before it (`_off`): a row's place in its
        # unit plus those; a unit-first row judged again (the second of its pair) is its unit's first
        moved = "CASE WHEN v.pos >= 0 THEN v.pos + o._off ELSE v.pos END AS pos"
        on = "o.key = v.key AND o._neg = (v.seq < 0) AND o._unit = v._unit"
        parts = []
        if found is not None:  # (None: no task flagged a row)
            con.register("h", found)
            parts.append(f"SELECT v.* REPLACE ({moved}) FROM h v JOIN o ON {on} WHERE v._rn > 1 OR o._prev IS NULL")
        if again_flagged:  # (the violations' SQL is planned only when a pair's second row has a flag)
            again = violation_rows(m, "(SELECT * FROM p WHERE _rn = 2) p", carry=("_seg AS _unit",))
            parts.append(f"SELECT v.* REPLACE ({moved}) FROM (SELECT * REPLACE (CASE WHEN pos >= 0 THEN 0 ELSE pos "
                         f"END AS pos, 1 AS _rn) FROM ({again}) a) v JOIN o ON {on}")
        out = con.execute(" UNION ALL ".join(parts)).to_arrow_table() if parts else None
        (stitched,) = con.execute("SELECT count(*) FROM o WHERE _prev IS NOT NULL").fetchone() or (0,)
        (boundary_rows,) = con.execute("SELECT count(*) FROM b").fetchone() or (0,)
    finally:
        con.close()
    return Checked(_hits(out) if out is not None else Counter(), rows, len(work), int(boundary_rows), int(stitched),
                   violations=out)


def relation(con: Any, name: str, rows: Any) -> None:
    """`rows` under `name` in `con`: an Arrow table registered, or Parquet files (a tuple of paths) as a view that
    reads them from disk."""
    if isinstance(rows, tuple):
        files = ", ".join(q.DUCKDB.string(f) for f in rows)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM read_parquet([{files}])")
    else:
        con.register(name, rows)


def ranges_sql(m: ir.Machine, source: str = "b") -> str:
    """Table `o`: per window partition (key, `_neg`) and unit, the ranks of its first and last boundary rows (of
    `source`: `bounds_sql`'s rows) in the pass's order (`_rf`, `_rl`), their seqs (`_sf`, `_sl`), and the unit before
    it in that partition's order of units (`_prev`, with its last rank and seq `_prev_rl`, `_prev_sl`). Only the
    partitions whose rows lie in more than one unit are ranked (the wide sort over every typed column); a partition
    of one unit has no unit before it, so its ranks are 0 and its offset 0."""
    base = "key, seq, seq < 0 AS _neg, _unit, _first, _last, _rn"
    crossing = f"(SELECT key, seq < 0 AS _neg FROM {source} GROUP BY ALL HAVING count(DISTINCT _unit) > 1)"
    ranked = (f"SELECT {base}, dense_rank() OVER (PARTITION BY key, seq < 0 ORDER BY seq, {window_order(m)}) AS _r "
              f"FROM {source} SEMI JOIN {crossing} x ON x.key = {source}.key AND x._neg = ({source}.seq < 0) "
              f"UNION ALL SELECT {base}, 0 AS _r FROM {source} ANTI JOIN {crossing} x "
              f"ON x.key = {source}.key AND x._neg = ({source}.seq < 0)")
    ranges = ("SELECT key, _neg, _unit, max(_r) FILTER (WHERE _first) AS _rf, max(_r) FILTER (WHERE _last) AS _rl, "
              "max(seq) FILTER (WHERE _first) AS _sf, max(seq) FILTER (WHERE _last) AS _sl, "
              "max(_rn) FILTER (WHERE _last) AS _n FROM r GROUP BY key, _neg, _unit")
    return (f"CREATE OR REPLACE TEMP TABLE o AS WITH r AS ({ranked}), u AS ({ranges}) SELECT *, lag(_rl) OVER p AS "
            "_prev_rl, lag(_sl) OVER p AS _prev_sl, lag(_unit) OVER p AS _prev, CAST(coalesce(sum(_n) OVER "
            "(PARTITION BY key, _neg ORDER BY _rf, _rl, _unit ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) "
            "AS BIGINT) AS _off FROM u WINDOW p AS (PARTITION BY key, _neg ORDER BY _rf, _rl, _unit)")


def _interleaved(m: ir.Machine, work: Sequence[Unit], bad: tuple[Any, ...]) -> str:
    key, neg, prev, prev_last, unit, first, last = bad
    where = [f"unit {u} ({Path(work[u][0]).name} row groups {work[u][1][0]}-{work[u][1][-1]})" for u in (prev, unit)]
    return (f"{m.name}: the traces are not clustered by key: the rows of key {key!r}{' of negative seq' if neg else ''}"
            f" in {where[0]} reach seq {prev_last}, past the first row of {where[1]} (seqs {first}..{last}); "
            f"a stitched check would be wrong: check with the Spark SQL plan")


def counts(m: ir.Machine, result: Checked) -> dict[str, int]:
    """The result's violations per count (`duckcheck.count_names`, as `row_pass` counts them) and `rows_checked`."""
    per = Counter(name for _, _, name in result.hits.elements())
    return {**{n: per[n] for n in count_names(m)}, "rows_checked": result.rows}
