"""PartitionLog: bytes on disk, offsets, recovery of torn/corrupt tails, segments, durability, injected faults."""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kcoord.impl.storage.batch import (
    ControlType,
    UnsupportedCompressionError,
    encode_new_batch,
    end_txn_marker_entry,
)
from kcoord.impl.storage.batch_decoder import decode_batches
from kcoord.impl.storage.log import (
    Durability,
    LogCorruptedError,
    LogFailedError,
    OffsetOutOfRangeError,
    PartitionLog,
    partition_dir_name,
    read_partition_dir,
)

from .conftest import ManualClock, kv

SEGMENT_0 = "00000000000000000000.log"


def _records(log: PartitionLog, from_offset: int | None = None) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in log.read(from_offset) for r in b.records]


def test_new_log_layout_and_bytes_on_disk(log_dir: Path, clock: ManualClock) -> None:
    assert partition_dir_name("__transaction_state", 7) == log_dir.name
    with PartitionLog.open(log_dir, clock_ms=clock) as log:
        assert sorted(os.listdir(log_dir)) == [SEGMENT_0]
        assert (log.log_start_offset, log.log_end_offset, log.durable_offset) == (0, 0, 0)
        first = log.append([kv(0), kv(1)], timestamp_ms=10)
        second = log.append([(b"k", None)], timestamp_ms=11, producer_id=4, producer_epoch=0)
        assert (first.base_offset, first.last_offset, second.base_offset, second.last_offset) == (0, 1, 2, 2)
        assert log.log_end_offset == log.durable_offset == 3  # per-batch durability is the default
    expected = (encode_new_batch([kv(0), kv(1)], base_offset=0, timestamp_ms=10)
                + encode_new_batch([(b"k", None)], base_offset=2, timestamp_ms=11, producer_id=4, producer_epoch=0))
    assert (log_dir / SEGMENT_0).read_bytes() == expected
    assert first.size_bytes + second.size_bytes == len(expected)


def test_reopen_restores_offsets_and_content(log_dir: Path) -> None:
    with PartitionLog.open(log_dir) as log:
        for i in range(20):
            log.append([kv(i)], timestamp_ms=i)
    with PartitionLog.open(log_dir) as log:
        assert log.recovery.truncated_bytes == 0
        assert (log.recovery.batches, log.log_end_offset, log.durable_offset) == (20, 20, 20)
        assert log.append([kv(20)], timestamp_ms=20).base_offset == 20
        assert _records(log) == [(i, *kv(i)) for i in range(21)]


def _write_batches(log_dir: Path, n: int, *, stop: str = "unclean") -> list[int]:
    """n single-record batches; returns each batch's end position in the segment. An unclean stop (the default
    here: these tests are about what recovery may cut) leaves no recovery point, as a kill -9 before the first
    checkpoint: nothing is vouched for. A clean one vouches for everything."""
    ends = []
    with PartitionLog.open(log_dir) as log:
        for i in range(n):
            log.append([kv(i)], timestamp_ms=1000 + i)
            ends.append((log_dir / SEGMENT_0).stat().st_size)
    if stop == "unclean":
        (log_dir / "recovery-point").unlink()
    return ends


def test_torn_tail_truncation_at_random_cuts(tmp_path: Path) -> None:
    source = tmp_path / "source"
    ends = _write_batches(source, 12)
    rng = random.Random(20240611)
    cuts = sorted({rng.randrange(1, ends[-1]) for _ in range(25)} | {ends[3], ends[3] + 1, ends[-1] - 1})
    for cut in cuts:
        trial = tmp_path / f"cut-{cut}"
        shutil.copytree(source, trial)
        with open(trial / SEGMENT_0, "r+b") as f:
            f.truncate(cut)
        whole = sum(1 for end in ends if end <= cut)  # batches that were fully written
        with PartitionLog.open(trial) as log:
            report = log.recovery
            good_end = ends[whole - 1] if whole else 0
            assert report.log_end_offset == log.log_end_offset == whole
            assert report.truncated_bytes == cut - good_end
            if cut != good_end:
                assert (report.truncated_segment, report.truncated_position) == (SEGMENT_0, good_end)
                assert "torn" in report.truncation_reason
            assert (trial / SEGMENT_0).stat().st_size == good_end
            assert _records(log) == [(i, *kv(i)) for i in range(whole)]
            assert log.append([kv(99)], timestamp_ms=0).base_offset == whole
        with PartitionLog.open(trial) as log:
            assert log.recovery.truncated_bytes == 0 and log.log_end_offset == whole + 1


def _flip(segment: Path, position: int) -> None:
    with open(segment, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0x01]))


def test_crc_corruption_of_the_tail_is_truncated_above_the_recovery_point(log_dir: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    ends = _write_batches(log_dir, 5)
    (log_dir / "recovery-point").write_text("2\n")  # an unclean stop after a checkpoint at offset 2
    _flip(log_dir / SEGMENT_0, ends[-1] - 3)
    with PartitionLog.open(log_dir) as log:
        assert log.recovery.truncated_bytes == ends[4] - ends[3]
        assert log.recovery.truncated_position == ends[3]
        assert "CRC mismatch" in log.recovery.truncation_reason
        assert log.log_end_offset == 4 and log.recovery.recovery_point == 2
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"cut {ends[4] - ends[3]} bytes at byte {ends[3]}, from offset 4 on" in warning


@pytest.mark.parametrize("where", [1, 4])
def test_crc_corruption_below_the_recovery_point_refuses_the_open_and_keeps_every_byte(log_dir: Path,
                                                                                     where: int) -> None:
    """After a clean stop the recovery point vouches for the whole log: a damaged batch there, the last one or
    not, was fsynced and checked, maybe acknowledged; recovery does not cut it (Kafka does not even rescan it)."""
    ends = _write_batches(log_dir, 5, stop="clean")
    _flip(log_dir / SEGMENT_0, ends[where] - 3)
    before = (log_dir / SEGMENT_0).read_bytes()
    with pytest.raises(LogCorruptedError, match=rf"the batch at byte {ends[where - 1]} \(offset {where}\) is "
                                                r"damaged \(corrupt: CRC mismatch.*below the recovery point 5"):
        PartitionLog.open(log_dir)
    assert (log_dir / SEGMENT_0).read_bytes() == before


def test_a_log_cut_below_its_recovery_point_refuses_the_open(log_dir: Path) -> None:
    ends = _write_batches(log_dir, 5, stop="clean")
    with open(log_dir / SEGMENT_0, "r+b") as f:
        f.truncate(ends[2])  # whole batches gone: what is left decodes to the end
    with pytest.raises(LogCorruptedError, match=r"the log ends at offset 3 \(byte .*recovery point is 5"):
        PartitionLog.open(log_dir)
    (log_dir / SEGMENT_0).unlink()  # no segment left at all
    with pytest.raises(LogCorruptedError, match="recovery point is 5"):
        PartitionLog.open(log_dir)
    assert sorted(os.listdir(log_dir)) == ["recovery-point"]


def test_corruption_inside_the_last_segment_drops_everything_after_it(log_dir: Path) -> None:
    ends = _write_batches(log_dir, 6)
    with open(log_dir / SEGMENT_0, "r+b") as f:
        f.seek(ends[1] + 30)
        f.write(b"\xff\xff")  # damage batch 2; batches 3-5 are intact but unreachable as a prefix
    with PartitionLog.open(log_dir) as log:
        assert log.log_end_offset == 2
        assert log.recovery.truncated_bytes == ends[5] - ends[1]


def test_zero_filled_tail_is_truncated(log_dir: Path) -> None:
    ends = _write_batches(log_dir, 3)
    with open(log_dir / SEGMENT_0, "ab") as f:
        f.write(bytes(4096))  # e.g. a file extended but never written before a power loss
    with PartitionLog.open(log_dir) as log:
        assert log.log_end_offset == 3
        assert log.recovery.truncated_bytes == 4096
        assert (log_dir / SEGMENT_0).stat().st_size == ends[-1]


def test_segment_roll_names_and_reads_across_segments(small_log: PartitionLog, log_dir: Path) -> None:
    for i in range(100):
        small_log.append([kv(i)], timestamp_ms=i)
    bases = small_log.segment_base_offsets
    assert len(bases) > 3 and bases[0] == 0
    assert sorted(os.listdir(log_dir)) == [*(f"{b:020d}.log" for b in bases), "recovery-point"]
    assert (log_dir / "recovery-point").read_text() == f"{bases[-1]}\n"  # the last roll vouches for what it fsynced
    for name in (f"{b:020d}.log" for b in bases):
        size = (log_dir / name).stat().st_size
        assert size <= 1024
        batches = list(decode_batches((log_dir / name).read_bytes()))
        assert batches[0].base_offset == int(name[:20])  # a segment is named after its first offset
    assert _records(small_log) == [(i, *kv(i)) for i in range(100)]
    assert _records(small_log, 57) == [(i, *kv(i)) for i in range(57, 100)]
    assert _records(small_log, bases[2]) == [(i, *kv(i)) for i in range(bases[2], 100)]
    assert _records(small_log, 100) == []
    with pytest.raises(OffsetOutOfRangeError):
        list(small_log.read(101))
    one = list(small_log.read(10, max_bytes=1))  # the first batch is returned even if larger than max_bytes
    assert [b.base_offset for b in one] == [10]
    size = len(encode_new_batch([kv(10)], base_offset=10, timestamp_ms=10))
    assert [b.base_offset for b in small_log.read(10, max_bytes=3 * size)] == [10, 11, 12]


def test_reopen_with_many_segments_and_a_batch_bigger_than_a_segment(log_dir: Path) -> None:
    with PartitionLog.open(log_dir, segment_bytes=1024) as log:
        for i in range(30):
            log.append([kv(i)], timestamp_ms=i)
        big = log.append([(b"big", b"x" * 5000)], timestamp_ms=0)
        log.append([kv(31)], timestamp_ms=0)
        bases = log.segment_base_offsets
    assert big.base_offset in bases and big.base_offset + 1 in bases  # alone in its segment
    with PartitionLog.open(log_dir, segment_bytes=1024) as log:
        assert log.segment_base_offsets == bases
        assert log.log_end_offset == 32
        assert [r[0] for r in _records(log)] == list(range(32))


def test_corrupt_earlier_segment_refuses_to_open(log_dir: Path) -> None:
    with PartitionLog.open(log_dir, segment_bytes=1024) as log:
        for i in range(60):
            log.append([kv(i)], timestamp_ms=i)
    with open(log_dir / SEGMENT_0, "r+b") as f:
        f.seek(100)
        f.write(b"\x00\x00\x00")
    with pytest.raises(LogCorruptedError, match=r"below the recovery point 60.*delete the later segments"):
        PartitionLog.open(log_dir)
    (log_dir / "recovery-point").unlink()  # vouching for nothing, the segment was still fsynced before the next
    with pytest.raises(LogCorruptedError, match=r"in a segment before the last.*delete the later segments"):
        PartitionLog.open(log_dir)


def test_group_commit_durable_offset_lags_until_flush_is_due(log_dir: Path, clock: ManualClock) -> None:
    with PartitionLog.open(log_dir, durability=Durability.group(max_delay_ms=5, max_bytes=10_000),
                           clock_ms=clock) as log:
        assert log.next_flush_due_ms is None
        log.append([kv(0)], timestamp_ms=0)
        clock.advance(2)
        log.append([kv(1)], timestamp_ms=0)
        assert (log.log_end_offset, log.durable_offset) == (2, 0)
        assert log.next_flush_due_ms == clock.now_ms - 2 + 5  # from the oldest pending append
        assert not log.flush_if_due(clock.now_ms)
        assert log.durable_offset == 0
        clock.advance(3)
        assert log.flush_if_due(clock.now_ms)
        assert log.durable_offset == 2 and log.next_flush_due_ms is None
        assert not log.flush_if_due(clock.now_ms + 1000)  # nothing pending
        # The byte threshold makes a flush due without waiting.
        for i in range(2, 200):
            log.append([kv(i)], timestamp_ms=0)
        assert log.durable_offset == 2
        assert log.flush_if_due(clock.now_ms)
        assert log.durable_offset == 200


def test_per_batch_durability_never_leaves_pending_data(small_log: PartitionLog) -> None:
    for i in range(5):
        small_log.append([kv(i)], timestamp_ms=0)
        assert small_log.durable_offset == small_log.log_end_offset
    assert small_log.next_flush_due_ms is None and not small_log.flush_if_due(10**12)


def test_roll_flushes_pending_group_commit_data(log_dir: Path, clock: ManualClock) -> None:
    with PartitionLog.open(log_dir, segment_bytes=1024, durability=Durability.group(1000, 1 << 20),
                           clock_ms=clock) as log:
        while len(log.segment_base_offsets) == 1:
            log.append([kv(log.log_end_offset)], timestamp_ms=0)
        # Everything in the closed segment is durable; the batch that opened the new segment is pending.
        assert log.durable_offset == log.segment_base_offsets[1] == log.log_end_offset - 1


@pytest.mark.parametrize("written_bytes", [0, 1, 17, 60])
def test_injected_append_failure_leaves_no_trace(small_log: PartitionLog, log_dir: Path, written_bytes: int) -> None:
    small_log.append([kv(0)], timestamp_ms=0)
    size = (log_dir / SEGMENT_0).stat().st_size
    small_log.fail_next_append(written_bytes=written_bytes)
    with pytest.raises(OSError, match="injected append failure"):
        small_log.append([kv(1)], timestamp_ms=0)
    assert (log_dir / SEGMENT_0).stat().st_size == size
    assert (small_log.log_end_offset, small_log.durable_offset) == (1, 1)
    assert small_log.append([kv(2)], timestamp_ms=0).base_offset == 1
    assert _records(small_log) == [(0, *kv(0)), (1, *kv(2))]


def test_injected_fsync_failure_in_per_batch_append_truncates(small_log: PartitionLog, log_dir: Path) -> None:
    small_log.append([kv(0)], timestamp_ms=0)
    size = (log_dir / SEGMENT_0).stat().st_size
    small_log.fail_next_flush()
    with pytest.raises(OSError, match="injected fsync failure"):
        small_log.append([kv(1)], timestamp_ms=0)
    assert (log_dir / SEGMENT_0).stat().st_size == size and small_log.log_end_offset == 1
    assert small_log.append([kv(1)], timestamp_ms=0).base_offset == 1


def test_injected_flush_failure_in_group_mode_keeps_data_pending(log_dir: Path, clock: ManualClock) -> None:
    with PartitionLog.open(log_dir, durability=Durability.group(0, 1 << 20), clock_ms=clock) as log:
        log.append([kv(0)], timestamp_ms=0)
        log.fail_next_flush()
        with pytest.raises(OSError):
            log.flush_if_due(clock.now_ms)
        assert (log.log_end_offset, log.durable_offset) == (1, 0)
        assert log.flush_if_due(clock.now_ms)  # retried
        assert log.durable_offset == 1


def test_failed_truncate_after_failed_append_fails_the_log(small_log: PartitionLog,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_ftruncate(fd: int, length: int) -> None:
        raise OSError(5, "disk gone")

    small_log.fail_next_append(written_bytes=5)
    monkeypatch.setattr(os, "ftruncate", broken_ftruncate)
    with pytest.raises(OSError, match="injected"):
        small_log.append([kv(0)], timestamp_ms=0)
    monkeypatch.undo()
    with pytest.raises(LogFailedError, match="could not truncate"):
        small_log.append([kv(0)], timestamp_ms=0)


def test_recovery_after_failed_log_truncates_the_partial_batch(log_dir: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    log = PartitionLog.open(log_dir)
    log.append([kv(0)], timestamp_ms=0)
    log.fail_next_append(written_bytes=20)
    monkeypatch.setattr(os, "ftruncate", lambda fd, n: (_ for _ in ()).throw(OSError(5, "no")))
    with pytest.raises(OSError):
        log.append([kv(1)], timestamp_ms=0)
    monkeypatch.undo()
    log.close()
    with PartitionLog.open(log_dir) as reopened:
        assert reopened.recovery.truncated_bytes == 20
        assert reopened.log_end_offset == 1


def test_closed_log_rejects_appends(log_dir: Path) -> None:
    log = PartitionLog.open(log_dir)
    log.close()
    log.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        log.append([kv(0)], timestamp_ms=0)


def test_control_and_transactional_appends_round_trip(small_log: PartitionLog) -> None:
    small_log.append([kv(0)], timestamp_ms=5, producer_id=9, producer_epoch=2, base_sequence=0, transactional=True)
    small_log.append([end_txn_marker_entry(ControlType.COMMIT, 4)], timestamp_ms=6, producer_id=9, producer_epoch=2,
                     transactional=True, control=True)
    data, marker = list(small_log.read())
    assert data.is_transactional and not data.is_control and (data.producer_id, data.base_sequence) == (9, 0)
    assert marker.is_control and marker.is_transactional and marker.base_offset == 1


def test_read_partition_dir_reads_a_kafka_style_folder(tmp_path: Path) -> None:
    kafka_dir = tmp_path / "__consumer_offsets-3"
    kafka_dir.mkdir()
    first = bytearray()
    for offset in range(3):
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                            producer_epoch=-1, base_sequence=-1, batch_size=1 << 16)
        builder.append(0, timestamp=1000 + offset, key=b"k%d" % offset, value=b"v", headers=[])
        batch = builder.build()
        batch[0:8] = offset.to_bytes(8, "big")  # the broker assigns base offsets
        first += batch
    (kafka_dir / "00000000000000000000.log").write_bytes(bytes(first))
    (kafka_dir / "00000000000000000003.log").write_bytes(
        encode_new_batch([kv(3)], base_offset=3, timestamp_ms=0) + bytes(64))  # preallocated, zero-filled tail
    for junk in ("00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000000.txnindex",
                 "00000000000000000003.snapshot", "leader-epoch-checkpoint", "partition.metadata"):
        (kafka_dir / junk).write_bytes(b"\x01\x02garbage")
    assert [(b.base_offset, b.records[0].key) for b in read_partition_dir(kafka_dir)] == [
        (0, b"k0"), (1, b"k1"), (2, b"k2"), (3, b"key-3")]
    assert sorted(os.listdir(kafka_dir))[0] == "00000000000000000000.index"  # nothing was modified or deleted
    # Damage in a segment that is not the last one is an error, not an end of data.
    (kafka_dir / "00000000000000000000.log").write_bytes(bytes(first[:-5]))
    with pytest.raises(LogCorruptedError):
        list(read_partition_dir(kafka_dir))


def test_read_partition_dir_reads_a_batch_kafka_python_compressed_with_gzip(tmp_path: Path) -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=1, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 16)
    for i in range(50):
        builder.append(i, timestamp=0, key=b"k", value=b"a%d" % i * 100, headers=[])
    data = bytes(builder.build())
    (tmp_path / "00000000000000000000.log").write_bytes(data)
    [batch] = list(read_partition_dir(tmp_path))
    assert batch.compression == 1 and len(data) < 50 * 100
    assert [(r.offset, r.value) for r in batch.records] == [(i, b"a%d" % i * 100) for i in range(50)]


def test_read_partition_dir_rejects_a_codec_kafka_does_not_define(tmp_path: Path) -> None:
    data = bytearray(encode_new_batch([(b"k", b"v")], base_offset=0, timestamp_ms=0))
    struct.pack_into(">h", data, 21, 6)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    (tmp_path / "00000000000000000000.log").write_bytes(bytes(data))
    with pytest.raises(UnsupportedCompressionError, match="codec 6"):
        list(read_partition_dir(tmp_path))


def test_large_segment_is_read_in_chunks(log_dir: Path) -> None:
    with PartitionLog.open(log_dir) as log:
        for i in range(300):
            log.append([(b"k%d" % i, os.urandom(50_000))], timestamp_ms=i)  # ~15 MB: several 4 MiB chunks
        assert [b.base_offset for b in log.read()] == list(range(300))
        assert [b.base_offset for b in log.read(250)] == list(range(250, 300))


def test_open_with_on_batch_is_a_one_pass_load(log_dir: Path) -> None:
    ends = _write_batches(log_dir, 6)
    with open(log_dir / SEGMENT_0, "r+b") as f:
        f.truncate(ends[4] + 10)  # batch 5 is torn
    loaded: list[int] = []
    with PartitionLog.open(log_dir, on_batch=lambda b: loaded.append(b.base_offset)) as log:
        assert loaded == [0, 1, 2, 3, 4]  # the torn batch is never handed out
        assert log.recovery.truncated_bytes == 10
        assert [b.base_offset for b in log.read()] == loaded


def test_open_with_on_batch_across_segments_matches_read(log_dir: Path) -> None:
    with PartitionLog.open(log_dir, segment_bytes=1024) as log:
        for i in range(70):
            log.append([kv(i), kv(i + 1000)], timestamp_ms=i)
        expected = list(log.read())
    loaded: list[object] = []
    with PartitionLog.open(log_dir, segment_bytes=1024, on_batch=loaded.append) as log:
        assert loaded == expected
        assert log.recovery.batches == 70 and len(log.segment_base_offsets) > 3


@pytest.mark.parametrize("chunk_bytes", [1, 7, 64, 100, 1 << 20])
def test_file_scan_stitches_batches_across_chunks(tmp_path: Path, chunk_bytes: int) -> None:
    from kcoord.impl.storage._files import FileScan

    data = b"".join(encode_new_batch([kv(i)] * (1 + i % 4), base_offset=10 * i, timestamp_ms=i) for i in range(20))
    data += encode_new_batch([(b"big", b"x" * 3000)], base_offset=500, timestamp_ms=0)
    path = tmp_path / SEGMENT_0
    path.write_bytes(data + data[:30])  # and a torn tail
    scan = FileScan(path, chunk_bytes=chunk_bytes)
    assert [b.base_offset for b in scan] == [10 * i for i in range(20)] + [500]
    assert (scan.stop.reason.value, scan.stop.position) == ("torn", len(data))
    spans = FileScan(path, start=len(data) - 3073, chunk_bytes=chunk_bytes)
    assert [s.base_offset for s in spans.spans()] == [500]


@pytest.mark.parametrize("durability", [Durability.per_batch(), Durability.group(max_delay_ms=0, max_bytes=1)])
def test_the_recovery_point_follows_durable_appends_once_a_minute(log_dir: Path, clock: ManualClock,
                                                                  durability: Durability) -> None:
    """As Kafka's log.flush.offset.checkpoint.interval.ms: what is fsynced is vouched for within a minute, so after a
    kill -9 recovery may cut at most a minute of it (and says so)."""
    point = log_dir / "recovery-point"
    log = PartitionLog.open(log_dir, durability=durability, clock_ms=clock)
    for i in range(3):
        log.append([kv(i)], timestamp_ms=i)
        log.flush()
    assert not point.exists()  # a new log: nothing to vouch for at its open, and no minute has passed
    clock.advance(59_999)
    log.append([kv(3)], timestamp_ms=3)
    log.flush()
    assert not point.exists()
    clock.advance(1)
    log.append([kv(4)], timestamp_ms=4)
    log.flush()
    assert point.read_text() == "5\n"
    log.append([kv(5)], timestamp_ms=5)
    log.flush()
    assert point.read_text() == "5\n"  # not again before another minute
    assert log._fd is not None
    os.close(log._fd)  # a kill -9: no clean close
    log._fd = None
    with PartitionLog.open(log_dir) as reopened:
        assert reopened.recovery.recovery_point == 5 and reopened.log_end_offset == 6


def test_a_failed_reopen_of_the_active_segment_closes_its_old_descriptor_once(log_dir: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """After compaction replaced the active segment, the log reopens it; if that open fails, the old descriptor's
    number (closed, then free for the next file or pipe the process opens) must not be closed again by the log's
    close: here a pipe that gets that number stays open."""
    log = PartitionLog.open(log_dir)
    log.append([kv(0)], timestamp_ms=0)
    old = log._fd
    assert old is not None

    def refused(*args: object, **kwargs: object) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(OSError):
        log._reopen_active()
    monkeypatch.undo()
    read, write = os.pipe()
    try:
        assert old in (read, write)  # (the lowest free number: the one the log closed)
        log.close()
        os.fstat(read), os.fstat(write)  # still open
    finally:
        os.close(read)
        os.close(write)
