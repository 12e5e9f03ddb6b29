"""Cross-check with kafka-python's own record code: what we append (data and control batches) decodes with its
`MemoryRecords`/`DefaultRecordBatch` (CRC, flags, offsets, records), and batches built by its producer's
`DefaultRecordBatchBuilder` (idempotent and transactional) go through our Produce path."""

from __future__ import annotations

from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kcoord.impl.partition import IsolationLevel

from .helpers import TOPIC, TP, Env, batch

PID = 77


def kafka_python_batch(producer_id: int, epoch: int, seq: int, entries: list[tuple[bytes | None, bytes]], *,
                       transactional: bool = False, ts_ms: int = 1_000) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=epoch, base_sequence=seq,
                                        batch_size=1 << 20)
    for i, (key, value) in enumerate(entries):
        builder.append(i, timestamp=ts_ms + i, key=key, value=value, headers=[("n", str(i).encode())])
    return bytes(builder.build())


def decoded(data: bytes) -> list[dict[str, Any]]:
    """Every batch of `data` as kafka-python reads it."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        b = records.next_batch()
        assert b.validate_crc()
        out.append(dict(base_offset=b.base_offset, producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                        base_sequence=b.base_sequence, transactional=b.is_transactional, control=b.is_control_batch,
                        records=[(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in b]))
    return out


def test_kafka_python_producer_batches_are_accepted(env: Env) -> None:
    first = kafka_python_batch(PID, 0, 0, [(b"a", b"1"), (None, b"2")])
    assert env.produce(first).error == "NONE"
    assert env.produce(kafka_python_batch(PID, 0, 2, [(b"c", b"3")])).base_offset == 2
    again = env.produce(first)  # a retry of its first batch: a cached duplicate
    assert (again.error, again.base_offset) == ("NONE", 0)
    assert env.produce(kafka_python_batch(PID, 0, 5, [(b"d", b"4")])).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    env.verifier.add(PID + 1)
    txn = kafka_python_batch(PID + 1, 3, 0, [(b"t", b"5")], transactional=True)
    assert env.produce(txn, txn_id="kp").error == "NONE"
    assert env.state(PID + 1)["state"] == "Ongoing"  # type: ignore[index]
    on_disk = env.on_disk()
    assert [(b.producer_id, b.base_sequence, b.is_transactional) for b in on_disk] == [
        (PID, 0, False), (PID, 2, False), (PID + 1, 0, True)]
    assert [(r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in on_disk[0].records] == [
        (0, 1_000, b"a", b"1", (("n", b"0"),)), (1, 1_001, None, b"2", (("n", b"1"),))]


def test_our_batches_decode_with_kafka_python(env: Env) -> None:
    env.verifier.add(PID)
    assert env.produce(batch(ts_ms=5, tag="plain")).error == "NONE"
    assert env.produce(batch(PID, 2, seq=0, n=2, txn=True, ts_ms=9, tag="t")).error == "NONE"
    assert env.marker(PID, 2, "ABORT", coordinator_epoch=6) == {TP: "NONE"}
    fetched = env.manager.fetch(TOPIC, 0, 0, 1 << 20, IsolationLevel.READ_UNCOMMITTED)
    batches = decoded(fetched.records)
    assert [(b["base_offset"], b["producer_id"], b["producer_epoch"], b["base_sequence"], b["transactional"],
             b["control"]) for b in batches] == [(0, -1, -1, -1, False, False), (1, PID, 2, 0, True, False),
                                                 (3, PID, 2, -1, True, True)]
    assert batches[1]["records"] == [(1, 9, b"k0", b"t-0", [("h", b"x")]), (2, 10, b"k1", b"t-1", [("h", b"x")])]
    [(offset, _, key, value, headers)] = batches[2]["records"]
    assert (offset, key, value, headers) == (3, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x06", [])  # ABORT, epoch 6
