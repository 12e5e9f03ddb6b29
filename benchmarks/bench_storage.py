"""Storage-layer throughput: batch encode/decode of ~100-byte records and a 1M-record log load.

Run: ``.venv/bin/python benchmarks/bench_storage.py [--records N] [--batch-size B ...] [--json PATH]``.
Times are CPU seconds (``time.process_time``, best of ``--repeat``), so other load on the machine matters less.
A "log load" is what a coordinator failover does: ``PartitionLog.open(on_batch=replay)`` validates every batch and
hands each surviving one to ``replay``, one pass; "open+read" is the two-pass alternative (open, then ``read()``).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kcoord.impl.storage.batch import RecordBatch, encode_new_batch
from kcoord.impl.storage.batch_decoder import decode_batches
from kcoord.impl.storage.log import Durability, PartitionLog


def _entries(n: int, rng: random.Random) -> list[tuple[bytes, bytes]]:
    """~100-byte records: a 20-byte key and an 80-byte value, like a small offset commit."""
    return [(rng.randbytes(20), rng.randbytes(80)) for _ in range(n)]


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def bench_codec(batch_size: int, total: int, repeat: int, rng: random.Random) -> dict[str, float]:
    entries = _entries(batch_size, rng)
    n_batches = max(1, total // batch_size)
    buf = b"".join(encode_new_batch(entries, base_offset=i * batch_size, timestamp_ms=i) for i in range(n_batches))

    def encode() -> None:
        for i in range(n_batches):
            encode_new_batch(entries, base_offset=i * batch_size, timestamp_ms=i)

    def decode() -> None:
        count = 0
        for batch in decode_batches(buf):
            count += len(batch.records)
        assert count == n_batches * batch_size

    records = n_batches * batch_size
    return {"batch_size": batch_size, "encode_records_per_s": records / _best(encode, repeat),
            "decode_records_per_s": records / _best(decode, repeat)}


def bench_log_load(records: int, batch_size: int, repeat: int, rng: random.Random) -> dict[str, float]:
    entries = _entries(batch_size, rng)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "__consumer_offsets-0"
        write_start = time.perf_counter()
        with PartitionLog.open(path, durability=Durability.group(max_delay_ms=1000, max_bytes=8 << 20)) as log:
            for i in range(records // batch_size):
                log.append(entries, timestamp_ms=i)
                log.flush_if_due(0)
        write_s = time.perf_counter() - write_start

        expected = records // batch_size * batch_size

        def load() -> None:
            count = 0

            def replay(batch: RecordBatch) -> None:
                nonlocal count
                count += len(batch.records)

            with PartitionLog.open(path, on_batch=replay):
                pass
            assert count == expected

        def open_then_read() -> None:
            with PartitionLog.open(path) as log:
                assert sum(len(batch.records) for batch in log.read()) == expected

        load_s = _best(load, repeat)
        two_pass_s = _best(open_then_read, repeat)
    return {"records": records, "batch_size": batch_size, "load_records_per_s": records / load_s,
            "load_seconds": load_s, "open_then_read_records_per_s": records / two_pass_s,
            "write_records_per_s": records / write_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, action="append")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"seed={args.seed}")
    results: dict[str, list[dict[str, float]]] = {"codec": [], "log_load": []}
    for batch_size in args.batch_size or [1, 10, 100]:
        codec = bench_codec(batch_size, 200_000, args.repeat, rng)
        results["codec"].append(codec)
        print(f"codec   batch={batch_size:4d}  encode {codec['encode_records_per_s']:>11,.0f} rec/s  "
              f"decode {codec['decode_records_per_s']:>11,.0f} rec/s")
        load = bench_log_load(args.records, batch_size, args.repeat, rng)
        results["log_load"].append(load)
        print(f"log     batch={batch_size:4d}  load {load['records']:,} records: {load['load_seconds']:.2f} s = "
              f"{load['load_records_per_s']:>9,.0f} rec/s; "
              f"open+read {load['open_then_read_records_per_s']:>9,.0f} rec/s; "
              f"write {load['write_records_per_s']:,.0f} rec/s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
