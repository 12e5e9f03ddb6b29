"""`duckspark`'s task in this process (no Spark): what `task_function` returns for each work unit — its malformed
rows, its flagged rows' violations, its boundary rows, its staged rows and parts, its row count and latest ts_ms —
equals what the definitions give over the unit's valid rows (`duckvalid.reasoned`'s rows with no reason; then
`duckcheck.flag_rows`, `duckfound.violation_rows`, `duckspark.bounds_sql`, `duckstage.unit_staged` with its own
window, `duckstage.unit_parts`), for the task as `duckengine` builds it (the pass materialised, staged rows from it)
and with `duckstage.unit_checked` (the pass's rows and the staged rows from one query). The task's shortcuts are
held here: the violations' query skipped when a unit flags nothing (and `stitch`'s when no pair's second row has a
flag), the rows as read checked without a copy when a unit has no malformed row. Then every unit's results stitched
on the driver (`duckspark.stitch`) flag what the Python checker flags.

Data: every bundled machine's generated traces (480 rows), each mutation once over half the keys (seed 7; the other
half's units flag nothing), two rows made malformed (a to_state code past the states), sorted by key, in row groups of
40 rows, units of 80."""

from __future__ import annotations

import functools
import os
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kcoord.conformance.traces import duckprops, duckspark, duckstage
from kcoord.conformance.traces.checks import ROW_CHECKS
from kcoord.conformance.traces.duckcheck import count_name, flag_rows
from kcoord.conformance.traces.duckfound import read_columns, violation_rows
from kcoord.conformance.traces.duckvalid import layout, reasoned
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.mutations import mutate_every
from kcoord.conformance.traces.pycheck import check_paths
from kcoord.conformance.traces.sparkprops import needs
from kcoord.conformance.traces.sparkread import typed_columns
from kcoord.conformance.traces.writers import write_parquet
from kcoord.model.loader import bundled_machines

SEED = 7
GROUP_ROWS = 40
UNIT_ROWS = 80
MACHINES = sorted(bundled_machines())
PLANS = duckprops.expression_plans(dict(bundled_machines()))
NEEDS = needs(PLANS)
#: the task's shapes: as `duckengine` builds it (the staged rows from the materialised pass), and `unit_checked`
SHAPES = ("pass", "checked")
Rows = Counter[tuple[Any, ...]]


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Counter[tuple[str, int, str]]]]:
    """Each machine's file (`root/<machine>/part-0.parquet`) and the Python checker's row-check hits of each."""
    machines = dict(bundled_machines())
    generated, _ = generate(machines, SEED, Options(keys=16, rows=480))
    # (the first half of the keys mutated: the other half's units flag nothing)
    keys = {n: sorted({r["key"] for r in rows}) for n, rows in generated.items()}
    half = {n: set(k[len(k) // 2:]) for n, k in keys.items()}
    mutated = mutate_every({n: [r for r in rows if r["key"] not in half[n]] for n, rows in generated.items()},
                           machines, random.Random(SEED), rounds=1)
    mutated = {n: [*rows, *(r for r in generated[n] if r["key"] in half[n])] for n, rows in mutated.items()}
    root = tmp_path_factory.mktemp("duckspark_task")
    write_parquet(mutated, machines, str(root))
    hits: dict[str, Counter[tuple[str, int, str]]] = {m: Counter() for m in machines}
    for name in machines:
        path = root / name / "part-0.parquet"
        table = pq.read_table(path).sort_by([("key", "ascending"), ("seq", "ascending")])
        column = table.column("to_state")
        broken = pa.array([i in (7, table.num_rows // 2 + 3) for i in range(table.num_rows)])
        table = table.set_column(table.schema.get_field_index("to_state"), "to_state",
                                 pc.if_else(broken, pa.scalar(99, column.type), column))
        pq.write_table(table, path, row_group_size=GROUP_ROWS)
    for v in check_paths([str(root)], machines).violations:
        if v.check in ROW_CHECKS or v.check in ("invariant", "step"):
            hits[v.machine][v.key, v.seq, count_name(machines[v.machine], v.check, v.name)] += 1
    return root, hits


def task_sql(name: str, path: str, shape: str) -> dict[str, Any]:
    """The task's SQL as `duckengine` builds it (`shape` "pass"), or with `unit_checked`."""
    m, plan, need = bundled_machines()[name], PLANS[name], NEEDS[name]
    valid = {path: reasoned(m, path, layout(m, path), relation="t", source=f"file://{os.path.abspath(path)}")}
    staged = duckstage.unit_staged_from(plan, need, "s")
    parts = duckstage.unit_parts("t") if staged is not None else None
    if shape == "checked":
        checked = duckstage.unit_checked(plan, need, "{source}", keep=read_columns(m))
        assert checked is not None
        return duckspark.task_sql(m, valid, duckstage.unit_staged_of(need, "r"), parts, checked=checked)
    return duckspark.task_sql(m, valid, staged, parts)


def run_tasks(work: list[duckspark.Unit], sql: dict[str, Any]) -> list[dict[str, Any]]:
    """Every unit through `task_function` in this process (one batch of every unit id: one connection for all)."""
    fn = duckspark.task_function(work, sql)
    out = [r for b in fn(iter([pa.RecordBatch.from_pydict({"id": list(range(len(work)))})])) for r in b.to_pylist()]
    assert [r["unit"] for r in out] == list(range(len(work))) and all(r["error"] is None for r in out)
    return out


@pytest.fixture(scope="module")
def ran(traces: tuple[Path, dict[str, Counter[tuple[str, int, str]]]]
        ) -> Callable[[str, str], tuple[list[duckspark.Unit], list[dict[str, Any]]]]:
    """`get(machine, shape)`: the machine's units and every unit's task results, run once for both tests that read
    them (each unit's own results, then the same results stitched)."""
    root, _ = traces

    @functools.cache
    def get(machine: str, shape: str) -> tuple[list[duckspark.Unit], list[dict[str, Any]]]:
        path = str(root / machine / "part-0.parquet")
        work = duckspark.units([Path(path)], UNIT_ROWS)
        return work, run_tasks(work, task_sql(machine, path, shape))

    return get


def rows_of(table: Any) -> Rows:
    return Counter(tuple(tuple(v) if isinstance(v, list) else v for v in r.values()) for r in table.to_pylist())


@functools.cache
def defined(name: str, work: tuple[tuple[str, tuple[int, ...]], ...], unit: int) -> dict[str, Any]:
    """One unit's results from the definitions, the long way: the valid rows copied, the violations' query always."""
    m, plan, need = bundled_machines()[name], PLANS[name], NEEDS[name]
    path, groups = work[unit]
    typed = ", ".join(duckprops.DUCKDB.quote(n) for n, _ in typed_columns(m))
    valid = reasoned(m, path, layout(m, path), relation="u", source=f"file://{os.path.abspath(path)}")
    con = duckdb.connect(config={"threads": 1})
    try:
        con.register("u", pq.ParquetFile(path).read_row_groups(list(groups)))
        out = {"bad": con.execute(f"SELECT * FROM ({valid}) v WHERE _reason IS NOT NULL").to_arrow_table()}
        con.execute(f"CREATE TEMP TABLE t AS SELECT {typed} FROM ({valid}) v WHERE _reason IS NULL")
        con.register("r", con.execute(flag_rows(m, "t", keep=read_columns(m))).to_arrow_table())
        queries = {"found": violation_rows(m, "r", carry=(f"{unit} AS _unit",)),
                   "bounds": duckspark.bounds_sql(m, "r").replace("{unit}", str(unit))}
        staged = duckstage.unit_staged(plan, need, "t", unit=str(unit))
        if staged is not None:
            queries |= {"staged": staged, "parts": duckstage.unit_parts("t", str(unit))}
        out |= {k: con.execute(sql).to_arrow_table() for k, sql in queries.items()}
        out["rows"], out["ts_end"] = con.execute("SELECT count(*), max(ts_ms) FROM t").fetchone()  # type: ignore[misc]
        return out
    finally:
        con.close()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("machine", MACHINES)
def test_each_unit_gives_what_the_definitions_give(
        ran: Callable[[str, str], tuple[list[duckspark.Unit], list[dict[str, Any]]]], machine: str, shape: str
) -> None:
    """Per unit, every result as a multiset of rows (columns in order); a unit that flags nothing returns no
    violations' stream at all (the query was skipped), one that flags a row returns them all."""
    if shape == "checked" and not NEEDS[machine].rows:
        pytest.skip(f"no trace property reads {machine}: no staged rows, `unit_checked` is None")
    work, got = ran(machine, shape)
    seen = Counter()
    for unit, r in enumerate(got):
        want = defined(machine, tuple((p, tuple(g)) for p, g in work), unit)
        assert (r["rows"], r["ts_end"]) == (want["rows"], want["ts_end"]), unit
        for k in ("bad", "found", "bounds", "staged", "parts"):
            if k not in want:
                assert r[k] == b"", (unit, k)
                continue
            if not r[k]:
                assert k == "found" and want[k].num_rows == 0, (unit, k)
                continue
            mine = duckspark._table(r[k])
            assert mine.column_names == want[k].column_names, (unit, k)
            assert rows_of(mine) == rows_of(want[k]), (unit, k, (rows_of(mine) ^ rows_of(want[k])))
        seen["flag nothing"] += not r["found"]
        seen["flag a row"] += bool(r["found"])
        seen["malformed rows"] += want["bad"].num_rows > 0
    assert seen["flag nothing"] > 0 and seen["flag a row"] > 0 and seen["malformed rows"] == 2, seen


@pytest.mark.parametrize("shape", SHAPES)
def test_the_units_stitched_flag_what_the_python_checker_flags(
        traces: tuple[Path, dict[str, Counter[tuple[str, int, str]]]],
        ran: Callable[[str, str], tuple[list[duckspark.Unit], list[dict[str, Any]]]], shape: str) -> None:
    """Every machine: the tasks' results stitched on the driver (`duckspark.stitch`): the same (key, seq, count) as
    the Python checker; and the same machine's file without the keys the checker flags: no violations, some units'
    tasks returning no violations' stream."""
    root, hits = traces
    for machine in MACHINES:
        if shape == "checked" and not NEEDS[machine].rows:
            continue
        m = bundled_machines()[machine]
        path = str(root / machine / "part-0.parquet")
        work, got = ran(machine, shape)  # (the tasks test_each_unit_gives_what_the_definitions_give held unit by unit)
        found = duckspark._tables([r["found"] for r in got])
        bounds = pa.concat_tables([duckspark._table(r["bounds"]) for r in got])
        whole = duckspark.stitch(m, work, sum(r["rows"] for r in got), found, bounds)
        assert isinstance(whole, duckspark.Checked) and whole.stitched > 2, (machine, whole.stitched)
        assert whole.hits == hits[machine] and sum(hits[machine].values()) > 0, (
            machine, sorted((whole.hits - hits[machine]).elements())[:5],
            sorted((hits[machine] - whole.hits).elements())[:5])
        flagged = {k for k, _, _ in hits[machine]}
        table = pq.read_table(path)
        clean = table.filter(pc.invert(pc.is_in(table.column("key"), pa.array(sorted(flagged)))))
        clean_path = str(root / f"{machine}-clean.parquet")
        pq.write_table(clean, clean_path, row_group_size=GROUP_ROWS)
        work = duckspark.units([Path(clean_path)], UNIT_ROWS)
        got = run_tasks(work, task_sql(machine, clean_path, shape))
        # (a unit-first row may be flagged by its task, which lacks its predecessor: the stitch judges it again)
        assert any(r["found"] == b"" for r in got), machine
        bounds = pa.concat_tables([duckspark._table(r["bounds"]) for r in got])
        found = duckspark._tables([r["found"] for r in got])
        whole = duckspark.stitch(m, work, sum(r["rows"] for r in got), found, bounds)
        assert isinstance(whole, duckspark.Checked) and whole.stitched > 0 and not whole.hits, (machine, whole.hits)
        assert whole.violations is None or whole.violations.num_rows == 0, machine
