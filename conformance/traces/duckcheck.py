"""The trace checker's row checks as one DuckDB query: the per-task engine of issue 33's measured design (i33h).

Owns: `row_pass` (every row check of the Spark checker's pass over a relation of one machine's typed rows, counted
per check: each of `sparkcheck.ROW_FLAGS`, each invariant, each step property), `row_hits` (the same pass's flagged
rows, one per (key, seq, count name)), `plan_stage_columns` (the pass's projections after the window, as trees),
`count_names` and `count_name` (the counts' names; a violation's name among them), `expression_plan` (a
`MachinePlan` for its trees only), `window_order` (the window's order after seq) and `flag_rows` (the pass's rows a
caller stitching work units needs: flagged or first or last of their window partition, with one flag per count).
The conditions are not written here: they are `sparkcheck.MachinePlan`'s own expression trees, stage for stage as
its pass builds them, rendered in `sqltree`'s DuckDB dialect; only the SELECT/WINDOW plumbing is text of this module.
No validation (the rows are taken as the writer wrote them: typed, valid), no trace properties, no messages: the rows
a full check flags, not its report. This module builds SQL text; the caller runs it (a DuckDB connection of its
own, in a process or in a Spark task). Also owns `pass_query`: the pass itself, for a caller that reads more of it
(`duckprops.staged_from`).
Must not import: duckdb (only the modules that run a DuckDB check import it, when they run: `duckspark`),
kcoord.cli.
"""

from __future__ import annotations

from collections.abc import Sequence

from kcoord.model import ir
from kcoord.model import sqltree as q
from kcoord.model.spark_backend import SparkCompiler

from .checks import Spec
from .sparkcheck import POST, ROW_FLAGS, MachinePlan, has_bit, masks
from .sparkread import typed_columns

DUCKDB = q.DUCKDB


def expression_plan(m: ir.Machine) -> MachinePlan:
    """`m`'s plan for its expression trees only: no session, no rows."""
    return MachinePlan(None, Spec.of(m), None)  # type: ignore[arg-type]


def count_names(m: ir.Machine) -> list[str]:
    """The names of `row_pass`'s counts, in its order: each row flag, `invariant_<i>`, `step_<i>` (the machine's i-th
    invariant or step property)."""
    return [*ROW_FLAGS, *(f"invariant_{i}" for i in range(len(m.invariants))),
            *(f"step_{i}" for i in range(len(m.steps)))]


def count_name(m: ir.Machine, check: str, name: str) -> str:
    """A violation's (check, name) as `row_pass` names its count (a check that is no row check: its own name)."""
    if check == "invariant":
        return f"invariant_{[i.name for i in m.invariants].index(name)}"
    if check == "step":
        return f"step_{[st.name for st in m.steps].index(name)}"
    return check


def row_pass(m: ir.Machine, source: str) -> str:
    """One row per relation: the violations of each row check over `source` (`count_names`), and `rows_checked`."""
    sql, conditions = _flagged(m, source)
    picked = ", ".join(f"count_if({DUCKDB.render(e)}) AS {name}" for e, name in conditions)
    return f"SELECT {picked}, count(*) AS rows_checked FROM ({sql}) s"


def row_hits(m: ir.Machine, source: str) -> str:
    """One row per violation over `source`: (key, seq, name), `name` one of `count_names`, ordered."""
    sql, conditions = _flagged(m, source)
    hits = " UNION ALL ".join(f"SELECT key, seq, {DUCKDB.string(name)} AS name FROM s WHERE {DUCKDB.render(e)}"
                              for e, name in conditions)
    return f"WITH s AS ({sql}) SELECT * FROM ({hits}) h ORDER BY key, seq, name"


def pass_query(m: ir.Machine, source: str) -> tuple[str, list[tuple[q.Expr, str]]]:
    """The row pass over `source` as one query, every column of it (the window's lags and position `_rn`, the
    pre-state, the check columns), and each count's condition on its rows (`count_names`' order): for a task that
    reads more of the pass than its hits (`duckprops.staged_from`: the trace properties' staged rows, one window)."""
    return _flagged(m, source)


def window_order(m: ir.Machine) -> str:
    """The pass window's order after seq: every typed column, nulls first (as the Python checker and Spark order equal
    seqs; DuckDB's default puts nulls last)."""
    return ", ".join(f"{DUCKDB.quote(n)} NULLS FIRST" for n, _ in typed_columns(m) if n != "seq")


def pass_rows(m: ir.Machine, source: str) -> str:
    """`flag_rows`' pass over `source`, every row and every column of it (`_last` too): for a task that reads more of
    the pass than its flagged rows (`duckprops.staged_from`), then `flag_rows(..., passed=)` over it."""
    return _flagged(m, source, last=True)[0]


def flag_rows(m: ir.Machine, source: str, partition: Sequence[str] = (), keep: Sequence[str] = (),
              passed: str | None = None) -> str:
    """The pass over `source` (its window partitioned by key, seq < 0 and the columns `partition`), as the rows that
    have a flag or are the first or the last of their window partition: every typed column, the `partition` columns,
    `_rn` (the row's position in its partition, 1 for the first), `_last` (no row after it) and one boolean per count
    (`count_names`), named `_f_<count name>`. What a work unit's task returns when keys may cross units
    (`duckspark`), and what the stitching pass over the units' boundary rows reads. `keep`: more of the pass's
    columns, after the typed ones (what the violations' messages read: `duckfound.read_columns`); `passed`: a
    relation holding `pass_rows` over `source` already, read instead of running the pass again."""
    sql, conditions = _flagged(m, source, partition, last=True)
    d = DUCKDB
    kept = [d.quote(n) for n in dict.fromkeys([*(n for n, _ in typed_columns(m)), *partition, *keep])]
    flags = [f"{d.render(q.holds(e))} AS {d.quote('_f_' + name)}" for e, name in conditions]
    any_flag = " OR ".join(d.quote("_f_" + name) for _, name in conditions)
    # (`OFFSET 0` keeps the filter above the flags' projection: pushed down, DuckDB inlines every condition into the
    # filter and evaluates it there and again in the projection — 0.52 CPU-s instead of 0.28–0.35 on 105k
    # Transaction rows, one thread, where `row_pass`'s counting takes 0.31)
    inner = passed if passed is not None else f"({sql}) s"
    return (f"SELECT * FROM (SELECT {', '.join(kept)}, _rn, _last, {', '.join(flags)} FROM {inner} OFFSET 0) f "
            f"WHERE _rn = 1 OR _last OR {any_flag}")


def tied(m: ir.Machine, source: str, partition: Sequence[str] = ()) -> str:
    """`source`'s rows, each with `_tie`: 0, or, for a row whose key, seq and `partition` columns another row shares,
    its dense rank among those rows in `window_order`. Ordered by seq and then `_tie`, a window partition's rows are
    in the order of seq and every typed column (rows equal in every typed column tie, as there) — without sorting
    every row on every typed column: the window's sort keys then cost ~1.5 CPU-s per 1M Transaction rows, one thread,
    against ~0.3 with seq and `_tie` (the rows that share a seq found by hashing, then ranked: usually none). A
    relation, to read with an alias; `source` is read three times."""
    d = DUCKDB
    group = ["key", "seq", *partition]
    named = [(d.quote(c), f"_d{i}") for i, c in enumerate(group)]
    shared = (f"(SELECT {', '.join(f'{c} AS {k}' for c, k in named)} FROM {source} GROUP BY ALL "
              "HAVING count(*) > 1) _d")
    # (IS NOT DISTINCT FROM: a null key or seq groups with the nulls, as it does in the window partition)
    on = " AND ".join(f"_d.{k} IS NOT DISTINCT FROM _s.{c}" for c, k in named)
    ranked = f"dense_rank() OVER (PARTITION BY {', '.join(f'_s.{c}' for c, _ in named)} ORDER BY {window_order(m)})"
    return (f"(SELECT _s.*, 0 AS _tie FROM {source} _s ANTI JOIN {shared} ON {on} UNION ALL "
            f"SELECT _s.*, {ranked} AS _tie FROM {source} _s SEMI JOIN {shared} ON {on})")


def _flagged(m: ir.Machine, source: str, partition: Sequence[str] = (),
             last: bool = False) -> tuple[str, list[tuple[q.Expr, str]]]:
    """The pass over `source` as one query (the map side's table, spec row, error and invariants; the window's lags
    and position, ordered by seq and then every typed column, as the checker orders equal seqs (`tied`); the
    pre-state; the
    conditions, effects, changes and steps), and each count's condition on its rows. `partition`: more columns the
    window is partitioned by; `last`: a column `_last`, true on each partition's last row."""
    d, plan = DUCKDB, expression_plan(m)
    r = d.render
    post = SparkCompiler(POST)
    inv = masks([q.not_(post.holds(i.expr)) for i in m.invariants])
    local = ", ".join([f"{r(plan.legal())} AS _legal", f"{r(plan.spec_row_ok())} AS _sr_ok",
                       f"{r(plan.error_ok())} AS _err_ok", *(f"{r(x)} AS _inv_{i}" for i, x in enumerate(inv))])
    lags = dict.fromkeys(["to_state", "seq", "coordinator_epoch", *(v.name for v in m.variables)])
    windowed = ", ".join([*(f"lag({d.quote(c)}) OVER w AS {d.quote('p_' + c)}" for c in lags),
                          "row_number() OVER w AS _rn", *(["lead(true) OVER w IS NULL AS _last"] if last else [])])
    by = "".join(f", {d.quote(c)}" for c in partition)
    sql = f"SELECT *, {local} FROM {tied(m, source, partition)} s"
    # (ordered by seq, then `_tie`: the order of seq and every typed column, `window_order`, without its sort keys)
    sql = (f"SELECT * EXCLUDE (_tie), {windowed} FROM ({sql}) s "
           f"WINDOW w AS (PARTITION BY key, seq < 0{by} ORDER BY seq, _tie)")
    for stage in plan_stage_columns(plan):
        sql = f"SELECT *, {', '.join(r(x) for x in stage)} FROM ({sql}) s"
    (flags,) = masks([q.holds(getattr(plan, name)()) for name in ROW_FLAGS])
    conditions: list[tuple[q.Expr, str]] = [(q.ne(q.binary("&", flags, q.lit(1 << i)), q.lit(0)), name)
                                            for i, name in enumerate(ROW_FLAGS)]
    conditions += [(q.and_(q.binary(">=", q.col("seq"), q.lit(0)), has_bit("_inv", i)), f"invariant_{i}")
                   for i in range(len(m.invariants))]
    conditions += [(has_bit("_steps", i), f"step_{i}") for i in range(len(m.steps))]
    assert [name for _, name in conditions] == count_names(m)
    return sql, conditions


def plan_stage_columns(plan: MachinePlan) -> list[list[q.Aliased]]:
    """The pass's projections after the window (`MachinePlan.pre_stages` and `check_columns`), as aliased trees, in
    order."""
    return [*plan.pre_stages(), plan.check_columns()]
