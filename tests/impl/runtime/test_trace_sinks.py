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
