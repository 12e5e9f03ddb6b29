"""v2 record batches: exact layout, round trips, decode stops, and a cross-check against kafka-python."""

from __future__ import annotations

import dataclasses
import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kcoord.impl.storage.batch import (
    BATCH_OVERHEAD,
    ControlType,
    EndTxnMarker,
    Record,
    RecordBatch,
    RecordFormatError,
    StopReason,
    TimestampType,
    UnsupportedCompressionError,
    decode_end_txn_marker,
    encode_batch,
    encode_new_batch,
    end_txn_marker_entry,
)
from kcoord.impl.storage.batch_decoder import decode_batch, decode_batches

HEADER = struct.Struct(">qiibIhiqqqhii")


def _one_record_batch() -> bytes:
    return encode_new_batch([(b"k", b"value")], base_offset=42, timestamp_ms=1_700_000_000_123,
                            producer_id=7, producer_epoch=3, base_sequence=11, transactional=True)


def test_header_layout_and_crc() -> None:
    data = _one_record_batch()
    (base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta, base_ts, max_ts, pid, epoch,
     seq, count) = HEADER.unpack_from(data)
    assert (base_offset, leader_epoch, magic) == (42, -1, 2)
    assert length == len(data) - 12
    assert attributes == 0x10  # transactional, CREATE_TIME, no compression
    assert (last_offset_delta, base_ts, max_ts) == (0, 1_700_000_000_123, 1_700_000_000_123)
    assert (pid, epoch, seq, count) == (7, 3, 11, 1)
    assert crc == crc32c.crc32c(data[21:])
    # The record: length 12 | attributes 0 | ts delta 0 | offset delta 0 | key len 1 "k" | value len 5 | 0 headers
    assert data[BATCH_OVERHEAD:] == bytes([2 * 12, 0, 0, 0, 2 * 1]) + b"k" + bytes([2 * 5]) + b"value" + b"\x00"


def test_encode_new_batch_equals_encode_batch() -> None:
    entries = [(b"a", b"1"), (None, b"2"), (b"c", None), (b"d" * 300, b"e" * 20_000)]
    fast = encode_new_batch(entries, base_offset=1000, timestamp_ms=5, producer_id=9, producer_epoch=0)
    records = [Record(1000 + i, 5, k, v) for i, (k, v) in enumerate(entries)]
    general = encode_batch(RecordBatch.of(records, producer_id=9, producer_epoch=0))
    assert fast == general
    assert decode_batch(fast).records == tuple(records)


def test_control_batch_marker_bytes_and_decode() -> None:
    key, value = end_txn_marker_entry(ControlType.COMMIT, 17)
    assert key == b"\x00\x00\x00\x01"  # version 0, type COMMIT
    assert value == b"\x00\x00\x00\x00\x00\x11"  # version 0, coordinator epoch 17
    data = encode_new_batch([(key, value)], base_offset=5, timestamp_ms=1, producer_id=3, producer_epoch=2,
                            transactional=True, control=True)
    batch = decode_batch(data)
    assert batch.is_control and batch.is_transactional
    assert decode_end_txn_marker(batch.records[0]) == EndTxnMarker(ControlType.COMMIT, 17)
    # Kafka reads newer key/value versions as version 0.
    assert decode_end_txn_marker(Record(0, 0, b"\x00\x03\x00\x00", b"\x00\x01\x00\x00\x00\x02")) == EndTxnMarker(
        ControlType.ABORT, 2)
    for bad_key in (None, b"\x00\x00", b"\x00\x00\x00\x02", b"\xff\xff\x00\x01"):
        with pytest.raises(RecordFormatError):
            decode_end_txn_marker(Record(0, 0, bad_key, value))
    with pytest.raises(RecordFormatError):
        decode_end_txn_marker(Record(0, 0, key, b"\x00\x00"))


def test_transactional_batch_needs_producer_id() -> None:
    with pytest.raises(RecordFormatError, match="producer id"):
        encode_new_batch([(b"k", b"v")], base_offset=0, timestamp_ms=0, transactional=True)
    with pytest.raises(RecordFormatError, match="at least one record"):
        encode_new_batch([], base_offset=0, timestamp_ms=0)


def test_encode_batch_rejects_offsets_outside_the_batch() -> None:
    batch = RecordBatch.of([Record(5, 0, b"k", b"v"), Record(7, 0, b"k", b"v")])
    assert [r.offset for r in decode_batch(encode_batch(batch)).records] == [5, 7]
    with pytest.raises(RecordFormatError, match="increasing"):
        encode_batch(RecordBatch.of([Record(5, 0, b"k", b"v"), Record(5, 0, b"k", b"v")]))
    with pytest.raises(RecordFormatError, match="increasing"):
        encode_batch(RecordBatch.of([Record(5, 0, b"k", b"v")], base_offset=6, last_offset_delta=3))


def test_empty_batch_preserves_offsets() -> None:
    empty = RecordBatch.of([], base_offset=10, last_offset_delta=4, producer_id=1, producer_epoch=0, base_sequence=3)
    decoded = decode_batch(encode_batch(empty))
    assert decoded == empty
    assert (decoded.last_offset, decoded.next_offset, decoded.base_timestamp_ms) == (14, 15, -1)


def _with_attributes(data: bytes, attributes: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def test_a_codec_kafka_does_not_define_is_rejected_clearly() -> None:
    with pytest.raises(UnsupportedCompressionError, match="codec 5, which Kafka does not define"):
        list(decode_batches(_with_attributes(_one_record_batch(), 0x10 | 5)))


def test_plain_records_under_a_codec_flag_stop_as_corrupt() -> None:
    decoder = decode_batches(_with_attributes(_one_record_batch(), 0x10 | 3))  # lz4 named, the records are plain
    assert list(decoder) == []
    assert decoder.stop.reason is StopReason.CORRUPT and "compressed batch" in decoder.stop.detail


def test_log_append_time_uses_max_timestamp_and_unused_attribute_bits_are_ignored() -> None:
    data = bytearray(encode_batch(RecordBatch.of([Record(0, 100, b"a", b"1"), Record(1, 150, b"b", b"2")])))
    struct.pack_into(">h", data, 21, 0x08 | 0x100)  # LOG_APPEND_TIME plus an unused high bit
    struct.pack_into(">q", data, 35, 999)  # max timestamp
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    batch = decode_batch(bytes(data))
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp_ms for r in batch.records] == [999, 999]


# ------------------------------------------------------------------------------------------ decode stops


def _three_batches() -> bytes:
    return b"".join(encode_new_batch([(b"k%d" % i, b"v" * i)], base_offset=i, timestamp_ms=i) for i in range(3))


def test_decode_stops_cleanly_at_end() -> None:
    decoder = decode_batches(_three_batches(), 1000)
    assert [b.base_offset for b in decoder] == [0, 1, 2]
    assert decoder.stop.reason is StopReason.END
    assert decoder.stop.position == 1000 + len(_three_batches())


@pytest.mark.parametrize("cut", [1, 11, 12, 30, 60, 61, 70])
def test_torn_tail_stops_with_position(cut: int) -> None:
    data = _three_batches()
    two = len(data) - len(encode_new_batch([(b"k2", b"vv")], base_offset=2, timestamp_ms=2))
    decoder = decode_batches(data[:two + cut], 500)
    assert [b.base_offset for b in decoder] == [0, 1]
    assert decoder.stop.reason is StopReason.TORN
    assert decoder.stop.position == 500 + two


def test_crc_mismatch_and_bad_magic_and_zero_fill_are_corrupt() -> None:
    data = bytearray(_three_batches())
    last = len(data) - len(encode_new_batch([(b"k2", b"vv")], base_offset=2, timestamp_ms=2))
    flipped = bytearray(data)
    flipped[-2] ^= 0xFF
    decoder = decode_batches(bytes(flipped))
    assert [b.base_offset for b in decoder] == [0, 1]
    assert (decoder.stop.reason, decoder.stop.position) == (StopReason.CORRUPT, last)
    assert "CRC mismatch" in decoder.stop.detail
    bad_magic = bytearray(data)
    bad_magic[last + 16] = 1
    decoder = decode_batches(bytes(bad_magic))
    assert len(list(decoder)) == 2
    assert decoder.stop.reason is StopReason.CORRUPT and "magic 1" in decoder.stop.detail
    zeros = bytes(data) + bytes(100)  # a preallocated or not-yet-written tail
    decoder = decode_batches(zeros)
    assert len(list(decoder)) == 3
    assert decoder.stop.reason is StopReason.CORRUPT and "length 0" in decoder.stop.detail


def test_crc_valid_but_malformed_records_are_corrupt() -> None:
    data = bytearray(encode_new_batch([(b"k", b"v")], base_offset=0, timestamp_ms=0))
    struct.pack_into(">i", data, 57, 2)  # claims two records, holds one
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    decoder = decode_batches(bytes(data))
    assert list(decoder) == []
    assert decoder.stop.reason is StopReason.CORRUPT and decoder.stop.position == 0
    with pytest.raises(RecordFormatError):
        decode_batch(bytes(data))


def test_spans_validate_without_parsing() -> None:
    data = _three_batches()
    decoder = decode_batches(data + b"\x00" * 5, 7)
    spans = list(decoder.spans())
    assert [(s.base_offset, s.last_offset) for s in spans] == [(0, 0), (1, 1), (2, 2)]
    assert spans[0].position == 7 and sum(s.size_bytes for s in spans) == len(data)
    assert decoder.stop.reason is StopReason.TORN


def test_stop_is_unknown_before_iteration() -> None:
    with pytest.raises(RuntimeError):
        _ = decode_batches(b"").stop


# ------------------------------------------------------------------------------------------ property round trip

_keys = st.one_of(st.none(), st.binary(max_size=300))
_headers = st.lists(st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20))), max_size=3)


@st.composite
def record_batches(draw: st.DrawFn) -> RecordBatch:
    base_offset = draw(st.integers(0, 2**62))
    base_ts = draw(st.integers(0, 2**41))
    n = draw(st.integers(0, 12))
    gaps = draw(st.lists(st.integers(1, 200), min_size=n, max_size=n))
    offsets = [base_offset + sum(gaps[:i + 1]) - gaps[0] for i in range(n)]
    records = tuple(
        Record(o, base_ts + draw(st.integers(-(2**40), 2**40)), draw(_keys), draw(_keys), tuple(draw(_headers)))
        for o in offsets)
    last_offset_delta = (offsets[-1] - base_offset if records else 0) + draw(st.integers(0, 5))
    transactional = draw(st.booleans())
    return RecordBatch(
        base_offset=base_offset,
        records=records,
        last_offset_delta=last_offset_delta,
        base_timestamp_ms=base_ts,
        max_timestamp_ms=max((r.timestamp_ms for r in records), default=base_ts),
        partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
        is_transactional=transactional,
        is_control=draw(st.booleans()),
        producer_id=draw(st.integers(0, 2**63 - 1)) if transactional else -1,
        producer_epoch=draw(st.integers(-1, 2**15 - 1)),
        base_sequence=draw(st.integers(-1, 2**31 - 1)),
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(record_batches(), min_size=1, max_size=4))
def test_round_trip(batches: list[RecordBatch]) -> None:
    data = b"".join(encode_batch(b) for b in batches)
    decoder = decode_batches(data)
    assert list(decoder) == batches
    assert decoder.stop.reason is StopReason.END


@settings(max_examples=60, deadline=None)
@given(record_batches(), st.data())
def test_any_truncation_is_a_clean_stop(batch: RecordBatch, data: st.DataObject) -> None:
    encoded = encode_batch(batch)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    decoder = decode_batches(encoded[:cut])
    assert list(decoder) == []
    assert decoder.stop.position == 0
    assert decoder.stop.reason in (StopReason.TORN, StopReason.END)


# ------------------------------------------------------------------------------------------ kafka-python cross-check


def _kafka_python_batch(records: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes]]]], *,
                        transactional: bool = False, producer_id: int = -1, producer_epoch: int = -1,
                        base_sequence: int = -1) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 20)
    for offset, ts, key, value, headers in records:
        builder.append(offset, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def test_kafka_python_bytes_decode_here() -> None:
    rows = [(0, 1000, b"key", b"value", [("h", b"x")]), (1, 1007, None, b"v2", []), (2, 999, b"k3", None, [])]
    data = _kafka_python_batch(rows, transactional=True, producer_id=123, producer_epoch=4, base_sequence=9)
    batch = decode_batch(data)
    assert batch.is_transactional and not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (123, 4, 9)
    assert (batch.base_offset, batch.last_offset_delta, batch.base_timestamp_ms, batch.max_timestamp_ms) == (
        0, 2, 1000, 1007)
    assert [(r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in batch.records] == [
        (0, 1000, b"key", b"value", (("h", b"x"),)), (1, 1007, None, b"v2", ()), (2, 999, b"k3", None, ())]
    # And the bytes are identical to ours for the same logical batch (partition leader epoch is 0 there).
    ours = encode_batch(RecordBatch(**{**{f: getattr(batch, f) for f in batch.__dataclass_fields__}}))
    assert ours == data


def test_our_bytes_decode_in_kafka_python() -> None:
    entries = [(b"k%d" % i, b"v" * i) for i in range(5)] + [(None, None)]
    data = encode_new_batch(entries, base_offset=77, timestamp_ms=1_700_000_000_000, producer_id=5,
                            producer_epoch=1, base_sequence=0, transactional=True)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.last_offset, theirs.producer_id, theirs.producer_epoch) == (77, 82, 5, 1)
    assert theirs.is_transactional and not theirs.is_control_batch
    assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
        (77 + i, 1_700_000_000_000, k, v) for i, (k, v) in enumerate(entries)]


def test_our_control_batch_decodes_in_kafka_python() -> None:
    key, value = end_txn_marker_entry(ControlType.ABORT, 3)
    data = encode_new_batch([(key, value)], base_offset=9, timestamp_ms=1, producer_id=5, producer_epoch=1,
                            transactional=True, control=True)
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc() and theirs.is_control_batch and theirs.is_transactional
    (marker,) = list(theirs)
    assert (marker.offset, marker.version, marker.type, marker.abort) == (9, 0, 0, True)
    assert marker.value == value


@settings(max_examples=40, deadline=None)
@given(st.lists(record_batches(), min_size=1, max_size=3))
def test_kafka_python_reads_what_we_write(batches: list[RecordBatch]) -> None:
    batches = [b for b in batches if not b.is_control]  # kafka-python parses every control key as a marker
    data = b"".join(encode_batch(b) for b in batches)
    memory = MemoryRecords(data)
    for ours in batches:
        theirs = memory.next_batch()
        assert theirs.validate_crc()
        assert (theirs.base_offset, theirs.last_offset, theirs.first_timestamp, theirs.max_timestamp) == (
            ours.base_offset, ours.last_offset, ours.base_timestamp_ms, ours.max_timestamp_ms)
        assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence, theirs.is_transactional) == (
            ours.producer_id, ours.producer_epoch, ours.base_sequence, ours.is_transactional)
        assert [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers]) for r in theirs] == [
            (r.offset, r.timestamp_ms, r.key, r.value, [tuple(h) for h in r.headers]) for r in ours.records]
    assert memory.next_batch() is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_keys, _keys, st.integers(-(2**30), 2**30)), min_size=1, max_size=10),
       st.booleans())
def test_we_read_what_kafka_python_writes(rows: list[tuple[bytes | None, bytes | None, int]],
                                          transactional: bool) -> None:
    base_ts = 1_600_000_000_000
    data = _kafka_python_batch([(i, base_ts + dt, k, v, []) for i, (k, v, dt) in enumerate(rows)],
                               transactional=transactional, producer_id=42 if transactional else -1,
                               producer_epoch=0 if transactional else -1)
    batch = decode_batch(data)
    assert batch.is_transactional == transactional
    assert [(r.offset, r.timestamp_ms, r.key, r.value) for r in batch.records] == [
        (i, base_ts + dt, k, v) for i, (k, v, dt) in enumerate(rows)]


def test_decoded_objects_are_ordinary_frozen_dataclasses() -> None:
    batch = decode_batch(encode_new_batch([(b"k", b"v")], base_offset=3, timestamp_ms=9))
    record = batch.records[0]
    assert type(batch) is RecordBatch and type(record) is Record
    assert record == Record(3, 9, b"k", b"v") and hash(record) == hash(Record(3, 9, b"k", b"v"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.offset = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.base_offset = 4  # type: ignore[misc]
    assert dataclasses.replace(record, offset=4).offset == 4
