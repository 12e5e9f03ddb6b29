"""A data partition writes a batch as its encoding moved in place (`batch.moved`: base offset and partition leader
epoch patched, as Kafka's leader assigns offsets) — the same bytes on disk as re-encoding the batch with its records
shifted to the log end offset (the writes before this path existed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kcoord.impl.partition.data_log import DataLog
from kcoord.impl.storage.batch import ControlType, Record, RecordBatch, encode_batch, end_txn_marker_entry
from kcoord.impl.storage.batch_decoder import BatchDecoder


def rebased_then_encoded(batch: RecordBatch, base_offset: int, partition_leader_epoch: int) -> bytes:
    """The reference: every record moved by the shift, the batch re-encoded (what `append_batch` wrote before)."""
    shift = base_offset - batch.base_offset
    records = tuple(Record(r.offset + shift, r.timestamp_ms, r.key, r.value, r.headers) for r in batch.records)
    return encode_batch(dataclasses.replace(batch, base_offset=base_offset, records=records,
                                            partition_leader_epoch=partition_leader_epoch))


def _batches() -> list[RecordBatch]:
    key, value = end_txn_marker_entry(ControlType.COMMIT, 7)
    return [
        RecordBatch.of([Record(0, 1_700_000_000_000, None, b"v")]),
        RecordBatch.of([Record(5, 1_000, b"k1", b"v1", (("h", b"x"),)), Record(6, 1_003, b"k2", None),
                        Record(9, 999, None, b"long" * 50)], producer_id=42, producer_epoch=3,
                       base_sequence=17, is_transactional=True),
        RecordBatch.of([Record(0, 5, key, value)], is_transactional=True, is_control=True, producer_id=42,
                       producer_epoch=3),
        RecordBatch.of([Record(i, 10 + i, str(i).encode(), b"x" * i) for i in range(300)], producer_id=1,
                       producer_epoch=0, base_sequence=2**31 - 100),
    ]


@pytest.mark.parametrize("epoch", [-1, 0, 5, 2**31 - 1])
def test_a_moved_batch_is_the_rebased_batch_byte_for_byte(tmp_path: Path, epoch: int) -> None:
    log = DataLog.open(tmp_path / "p-0")
    expected = []
    for batch in _batches() * 2:
        base = log.log_end_offset
        info = log.append_batch(batch, partition_leader_epoch=epoch)
        assert (info.base_offset, info.last_offset) == (base, base + batch.last_offset_delta)
        expected.append(rebased_then_encoded(batch, base, epoch))
    log.flush()
    on_disk = b"".join(p.read_bytes() for p in sorted((tmp_path / "p-0").glob("*.log")))
    assert on_disk == b"".join(expected)
    decoded = list(BatchDecoder(on_disk))
    assert [b.base_offset for b in decoded] == [0, 1, 6, 7, 307, 308, 313, 314]
    assert all(b.partition_leader_epoch == epoch for b in decoded)
    log.close()


@pytest.mark.parametrize("epoch", [-1, 0, 5, 2**31 - 1])
def test_a_marker_is_the_control_batch_appended_byte_for_byte(tmp_path: Path, epoch: int) -> None:
    """`append_marker` (a commit's marker per data partition, encoded at its place in one step) writes the bytes
    `append_batch` of the marker's control batch wrote (the marker path before it), at each base offset."""
    log = DataLog.open(tmp_path / "p-0")
    expected = []
    cases = [(ControlType.COMMIT, 0, 42, 3, 1_700_000_000_000), (ControlType.ABORT, 7, 1, 0, 5),
             (ControlType.COMMIT, 2**31 - 1, 2**63 - 1, 2**15 - 1, 0)]
    for control_type, coordinator_epoch, producer_id, producer_epoch, now_ms in cases * 2:
        key, value = end_txn_marker_entry(control_type, coordinator_epoch)
        control = RecordBatch.of([Record(0, now_ms, key, value)], is_transactional=True, is_control=True,
                                 producer_id=producer_id, producer_epoch=producer_epoch)
        base = log.log_end_offset
        info = log.append_marker(control_type, coordinator_epoch, producer_id, producer_epoch, now_ms,
                                 partition_leader_epoch=epoch)
        assert (info.base_offset, info.last_offset) == (base, base)
        expected.append(rebased_then_encoded(control, base, epoch))
    log.flush()
    on_disk = b"".join(p.read_bytes() for p in sorted((tmp_path / "p-0").glob("*.log")))
    assert on_disk == b"".join(expected)
    log.close()
