"""`duckvalid`'s validation in DuckDB against the Python reference checker's quarantine: on every bundled machine's
generated rows, written as v1 Parquet with one row broken per validation rule of the machine (`readers.rules`: a
null required column, an unknown name, a null set element, a name that is no member, an integer out of its range,
a wrong machine), and as typed Parquet with codes out of range, nulls and integers out of range, plus a file whose
schema does not fit and one that cannot be read: the same quarantined rows (file, reason) and the same rows kept."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kcoord.conformance.traces.duckvalid import layout, quarantined, reasoned
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.pycheck import check_paths
from kcoord.conformance.traces.readers import INT_BOUNDS, Rule, rules
from kcoord.conformance.traces.writers import write_parquet
from kcoord.model import ir
from kcoord.model.loader import bundled_machines

Row = dict[str, Any]


def broken(rule: Rule, rows: list[Row], rng: random.Random) -> Row | None:
    """A row of `rows` that breaks `rule` (of an event the rule applies to), or None when no value can (an int64
    column's range is the file's own)."""
    fits = [r for r in rows if not rule.events or r["event"] in rule.events]
    if not fits:
        return None
    r = dict(rng.choice(fits))
    if rule.kind == "missing":
        return r | {rule.column: None}
    if rule.kind in ("not_in", "member"):
        return r | {rule.column: frozenset({"Nope"}) if rule.is_set else "Nope"}
    if rule.kind == "null_element":
        return r | {rule.column: None}  # (set to a list with a null below: the row writer takes sets)
    low, high = INT_BOUNDS["int64"]
    bad = rule.hi + 1 if rule.hi < high else rule.lo - 1 if rule.lo > low else None
    if bad is None:
        return None
    return r | {rule.column: frozenset({str(bad)}) if rule.is_set else bad}


def write_broken_v1(m: ir.Machine, rows: list[Row], folder: Path, rng: random.Random) -> int:
    """`rows` and one broken row per rule of `m` as v1 Parquet in `folder`; how many rows were broken."""
    bad: list[tuple[Rule, Row]] = [(rule, b) for rule in rules(m) if (b := broken(rule, rows, rng)) is not None]
    bad.append((Rule("missing", "machine"), dict(rows[0]) | {"machine": "Other"}))
    write_parquet({m.name: [*rows, *(b for _, b in bad)]}, {m.name: m}, str(folder), typed=False)
    path = folder / m.name / "part-0.parquet"
    table = pq.read_table(path)
    for i, (rule, _) in enumerate(bad):  # null elements: a list holding a null
        if rule.kind == "null_element":
            at = len(rows) + i
            values = table.column(rule.column).to_pylist()
            values[at] = ["x", None] if i % 2 else [None]
            table = table.set_column(table.schema.get_field_index(rule.column), rule.column,
                                     pa.array(values, table.schema.field(rule.column).type))
    pq.write_table(table, path)
    return len(bad)


def write_broken_typed(m: ir.Machine, rows: list[Row], folder: Path) -> None:
    """`rows` as typed Parquet, then codes past the names, a null required column and a seq of -2 on a few rows."""
    write_parquet({m.name: rows}, {m.name: m}, str(folder))
    path = folder / m.name / "part-0.parquet"
    table = pq.read_table(path)
    n = table.num_rows
    for name, at, value in (("to_state", 1, 99), ("event", 2, -3), ("seq", 3, -2), ("ts_ms", 4, None),
                            ("kind", 5, 4)):
        column = table.column(name)
        mask = pa.array([i == at for i in range(n)])
        table = table.set_column(table.schema.get_field_index(name), name,
                                 pc.if_else(mask, pa.scalar(value, column.type), column))
    pq.write_table(table.replace_schema_metadata(table.schema.metadata), path)


def duckdb_quarantine(machines: dict[str, ir.Machine], root: Path) -> tuple[Counter[tuple[str, str]], int]:
    """DuckDB's quarantined rows (file name, reason) of every Parquet file under `root`, and the rows kept."""
    con = duckdb.connect(config={"threads": 1})
    out: Counter[tuple[str, str]] = Counter()
    kept = 0
    try:
        for name, m in machines.items():
            for path in sorted((root / name).rglob("*.parquet")):
                found = con.execute(quarantined(m, str(path))).fetchall()
                out.update((Path(source).name, reason) for _, source, reason in found)
                how = layout(m, str(path))
                if how.problem is None:
                    (n,) = con.execute(f"SELECT count(*) FROM ({reasoned(m, str(path), how)}) r "
                                       "WHERE _reason IS NULL").fetchone() or (0,)
                    kept += int(n)
    finally:
        con.close()
    return out, kept


def python_quarantine(machines: dict[str, ir.Machine], root: Path, out: Path) -> tuple[Counter[tuple[str, str]], int]:
    import json

    result = check_paths([str(root)], machines, str(out))
    lines = (out / "quarantine" / "part-python.jsonl").read_text().splitlines()
    return Counter((Path(r["source"]).name, r["reason"]) for r in map(json.loads, lines)), sum(
        result.rows_read.values())


@pytest.mark.parametrize("machine", sorted(bundled_machines()))
def test_duckdb_quarantines_the_rows_the_python_checker_quarantines(machine: str, tmp_path: Path) -> None:
    m = bundled_machines()[machine]
    machines = {machine: m}
    rows = generate(machines, 5, Options(keys=4, rows=60))[0][machine]
    v1, typed = tmp_path / "v1", tmp_path / "typed"
    n_bad = write_broken_v1(m, rows, v1, random.Random(5))
    write_broken_typed(m, rows, typed)
    pq.write_table(pa.table({"seq": pa.array(["x", "y"])}), typed / machine / "wrong.parquet")
    (typed / machine / "torn.parquet").write_bytes(b"PAR1 not parquet")
    for root in (v1, typed):
        python, python_kept = python_quarantine(machines, root, root.parent / f"out-{root.name}")
        duck, duck_kept = duckdb_quarantine(machines, root)
        assert duck == python, (f"DuckDB alone: {sorted((duck - python).elements())}; "
                                f"Python alone: {sorted((python - duck).elements())}")
        assert duck_kept == python_kept > 0
    v1_reasons = Counter(reason.split(":")[0] for (_, reason) in python_quarantine(
        machines, v1, tmp_path / "again")[0].elements())
    assert sum(v1_reasons.values()) == n_bad, v1_reasons
    sets = {"null_element"} if any(r.kind == "null_element" for r in rules(m)) else set()
    assert {"missing", "unknown", "wrong_machine", "out_of_range", *sets} <= set(v1_reasons), v1_reasons
    assert {"unknown", "missing", "out_of_range", "bad_file_schema", "unreadable_file"} <= {
        reason.split(":")[0] for _, reason in python_quarantine(machines, typed, tmp_path / "again-typed")[0]}
