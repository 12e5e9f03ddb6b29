"""Spark schedules, DuckDB checks: one machine's typed Parquet traces checked by the DuckDB row pass in Spark's tasks,
one task per work unit, and the keys whose rows cross units stitched on the driver (issue 33's design: i33h, i33j).

Owns: `units` (the files' row groups cut into work units), `task_function` (what a task runs: pyarrow reads its
units, an in-process DuckDB of one thread runs `duckcheck.flag_rows` over each, and it returns the unit's flagged rows
as (key, seq, count name) and its boundary rows), `check` (the Spark job of one partition per unit and the stitching:
a `Checked` result or `NotClustered`), `stitch` (the driver's half), `counts` (a result's violations per count, as
`duckcheck.row_pass` counts them).

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

Not here: validation (the rows are taken as typed and valid), trace properties, messages and witnesses, the CLI.
Must not import: duckdb at import time (a test-extra dependency: `stitch`, `check` and the tasks import it when they
run), kcoord.cli. The task is a closure that imports only pyarrow and duckdb, so cloudpickle ships it by value: a
worker needs those two packages, not this one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcoord.model import ir
from kcoord.model import sqltree as q

from .duckcheck import count_names, flag_rows, window_order
from .sparkread import typed_columns

Unit = tuple[str, list[int]]  # a file and some of its consecutive row groups
Hit = tuple[str, int, str]  # (key, seq, count name), as `duckcheck.row_hits`
RESULT_SCHEMA = "unit long, rows long, hits binary, bounds binary"
BOOKKEEPING = ("_unit", "_first", "_last")  # the boundary rows' columns besides the typed ones


@dataclass(frozen=True, slots=True)
class Checked:
    """Every row check's flagged rows over all units, as the whole trace's pass flags them."""

    hits: Counter[Hit]
    rows: int
    units: int
    boundary_rows: int = 0  # (the rows the tasks returned for the stitching)
    stitched: int = 0  # unit-first rows judged again against their predecessor in another unit


@dataclass(frozen=True, slots=True)
class NotClustered:
    """The units' rows of a key interleave: no stitched answer (`reason`: one line); check with the Spark SQL plan."""

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


def hits_sql(m: ir.Machine, source: str, unit: str = "NULL") -> str:
    """`source`'s rows (`duckcheck.flag_rows`' columns) as one row per flag: key, seq, count name, `_rn`, `_unit`
    (`unit`: an SQL expression, or the placeholder `{unit}`)."""
    d = q.DUCKDB
    return " UNION ALL ".join(f"SELECT key, seq, {d.string(n)} AS name, _rn, {unit} AS _unit FROM {source} "
                              f"WHERE {d.quote('_f_' + n)}" for n in count_names(m))


def bounds_sql(m: ir.Machine, source: str) -> str:
    """`source`'s first and last rows of each window partition (`duckcheck.flag_rows`' columns): the typed columns,
    `_unit` (left as the placeholder `{unit}`), `_first` and `_last`."""
    kept = ", ".join(q.DUCKDB.quote(n) for n, _ in typed_columns(m))
    return f"SELECT {kept}, {{unit}} AS _unit, _rn = 1 AS _first, _last FROM {source} WHERE _rn = 1 OR _last"


def task_function(work: list[Unit], sql: str, hits: str,
                  bounds: str | None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`mapInArrow`'s function: for each unit id of its input, the unit's row groups read with pyarrow and checked
    by `sql` (`flag_rows` over the placeholder `{source}`) in DuckDB with one thread (the task's core); one row per
    unit (`RESULT_SCHEMA`): its row count, its flagged rows (`hits` over `r`) and, unless `bounds` is None, its
    boundary rows (`bounds` over `r`), each as an Arrow IPC stream. A closure of pyarrow and duckdb only."""
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import duckdb
        import pyarrow as pa
        import pyarrow.parquet as pq

        def ipc(table: Any) -> bytes:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            return bytes(sink.getvalue().to_pybytes())

        con = duckdb.connect(config={"threads": 1})
        try:
            for batch in batches:
                for unit in batch.column(0).to_pylist():
                    path, groups = work[unit]
                    t = pq.ParquetFile(path).read_row_groups(groups)  # (DuckDB reads `t` and `r` by name)
                    r = con.execute(sql.replace("{source}", "t")).to_arrow_table()  # noqa: F841
                    found = ipc(con.execute(hits.replace("{source}", "r").replace("{unit}", str(unit)))
                                .to_arrow_table())
                    edges = b"" if bounds is None else ipc(
                        con.execute(bounds.replace("{source}", "r").replace("{unit}", str(unit))).to_arrow_table())
                    yield pa.RecordBatch.from_pydict({"unit": [unit], "rows": [t.num_rows], "hits": [found],
                                                      "bounds": [edges]})
        finally:
            con.close()
    return run


def check(spark: Any, m: ir.Machine, files: Sequence[Path], unit_rows: int = 500_000,
          stitch_keys: bool = True) -> Checked | NotClustered:
    """Every row check of `m` over `files` (typed Parquet traces of `m` only): one Spark job of one partition per work
    unit (`units`), each task checking its units with DuckDB, then the stitching on the driver (`stitch`).
    `stitch_keys=False` is the unstitched runner (every task's flags kept as they are: right only when every key's
    rows lie inside one unit; for measurements)."""
    import pyarrow as pa

    work = units(files, unit_rows)
    if not work:
        return Checked(Counter(), 0, 0)
    names = [n for n, _ in typed_columns(m)]
    fn = task_function(work, flag_rows(m, "{source}"), hits_sql(m, "{source}", "{unit}"),
                       bounds_sql(m, "{source}") if stitch_keys else None)
    results = spark.range(0, len(work), 1, len(work)).mapInArrow(fn, RESULT_SCHEMA).collect()
    assert sorted(int(r["unit"]) for r in results) == list(range(len(work))), "a unit's result is missing"
    rows = sum(int(r["rows"]) for r in results)
    hits = pa.concat_tables([_table(r["hits"]) for r in results])
    if not stitch_keys:
        return Checked(Counter(zip(hits["key"].to_pylist(), hits["seq"].to_pylist(), hits["name"].to_pylist(),
                                   strict=True)), rows, len(work))
    bounds = pa.concat_tables([_table(r["bounds"]) for r in results])
    assert bounds.column_names == [*names, *BOOKKEEPING], bounds.column_names
    return stitch(m, work, rows, hits, bounds)


def _table(ipc: bytes | bytearray) -> Any:
    import pyarrow as pa

    return pa.ipc.open_stream(pa.py_buffer(bytes(ipc))).read_all()


def stitch(m: ir.Machine, work: Sequence[Unit], rows: int, hits: Any, bounds: Any) -> Checked | NotClustered:
    """The driver's half (see the module's docstring): `hits` (key, seq, name, `_rn` and `_unit`, the tasks' flagged
    rows) and `bounds` (every unit's first and last row of each window partition) → the whole trace's flagged rows,
    or `NotClustered` when the units' ranges of a partition interleave."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        con.register("b", bounds)
        con.register("h", hits)
        con.execute(_ranges_sql(m))
        bad = con.execute("SELECT key, _neg, _prev, _prev_sl, _unit, _sf, _sl FROM o WHERE _prev_rl > _rf "
                          "ORDER BY key, _neg, _unit LIMIT 1").fetchone()
        if bad is not None:
            return NotClustered(_interleaved(m, work, bad))
        pairs = ("(SELECT o._unit AS _seg, b.* EXCLUDE (_unit, _first, _last) FROM o JOIN b ON b.key = o.key "
                 "AND (b.seq < 0) = o._neg AND ((b._unit = o._prev AND b._last) OR (b._unit = o._unit AND b._first)) "
                 "WHERE o._prev IS NOT NULL)")
        # (the pass into a table first: `hits_sql` reads its source once per count, and a subquery there would be
        # planned and run once per count — 4.2 CPU-s for 4 pairs of Transaction, the pass's SQL being 123 KB)
        con.execute(f"CREATE TEMP TABLE p AS {flag_rows(m, pairs, partition=('_seg',))}")
        again = con.execute(f"SELECT key, seq, name FROM ({hits_sql(m, 'p')}) x WHERE _rn = 2").fetchall()
        kept = con.execute("SELECT h.key, h.seq, h.name FROM h LEFT JOIN o ON o.key = h.key AND o._neg = (h.seq < 0) "
                           "AND o._unit = h._unit WHERE h._rn > 1 OR o._prev IS NULL").fetchall()
        (stitched,) = con.execute("SELECT count(*) FROM o WHERE _prev IS NOT NULL").fetchone() or (0,)
    finally:
        con.close()
    found = Counter((str(k), int(s), str(n)) for k, s, n in (*kept, *again))
    return Checked(found, rows, len(work), bounds.num_rows, int(stitched))


def _ranges_sql(m: ir.Machine) -> str:
    """Table `o`: per window partition (key, `_neg`) and unit, the ranks of its first and last boundary rows in the
    pass's order (`_rf`, `_rl`), their seqs (`_sf`, `_sl`), and the unit before it in that partition's order of units
    (`_prev`, with its last rank and seq `_prev_rl`, `_prev_sl`)."""
    ranked = (f"SELECT key, seq, seq < 0 AS _neg, _unit, _first, _last, dense_rank() OVER (PARTITION BY key, seq < 0 "
              f"ORDER BY seq, {window_order(m)}) AS _r FROM b")
    ranges = ("SELECT key, _neg, _unit, max(_r) FILTER (WHERE _first) AS _rf, max(_r) FILTER (WHERE _last) AS _rl, "
              "max(seq) FILTER (WHERE _first) AS _sf, max(seq) FILTER (WHERE _last) AS _sl FROM r "
              "GROUP BY key, _neg, _unit")
    return (f"CREATE TEMP TABLE o AS WITH r AS ({ranked}), u AS ({ranges}) SELECT *, lag(_rl) OVER p AS _prev_rl, "
            "lag(_sl) OVER p AS _prev_sl, lag(_unit) OVER p AS _prev FROM u "
            "WINDOW p AS (PARTITION BY key, _neg ORDER BY _rf, _rl, _unit)")


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
