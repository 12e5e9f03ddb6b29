"""DuckDB on the trace Parquet: the single-machine peer of the Spark checker for three named checks.

Owns: `queries` (a machine → the SQL counting its illegal transitions, its discontinuities and the violations of one
invariant, over `read_parquet` of its typed (v2) files) and `count` (runs them in one DuckDB connection).
The conditions are not written here: they are the Spark checker's own expression trees (`sparkcheck.MachinePlan`:
`legal`, `fresh`, `discontinuity`, the invariant compiled by `SparkCompiler` on coded columns), rendered with
`sqltree`'s DuckDB dialect. Only the window that gives each row its key's previous row is DuckDB text of its own.
The rows are taken as the writer wrote them (no validation pass: the benchmark's traces are valid typed files), so
the figures are the price of these three checks alone, the lower bound of what a full check costs on DuckDB.
"""

from __future__ import annotations

from typing import Any

from kcoord.model import ir
from kcoord.model import sqltree as q

NAMED_CHECKS = ("illegal_transition", "discontinuity", "invariant")


def _plan(m: ir.Machine) -> Any:
    from kcoord.conformance.traces.duckcheck import expression_plan

    return expression_plan(m)


def queries(m: ir.Machine, files: str, invariant: str | None = None) -> dict[str, str]:
    """The three counting queries over the Parquet files matching `files` (a glob); `invariant`: its name (default:
    the machine's first)."""
    from kcoord.conformance.traces.sparkcheck import POST
    from kcoord.model.spark_backend import SparkCompiler

    plan = _plan(m)
    inv = next(i for i in m.invariants if invariant in (None, i.name))
    source = f"read_parquet({q.DUCKDB.string(files)})"
    d = q.DUCKDB
    windowed = (f"SELECT *, lag(to_state) OVER k AS p_to_state, lag(seq) OVER k AS p_seq, "
                f"lag(coordinator_epoch) OVER k AS p_coordinator_epoch FROM {source} "
                f"WINDOW k AS (PARTITION BY key, seq < 0 ORDER BY seq)")
    fresh = f"SELECT *, {d.render(plan.fresh())} AS fresh FROM ({windowed})"
    broken = q.not_(SparkCompiler(POST).holds(inv.expr))
    return {
        "illegal_transition": f"SELECT count(*) FROM {source} WHERE {d.render(q.not_(plan.legal()))}",
        "discontinuity": f"SELECT count(*) FROM ({fresh}) WHERE {d.render(q.holds(plan.discontinuity()))}",
        "invariant": f"SELECT count(*) FROM {source} WHERE seq >= 0 AND {d.render(broken)}",
    }


def count(m: ir.Machine, files: str, threads: int | None = None) -> dict[str, int]:
    """The violations of each named check, counted by DuckDB (all three queries in one connection)."""
    import duckdb

    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    try:
        return {name: int(con.execute(sql).fetchone()[0]) for name, sql in queries(m, files).items()}  # type: ignore[index]
    finally:
        con.close()
