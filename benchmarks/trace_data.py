"""The traces the trace-checking benchmarks check: generated Transaction traces tiled to any size, a simulator run
(and copies of one, tiled the same way: `tile_sim`), and the mutated traces DuckDB's peer is validated on (moved out
of `bench_traces`, which measures them).

Tiling: random valid traces of the Transaction machine are generated once in Python, then copied with pyarrow to each
size; every copy renames its keys and moves its producer ids (values >= 0 of the columns that hold producer ids) to a
range of its own, so copies are independent traces and the whole stays valid (`validate_tiling` checks a small tiled
sample with the reference checker). Imports only the kcoord packages and `benchmarks.duckdb_peer`.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

MACHINE = "Transaction"
ID_COLUMNS = ("producer_id", "previous_producer_id", "next_producer_id", "arg_new_producer_id", "arg_pid",
              "arg_expected_producer_id")
ID_STRIDE = 10**12
#: the columns a copy of a simulator run renames, besides `key`: the string key fields the trace properties and the
#: machines' identities are per (`exclusive ... per group_id`; Transaction's, StreamsTask's ids)
RENAMED = ("transactional_id", "group_id", "task_id")


def make_base(folder: Path, rows: int, seed: int) -> Path:
    from kcoord.conformance.traces.generate import Options, generate
    from kcoord.conformance.traces.writers import write_parquet
    from kcoord.model.loader import bundled_machines

    machines = {MACHINE: bundled_machines()[MACHINE]}
    traces, _ = generate(machines, seed, Options(keys=max(10, rows // 200), rows=rows))
    write_parquet(traces, machines, str(folder))
    return folder / MACHINE / "part-0.parquet"


def tile(base: Path, root: Path, events: int, rows_per_file: int = 1_000_000) -> Path:
    """`events` rows made of copies of `base` with renamed keys and disjoint producer ids, streamed into files of
    about `rows_per_file` rows (one row group per copy): only one copy is in memory at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(base)
    folder = root / MACHINE
    folder.mkdir(parents=True, exist_ok=True)
    copies, rest = divmod(events, table.num_rows)
    writer, in_file, files = None, 0, 0
    try:
        for t in range(copies + (1 if rest else 0)):
            part = table if t < copies else table.slice(0, rest)
            suffix = pa.scalar(f"#{t}")
            cols = {}
            for name in part.column_names:
                col = part[name]
                if name in ("key", "transactional_id"):
                    col = pc.binary_join_element_wise(col, suffix, "")
                elif name in ID_COLUMNS:
                    col = pc.if_else(pc.greater_equal(col, 0), pc.add(col, t * ID_STRIDE), col)
                cols[name] = col
            if writer is None or in_file >= rows_per_file:
                if writer is not None:
                    writer.close()
                writer = pq.ParquetWriter(folder / f"part-{files:05d}.parquet", table.schema)
                files, in_file = files + 1, 0
            writer.write_table(pa.table(cols, schema=table.schema))
            in_file += part.num_rows
    finally:
        if writer is not None:
            writer.close()
    return root


def make_sim(folder: Path, events: int, seed: int) -> Path:
    """`events` rows of one simulation (every client kind and fault, the default mix), as Parquet under `folder`."""
    from kcoord.impl.sim import SimConfig, default_cluster_config, simulate

    config = SimConfig(seed=seed, events=events)
    data = Path(tempfile.mkdtemp(prefix="bench-sim-logs-"))
    try:
        simulate(config, folder, data, fmt="parquet", cluster_config=default_cluster_config(config))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    return folder


def tile_sim(base: Path, root: Path, copies: int) -> Path:
    """`copies` copies of the simulator run under `base` (every machine's folder), written under `root`: as `tile`,
    each copy renames its keys and its `RENAMED` ids and moves its producer ids to a range of its own (so the
    properties across machines — `before ... on producer_id, producer_epoch` — and across keys stay within a copy);
    each copy's files are the base's, one after the other, so a key spans the files it spanned in the base."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for machine in sorted(d for d in base.iterdir() if d.is_dir()):
        (root / machine.name).mkdir(parents=True, exist_ok=True)
        for file in sorted(machine.glob("*.parquet")):
            table = pq.read_table(file)
            for t in range(copies):
                suffix = pa.scalar(f"#{t}")
                cols = {}
                for name in table.column_names:
                    col = table[name]
                    if name == "key" or name in RENAMED:
                        col = pc.binary_join_element_wise(col, suffix, "")
                    elif name in ID_COLUMNS:
                        col = pc.if_else(pc.greater_equal(col, 0), pc.add(col, t * ID_STRIDE), col)
                    cols[name] = col
                pq.write_table(pa.table(cols, schema=table.schema), root / machine.name / f"c{t:04d}-{file.name}")
    return root


def sim_rows(root: Path) -> int:
    return sum(pq_rows(f) for f in root.glob("*/*.parquet"))


def validate_sim_tiling(base: Path, scratch: Path, copies: int = 3) -> None:
    """`copies` copies of a simulator run are as clean as the run: the reference checker finds `copies` times its
    violations (each copy's own, none between copies)."""
    from kcoord.conformance.traces.pycheck import check_paths
    from kcoord.model.loader import bundled_machines

    machines = bundled_machines()
    once = len(check_paths([str(base)], machines).violations)
    tiled = check_paths([str(tile_sim(base, scratch / "sim-sample", copies))], machines)
    assert len(tiled.violations) == copies * once, \
        f"{copies} copies have {len(tiled.violations)} violations, the run {once}: {tiled.violations[:3]}"


def validate_tiling(base: Path, scratch: Path) -> None:
    from kcoord.conformance.traces.pycheck import check_paths
    from kcoord.model.loader import bundled_machines

    sample = tile(base, scratch / "sample", pq_rows(base) * 2)
    result = check_paths([str(sample)], {MACHINE: bundled_machines()[MACHINE]})
    assert not result.violations, f"tiled traces are not clean: {result.violations[:3]}"


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.read_metadata(path).num_rows)



def mutated_traces(scratch: Path, seed: int) -> tuple[Path, dict[str, int]]:
    """Transaction traces with every mutation (written under `scratch`/peer) and the Python reference checker's
    counts of the illegal transitions, the discontinuities and the first invariant's violations in them."""
    import random

    from benchmarks.duckdb_peer import NAMED_CHECKS
    from kcoord.conformance.traces.generate import Options, generate
    from kcoord.conformance.traces.mutations import mutate_every
    from kcoord.conformance.traces.pycheck import check_paths
    from kcoord.conformance.traces.writers import write_parquet
    from kcoord.model.loader import bundled_machines

    machine = bundled_machines()[MACHINE]
    machines = {MACHINE: machine}
    traces, _ = generate(machines, seed, Options(keys=40, rows=3_000))
    rng = random.Random(seed)
    traces = mutate_every(traces, machines, rng, rounds=5)
    root = scratch / "peer"
    write_parquet(traces, machines, str(root))
    first = machine.invariants[0].name
    expected = {c: 0 for c in NAMED_CHECKS}
    for v in check_paths([str(root)], machines).violations:
        if v.check in ("illegal_transition", "discontinuity") or (v.check == "invariant" and v.name == first):
            expected[v.check] += 1
    return root, expected


def validate_peer(scratch: Path, seed: int) -> None:
    """DuckDB's three named checks count what the Python reference checker finds, on traces with every mutation."""
    from benchmarks.duckdb_peer import count
    from kcoord.model.loader import bundled_machines

    root, expected = mutated_traces(scratch, seed)
    got = count(bundled_machines()[MACHINE], str(root / MACHINE / "*.parquet"))
    assert got == expected and all(expected.values()), f"DuckDB counts {got}, the Python checker {expected}"
