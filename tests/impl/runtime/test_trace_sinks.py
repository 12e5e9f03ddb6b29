"""Trace sinks: the Parquet sink keeps a bounded number of rows in memory whatever the mix of machines, and writes
the typed format (v2): codes for names, declared widths, row groups sorted by key and seq."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from kcoord.impl.runtime.trace import ParquetSink, TypedSchema

COLUMNS = TypedSchema((("machine", "string"), ("key", "string"), ("seq", "int64")))


def test_parquet_sink_bounds_the_rows_it_buffers_across_machines(tmp_path: Path) -> None:
    machines = [f"M{i}" for i in range(6)]
    sink = ParquetSink(tmp_path, dict.fromkeys(machines, COLUMNS), batch_rows=100)
    written = {m: 0 for m in machines}
    most_buffered = 0
    for n in range(3_000):
        machine = machines[0] if n % 2 else machines[1 + n % 5]  # one busy machine, five slow ones
        sink.write(machine, {"machine": machine, "key": f"k{n % 7}", "seq": written[machine]})
        written[machine] += 1
        most_buffered = max(most_buffered, sum(len(b) for b in sink._buffers.values()))
    assert most_buffered < 100
    sink.close()
    for machine in machines:
        (part,) = (tmp_path / machine).glob("*.parquet")
        table = pq.read_table(part)
        assert sorted(table.column("seq").to_pylist()) == list(range(written[machine]))  # every row
        assert table.column("machine").to_pylist() == [machine] * written[machine]


def test_a_flush_seals_the_parquet_files_so_a_crash_keeps_what_was_flushed(tmp_path: Path) -> None:
    """A Parquet file is readable only once its footer is written: each flush closes the files written so far
    (fsynced) and later rows go to new part files, so a process killed after a flush leaves complete files holding
    every row flushed, like the JSON Lines sink (a crash loses at most the rows since the last flush)."""
    sink = ParquetSink(tmp_path, {"M": COLUMNS}, batch_rows=100)
    for n in range(250):
        sink.write("M", {"machine": "M", "key": "k", "seq": n})
    sink.flush()
    for n in range(250, 260):
        sink.write("M", {"machine": "M", "key": "k", "seq": n})
    sink.flush()
    sink.flush()  # nothing new: no empty file
    sink.write("M", {"machine": "M", "key": "k", "seq": 260})  # never flushed: what a crash now would lose
    # (no close: the process "dies" here) — every flushed row is in a readable, complete file
    parts = sorted((tmp_path / "M").glob("*.parquet"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    assert [p.name for p in parts] == ["part-0-0.parquet", "part-0-1.parquet"]
    rows = [s for p in parts for s in pq.read_table(p).column("seq").to_pylist()]
    assert rows == list(range(260))
    sink.close()
    parts = sorted((tmp_path / "M").glob("*.parquet"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    assert [s for p in parts for s in pq.read_table(p).column("seq").to_pylist()] == list(range(261))


def test_the_typed_format_codes_names_sorts_each_row_group_and_says_so_in_its_footer(tmp_path: Path) -> None:
    """A typed file: names as their codes (the table's TRACE_CODES), integers at their declared width, sets as
    sorted lists, each row group sorted by key and seq, and a footer naming the format, the machine and the codes;
    a name without a code is refused (a writer's bug must not reach the file)."""
    import json

    import pytest

    from kcoord.impl.statemachine import MachineTable

    table = MachineTable.load("transaction")
    schema = TypedSchema.of_table(table)
    sink = ParquetSink(tmp_path, {"Transaction": schema}, batch_rows=3, row_group_rows=4)
    row = {"key": "t", "seq": 0, "ts_ms": 5, "node": 0, "coordinator_epoch": 0, "kind": "transition",
           "event": "AddPartitions", "row": 3, "error": "NONE", "from_state": "Empty", "to_state": "Ongoing",
           "pending": False, "transactional_id": "t", "producer_epoch": 7, "partitions": ["b-0", "a-1"]}
    for key, seq in (("t2", 1), ("t1", 2), ("t2", 0), ("t1", 0), ("t1", 1)):
        sink.write("Transaction", row | {"key": key, "seq": seq})
    sink.close()
    (part,) = (tmp_path / "Transaction").glob("*.parquet")
    f = pq.ParquetFile(part)
    meta = f.schema_arrow.metadata
    assert meta[b"kcoord.format"] == b"2" and meta[b"kcoord.machine"] == b"Transaction"
    codes = json.loads(meta[b"kcoord.codes"])
    assert codes["to_state"] == sorted(codes["to_state"]) and "Ongoing" in codes["to_state"]
    assert "machine" not in f.schema_arrow.names
    assert str(f.schema_arrow.field("producer_epoch").type) == "int16"
    assert str(f.schema_arrow.field("to_state").type) == "int8"
    groups = [f.read_row_group(i) for i in range(f.num_row_groups)]
    assert [len(g) for g in groups] == [5]
    got = groups[0].select(["key", "seq", "to_state", "partitions"]).to_pylist()
    assert [(r["key"], r["seq"]) for r in got] == [("t1", 0), ("t1", 1), ("t1", 2), ("t2", 0), ("t2", 1)]
    assert {r["to_state"] for r in got} == {codes["to_state"].index("Ongoing")}
    assert got[0]["partitions"] == ["a-1", "b-0"]
    bad = ParquetSink(tmp_path / "bad", {"Transaction": schema}, batch_rows=1)
    with pytest.raises(ValueError, match="'Nowhere' has no code"):
        bad.write("Transaction", row | {"to_state": "Nowhere"})
