"""`check-traces`' Spark engine through DuckDB in Spark's tasks (`duckengine`), against `--engine python` through
`job.run`: every bundled machine's mutated traces (with a few malformed rows) as typed Parquet in row groups of a few
dozen rows — the same violations table (every field; witnesses where both give one), the same summary, keys crossing
units included (the row checks stitched by `duckspark`, the trace properties' phase 1 by `duckstage`); and the layout
the DuckDB path must refuse (a key whose units interleave) taken by the Spark SQL plan, said in one line, with the
same answer."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces import duckengine
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.job import Config, Outcome, run
from kcoord.conformance.traces.mutations import mutate_every
from kcoord.conformance.traces.output import read_violations
from kcoord.conformance.traces.writers import write_parquet
from kcoord.model.loader import bundled_machines

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEED = 11
GROUP_ROWS = 40
FIELDS = ("machine", "key", "check", "name", "seq", "seq_from", "seq_to", "location", "message")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled machine's typed Parquet traces, every mutation applied (2 rounds), sorted by key and seq, with two
    rows made malformed (a from_state code past the machine's states) per machine."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    machines = dict(bundled_machines())
    rows, _ = generate(machines, SEED, Options(keys=8, rows=300))
    rows = mutate_every(rows, machines, random.Random(SEED), rounds=2)
    rows["Transaction"] = _hanging(rows["Transaction"])
    root = tmp_path_factory.mktemp("duckengine") / "source"
    write_parquet(rows, machines, str(root))
    for path in sorted(root.glob("*/*.parquet")):
        table = pq.read_table(path).sort_by([("key", "ascending"), ("seq", "ascending")])
        states = table.column("from_state").to_pylist()
        for i in (5, 17):
            states[i] = 120
        table = table.set_column(table.schema.get_field_index("from_state"), "from_state",
                                 pa.array(states, table.schema.field("from_state").type))
        pq.write_table(table, path)
    return root


def _hanging(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Transaction rows where a key stops in PrepareCommit or PrepareAbort and another key's last row comes long
    after (10^8 ms): a `within` violation that only the trace's end (`trace_end`, the latest ts_ms over every
    unit) decides."""
    entered = min((r["seq"], r["key"]) for r in rows if r["to_state"] in ("PrepareCommit", "PrepareAbort"))
    kept = [r for r in rows if not (r["key"] == entered[1] and r["seq"] > entered[0])]
    last = max((r["seq"], i) for i, r in enumerate(kept) if r["key"] != entered[1])[1]
    kept[last] = {**kept[last], "ts_ms": kept[last]["ts_ms"] + 10**8}
    return kept


def _layout(source: Path, root: Path, machines: list[str], cut: str, moved: bool = False, by_seq: bool = False) -> Path:
    """`machines`' files of `source` rewritten in row groups: `keys` (each row group one key's rows: no key crosses a
    unit) or `rows` (`GROUP_ROWS` rows each: most keys cross units); `moved`: one key's middle row moved to a row
    group of its own at the end (its units interleave); `by_seq`: the rows ordered by seq, then key (every key's rows
    spread over most units, a few rows in each)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name in machines:
        (path,) = sorted((source / name).glob("*.parquet"))
        table = pq.read_table(path)
        if by_seq:
            table = table.sort_by([("seq", "ascending"), ("key", "ascending")])
        keys = table.column("key").to_pylist()
        if moved:
            key = keys[len(keys) // 2]
            at = [i for i, k in enumerate(keys) if k == key]
            middle = at[len(at) // 2]
            table = pa.concat_tables([table.slice(0, middle), table.slice(middle + 1), table.slice(middle, 1)])
            keys = table.column("key").to_pylist()
        if cut == "keys":
            sizes = list(Counter(keys[:len(keys) - moved]).values()) + [1] * moved
        else:
            sizes = [GROUP_ROWS] * -(-(table.num_rows - moved) // GROUP_ROWS) + [1] * moved
        (root / name).mkdir(parents=True)
        with pq.ParquetWriter(root / name / path.name, table.schema) as writer:
            start = 0
            for size in sizes:
                writer.write_table(table.slice(start, size))
                start += size
    return root


def _crossing(folder: Path, unit_rows: int = GROUP_ROWS) -> int:
    """How many keys of the folder's Parquet file have rows in more than one of `duckspark.units`' work units."""
    import pyarrow.parquet as pq

    from kcoord.conformance.traces.duckspark import units

    (path,) = sorted(folder.glob("*.parquet"))
    f = pq.ParquetFile(path)
    seen = Counter(k for _, groups in units([path], unit_rows)
                   for k in set(f.read_row_groups(groups, ["key"])["key"].to_pylist()))
    return sum(1 for n in seen.values() if n > 1)


def _both(spark: Any, root: Path, unit_rows: int = GROUP_ROWS, ms: dict[str, Any] | None = None,
          max_rows: int | None = None, spread: bool = False) -> tuple[Outcome, Outcome, list[str]]:
    """`--engine python` and `--engine spark` on `root`; `spread`: the trace properties' phase 2 in Spark's tasks
    (`duckspread`), however few the staged rows, in 3 tasks (more than the test session's 2 cores: rows of equal K
    meet across tasks only if their buckets are right)."""
    said: list[str] = []
    ms = ms if ms is not None else dict(bundled_machines())
    py = run(Config([str(root)], str(root.parent / f"{root.name}-python"), engine="python"), ms)
    sp = run(Config([str(root)], str(root.parent / f"{root.name}-spark"), engine="spark", unit_rows=unit_rows,
                    duckdb_tasks_max_rows=max_rows, phase2_driver_max_rows=0 if spread else None,
                    phase2_tasks=3 if spread else None), ms, spark=spark,
             say=said.append)
    return py, sp, said


def _same(py: Outcome, sp: Outcome, root: Path) -> None:
    a = read_violations(str(root.parent / f"{root.name}-python" / "violations"))
    b = read_violations(str(root.parent / f"{root.name}-spark" / "violations"))
    assert a, "the mutations broke nothing"
    if any(v.machine == "Transaction" for v in a):
        assert any("not reached by the end of the trace" in v.message for v in a)
    mine = Counter(tuple(getattr(v, f) for f in FIELDS) for v in b)
    theirs = Counter(tuple(getattr(v, f) for f in FIELDS) for v in a)
    assert mine == theirs, (f"spark alone: {sorted((mine - theirs).elements())[:5]}; "
                            f"python alone: {sorted((theirs - mine).elements())[:5]}")
    assert {v.id for v in b} == {v.id for v in a}
    once = Counter(v.identity for v in a)  # (two rows of a key with one seq may both break a check: one identity)
    py_witness = {v.identity: v for v in a if v.witness and once[v.identity] == 1}
    shown = [v for v in b if v.witness and v.identity in py_witness]
    assert len(shown) > 50
    for v in shown:
        assert (v.witness, v.witness_rows) == (py_witness[v.identity].witness, py_witness[v.identity].witness_rows), v
    assert py.summary.violations == sp.summary.violations
    assert py.summary.rows_read == sp.summary.rows_read
    assert py.summary.quarantined == sp.summary.quarantined and sp.summary.quarantined_total > 0
    assert py.summary.not_checked == sp.summary.not_checked
    assert py.exit_code == sp.exit_code == 1


def test_whole_keys_per_unit_are_checked_in_duckdb_as_python_checks_them(
        spark: Any, traces: Path, tmp_path: Path) -> None:
    """Every machine, its trace properties included (their phase 1 in the tasks, phase 2 on the driver)."""
    machines = sorted(bundled_machines())
    root = _layout(traces, tmp_path / "keys", machines, "keys")
    py, sp, said = _both(spark, root, unit_rows=3 * GROUP_ROWS)  # (units of a few whole keys)
    assert sp.summary.engine == duckengine.ENGINE and said == []
    _same(py, sp, root)


@pytest.mark.parametrize("order", ["by_key", "by_seq", "by_seq-spread"])
def test_keys_across_units_are_stitched_as_python_checks_them(
        spark: Any, traces: Path, tmp_path: Path, order: str) -> None:
    """Every machine, its trace properties included: every key's rows in several units (three `GROUP_ROWS`-row groups
    each: by key, a key of ~300 rows in three or four units; by seq, every key in every unit), the row checks and the
    properties' staged rows stitched on the driver, phase 2 over them — no fallback; `-spread`: phase 2 in Spark's
    tasks (`duckspread`). (Units of one row group, where a key has one row or none in most units, are
    test_duckspark's and test_duckstage's.)"""
    from kcoord.conformance.traces.duckprops import expression_plans
    from kcoord.conformance.traces.sparkprops import needs

    machines = sorted(bundled_machines())
    staging = sorted(n for n, need in needs(expression_plans(dict(bundled_machines()))).items() if need.rows)
    assert "Transaction" in staging, staging
    root = _layout(traces, tmp_path / order, machines, "rows", by_seq=order.startswith("by_seq"))
    for name in staging:
        assert _crossing(root / name, 3 * GROUP_ROWS) > 0, name
    py, sp, said = _both(spark, root, unit_rows=3 * GROUP_ROWS, spread=order.endswith("spread"))
    assert sp.summary.engine == duckengine.ENGINE and said == []
    _same(py, sp, root)


@pytest.fixture(scope="module")
def scrambled(tmp_path_factory: pytest.TempPathFactory, mutated_traces: Callable[[int], tuple[Path, frozenset[Any]]]
              ) -> tuple[dict[str, Any], Path, Counter[tuple[Any, ...]]]:
    """test_duckdb_props' traces (40 keys of ~75 rows a machine, its `fenced` property added, columns the properties
    read scrambled across keys: many more of their violations), generated once for both orders; and the Python
    checker's violations of them (the rows' order in a file does not change them)."""
    from .test_duckdb_props import SEEDS, with_fenced

    machines = with_fenced()
    base = tmp_path_factory.mktemp("scrambled")
    source, _ = mutated_traces(SEEDS[0])
    python = run(Config([str(source)], str(base / "python"), engine="python"), machines)
    assert python.exit_code == 1
    return machines, source, Counter(tuple(getattr(v, f) for f in FIELDS)
                                              for v in read_violations(str(base / "python" / "violations")))


@pytest.mark.parametrize("order", ["by_key", "by_seq", "by_seq-spread"])
def test_trace_properties_broken_across_keys_and_units_are_found_as_python_finds_them(
        spark: Any, scrambled: tuple[dict[str, Any], Path, Counter[tuple[Any, ...]]], tmp_path: Path,
        order: str) -> None:
    """The `scrambled` traces in `GROUP_ROWS`-row groups, units of twelve (~6 units a machine: by key, a few keys
    cross each boundary; by seq, every key crosses every unit): the whole violations table is Python's, messages
    included — the trace properties' staged rows of keys crossing units, stitched, and the row checks on rows whose
    conditions read nulls (SQL's three-valued logic in both checkers: `checks`). `-spread`: phase 2 in Spark's tasks
    (`duckspread`), every property's rows in buckets of its K (the layout does not change those buckets: one order)."""
    from kcoord.conformance.traces.checks import TRACE_FORMS

    machines, source, a = scrambled
    root = _layout(source, tmp_path / order, sorted(machines), "rows", by_seq=order.startswith("by_seq"))
    for name in ("Transaction", "PartitionProducer"):
        assert _crossing(root / name, 12 * GROUP_ROWS) > (0 if order == "by_key" else 30), name
    said: list[str] = []
    spread = order.endswith("spread")
    sp = run(Config([str(root)], str(tmp_path / "spark"), engine="spark", unit_rows=12 * GROUP_ROWS,
                    phase2_driver_max_rows=0 if spread else None, phase2_tasks=3 if spread else None), machines,
             spark=spark, say=said.append)
    assert sp.summary.engine == duckengine.ENGINE and said == []
    b = Counter(tuple(getattr(v, f) for f in FIELDS) for v in read_violations(str(tmp_path / "spark" / "violations")))
    assert b == a, f"spark alone: {sorted((b - a).elements())[:5]}; python alone: {sorted((a - b).elements())[:5]}"
    props = Counter(v[2] for v in a.elements() if v[2] in TRACE_FORMS)
    assert sum(props.values()) > 100 and {"fenced", "within", "exclusive", "monotonic", "before"} <= set(props), props


def test_a_key_whose_units_interleave_is_answered_by_the_spark_plan(
        spark: Any, traces: Path, tmp_path: Path) -> None:
    """A key whose units interleave (`NotClustered`): the Spark SQL plan answers, and the run says why in one line."""
    root = _layout(traces, tmp_path / "interleaved", ["Transaction", "ConsumerGroup"], "keys", moved=True)
    py, sp, said = _both(spark, root)
    _same(py, sp, root)
    assert sp.summary.engine == "spark"
    (line,) = said
    assert "\n" not in line and "not clustered by key" in line


def test_an_input_past_the_size_limit_is_answered_by_the_spark_plan(
        spark: Any, traces: Path, tmp_path: Path) -> None:
    """An input of more rows than a `duckdb_tasks_max_rows` given in the config takes the plan, and the run says why
    in one line (by default there is no limit: the next test)."""
    import pyarrow.parquet as pq

    root = _layout(traces, tmp_path / "large", ["Transaction", "ConsumerGroup"], "keys")
    rows = sum(pq.read_metadata(p).num_rows for p in root.rglob("*.parquet"))
    py, sp, said = _both(spark, root, max_rows=rows - 1)
    _same(py, sp, root)
    assert sp.summary.engine == "spark"
    (line,) = said
    assert "\n" not in line and f"more than {rows - 1:,} rows" in line


def test_by_default_no_input_is_too_large_for_the_duckdb_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`job.DUCKDB_TASKS_MAX_ROWS` is None: at 50M rows, the largest measured, DuckDB in the tasks took less CPU and
    less driver memory than the Spark SQL plan (benchmarks/RESULTS.md, issue 33, twelfth session), so an input of
    10^12 rows keeps the DuckDB path; a limit given in the config still applies, said in one line."""
    from kcoord.conformance.traces import job

    monkeypatch.setattr(job, "estimated_rows", lambda sources, stop: min(stop, 10**12))  # (it stops past `stop`)
    assert job.past_duckdb_limit(Config(["in"]), []) is None
    why = job.past_duckdb_limit(Config(["in"], duckdb_tasks_max_rows=50_000_000), [])
    assert why is not None and "\n" not in why and why.startswith("more than 50,000,000 rows"), why


def test_workers_without_duckdb_fall_back_and_other_task_errors_do_not(
        monkeypatch: pytest.MonkeyPatch, traces: Path, tmp_path: Path) -> None:
    """A task that cannot import duckdb (a cluster's workers without the test extra) is a reason to take the Spark
    SQL plan, said in one line; any other failure of a task is a failure of the run (never hidden by a fallback)."""
    from kcoord.conformance.traces import duckspark
    from kcoord.conformance.traces.readers import discover

    machines = dict(bundled_machines())
    root = _layout(traces, tmp_path / "keys", ["ConsumerGroup"], "keys")
    sources = discover([str(root)], machines, [])
    assert duckengine.why_not(machines, sources, None) is None

    def failing(text: str) -> Any:
        def check(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError(f"PythonException: An exception was thrown from the Python worker.\n{text}\n  ...")
        return check

    monkeypatch.setattr(duckspark, "check", failing("ModuleNotFoundError: No module named 'duckdb'"))
    got = duckengine.check(None, machines, sources, str(tmp_path / "out"), GROUP_ROWS)
    assert isinstance(got, duckengine.Fallback) and "\n" not in got.reason and "no duckdb" in got.reason, got
    monkeypatch.setattr(duckspark, "check", failing("ZeroDivisionError: division by zero"))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        duckengine.check(None, machines, sources, str(tmp_path / "out"), GROUP_ROWS)
