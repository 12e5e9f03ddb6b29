"""The log checks on hand-built Kafka-format logs, one per rule, written without kcoord's encoders: batches by
kafka-python's record batch builder (control batches by flipping its attributes and recomputing the CRC-32C), record
keys and values by the `struct` packing below (Kafka's TransactionLogKey v0 / TransactionLogValue v0 and the
KIP-848 records at version 0, laid out by hand from Kafka's message files). Each broken log is caught by both
engines with the same violations; the clean ones give none; a snapshot after removed records is not a step.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from kcoord.conformance.traces import session
from kcoord.conformance.traces.job import Config, run
from kcoord.conformance.traces.output import read_violations
from kcoord.model.loader import bundled_machines

from .sparklogs import fallbacks, watch

EMPTY, ONGOING, PREPARE_COMMIT, COMPLETE_COMMIT = 0, 1, 2, 4
T0 = 1_700_000_000_000


# ---------------------------------------------------------------------------------------------- an independent encoder


def _s16(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def txn_key(txn_id: str) -> bytes:
    return struct.pack(">h", 0) + _s16(txn_id)


def txn_value(pid: int, epoch: int, status: int, partitions: dict[str, list[int]] | None, start: int, update: int,
              timeout: int = 60_000) -> bytes:
    """TransactionLogValue version 0: ProducerId, ProducerEpoch, TransactionTimeoutMs, TransactionStatus,
    TransactionPartitions (nullable []{Topic, PartitionIds []int32}), LastUpdate, Start."""
    out = struct.pack(">hqhib", 0, pid, epoch, timeout, status)
    if partitions is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(partitions))
        for topic, ids in partitions.items():
            out += _s16(topic) + struct.pack(f">i{len(ids)}i", len(ids), *ids)
    return out + struct.pack(">qq", update, start)


def batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]], ts: int, *, pid: int = -1,
          epoch: int = -1, transactional: bool = False, control: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=int(transactional),
                                        producer_id=pid, producer_epoch=epoch, base_sequence=-1, batch_size=1 << 20)
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=ts + i, key=key, value=value, headers=[])
    buf = bytearray(builder.build())
    buf[0:8] = struct.pack(">q", base_offset)  # the base offset and leader epoch are outside the CRC
    if control:  # attributes bit 5; the CRC-32C covers the attributes onwards
        (attributes,) = struct.unpack_from(">h", buf, 21)
        struct.pack_into(">h", buf, 21, attributes | 0x20)
        struct.pack_into(">I", buf, 17, calc_crc32c(bytes(buf[21:])))
    return bytes(buf)


def marker(commit: bool, coordinator_epoch: int) -> tuple[bytes, bytes]:
    return struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, coordinator_epoch)


def write_log(root: Path, folder: str, batches: list[bytes]) -> Path:
    path = root / folder
    path.mkdir(parents=True)
    first = struct.unpack_from(">q", batches[0])[0] if batches else 0
    (path / f"{first:020d}.log").write_bytes(b"".join(batches))
    return root


# ---------------------------------------------------------------------------------------------- transaction histories


def history(*values: bytes | None, base: int = 0, key: str = "t") -> list[bytes]:
    """One batch per value of key `key`, at consecutive offsets from `base`."""
    return [batch(base + i, [(txn_key(key), v)], T0 + 1000 * i) for i, v in enumerate(values)]


INIT = txn_value(7, 0, EMPTY, None, -1, T0)
OPEN = txn_value(7, 0, ONGOING, {"t": [0]}, T0 + 1000, T0 + 1000)
PREPARED = txn_value(7, 0, PREPARE_COMMIT, {"t": [0]}, T0 + 1000, T0 + 2000)
DONE = txn_value(7, 0, COMPLETE_COMMIT, {}, T0 + 1000, T0 + 3000)
BUMPED = txn_value(7, 1, EMPTY, None, -1, T0 + 4000)

CASES: dict[str, tuple[list[bytes], set[tuple[str, str]]]] = {
    "clean": (history(INIT, OPEN, PREPARED, DONE, BUMPED), set()),
    "an epoch bumped by two": (history(INIT, txn_value(7, 2, EMPTY, None, -1, T0 + 1000)),
                               {("persisted_step", "__transaction_state-0@1")}),
    "a Prepare record missing": (history(INIT, OPEN, DONE), {("persisted_step", "__transaction_state-0@2")}),
    "partitions changed by the prepare": (
        history(INIT, OPEN, txn_value(7, 0, PREPARE_COMMIT, {"t": [0, 1]}, T0 + 1000, T0 + 2000)),
        {("persisted_step", "__transaction_state-0@2")}),
    "an open transaction expired": (history(INIT, OPEN, None), {("persisted_step", "__transaction_state-0@2")}),
    "a first record that no fresh instance writes": (history(OPEN), {("persisted_step", "__transaction_state-0@0")}),
    "a stale value appended again": (history(INIT, OPEN, PREPARED, DONE, BUMPED, INIT),
                                     {("persisted_step", "__transaction_state-0@5")}),
}


@pytest.fixture(scope="module")
def machines() -> dict[str, Any]:
    return dict(bundled_machines())


def _check(root: Path, out: Path, engine: str, machines: dict[str, Any], spark: Any = None) -> Any:
    return run(Config([str(root)], str(out), engine=engine), machines, spark=spark)


def _found(out: Path) -> set[tuple[str, str, str, str, str]]:
    return {(v.check, v.name, v.key, v.location, v.message) for v in read_violations(str(out / "violations"))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_rule_on_a_hand_built_transaction_log(case: str, tmp_path: Path, machines: dict[str, Any]) -> None:
    batches, wanted = CASES[case]
    root = write_log(tmp_path / "logs", "__transaction_state-0", batches)
    outcome = _check(root, tmp_path / "out", "python", machines)
    assert outcome.summary.quarantined_total == 0 and outcome.summary.rows_read["Transaction"] == len(batches)
    steps = {(c, n) for c, n, _, _, _ in _found(tmp_path / "out") if c == "persisted_step"}
    assert steps == wanted, outcome.report


def test_a_snapshot_after_removed_records_is_not_a_step(tmp_path: Path, machines: dict[str, Any]) -> None:
    """The same Ongoing record that no fresh instance writes, after a gap in the offsets (a compacted prefix): its
    history is gone, it is a snapshot, and only its own invariants are checked."""
    root = write_log(tmp_path / "logs", "__transaction_state-0", history(OPEN, PREPARED, DONE, base=5))
    outcome = _check(root, tmp_path / "out", "python", machines)
    assert outcome.summary.violations_total == 0, outcome.report


# ---------------------------------------------------------------------------------------------- __consumer_offsets

TOPIC = uuid.UUID(int=42)


def _cs(s: str | None) -> bytes:
    return b"\x00" if s is None else bytes([len(s.encode()) + 1]) + s.encode()


def group_key(rtype: int, *fields: str) -> bytes:
    return struct.pack(">h", rtype) + b"".join(_s16(f) for f in fields)


def member_metadata() -> bytes:  # ConsumerGroupMemberMetadataValue v0, no tagged field
    return (struct.pack(">h", 0) + _cs(None) + _cs(None) + _cs("c") + _cs("/h") + bytes([2]) + _cs("orders")
            + _cs(None) + struct.pack(">i", 30_000) + _cs(None) + b"\x00")


def current_assignment(epoch: int, partitions: list[int]) -> bytes:  # ConsumerGroupCurrentMemberAssignmentValue v0
    assigned = bytes([2]) + TOPIC.bytes + bytes([len(partitions) + 1]) + b"".join(
        struct.pack(">i", p) for p in partitions) + b"\x00"
    return struct.pack(">hiib", 0, epoch, epoch - 1, 0) + assigned + bytes([1]) + b"\x00"


def epoch_value(epoch: int) -> bytes:  # ConsumerGroupMetadataValue / TargetAssignmentMetadataValue v0
    return struct.pack(">hi", 0, epoch) + b"\x00"


def consumer_group_log(shared: bool) -> list[bytes]:
    """A KIP-848 group with members a and b at epoch 2, each assigned orders-0 (shared) or a partition of its own."""
    records = [(group_key(3, "g"), epoch_value(2)), (group_key(6, "g"), epoch_value(2))]
    for member, partitions in (("a", [0]), ("b", [0] if shared else [1])):
        records += [(group_key(5, "g", member), member_metadata()),
                    (group_key(8, "g", member), current_assignment(2, partitions))]
    return [batch(0, records, T0)]


def offsets_log(stale_epoch: bool) -> list[bytes]:
    """Transactional offsets of producer 9, its COMMIT marker at epoch 3, then offsets of its next transaction at
    epoch 3 — or, stale, at epoch 2 (a write from a fenced epoch the partition must have refused)."""
    offset_key = struct.pack(">h", 1) + _s16("g") + _s16("orders") + struct.pack(">i", 0)
    value = struct.pack(">hqi", 3, 10, -1) + _s16("") + struct.pack(">q", T0)
    return [batch(0, [(offset_key, value)], T0, pid=9, epoch=3, transactional=True),
            batch(1, [marker(True, 0)], T0 + 10, pid=9, epoch=3, transactional=True, control=True),
            batch(2, [(offset_key, value)], T0 + 20, pid=9, epoch=2 if stale_epoch else 3, transactional=True)]


def test_two_members_holding_one_partition_are_caught(tmp_path: Path, machines: dict[str, Any]) -> None:
    clean = write_log(tmp_path / "clean", "__consumer_offsets-0", consumer_group_log(shared=False))
    assert _check(clean, tmp_path / "clean-out", "python", machines).summary.violations_total == 0
    root = write_log(tmp_path / "logs", "__consumer_offsets-0", consumer_group_log(shared=True))
    outcome = _check(root, tmp_path / "out", "python", machines)
    assert outcome.summary.rows_read["ConsumerGroupMember"] == 2 and outcome.summary.rows_read["ConsumerGroup"] == 1
    found = {(c, n) for c, n, _, _, _ in _found(tmp_path / "out")}
    assert ("exclusive", "exclusive_assignment") in found, outcome.report


def test_transactional_offsets_from_a_fenced_epoch_are_caught(tmp_path: Path, machines: dict[str, Any]) -> None:
    clean = write_log(tmp_path / "clean", "__consumer_offsets-0", offsets_log(stale_epoch=False))
    assert _check(clean, tmp_path / "clean-out", "python", machines).summary.violations_total == 0
    root = write_log(tmp_path / "logs", "__consumer_offsets-0", offsets_log(stale_epoch=True))
    outcome = _check(root, tmp_path / "out", "python", machines)
    found = {(c, n.split("#")[0], k) for c, n, k, _, _ in _found(tmp_path / "out")}
    assert ("guard_false", "CoordinatorAppend", "__consumer_offsets-0/9") in found, outcome.report
    assert ("step", "epoch_never_decreases", "__consumer_offsets-0/9") in found


@pytest.mark.slow
def test_both_engines_report_the_same_violations(spark: Any, tmp_path: Path, machines: dict[str, Any],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Every hand-built log at once (one partition folder each, under one broker folder), on both engines; Spark
    with generated code (as for a large input), every stage of it compiled (the log-dir plan: the record pairs'
    persisted-step checks beside the row checks of the converted rows)."""
    monkeypatch.setattr(session, "INTERPRETED_ROWS", -1)
    root = tmp_path / "logs"
    for n, case in enumerate(sorted(CASES)):
        write_log(root, f"__transaction_state-{n}", CASES[case][0])
    write_log(root, "__consumer_offsets-0", consumer_group_log(shared=True))
    write_log(root, "__consumer_offsets-1", offsets_log(stale_epoch=True))
    python = _check(root, tmp_path / "py", "python", machines)
    with watch(spark) as logged:
        on_spark = _check(root, tmp_path / "spark", "spark", machines, spark)
    assert fallbacks("\n".join(logged)) == []
    assert _found(tmp_path / "py") == _found(tmp_path / "spark")
    assert python.summary.violations == on_spark.summary.violations
    assert sum(python.summary.violations.get("Transaction", {}).values()) >= len(CASES) - 1
