"""Trace sinks: the Parquet sink keeps a bounded number of rows in memory whatever the mix of machines."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from kcoord.impl.runtime.trace import ParquetSink

COLUMNS = (("machine", "string"), ("key", "string"), ("seq", "int64"))


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
        assert table.column("seq").to_pylist() == list(range(written[machine]))  # every row, in order
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
