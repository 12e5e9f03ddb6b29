"""Storage-layer throughput: batch encode/decode of ~100-byte records, a 1M-record log load, and the coordinator
record values (keys and values of `__transaction_state` and `__consumer_offsets`, through the public API of
`kcoord.impl.storage` and the transaction coordinator's `RecordCodec`, so the same script measures any codec
behind them).

Run: ``.venv/bin/python benchmarks/bench_storage.py [--records N] [--batch-size B ...] [--json PATH]``;
``--records-only`` runs only the record-value part.
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
from typing import Any

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


def _record_cases() -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """(name, encode once, decode once) per record kind, on realistic values."""
    import uuid

    from kcoord.impl.storage import group_log_schema as g
    from kcoord.impl.storage import txn_log_schema as x
    from kcoord.impl.txn.records import RecordCodec

    codec = RecordCodec(1)
    instance = {"transactional_id": "txn-17", "state": "Ongoing", "producer_id": 4242, "previous_producer_id": 4242,
                "next_producer_id": -1, "producer_epoch": 7, "last_producer_epoch": 6, "txn_timeout_ms": 60_000,
                "partitions": frozenset({"orders-0", "orders-3", "payments-1", "__consumer_offsets-12"}),
                "txn_start_timestamp_ms": 1_700_000_000_000, "txn_last_update_timestamp_ms": 1_700_000_000_500,
                "client_txn_version": 2, "has_failed_epoch_fence": False}
    txn_bytes = codec.encode(instance)
    txn_value = x.decode_value(txn_bytes)
    assert txn_value is not None
    offset = g.OffsetCommitValue(123_456, "", 1_700_000_000_000, 7)
    offset_key = g.OffsetCommitKey("group-17", "orders", 3)
    members = tuple(g.MemberMetadata(f"consumer-{i}-{uuid.UUID(int=i)}", f"consumer-{i}", "/10.0.0.1", 45_000,
                                     bytes(40), bytes(60), None, 300_000) for i in range(10))
    group = g.GroupMetadataValue("consumer", 12, "range", members[0].member_id, members, 1_700_000_000_000)
    topic = uuid.UUID(int=99)
    current = g.ConsumerGroupCurrentMemberAssignmentValue(
        12, 11, 0, (g.TopicPartitions(topic, (0, 1, 2, 3)),), ())
    member = g.ConsumerGroupMemberMetadataValue(None, None, "consumer-1", "/10.0.0.1", ("orders", "payments"), None,
                                                "uniform", 300_000)
    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("txn instance (coordinator hot path)", lambda: codec.encode(instance),
         lambda: codec.decode("txn-17", txn_bytes)),
        ("TransactionLogValue v1", lambda: x.encode_value(txn_value, 1), lambda: x.decode_value(txn_bytes)),
        ("TransactionLogKey", lambda: x.encode_key(x.TransactionLogKey("txn-17")),
         lambda: x.decode_key(x.encode_key(x.TransactionLogKey("txn-17")))),
    ]
    for name, key, value in (("OffsetCommitKey", offset_key, None), ("OffsetCommitValue v3", None, offset),
                             ("GroupMetadataValue v3, 10 members", None, group),
                             ("ConsumerGroupCurrentMemberAssignmentValue", None, current),
                             ("ConsumerGroupMemberMetadataValue", None, member)):
        if key is not None:
            kb = g.encode_key(key)
            cases.append((name, lambda k=key: g.encode_key(k), lambda b=kb: g.decode_key(b)))
        else:
            vb = g.encode_value(value)
            rtype = g.record_type(g.encode_key(_key_for(g, value)))
            cases.append((name, lambda v=value: g.encode_value(v), lambda b=vb, r=rtype: g.decode_value(r, b)))
    return cases


def _key_for(g: Any, value: object) -> Any:
    if isinstance(value, g.OffsetCommitValue):
        return g.OffsetCommitKey("g", "t", 0)
    if isinstance(value, g.GroupMetadataValue):
        return g.GroupMetadataKey("g")
    if isinstance(value, g.ConsumerGroupCurrentMemberAssignmentValue):
        return g.ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    return g.ConsumerGroupMemberMetadataKey("g", "m")


def bench_records(n: int, repeat: int) -> list[dict[str, Any]]:
    """Encodes and decodes per CPU second of each record kind (best of `repeat` runs of `n` calls)."""
    out = []
    for name, encode, decode in _record_cases():
        def run_encode(fn: Callable[[], object] = encode) -> None:
            for _ in range(n):
                fn()

        def run_decode(fn: Callable[[], object] = decode) -> None:
            for _ in range(n):
                fn()

        out.append({"record": name, "encode_per_s": n / _best(run_encode, repeat),
                    "decode_per_s": n / _best(run_decode, repeat)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch-size", type=int, action="append")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--records-only", action="store_true", help="only the coordinator record values")
    parser.add_argument("--record-calls", type=int, default=50_000)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"seed={args.seed}")
    results: dict[str, list[dict[str, Any]]] = {"codec": [], "log_load": [], "records": []}
    for row in bench_records(args.record_calls, args.repeat):
        results["records"].append(row)
        print(f"record  {row['record']:<45} encode {row['encode_per_s']:>11,.0f}/s  decode "
              f"{row['decode_per_s']:>11,.0f}/s")
    if args.records_only:
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
        return
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
