"""`duckstage`: the trace properties' staged rows of keys whose rows cross work units, stitched on the driver, against
the staged rows of whole keys and the Python reference checker — on every bundled machine's mutated traces (with the
cross-key mutations of test_duckdb_props, so that every form of trace property has violations) cut into units of 40
rows in two layouts, each unit's task simulated in-process (the row pass's boundary rows, `unit_staged` or
`unit_staged_from`, and `unit_parts`; `run_tasks`): the same staged rows as a multiset, and the same violations of
every trace property, messages included; a layout whose units interleave a key's rows, and a staged value over the
whole key, refused."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kcoord.conformance.traces.duckcheck import _flagged, count_names, flag_rows
from kcoord.conformance.traces.duckprops import expression_plans, kept, staged, violations
from kcoord.conformance.traces.duckspark import bounds_sql
from kcoord.conformance.traces.duckstage import (
    BOOKKEEPING,
    PARTS,
    Refused,
    refusal,
    stitch,
    unit_checked,
    unit_parts,
    unit_staged,
    unit_staged_from,
    unit_staged_of,
)
from kcoord.conformance.traces.sparkcheck import MachinePlan, Needs
from kcoord.conformance.traces.sparkprops import needs
from kcoord.model import ir
from kcoord.model import sqltree as q

from .test_duckdb_props import SEEDS, Found, with_fenced

UNIT_ROWS = 40  # rows per unit: far fewer than a key's (3,000 rows, 40 keys a machine)
#: (name, sort keys): clustered by key (a key crosses a unit boundary or two), and in seq order across keys (every
#: key crosses most units)
LAYOUTS = {"by_key": [("key", "ascending"), ("seq", "ascending")],
           "by_seq": [("seq", "ascending"), ("key", "ascending")]}
#: how a task stages its unit: with a window of its own (`unit_staged`), or from the row pass's (`unit_staged_from`)
SHAPES = ("own", "pass")


@dataclass(frozen=True, slots=True)
class Tasks:
    """Every unit's task output of one machine, put together (Arrow tables), and how many units there were."""

    staged: Any
    parts: Any
    bounds: Any
    units: int


def run_tasks(plan: MachinePlan, need: Needs, table: Any, sizes: list[int] | None = None,
              shape: str = "own") -> Tasks:
    """`run_shapes` of one shape."""
    return run_shapes(plan, need, table, sizes, (shape,))[shape]


def run_shapes(plan: MachinePlan, need: Needs, table: Any, sizes: list[int] | None = None,
               shapes: tuple[str, ...] = SHAPES) -> dict[str, Tasks]:
    """`table` cut into units of `UNIT_ROWS` consecutive rows (or of the sizes `sizes`), each staged as a task
    would, in each shape of `shapes`. "own": a DuckDB of one thread runs `unit_staged` (the unit's own window) over
    the unit alone; "pass": `unit_staged_from` reads the row pass's relation (`duckcheck.pass_query`'s columns, every
    row). Both shapes' tasks give the same `unit_parts` and boundary rows, computed once. The units are run one
    after another on one DuckDB (of one thread; a unit's relation `t` replaced by the next, nothing else kept
    between them: the SQL reads only `t`), not on a DuckDB each: connecting and closing one cost more than the
    queries. The row pass (its boundary rows, `flag_rows` then `bounds_sql`, and for "pass" its relation) is run for
    all units at once, its window partitioned by the unit too: the same window partitions as a DuckDB per unit (its
    SQL, 125-250 KB, takes 0.3-0.5 s to plan, once per unit and machine would be most of this test's time)."""
    import itertools

    import pyarrow as pa

    staged_sql = unit_staged(plan, need, "t")
    assert staged_sql is not None
    own: list[Any] = []
    parts: list[Any] = []
    sizes = sizes or [UNIT_ROWS] * -(-table.num_rows // UNIT_ROWS)
    assert sum(sizes) == table.num_rows
    con = duckdb.connect(config={"threads": 1})
    try:
        for unit, (start, size) in enumerate(zip(itertools.accumulate([0, *sizes]), sizes, strict=False)):
            con.register("t", table.slice(start, size))
            if "own" in shapes:
                own.append(con.execute(staged_sql.replace("{unit}", str(unit))).to_arrow_table())
            parts.append(con.execute(unit_parts("t", str(unit))).to_arrow_table())
            con.unregister("t")
    finally:
        con.close()
    units = pa.array([u for u, size in enumerate(sizes) for _ in range(size)], pa.int64())
    con = duckdb.connect(config={"threads": 1})
    try:
        con.register("t", table.append_column("_unit", units))
        con.register("r", con.execute(flag_rows(plan.m, "t", partition=("_unit",))).to_arrow_table())
        bounds = con.execute(bounds_sql(plan.m, "r").replace("{unit}", "_unit")).to_arrow_table()
        if "pass" in shapes:  # (`pass_query` with the unit as a partition column: its `_flagged`)
            con.execute(f"CREATE TEMP TABLE s AS {_flagged(plan.m, 't', ('_unit',))[0]}")
            from_pass = unit_staged_from(plan, need, "s", "_unit", ("_unit",))
            assert from_pass is not None
            passed = con.execute(from_pass).to_arrow_table()
    finally:
        con.close()
    all_parts = pa.concat_tables(parts)
    staged_by = {"own": lambda: pa.concat_tables(own), "pass": lambda: passed}
    return {shape: Tasks(staged_by[shape](), all_parts, bounds, len(sizes)) for shape in shapes}


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def rows_of(table: Any) -> Counter[tuple[Any, ...]]:
    return Counter(_hashable(list(r.values())) for r in table.to_pylist())


@dataclass(frozen=True, slots=True)
class Layout:
    """One layout's stitched staged rows and whole keys' staged rows per machine, their trace ends, the units."""

    stitched: dict[str, Any]
    whole: dict[str, Any]
    ends: dict[str, int | None]
    units: dict[str, int]
    again: dict[str, int]  # unit-first rows of seq >= 0 with a unit before them (staged again against it)


def layouts(machines: Mapping[str, ir.Machine], root: Path, sort: list[tuple[str, str]]) -> dict[str, Layout]:
    """Per shape (`SHAPES`): the layout's stitched staged rows and whole keys' staged rows."""
    import pyarrow.parquet as pq

    plans = expression_plans(machines)
    wants = needs(plans)
    out = {shape: Layout({}, {}, {}, {}, {}) for shape in SHAPES}
    for name in sorted(machines):
        if not (root / name).is_dir() or not wants[name].rows:
            continue
        table = pq.read_table(sorted((root / name).glob("*.parquet"))).sort_by(sort)
        whole_sql = staged(plans[name], wants[name], "whole")
        assert whole_sql is not None
        con = duckdb.connect(config={"threads": 1})
        try:
            con.register("whole", table)
            whole = con.execute(whole_sql).to_arrow_table()
        finally:
            con.close()
        for shape, tasks in run_shapes(plans[name], wants[name], table).items():
            got = stitch(plans[name], wants[name], tasks.staged, tasks.parts, tasks.bounds)
            assert not isinstance(got, Refused), got.reason
            assert tasks.staged.column_names == [*kept(wants[name]), *BOOKKEEPING]
            assert tasks.parts.column_names == list(PARTS)
            con = duckdb.connect(config={"threads": 1})
            try:
                con.register("parts", tasks.parts)
                (out[shape].ends[name],) = con.execute("SELECT max(_ts_max) FROM parts").fetchone() or (None,)
                (out[shape].again[name],) = con.execute(
                    "SELECT count(*) FROM (SELECT key, min(_unit) FROM parts WHERE NOT _neg GROUP BY key HAVING "
                    "count(*) > 1) k").fetchone() or (0,)
            finally:
                con.close()
            out[shape].whole[name] = whole
            out[shape].stitched[name] = got
            out[shape].units[name] = tasks.units
    return out


def phase2(machines: Mapping[str, ir.Machine], tables: Mapping[str, Any], ends: Mapping[str, int | None]) -> set[Found]:
    """Every trace property's violations over the staged rows `tables` (machine → Arrow table)."""
    plans = expression_plans(machines)
    con = duckdb.connect(config={"threads": 1})
    try:
        names = {}
        for name, table in tables.items():
            names[name] = q.DUCKDB.quote(f"staged_{name}")
            con.register(f"staged_{name}", table)
        out: set[Found] = set()
        for name in tables:
            sql = violations(plans, plans[name], names, ends[name])
            if sql is not None:
                out |= {(m, k, c, n, int(s), msg) for m, k, c, n, s, msg, _ in con.execute(sql).fetchall()}
    finally:
        con.close()
    return out


@pytest.fixture(scope="module")
def machines() -> dict[str, ir.Machine]:
    return with_fenced()


@pytest.fixture(scope="module")
def cut(machines: dict[str, ir.Machine],
        mutated_traces: Callable[[int], tuple[Path, frozenset[Found]]]) -> tuple[Path, set[Found], dict[str, Layout]]:
    """The mutated traces of test_duckdb_props' first seed: where they are, the Python checker's trace-property
    violations, and each layout's staged rows."""
    root, found = mutated_traces(SEEDS[0])
    python = set(found)
    return root, python, {f"{name}-{shape}": got for name, sort in LAYOUTS.items()
                          for shape, got in layouts(machines, root, sort).items()}


@pytest.mark.parametrize("name", [f"{n}-{s}" for n in sorted(LAYOUTS) for s in SHAPES])
def test_stitched_staged_rows_are_the_staged_rows_of_whole_keys(
        cut: tuple[Path, set[Found], dict[str, Layout]], name: str) -> None:
    _, _, layouts = cut
    got = layouts[name]
    assert set(got.stitched) == set(got.whole) and len(got.stitched) >= 4, sorted(got.stitched)
    for machine in sorted(got.whole):
        stitched, whole = got.stitched[machine], got.whole[machine]
        assert stitched.column_names == whole.column_names, machine
        mine, theirs = rows_of(stitched), rows_of(whole)
        assert mine == theirs, (f"{machine}: stitched alone: {sorted((mine - theirs).elements(), key=repr)[:3]}; "
                                f"whole keys alone: {sorted((theirs - mine).elements(), key=repr)[:3]}")
        assert whole.num_rows > 0, machine
        assert got.units[machine] > 20 and got.again[machine] >= 10, (machine, got.units[machine], got.again[machine])


@pytest.mark.parametrize("name", [f"{n}-{s}" for n in sorted(LAYOUTS) for s in SHAPES])
def test_stitched_staged_rows_give_the_violations_the_python_checker_finds(
        machines: dict[str, ir.Machine], cut: tuple[Path, set[Found], dict[str, Layout]], name: str) -> None:
    _, python, layouts = cut
    duck = phase2(machines, layouts[name].stitched, layouts[name].ends)
    assert duck == python, (f"DuckDB alone: {sorted(duck - python)[:5]}; Python alone: {sorted(python - duck)[:5]}")
    assert {c for _, _, c, _, _, _ in python} == {"exclusive", "monotonic", "within", "before", "fenced"}


def test_a_key_whose_units_interleave_is_refused(machines: dict[str, ir.Machine],
                                                 cut: tuple[Path, set[Found], dict[str, Layout]]) -> None:
    """Every key clustered but one, one of whose middle rows is moved to a unit of its own at the end: its seq lies
    inside the range of the key's other unit. `stitch` refuses in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = cut[0]
    plans = expression_plans(machines)
    plan, need = plans["Transaction"], needs(plans)["Transaction"]
    table = pq.read_table(sorted((root / "Transaction").glob("*.parquet"))).sort_by(LAYOUTS["by_key"])
    keys, seqs = table.column("key").to_pylist(), table.column("seq").to_pylist()
    key = next(k for k in sorted(set(keys)) if sum(kk == k and s >= 0 for kk, s in zip(keys, seqs, strict=True)) >= 3)
    mine = [i for i, (k, s) in enumerate(zip(keys, seqs, strict=True)) if k == key and s >= 0]
    middle = mine[len(mine) // 2]
    moved = pa.concat_tables([table.slice(0, middle), table.slice(middle + 1), table.slice(middle, 1)])
    tasks = run_tasks(plan, need, moved, sizes=[moved.num_rows - 1, 1])
    got = stitch(plan, need, tasks.staged, tasks.parts, tasks.bounds)
    assert isinstance(got, Refused) and "not clustered by key" in got.reason and repr(key) in got.reason, got
    assert "\n" not in got.reason
    whole = run_tasks(plan, need, moved, sizes=[moved.num_rows])  # (one unit: nothing to stitch, answered)
    assert not isinstance(stitch(plan, need, whole.staged, whole.parts, whole.bounds), Refused)


def test_one_task_query_gives_the_row_pass_rows_and_the_staged_rows(
        machines: dict[str, ir.Machine], cut: tuple[Path, set[Found], dict[str, Layout]]) -> None:
    """`unit_checked` (the task's row pass and staged rows from one window) over units of the seq-ordered layout:
    the same hits (`hits_sql`) and boundary rows (`duckspark.bounds_sql`) as `flag_rows`' rows, and the same staged
    rows (`unit_staged_of`) as `unit_staged`, which the tests above hold to the whole keys' staged rows."""
    import pyarrow.parquet as pq

    root = cut[0]
    plans = expression_plans(machines)
    wants = needs(plans)
    for name in sorted(n for n in machines if wants[n].rows and (root / n).is_dir()):
        m, plan, need = machines[name], plans[name], wants[name]
        checked = unit_checked(plan, need, "t")
        assert checked is not None
        table = pq.read_table(sorted((root / name).glob("*.parquet"))).sort_by(LAYOUTS["by_seq"])
        for start in (0, table.num_rows // 2):
            con = duckdb.connect(config={"threads": 1})
            try:
                con.register("t", table.slice(start, 10 * UNIT_ROWS))
                con.register("r", con.execute(flag_rows(m, "t")).to_arrow_table())
                con.register("c", con.execute(checked).to_arrow_table())
                for sql in (hits_sql(m, "{r}"), bounds_sql(m, "{r}")):
                    mine, theirs = (rows_of(con.execute(sql.replace("{r}", r).replace("{unit}", "0")).to_arrow_table())
                                    for r in ("c", "r"))
                    assert mine == theirs and sum(mine.values()) > 0, (name, start, sql[:60])
                mine, theirs = (rows_of(con.execute(sql.replace("{unit}", "0")).to_arrow_table())
                                for sql in (unit_staged_of(need, "c"), staged_sql(plan, need)))
                assert mine == theirs and sum(mine.values()) > 0, (name, start)
            finally:
                con.close()


def hits_sql(m: ir.Machine, source: str) -> str:
    """`source`'s rows (`duckcheck.flag_rows`' columns) as one row per flag: key, seq, count name, `_rn`."""
    return " UNION ALL ".join(f"SELECT key, seq, {q.DUCKDB.string(n)} AS name, _rn FROM {source} "
                              f"WHERE {q.DUCKDB.quote('_f_' + n)}" for n in count_names(m))


def staged_sql(plan: MachinePlan, need: Needs) -> str:
    sql = unit_staged(plan, need, "t")
    assert sql is not None
    return sql


def test_a_row_a_unit_stages_only_once_its_pre_state_is_known_is_stitched(
        machines: dict[str, ir.Machine], cut: tuple[Path, set[Found], dict[str, Layout]]) -> None:
    """A property that reads the rows whose pre-state is known and not the initial state (no bundled one does: their
    conditions on the pre-state hold on a unit-first row as the unit sees it — fresh, so in the initial state —
    whenever they hold with its predecessor): the unit-first rows the units do not stage but the whole keys do are
    stitched in, as the whole keys' staged rows."""
    import pyarrow.parquet as pq

    plans = expression_plans(machines)
    plan = plans["Transaction"]
    initial = plan.state(plan.spec.initial)
    need = replace(needs(plans)["Transaction"],
                   rows=(q.and_(q.col("pre_known"), q.not_(q.in_(q.col("pre_state"), [initial]))),))
    table = pq.read_table(sorted((cut[0] / "Transaction").glob("*.parquet"))).sort_by(LAYOUTS["by_seq"])
    tasks = run_tasks(plan, need, table)
    got = stitch(plan, need, tasks.staged, tasks.parts, tasks.bounds)
    assert not isinstance(got, Refused), got.reason
    whole_sql = staged(plan, need, "whole")
    assert whole_sql is not None
    con = duckdb.connect(config={"threads": 1})
    try:
        con.register("whole", table)
        con.register("tasks", tasks.staged)
        whole = con.execute(whole_sql).to_arrow_table()
        (unstaged,) = con.execute("SELECT count(*) FROM tasks WHERE _rn = 1 AND NOT _staged").fetchone() or (0,)
    finally:
        con.close()
    assert unstaged > 10
    mine, theirs = rows_of(got), rows_of(whole)
    assert mine == theirs, (f"stitched alone: {sorted((mine - theirs).elements(), key=repr)[:3]}; "
                            f"whole keys alone: {sorted((theirs - mine).elements(), key=repr)[:3]}")


def test_a_value_over_the_whole_key_is_refused(machines: dict[str, ir.Machine]) -> None:
    """A staged value computed from the row's position (none is yet) cannot be stitched: refused in one line."""
    plans = expression_plans(machines)
    need = needs(plans)["Transaction"]
    assert refusal(plans["Transaction"], need) is None
    wide = replace(need, computed=(*need.computed, q.Aliased(q.binary("+", q.col("pos"), q.lit(1)), "_next_pos")))
    why = refusal(plans["Transaction"], wide)
    assert why is not None and "_next_pos reads pos" in why and "\n" not in why
    got = stitch(plans["Transaction"], wide, None, None, None)
    assert isinstance(got, Refused) and got.reason == why
