"""`duckcheck`'s row pass in DuckDB against the Python reference checker: on every bundled machine's generated traces
with every mutation, the same violations of every row check — the same count per check, and the same rows
(key, seq) flagged by each — and, over units of whole keys, counts that add up to the whole's."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from kcoord.conformance.traces.checks import ROW_CHECKS
from kcoord.conformance.traces.duckcheck import count_name, count_names, flag_rows, row_hits, row_pass
from kcoord.conformance.traces.generate import Options, generate
from kcoord.conformance.traces.mutations import mutate_every
from kcoord.conformance.traces.pycheck import check_paths
from kcoord.conformance.traces.writers import write_parquet
from kcoord.model import sqltree as q
from kcoord.model.loader import bundled_machines

SEEDS = (7, 1)
MACHINES = sorted(bundled_machines())
Hit = tuple[str, int, str]  # (key, seq, count name)


@pytest.fixture(scope="module")
def mutated(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, dict[str, Counter[Hit]]]]:
    """Per seed: the typed Parquet traces of every bundled machine with every mutation (3 rounds of each, in sorted
    order), and the Python checker's row-check violations of each machine as (key, seq, count name)."""
    machines = dict(bundled_machines())
    out = {}
    for seed in SEEDS:
        traces, _ = generate(machines, seed, Options(keys=16, rows=600))
        rng = random.Random(seed)
        traces = mutate_every(traces, machines, rng, rounds=3)
        root = tmp_path_factory.mktemp(f"duckdb-rows-{seed}")
        write_parquet(traces, machines, str(root))
        python: dict[str, Counter[Hit]] = {m: Counter() for m in machines}
        for v in check_paths([str(root)], machines).violations:
            if v.check in ROW_CHECKS or v.check in ("invariant", "step"):
                python[v.machine][v.key, v.seq, count_name(machines[v.machine], v.check, v.name)] += 1
        out[seed] = (root, python)
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("machine", MACHINES)
def test_duckdb_row_pass_flags_the_rows_the_python_checker_flags(
        mutated: dict[int, tuple[Path, dict[str, Counter[Hit]]]], machine: str, seed: int) -> None:
    m = bundled_machines()[machine]
    root, python = mutated[seed]
    source = f"read_parquet({q.DUCKDB.string(str(root / machine / '*.parquet'))})"
    con = duckdb.connect(config={"threads": 1})
    try:
        cur = con.execute(row_pass(m, source))
        counts = dict(zip((d[0] for d in cur.description), cur.fetchone() or (), strict=True))
        hits = Counter((str(k), int(s), str(n)) for k, s, n in con.execute(row_hits(m, source)).fetchall())
    finally:
        con.close()
    want = python[machine]
    per_check = Counter(name for _, _, name in want.elements())
    assert {n: counts[n] for n in count_names(m)} == {n: per_check[n] for n in count_names(m)}
    assert set(per_check) <= set(count_names(m)), "a row check the row pass does not count"
    assert counts["rows_checked"] == _rows(root / machine)
    assert hits == want, (f"DuckDB alone: {sorted((hits - want).elements())}; "
                          f"Python alone: {sorted((want - hits).elements())}")
    assert sum(want.values()) > 0, "the mutations broke nothing"


def _rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(f).num_rows for f in folder.glob("*.parquet"))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_mutations_reach_every_row_check(mutated: dict[int, tuple[Path, dict[str, Counter[Hit]]]],
                                             seed: int) -> None:
    """Every row check has violations to compare (one of the machines' rows flagged by it), so none is compared
    only on zero."""
    _, python = mutated[seed]
    reached = {name.split("_")[0] if name.startswith(("invariant_", "step_")) else name
               for hits in python.values() for _, _, name in hits}
    assert reached == {"invariant", "step", *(c for c in ROW_CHECKS if c not in ("invariant", "step"))}


@pytest.mark.parametrize("machine", MACHINES)
def test_the_row_pass_over_units_of_whole_keys_sums_to_the_whole(
        mutated: dict[int, tuple[Path, dict[str, Counter[Hit]]]], machine: str) -> None:
    """The row pass reads no row of another key: over three units of whole keys (as the Spark-scheduled design
    checks one unit per task), the counts add up to the counts over all the rows."""
    m = bundled_machines()[machine]
    root, _ = mutated[SEEDS[0]]
    rows = f"read_parquet({q.DUCKDB.string(str(root / machine / '*.parquet'))})"
    con = duckdb.connect(config={"threads": 1})
    try:
        def counts(source: str) -> Counter[str]:
            cur = con.execute(row_pass(m, source))
            return Counter(dict(zip((d[0] for d in cur.description), cur.fetchone() or (), strict=True)))

        units = [counts(f"(SELECT * FROM {rows} WHERE hash(key) % 3 = {i})") for i in range(3)]
        whole = counts(rows)
    finally:
        con.close()
    assert all(u["rows_checked"] > 0 for u in units), units
    assert sum(units, Counter()) == whole


def test_rows_of_an_equal_seq_are_ordered_nulls_first(tmp_path: Path) -> None:
    """Rows of one key with an equal seq (only in a broken trace) are ordered by every typed column after seq, nulls
    first, as the Python checker (`pyrowcheck.orderable`) and Spark's ascending order do: DuckDB's own default puts
    nulls last. Two copies of one row, one with an argument the runtime never computed (null), come null first."""
    machines = {"Transaction": bundled_machines()["Transaction"]}
    m = machines["Transaction"]
    traces, _ = generate(machines, 3, Options(keys=1, rows=20))
    rows = traces["Transaction"]
    copy = next(r for r in rows if r["arg_epoch"] is not None)
    rows.append({**copy, "arg_epoch": None})
    write_parquet(traces, machines, str(tmp_path))
    source = f"read_parquet({q.DUCKDB.string(str(tmp_path / 'Transaction' / '*.parquet'))})"
    con = duckdb.connect(config={"threads": 1})
    try:
        got = con.execute(f"SELECT arg_epoch IS NULL FROM ({flag_rows(m, source)}) WHERE seq = {copy['seq']} "
                          "ORDER BY _rn").fetchall()
    finally:
        con.close()
    assert got == [(True,), (False,)]


@pytest.mark.parametrize("machine", MACHINES)
def test_rows_of_an_equal_seq_in_any_physical_order_are_judged_in_the_checkers_order(
        tmp_path: Path, machine: str) -> None:
    """The pass orders a key's rows by seq and then `duckcheck.tied`'s rank, not by every typed column: the same
    order. Twelve keys get a copy of one of their rows with the same seq, an earlier or later ts_ms and another
    to_state (so which of the two comes last decides the next row's pre-state), the file's rows shuffled: the flagged
    rows are the Python checker's, which orders equal seqs by every typed column."""
    machines = dict(bundled_machines())
    m = machines[machine]
    traces, _ = generate({machine: m}, 5, Options(keys=24, rows=600))
    rows = traces[machine]
    rng = random.Random(5)
    states = sorted({r["to_state"] for r in rows})
    keys = sorted({r["key"] for r in rows})
    for key in [k for k in keys if sum(r["key"] == k and r["seq"] >= 0 for r in rows) >= 2][:12]:
        mine = [r for r in rows if r["key"] == key and r["seq"] >= 0]
        picked = rng.choice(mine[:-1])
        other = [s for s in states if s != picked["to_state"]]
        rows.append({**picked, "ts_ms": picked["ts_ms"] + rng.choice((-1, 1)), "to_state": rng.choice(other)})
    rng.shuffle(rows)
    write_parquet(traces, {machine: m}, str(tmp_path))
    want: Counter[Hit] = Counter()
    for v in check_paths([str(tmp_path)], {machine: m}).violations:
        if v.check in ROW_CHECKS or v.check in ("invariant", "step"):
            want[v.key, v.seq, count_name(m, v.check, v.name)] += 1
    source = f"read_parquet({q.DUCKDB.string(str(tmp_path / machine / '*.parquet'))})"
    con = duckdb.connect(config={"threads": 1})
    try:
        hits = Counter((str(k), int(s), str(n)) for k, s, n in con.execute(row_hits(m, source)).fetchall())
    finally:
        con.close()
    assert hits == want, (f"DuckDB alone: {sorted((hits - want).elements())}; "
                          f"Python alone: {sorted((want - hits).elements())}")
    assert len({k for k, _, _ in want}) >= 10, "the copies broke too few keys"
