"""Phase 1 of the trace properties (`duckprops`) over keys whose rows cross work units (`duckspark`): what a task
stages of its unit and how the driver puts the units' staged rows together, so that they are the rows
`duckprops.staged` stages from whole keys.

Owns: `refusal` (why a machine's staged rows cannot be stitched, or None), `unit_staged` (a task's staged rows of its
unit, with the bookkeeping the driver reads: `_unit`, the row's local `_rn`, `_staged`; every unit-first row is kept,
staged or not; `unit_staged_from`: the same from the row pass's relation), `unit_parts` (a task's rows and latest ts_ms
per window partition), `stitched` (the driver's SQL over every unit's staged rows, parts and `duckspark` boundary rows),
`stitch` (the same run in an in-process DuckDB over Arrow tables) and `Refused`. `duckengine` runs it: its tasks
(`duckspark.task_sql`) return `unit_staged_from`'s rows over the row pass and `unit_parts`' rows, and the driver calls
`stitch` per machine with them and `duckspark.check`'s boundary rows (`Refused`: the run takes the Spark SQL plan).

Why the stitching is right. A staged row's values read the row, the one just before it in its window partition
(key, seq < 0: the lags, hence the pre-state, `entering`, `before`'s run start and K), its position (`pos`), the
key's running maximum of ts_ms (`t_start`) and the next row's ts_ms (`next_ts`); `refusal` asserts that no value
`Needs` computes reads more (it would read `pos`, `_rn` or the timeline). The driver orders each partition's units
as `duckspark` does (`duckspark.ranges_sql`: by their first and last rows' rank in the pass's order) and refuses a
layout whose ranges interleave (as `duckspark.stitch` does). Then, per unit and partition: `pos` is offset by the rows
of the partition in the units before it; `t_start` is the greatest of the unit's own running maximum and the latest
ts_ms of the units before it; the unit's last row's `next_ts` is the next unit's first row's ts_ms. A unit-first
row with a unit before it is staged again over the pair (the previous unit's last row, it) — both taken from the
boundary rows, since the previous row need not be staged — in a window partition of its own: its pre-state, lags,
computed values and whether it is staged at all come from that pass, its position and timeline from the steps
above (the task keeps every unit-first row, so that its local `next_ts` is at hand).

Not here: the row checks and their stitching (`duckspark`), phase 2 (`duckprops.violations`).
Must not import: duckdb at import time (`stitch` imports it when it runs), kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kcoord.model import sqltree as q

from .duckcheck import pass_query
from .duckprops import columns_read, kept, windowed, windowed_from
from .duckspark import BOOKKEEPING as BOUNDARY
from .duckspark import ranges_sql, relation
from .sparkcheck import MachinePlan, Needs
from .sparkread import typed_columns

DUCKDB = q.DUCKDB
#: a task's staged rows' columns besides `duckprops.kept`'s
BOOKKEEPING = ("_unit", "_rn", "_staged")
#: a task's rows per window partition (`unit_parts`)
PARTS = ("key", "_neg", "_unit", "_rows", "_ts_max")
#: what a value phase 2 reads may not be computed from: values over the key's whole sequence, which a unit has not
GLOBAL = frozenset({"pos", "_rn", "t_start", "next_ts"})


@dataclass(frozen=True, slots=True)
class Refused:
    """No stitched staged rows (`reason`: one line); the caller stages whole keys another way."""

    reason: str


def _q(name: str) -> str:
    return DUCKDB.quote(name)


def refusal(plan: MachinePlan, need: Needs) -> str | None:
    """Why `plan`'s machine's staged rows cannot be stitched across units (one line), or None: a value `Needs`
    computes that reads more of the key than the row and the one before it."""
    for a in need.computed:
        wide = sorted(columns_read([a.expr]) & GLOBAL)
        if wide:
            return (f"{plan.m.name}: the staged value {a.name} reads {', '.join(wide)}, a value over the key's whole "
                    "sequence: the staged rows cannot be stitched across units; stage whole keys")
    return None


def unit_staged(plan: MachinePlan, need: Needs, source: str, unit: str = "{unit}",
                partition: tuple[str, ...] = ()) -> str | None:
    """A task's staged rows of `source` (a unit's typed rows): `duckprops.kept`'s columns, as `staged` computes them
    over the unit alone, and `BOOKKEEPING`: `_unit` (`unit`: an SQL expression, or the placeholder `{unit}`), `_rn`
    (the row's position in the unit's window partition, 1 for the first), `_staged` (a property reads the row, as
    far as the unit can tell). The rows: those staged, and every first row of a window partition of seq >= 0
    (`stitch` stages it again against its predecessor in another unit, and takes its `next_ts` from here: a row the
    unit does not stage may be staged once its pre-state is known — with the bundled specs the unit stages a superset
    of them, but `within` from a state that holds the initial one would not). None when no property reads this
    machine.
    `partition`: more columns the window is partitioned by (`stitch`'s pairs)."""
    if not need.rows:
        return None
    return _unit_rows(plan, need, windowed(plan, need, source, partition), unit)


def unit_staged_from(plan: MachinePlan, need: Needs, passed: str, unit: str = "{unit}",
                     partition: tuple[str, ...] = ()) -> str | None:
    """`unit_staged` over `passed`, the unit's rows with the row pass's columns (`duckcheck.pass_query`, every row:
    its window's `_rn`, lags and pre-state), as `duckprops.staged_from` reads it: the task's row checks and staged
    rows from one window (only the timeline's, ordered by `_rn`, is added). `partition`: more columns the pass's
    window was partitioned by."""
    if not need.rows:
        return None
    return _unit_rows(plan, need, windowed_from(need, passed, partition), unit)


def _unit_rows(plan: MachinePlan, need: Needs, sql: str, unit: str) -> str:
    assert refusal(plan, need) is None, refusal(plan, need)
    wanted = DUCKDB.render(q.holds(q.or_(*need.rows)))
    cols = ", ".join([*(_q(c) for c in kept(need)), f"{unit} AS _unit", "_rn", "_staged"])
    sql = f"SELECT *, {wanted} AS _staged FROM ({sql}) s"
    return f"SELECT {cols} FROM ({sql}) s WHERE seq >= 0 AND (_staged OR _rn = 1)"


def unit_checked(plan: MachinePlan, need: Needs, source: str, keep: Sequence[str] = ()) -> str | None:
    """The task's row pass and its staged rows from one window, in one query over `source` (a unit's typed rows):
    the rows `duckcheck.flag_rows` returns, with its columns (every typed column, `_rn`, `_last`, `_f_<count>`), and
    the rows `unit_staged` returns, with `duckprops.kept`'s columns and `_staged`. `duckspark.bounds_sql` and the
    task's flag count read it as they read `flag_rows`' rows; `unit_staged_of` gives its staged rows. None when no
    property reads this machine (then `flag_rows` alone). `keep`: more of the pass's columns, as `flag_rows`' (what
    the violations' messages read: `duckfound.read_columns`; a task runs `duckfound.violation_rows` over these rows)."""
    if not need.rows:
        return None
    assert refusal(plan, need) is None, refusal(plan, need)
    passed, conditions = pass_query(plan.m, source)
    d = DUCKDB
    flags = [f"{d.render(q.holds(e))} AS {_q('_f_' + name)}" for e, name in conditions]
    any_flag = " OR ".join(_q("_f_" + name) for _, name in conditions)
    # (`_last` from the partitions' row counts, joined: a window ordered by `_rn` would sort the pass's wide rows
    # again)
    counts = f"(SELECT key AS _k, seq < 0 AS _k_neg, count(*) AS _k_rows FROM {source} GROUP BY ALL)"
    wanted = f"{d.render(q.holds(q.or_(*need.rows)))} AS _staged"
    typed = [n for n, _ in typed_columns(plan.m)]
    cols = [_q(c) for c in dict.fromkeys([*typed, *keep, *kept(need)])]
    sql = (f"SELECT s.*, s._rn = c._k_rows AS _last FROM ({windowed_from(need, f'({passed})')}) s JOIN {counts} c "
           "ON c._k = s.key AND c._k_neg = (s.seq < 0)")
    # (`OFFSET 0` keeps the filter above the projection, as in `flag_rows`)
    return (f"SELECT * FROM (SELECT {', '.join(cols)}, _rn, _last, {', '.join(flags)}, {wanted} FROM ({sql}) s "
            f"OFFSET 0) f WHERE _rn = 1 OR _last OR _staged OR {any_flag}")


def unit_staged_of(need: Needs, checked: str, unit: str = "{unit}") -> str:
    """`unit_staged`'s rows and columns from `unit_checked`'s rows (`checked`)."""
    cols = ", ".join([*(_q(c) for c in kept(need)), f"{unit} AS _unit", "_rn", "_staged"])
    return f"SELECT {cols} FROM {checked} WHERE seq >= 0 AND (_staged OR _rn = 1)"


def unit_parts(source: str, unit: str = "{unit}") -> str:
    """A task's rows of `source` per window partition (`PARTS`): key, `_neg` (seq < 0), `_unit` (`unit`, as in
    `unit_staged`), `_rows` (how many), `_ts_max` (their latest ts_ms; over every unit, the trace's end that
    `within` reads: `duckprops.trace_end`)."""
    return (f"SELECT key, seq < 0 AS _neg, {unit} AS _unit, count(*) AS _rows, max(ts_ms) AS _ts_max "
            f"FROM {source} GROUP BY key, seq < 0")


def stitched(plan: MachinePlan, need: Needs, staged: str, parts: str, bounds: str) -> list[str]:
    """The driver's statements over every unit's staged rows (`staged`: `unit_staged`'s rows), parts (`parts`:
    `unit_parts`' rows) and boundary rows (`bounds`: `duckspark.bounds_sql`'s rows; the `_unit`s of all three the
    same numbers), to run in order: they create (or replace) the temporary tables `o` (`duckspark`'s units per
    partition, in order: the same table as `duckspark.stitch`'s), `staged_units` (per unit and key, seq >= 0: the
    rows of the key in the units before it `_off`, their latest ts_ms `_carried`, the next unit's first ts_ms
    `_next_ts`) and `staged_again` (the unit-first rows staged again against their predecessors); the last one is the
    machine's staged rows (`duckprops.kept`'s columns), to read. Between the first and the second, the caller checks
    that no partition's ranges interleave (`interleaved`)."""
    assert need.rows and refusal(plan, need) is None
    ranges = ranges_sql(plan.m, bounds)
    order = "PARTITION BY o.key ORDER BY o._rf, o._rl, o._unit"
    before = f"({order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    units = (f"SELECT o.key, o._unit, o._prev, c._rows, CAST(coalesce(sum(c._rows) OVER {before}, 0) AS BIGINT) "
             f"AS _off, max(c._ts_max) OVER {before} AS _carried, lead(o._unit) OVER ({order}) AS _next FROM o "
             f"JOIN {parts} c ON c.key = o.key AND c._unit = o._unit AND NOT c._neg WHERE NOT o._neg")
    units = (f"CREATE OR REPLACE TEMP TABLE staged_units AS SELECT x.*, n.ts_ms AS _next_ts FROM ({units}) x "
             f"LEFT JOIN {bounds} n ON n.key = x.key AND n._unit = x._next AND n.seq >= 0 AND n._first")
    # (the boundary rows' bookkeeping left out: the pair's window gives its own `_rn`)
    pairs = (f"(SELECT o._unit AS _seg, b.* EXCLUDE ({', '.join(BOUNDARY)}) FROM o JOIN {bounds} b ON b.key = o.key "
             "AND b.seq >= 0 AND ((b._unit = o._prev AND b._last) OR (b._unit = o._unit AND b._first)) "
             "WHERE NOT o._neg AND o._prev IS NOT NULL)")
    again = f"CREATE OR REPLACE TEMP TABLE staged_again AS SELECT * FROM " \
            f"({unit_staged(plan, need, pairs, '_seg', ('_seg',))}) s WHERE _rn = 2"
    fixed = {"pos": "s.pos + u._off"}  # (what the unit cannot know: the rows and times of the units before it)
    if need.timeline:
        fixed |= {"t_start": "greatest(s.t_start, u._carried)",
                  "next_ts": "CASE WHEN s._rn = u._rows THEN u._next_ts ELSE s.next_ts END"}
    f = (f"SELECT s.* REPLACE ({', '.join(f'{e} AS {c}' for c, e in fixed.items())}), u._prev FROM {staged} s "
         "JOIN staged_units u ON u.key = s.key AND u._unit = s._unit")
    keep = kept(need)
    mine = ", ".join(f"f.{_q(c)}" for c in keep)
    theirs = ", ".join(f"f.{_q(c)}" if c in fixed else f"p.{_q(c)}" for c in keep)
    rows = (f"WITH f AS ({f}) SELECT {mine} FROM f WHERE f._staged AND (f._rn > 1 OR f._prev IS NULL) UNION ALL "
            f"SELECT {theirs} FROM staged_again p JOIN f ON f.key = p.key AND f._unit = p._unit AND f._rn = 1 "
            "WHERE p._staged")
    return [ranges, units, again, rows]


def interleaved() -> str:
    """Over `o` (`stitched`'s first statement): one partition whose units' ranges interleave (key, `_neg`, the two
    units), or no row."""
    return "SELECT key, _neg, _prev, _unit FROM o WHERE _prev_rl > _rf ORDER BY key, _neg, _unit LIMIT 1"


def stitch(plan: MachinePlan, need: Needs, staged: Any, parts: Any, bounds: Any) -> Any:
    """`stitched` run in an in-process DuckDB over Arrow tables (`staged`: every unit's `unit_staged` rows; `parts`:
    every unit's `unit_parts` rows; `bounds`: every unit's `duckspark.bounds_sql` rows): the machine's staged rows as
    an Arrow table (`duckprops.kept`'s columns), or `Refused` (a computed value reads the key's whole sequence, or a
    partition's units interleave)."""
    got = prepare(plan, need, parts, bounds)
    return got if isinstance(got, Refused) else stitch_with(got, staged)


def stitch_with(prepared: Prepared, staged: Any) -> Any:
    """`staged` (some units' staged rows, all of each unit's: an Arrow table, or their Parquet files, a tuple of paths,
    read from disk) stitched with `prepare`'s tables."""
    import duckdb

    con = duckdb.connect(config={"threads": 1})
    try:
        relation(con, "staged_rows", staged)
        con.register("staged_units", prepared.units)
        con.register("staged_again", prepared.again)
        (missing,) = con.execute(unstaged("staged_rows")).fetchone() or (0,)
        assert missing == 0, f"{missing} unit-first rows missing from their tasks' staged rows (see `unit_staged`)"
        return con.execute(prepared.rows("staged_rows")).to_arrow_table()
    finally:
        con.close()


@dataclass(frozen=True, slots=True)
class Prepared:
    """What stitching a machine's staged rows needs besides the rows themselves (`stitched`'s tables, as Arrow
    tables): `units` (`staged_units`: per unit and key, the offsets), `again` (`staged_again`: the unit-first rows
    staged again against their predecessors), and `sql` (the statement over a relation of staged rows, `{staged}`
    in it, and the two tables under those names). Each unit's staged rows can be stitched on their own with the
    rows of `units` and `again` of that unit (`rows`)."""

    units: Any
    again: Any
    sql: str

    def rows(self, staged: str) -> str:
        """The stitched rows of `staged` (a relation of some units' staged rows, all of each unit's)."""
        return self.sql.replace("{staged}", staged)


def prepare(plan: MachinePlan, need: Needs, parts: Any, bounds: Any) -> Prepared | Refused:
    """`stitched`'s tables over every unit's parts and boundary rows (Arrow tables), without the staged rows: what
    each unit's staged rows are stitched with, wherever they are (`Prepared`), or `Refused`."""
    import duckdb

    why = refusal(plan, need)
    if why is not None:
        return Refused(why)
    con = duckdb.connect(config={"threads": 1})
    try:
        relation(con, "unit_parts", parts)
        relation(con, "bounds", bounds)
        *tables, rows = stitched(plan, need, "{staged}", "unit_parts", "bounds")
        con.execute(tables[0])
        bad = con.execute(interleaved()).fetchone()
        if bad is not None:
            key, neg, prev, unit = bad
            return Refused(f"{plan.m.name}: the traces are not clustered by key: the rows of key {key!r}"
                           f"{' of negative seq' if neg else ''} in units {prev} and {unit} interleave: the staged "
                           "rows cannot be stitched; stage whole keys")
        for sql in tables[1:]:
            con.execute(sql)
        return Prepared(con.execute("SELECT * FROM staged_units").to_arrow_table(),
                        con.execute("SELECT * FROM staged_again").to_arrow_table(), rows)
    finally:
        con.close()


def unstaged(staged: str) -> str:
    """How many of `staged_again`'s rows have no row in `staged` (a relation of the same units' staged rows): none
    when every task kept its unit-first rows."""
    return (f"SELECT count(*) FROM staged_again p ANTI JOIN {staged} f ON f.key = p.key AND f._unit = p._unit "
            "AND f._rn = 1")
