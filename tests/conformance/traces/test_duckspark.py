"""`duckspark`: the DuckDB row pass in Spark's tasks, keys that cross work units stitched on the driver, against the
Python reference checker — on every bundled machine's mutated traces cut into units of a few dozen rows, so that most
keys cross units, the same (key, seq, check) flagged; and a layout whose units interleave a key's rows refused, not
answered."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces import duckspark
from kcoord.conformance.traces.checks import ROW_CHECKS
from kcoord.conformance.traces.duckcheck import count_name, flag_rows
from kcoord.conformance.traces.duckspark import Checked, NotClustered
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.mutations import mutate_every
from kcoord.conformance.traces.pycheck import check_paths
from kcoord.conformance.traces.writers import write_parquet
from kcoord.model.loader import bundled_machines

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEED = 7
GROUP_ROWS = 40  # rows per row group, so per unit: far fewer than a key's rows (600 rows, 16 keys a machine)
#: (name, sort keys): clustered by key (a key crosses a unit boundary or two), and in seq order across keys (every
#: key crosses most units; equal seqs, e.g. a duplicated row, next to each other)
LAYOUTS = {"by_key": [("key", "ascending"), ("seq", "ascending")],
           "by_seq": [("seq", "ascending"), ("key", "ascending")]}
#: the machines whose units are checked here one row group each: the largest spec (Transaction), the one with the
#: most row checks' violations (ClassicGroup), and a KIP-848 group (ConsumerGroup); every machine goes through the same
#: stitching end to end, against the Python checker's whole violations table, in test_duckengine
STITCHED = ["ClassicGroup", "ConsumerGroup", "Transaction"]
Hit = tuple[str, int, str]


Found = tuple[Any, ...]  # a violation's fields but id and witness: machine, key, check, name, seq, ..., message
FOUND = ("machine", "key", "check", "name", "seq", "seq_from", "seq_to", "location", "message")


@pytest.fixture(scope="module")
def mutated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Counter[Hit]],
                                                                 dict[str, Counter[Found]]]:
    """Every bundled machine's typed Parquet traces with every mutation (3 rounds of each, sorted order, as in
    test_duckdb_rows), and the Python checker's row-check violations of each: as (key, seq, count name), and in full
    (`FOUND`)."""
    machines = dict(bundled_machines())
    traces, _ = generate(machines, SEED, Options(keys=16, rows=600))
    rng = random.Random(SEED)
    traces = mutate_every(traces, machines, rng, rounds=3)
    root = tmp_path_factory.mktemp("duckspark")
    write_parquet(traces, machines, str(root))
    python: dict[str, Counter[Hit]] = {m: Counter() for m in machines}
    full: dict[str, Counter[Found]] = {m: Counter() for m in machines}
    for v in check_paths([str(root)], machines).violations:
        if v.check in ROW_CHECKS or v.check in ("invariant", "step"):
            python[v.machine][v.key, v.seq, count_name(machines[v.machine], v.check, v.name)] += 1
            full[v.machine][tuple(getattr(v, f) for f in FOUND)] += 1
    return root, python, full


def _rewrite(source: Path, out: Path, table: Any, groups: list[int] | None = None) -> list[Path]:
    """`table` written to `out` (one file), in row groups of `GROUP_ROWS` rows, or of the sizes `groups`."""
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    path = out / source.name
    with pq.ParquetWriter(path, table.schema) as writer:
        start = 0
        for size in groups or [GROUP_ROWS] * -(-table.num_rows // GROUP_ROWS):
            writer.write_table(table.slice(start, size))
            start += size
    return [path]


def _read(root: Path, machine: str) -> tuple[Path, Any]:
    import pyarrow.parquet as pq

    (source,) = sorted((root / machine).glob("*.parquet"))
    return source, pq.read_table(source)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("machine", STITCHED)
def test_stitched_tasks_flag_the_rows_and_give_the_violations_the_python_checker_gives(
        spark: Any, mutated: tuple[Path, dict[str, Counter[Hit]], dict[str, Counter[Found]]], tmp_path: Path,
        machine: str, layout: str) -> None:
    """The flagged rows, then each one's violation rows in full (as the Spark plan's `row_violations` gives them), and
    its `pos`: the row's place among its key's rows of the whole trace (not of its unit)."""
    root, python, full = mutated
    m = bundled_machines()[machine]
    source, table = _read(root, machine)
    files = _rewrite(source, tmp_path / machine, table.sort_by(LAYOUTS[layout]))
    got = duckspark.check(spark, m, files, unit_rows=GROUP_ROWS)
    assert isinstance(got, Checked), got
    want = python[machine]
    assert got.rows == table.num_rows and got.units == len(duckspark.units(files, GROUP_ROWS)) > 10
    assert got.stitched > 10, f"only {got.stitched} unit-first rows had a predecessor in another unit"
    assert got.hits == want, (f"stitched tasks alone: {sorted((got.hits - want).elements())}; "
                              f"Python alone: {sorted((want - got.hits).elements())}")
    assert sum(want.values()) > 0, "the mutations broke nothing"
    found = got.violations.to_pylist()
    mine = Counter(tuple(v[f] for f in FOUND) for v in found)
    assert mine == full[machine], (f"stitched tasks alone: {sorted((mine - full[machine]).elements())[:5]}; "
                                   f"Python alone: {sorted((full[machine] - mine).elements())[:5]}")
    seqs: dict[str, list[int]] = {}
    for k, s in sorted(zip(table.column("key").to_pylist(), table.column("seq").to_pylist(), strict=True)):
        if s >= 0:
            seqs.setdefault(k, []).append(s)
    misplaced = [(v["key"], v["seq"], v["pos"]) for v in found if (v["pos"] == -1) != (v["seq"] < 0) or (
        v["pos"] >= 0 and (v["pos"] >= len(seqs[v["key"]]) or seqs[v["key"]][v["pos"]] != v["seq"]))]
    assert not misplaced, f"(key, seq, pos) whose pos is not the row's place in its key: {misplaced[:5]}"
    assert sum(v["pos"] >= 0 and v["pos"] != v["_rn"] - 1 for v in found) > 3, "pos is hardly offset: untested"


@pytest.mark.parametrize("machine", ["Transaction", "ClassicGroup"])
def test_a_key_whose_units_interleave_is_refused_not_answered(
        spark: Any, mutated: tuple[Path, dict[str, Counter[Hit]], dict[str, Counter[Found]]], tmp_path: Path,
        machine: str) -> None:
    """Every key clustered but one, one of whose middle rows is moved to a row group (a unit) of its own at the end of
    the file: its seq lies inside the range of the key's other unit. `check` says so in one line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    root, _, _ = mutated
    m = bundled_machines()[machine]
    source, table = _read(root, machine)
    table = table.sort_by(LAYOUTS["by_key"])
    keys = table.column("key").to_pylist()
    seqs = table.column("seq").to_pylist()
    key = next(k for k in sorted(set(keys)) if len({s for kk, s in zip(keys, seqs, strict=True)
                                                    if kk == k and s >= 0}) >= 3)
    mine = sorted(s for k, s in zip(keys, seqs, strict=True) if k == key and s >= 0)
    middle = next(i for i, (k, s) in enumerate(zip(keys, seqs, strict=True)) if k == key and s == mine[len(mine) // 2])
    moved = pa.concat_tables([table.slice(0, middle), table.slice(middle + 1), table.slice(middle, 1)])
    files = _rewrite(source, tmp_path / machine, moved, groups=[table.num_rows - 1, 1])
    got = duckspark.check(spark, m, files, unit_rows=table.num_rows - 1)
    assert isinstance(got, NotClustered), got
    assert "\n" not in got.reason and "not clustered by key" in got.reason and repr(key) in got.reason, got.reason
    assert int(pc.sum(pc.equal(moved.column("key"), key)).as_py()) == len([k for k in keys if k == key])
    whole = duckspark.check(spark, m, files, unit_rows=table.num_rows)  # (one unit: nothing to stitch, answered)
    assert isinstance(whole, Checked) and whole.stitched == 0


def test_the_pass_reads_one_row_back_only() -> None:
    """What the stitching's soundness rests on: the row pass's window functions are `lag` of one row (each column
    compared with the previous row), `row_number` (the row's position: `pos`, and the first row's mark) and
    `lead(true)` (the last row's mark) — no lag further back, no running aggregate, no frame; and, before the window,
    `duckcheck.tied`'s rank of the rows that share a key and seq (the window's order among them), nothing else."""
    for name, m in sorted(bundled_machines().items()):
        sql = flag_rows(m, "t")
        calls = re.findall(r"(\w+)\(([^()]*)\) OVER w\b", sql)
        ties = re.findall(r'dense_rank\(\) OVER \(PARTITION BY _s\."key", _s\."seq" ORDER BY [^()]*\) AS _tie', sql)
        assert len(calls) + len(ties) == sql.count(" OVER ") and len(ties) == 1, name
        assert {f for f, _ in calls} == {"lag", "row_number", "lead"}, name
        assert all("," not in args for f, args in calls if f == "lag"), name
        assert [args for f, args in calls if f == "lead"] == ["true"], name


def test_boundary_rows_and_parts_written_by_the_tasks_give_the_same_answer(
        spark: Any, mutated: tuple[Path, dict[str, Counter[Hit]], dict[str, Counter[Found]]], tmp_path: Path) -> None:
    """`task_sql(bounds_to=)`, as `duckengine` runs it: each unit's boundary rows and parts written by its task and
    read from disk by the driver's DuckDB (the driver's memory stays flat), not returned: the same hits, violations,
    stitched rows and boundary rows as returned ones, on the layout where every key crosses most units."""
    import pyarrow.parquet as pq

    from kcoord.conformance.traces import duckstage

    root, python, _ = mutated
    m = bundled_machines()["Transaction"]
    source, table = _read(root, "Transaction")
    files = _rewrite(source, tmp_path / "in", table.sort_by(LAYOUTS["by_seq"]))
    spill = tmp_path / "bounds"
    spill.mkdir()
    parts = duckstage.unit_parts("t")
    held = duckspark.check(spark, m, files, unit_rows=GROUP_ROWS, sql=duckspark.task_sql(m, parts=parts))
    got = duckspark.check(spark, m, files, unit_rows=GROUP_ROWS,
                          sql=duckspark.task_sql(m, parts=parts, bounds_to=str(spill)))
    assert isinstance(held, Checked) and isinstance(got, Checked), (held, got)
    assert isinstance(got.bounds, tuple) and isinstance(got.parts, tuple) and len(got.bounds) == got.units > 10
    assert sum(pq.read_metadata(f).num_rows for f in got.bounds) == held.bounds.num_rows == got.boundary_rows
    assert sum(pq.read_metadata(f).num_rows for f in got.parts) == held.parts.num_rows
    assert got.hits == held.hits == python["Transaction"] and got.stitched == held.stitched > 10
    rows = sorted(map(str, got.violations.to_pylist()))
    assert rows == sorted(map(str, held.violations.to_pylist())) and rows
