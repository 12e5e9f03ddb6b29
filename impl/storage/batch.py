"""Kafka v2 record batches (magic 2): the byte format of every coordinator log segment.

Owns encoding and decoding of batches, their records, and control records (transaction markers), following
``DefaultRecordBatch``/``DefaultRecord``/``ControlRecordType``/``EndTransactionMarker`` in Apache Kafka. Pure
functions over bytes, no I/O. The coordinators write uncompressed batches (their topics enforce
``compression.type=none``); a compressed batch (a producer's, on a data partition) is decoded through
``compression.decompress`` and keeps the producer's compressed bytes (``RecordBatch.compressed_records``), which
encoding writes back unchanged, as Kafka stores a batch whose codec the topic accepts.

Batch layout (big-endian; the CRC-32C covers ``attributes`` to the end of the batch)::

    base_offset int64 | length int32 (bytes after this field) | partition_leader_epoch int32 | magic int8 (=2)
    | crc uint32 | attributes int16 | last_offset_delta int32 | base_timestamp int64 | max_timestamp int64
    | producer_id int64 | producer_epoch int16 | base_sequence int32 | records_count int32 | records...

Record layout: ``length varint | attributes int8 | timestamp_delta varlong | offset_delta varint |
key_length varint (-1 = null) | key | value_length varint | value | header_count varint | headers``.

Records carry absolute offsets and timestamps; the on-disk deltas are derived from the batch when encoding.
Decoding is on the log-load hot path (see ``BatchDecoder.located``): header checks, record parsing and object
construction share one loop, one- and two-byte varints are decoded inline, and frozen objects are built through
a slot-compatible twin (``_unchecked_builder``). Must not import ``kcoord.model``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields, make_dataclass, replace
from enum import Enum, IntEnum
from typing import Any, Final

from crc32c import crc32c

from ._varint import VarintError, read_uvarint, read_zigzag, zigzag_varint
from .compression import CODEC_NAMES, DecompressionError, decompress

__all__ = [
    "BATCH_OVERHEAD",
    "LOG_OVERHEAD",
    "MAGIC",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BatchDecoder",
    "BatchSpan",
    "ControlType",
    "DecodeStop",
    "EndTxnMarker",
    "Header",
    "LastValues",
    "Record",
    "RecordBatch",
    "RecordFormatError",
    "StopReason",
    "TimestampType",
    "UnsupportedCompressionError",
    "decode_batch",
    "decode_batches",
    "decode_end_txn_marker",
    "encode_batch",
    "encode_new_batch",
    "end_txn_marker_entry",
    "out_of_order",
]

MAGIC: Final = 2
LOG_OVERHEAD: Final = 12
"""base_offset + length: the bytes not counted by the length field."""
BATCH_OVERHEAD: Final = 61
"""Header size up to and including records_count."""
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_PARTITION_LEADER_EPOCH: Final = -1
NO_TIMESTAMP: Final = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
# The header fields a last-value load needs: base offset, length, leader epoch, magic, CRC, attributes, last offset
# delta, (timestamps, producer id and epoch, base sequence skipped), record count.
_LOAD_HEADER = struct.Struct(">qiibIhi30xi")
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MIN_LENGTH = BATCH_OVERHEAD - LOG_OVERHEAD

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_FLAG = 0x08
_TRANSACTIONAL_FLAG = 0x10
_CONTROL_FLAG = 0x20
_DELETE_HORIZON_FLAG = 0x40
_NOT_INDEXED: Final = -(1 << 62)  # LastValues.indexed_at before a segment's first batch
_NOT_PLAIN = _COMPRESSION_MASK | _CONTROL_FLAG  # a batch a last-value load hands back whole

_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")
_CONTROL_KEY_VERSION = 0
_END_TXN_MARKER_VERSION = 0

# Zigzag varints of small values, precomputed: the encoder's lengths and offset deltas are almost always small.
_SMALL_VARINTS: Final = tuple(zigzag_varint(i) for i in range(1 << 13))
_NULL_LENGTH: Final = zigzag_varint(-1)


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(IntEnum):
    """``ControlRecordType`` ids used by transaction markers (the KRaft-only types are not written here)."""

    ABORT = 0
    COMMIT = 1


class RecordFormatError(ValueError):
    """Bytes or arguments that are not a valid v2 batch/record (our input, not a torn file tail)."""


class UnsupportedCompressionError(RecordFormatError):
    """A batch names a compression codec Kafka does not define (attributes bits 0-2 above 4)."""


Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Record:
    """One record with its absolute offset and timestamp; the on-disk deltas are derived from the batch."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded (or to-be-encoded) v2 batch. ``last_offset_delta`` is explicit because compaction keeps it."""

    base_offset: int
    records: tuple[Record, ...]
    last_offset_delta: int
    base_timestamp_ms: int
    max_timestamp_ms: int
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    is_transactional: bool = False
    is_control: bool = False
    has_delete_horizon: bool = False
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    compression: int = 0
    """The codec (attributes bits 0-2: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
    compressed_records: bytes | None = None
    """For a compressed batch, its records section as written (``records`` are its decompressed contents)."""

    @classmethod
    def of(
        cls,
        records: Sequence[Record],
        *,
        base_offset: int | None = None,
        last_offset_delta: int | None = None,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        is_transactional: bool = False,
        is_control: bool = False,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
    ) -> RecordBatch:
        """A CREATE_TIME batch whose offsets and timestamps are derived from ``records`` (Kafka's builder rules)."""
        if not records and (base_offset is None or last_offset_delta is None):
            raise RecordFormatError("an empty batch needs an explicit base_offset and last_offset_delta")
        base = records[0].offset if base_offset is None else base_offset
        lod = records[-1].offset - base if last_offset_delta is None else last_offset_delta
        return cls(
            base_offset=base,
            records=tuple(records),
            last_offset_delta=lod,
            base_timestamp_ms=records[0].timestamp_ms if records else NO_TIMESTAMP,
            max_timestamp_ms=max(r.timestamp_ms for r in records) if records else NO_TIMESTAMP,
            partition_leader_epoch=partition_leader_epoch,
            is_transactional=is_transactional,
            is_control=is_control,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
        )

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def attributes(self) -> int:
        return (
            self.compression
            | (_TIMESTAMP_TYPE_FLAG if self.timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
            | (_TRANSACTIONAL_FLAG if self.is_transactional else 0)
            | (_CONTROL_FLAG if self.is_control else 0)
            | (_DELETE_HORIZON_FLAG if self.has_delete_horizon else 0)
        )

    @property
    def delete_horizon_ms(self) -> int | None:
        """When set (by Kafka's log cleaner), the base timestamp holds the tombstone delete horizon."""
        return self.base_timestamp_ms if self.has_delete_horizon else None


# ---------------------------------------------------------------------------------------------------- encoding


def _varint(value: int) -> bytes:
    return _SMALL_VARINTS[value] if 0 <= value < (1 << 13) else zigzag_varint(value)


def _bytes_field(data: bytes | None) -> tuple[bytes, bytes]:
    if data is None:
        return _NULL_LENGTH, b""
    return _varint(len(data)), data


def _encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[Header]) -> bytes:
    parts = [b"\x00", _varint(timestamp_delta), _varint(offset_delta), *_bytes_field(key), *_bytes_field(value),
             _varint(len(headers))]
    for header_key, header_value in headers:
        parts.extend(_bytes_field(header_key.encode("utf-8")))
        parts.extend(_bytes_field(header_value))
    body = b"".join(parts)
    return _varint(len(body)) + body


def _seal(base_offset: int, partition_leader_epoch: int, attributes: int, last_offset_delta: int,
          base_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int, base_sequence: int,
          count: int, records: bytes) -> bytes:
    """Prefix ``records`` with the batch header and fill in the CRC-32C."""
    length = BATCH_OVERHEAD - LOG_OVERHEAD + len(records)
    try:
        header = bytearray(_HEADER.pack(base_offset, length, partition_leader_epoch, MAGIC, 0, attributes,
                                        last_offset_delta, base_timestamp, max_timestamp, producer_id,
                                        producer_epoch, base_sequence, count))
    except struct.error as e:
        raise RecordFormatError(f"batch header field out of range: {e}") from e
    crc = crc32c(records, crc32c(memoryview(header)[_ATTRIBUTES_OFFSET:]))
    struct.pack_into(">I", header, _CRC_OFFSET, crc)
    return bytes(header) + records


def encode_batch(batch: RecordBatch) -> bytes:
    """Encode ``batch`` exactly: explicit header fields, deltas derived from each record's offset and timestamp (a
    compressed batch: its compressed records as they were written, whose deltas do not change with the base)."""
    if batch.compressed_records is not None:
        if not batch.compression:
            raise RecordFormatError("compressed records without a compression codec")
        return _seal(batch.base_offset, batch.partition_leader_epoch, batch.attributes, batch.last_offset_delta,
                     batch.base_timestamp_ms, batch.max_timestamp_ms, batch.producer_id, batch.producer_epoch,
                     batch.base_sequence, len(batch.records), batch.compressed_records)
    if batch.compression:
        raise RecordFormatError("a compressed batch needs its compressed records (kcoord does not compress)")
    base_offset = batch.base_offset
    base_ts = batch.base_timestamp_ms
    previous = base_offset - 1
    parts = []
    for r in batch.records:
        if not previous < r.offset <= batch.last_offset:
            raise RecordFormatError(
                f"record offset {r.offset} must be increasing and within [{base_offset}, {batch.last_offset}]")
        previous = r.offset
        parts.append(_encode_record(r.offset - base_offset, r.timestamp_ms - base_ts, r.key, r.value, r.headers))
    return _seal(base_offset, batch.partition_leader_epoch, batch.attributes, batch.last_offset_delta, base_ts,
                 batch.max_timestamp_ms, batch.producer_id, batch.producer_epoch, batch.base_sequence,
                 len(batch.records), b"".join(parts))


def encode_new_batch(
    entries: Sequence[tuple[bytes | None, bytes | None]],
    *,
    base_offset: int,
    timestamp_ms: int,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """The append fast path: ``(key, value)`` entries at consecutive offsets, one timestamp, no headers.

    Produces the same bytes as ``encode_batch`` of the equivalent ``RecordBatch``.
    """
    if not entries:
        raise RecordFormatError("a new batch needs at least one record")
    if transactional and producer_id < 0:
        raise RecordFormatError(f"a transactional batch needs a producer id, got {producer_id}")
    small = _SMALL_VARINTS
    null = _NULL_LENGTH
    parts: list[bytes] = []
    for delta, (key, value) in enumerate(entries):
        body = b"".join((
            b"\x00\x00",  # attributes, timestamp delta 0
            small[delta] if delta < 8192 else zigzag_varint(delta),
            null if key is None else _varint(len(key)), key or b"",
            null if value is None else _varint(len(value)), value or b"",
            b"\x00",  # no headers
        ))
        parts.append(_varint(len(body)))
        parts.append(body)
    attributes = (_TRANSACTIONAL_FLAG if transactional else 0) | (_CONTROL_FLAG if control else 0)
    return _seal(base_offset, partition_leader_epoch, attributes, len(entries) - 1, timestamp_ms, timestamp_ms,
                 producer_id, producer_epoch, base_sequence, len(entries), b"".join(parts))


# ---------------------------------------------------------------------------------------------------- control records


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """The content of a COMMIT/ABORT control record."""

    control_type: ControlType
    coordinator_epoch: int


def end_txn_marker_entry(control_type: ControlType, coordinator_epoch: int) -> tuple[bytes, bytes]:
    """The ``(key, value)`` of a transaction marker record, for a control batch."""
    return (_CONTROL_KEY.pack(_CONTROL_KEY_VERSION, int(control_type)),
            _END_TXN_VALUE.pack(_END_TXN_MARKER_VERSION, coordinator_epoch))


def decode_end_txn_marker(record: Record) -> EndTxnMarker:
    """Decode a marker the way Kafka does: key and value versions above 0 are read as version 0."""
    key, value = record.key, record.value
    if key is None or len(key) < _CONTROL_KEY.size:
        raise RecordFormatError(f"control record key must have at least 4 bytes, got {key!r}")
    key_version, type_id = _CONTROL_KEY.unpack_from(key)
    if key_version < 0:
        raise RecordFormatError(f"invalid control record key version {key_version}")
    if type_id not in (ControlType.ABORT, ControlType.COMMIT):
        raise RecordFormatError(f"control record type {type_id} is not a transaction marker (expected 0 or 1)")
    if value is None or len(value) < _END_TXN_VALUE.size:
        raise RecordFormatError(f"end transaction marker value must have at least 6 bytes, got {value!r}")
    value_version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if value_version < 0:
        raise RecordFormatError(f"invalid end transaction marker version {value_version}")
    return EndTxnMarker(ControlType(type_id), coordinator_epoch)


# ---------------------------------------------------------------------------------------------------- decoding


class StopReason(Enum):
    END = "end"  # the buffer ended exactly after a whole batch
    TORN = "torn"  # the buffer ends inside a batch (partial write, or more bytes are needed)
    CORRUPT = "corrupt"  # a complete batch failed validation (length, magic, CRC, record structure)


@dataclass(frozen=True, slots=True)
class DecodeStop:
    """Where and why decoding stopped; ``position`` is the first byte not consumed (a file position)."""

    position: int
    reason: StopReason
    detail: str = ""


@dataclass(frozen=True, slots=True)
class BatchSpan:
    """A batch that passed the length/magic/CRC checks, located in the buffer, records not yet parsed."""

    position: int
    size_bytes: int
    base_offset: int
    last_offset: int



@dataclass(slots=True)
class LastValues:
    """What a last-value load (``BatchDecoder.last_values``) keeps across the chunks and segments of a log.

    ``latest`` maps every key to its last ``(value, offset)`` (a tombstone's value is None); ``next_offset`` is the
    offset the next batch must start at or after (a lower one stops the scan as corrupt) and ``indexed_at`` the file
    position of the last sparse-index entry (both per segment: see ``start_segment``); ``records`` counts the
    records put into ``latest`` and ``batches`` every valid batch scanned (plain or yielded); ``top_leader_epoch``
    is the largest partition leader epoch of any batch scanned. ``trusted_below`` is the log's recovery point: a
    plain batch whose last offset is below it (and that follows the batches before it) was fsynced and validated
    before, so its CRC is not computed again (as Kafka does not re-validate its flushed segments); 0 trusts nothing.
    """

    latest: dict[bytes, tuple[bytes | None, int]] = field(default_factory=dict)
    next_offset: int = 0
    records: int = 0
    batches: int = 0
    top_leader_epoch: int = -1
    indexed_at: int = _NOT_INDEXED  # file position of the last sparse-index entry
    trusted_below: int = 0

    def start_segment(self, base_offset: int) -> None:
        """Begin a segment: its first batch is indexed and starts at ``base_offset`` or later."""
        self.next_offset, self.indexed_at = base_offset, _NOT_INDEXED


class _Malformed(Exception):
    """A CRC-valid batch whose records do not parse (reported as ``StopReason.CORRUPT``)."""


class _NotPlain(Exception):
    """``BatchDecoder.last_values``: this batch is for the careful path (it decodes it, or says why it is bad)."""


def _unchecked_builder(cls: type[Any]) -> type[Any]:
    """A mutable class with exactly ``cls``'s slots, used to build instances of the frozen dataclass ``cls`` fast.

    A frozen dataclass sets every field through ``object.__setattr__``; for ``Record`` that costs ~1.4 µs on the
    reference machine, more than parsing the record. Decoding builds this twin instead (~0.4 µs) and relabels it
    with ``obj.__class__ = cls``, which CPython permits because the slot layouts are identical. The twin never
    escapes this module: callers only ever see ``cls`` instances, immutable as usual.
    """
    twin = make_dataclass(f"_{cls.__name__}Builder", [(f.name, Any) for f in fields(cls)], slots=True)
    assert getattr(twin, "__slots__", None) == cls.__slots__, f"slot layouts differ for {cls.__name__}"
    return twin


_RecordBuilder = _unchecked_builder(Record)
_BatchBuilder = _unchecked_builder(RecordBatch)
_SpanBuilder = _unchecked_builder(BatchSpan)


def _attribute_flags(attributes: int) -> tuple[TimestampType, bool, bool, bool]:
    """(timestamp type, transactional, control, delete horizon) of an uncompressed batch's attributes."""
    return (TimestampType.LOG_APPEND_TIME if attributes & _TIMESTAMP_TYPE_FLAG else TimestampType.CREATE_TIME,
            bool(attributes & _TRANSACTIONAL_FLAG), bool(attributes & _CONTROL_FLAG),
            bool(attributes & _DELETE_HORIZON_FLAG))


# Every uncompressed attributes value with only the defined bits set; others go through _attribute_flags.
_FLAGS: Final = {a: _attribute_flags(a) for a in range(0x80) if not a & _COMPRESSION_MASK}


def _decode_headers(buf: bytes, pos: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_zigzag(buf, pos)
    if count < 0:
        raise _Malformed(f"negative header count {count}")
    headers = []
    for _ in range(count):
        n, pos = read_zigzag(buf, pos)
        if n < 0:
            raise _Malformed("null header key")
        key = buf[pos:pos + n].decode("utf-8")
        pos += n
        n, pos = read_zigzag(buf, pos)
        value = None if n < 0 else buf[pos:pos + n]
        pos += max(n, 0)
        headers.append((key, value))
    return tuple(headers), pos


def _diagnose(buf: bytes, pos: int, file_base: int) -> DecodeStop | None:
    """Why the batch at ``pos`` cannot be taken (None if it can): the careful path behind the fast loops."""
    available = len(buf) - pos
    where = file_base + pos
    if available == 0:
        return DecodeStop(where, StopReason.END)
    if available < LOG_OVERHEAD:
        return DecodeStop(where, StopReason.TORN, f"{available} bytes, less than a batch's 12-byte prefix")
    length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
    if length < _MIN_LENGTH:
        return DecodeStop(where, StopReason.CORRUPT, f"batch length {length} < minimum {_MIN_LENGTH}")
    size = LOG_OVERHEAD + length
    if size > available:
        return DecodeStop(where, StopReason.TORN, f"batch of {size} bytes but only {available} remain")
    (_, _, _, magic, stored_crc, _, last_offset_delta, _, _, _, _, _, count) = _HEADER.unpack_from(buf, pos)
    if magic != MAGIC:
        return DecodeStop(where, StopReason.CORRUPT, f"magic {magic}, expected {MAGIC}")
    computed = crc32c(memoryview(buf)[pos + _ATTRIBUTES_OFFSET:pos + size])
    if stored_crc != computed:
        return DecodeStop(where, StopReason.CORRUPT,
                          f"CRC mismatch: stored {stored_crc:#010x}, computed {computed:#010x}")
    if last_offset_delta < 0 or count < 0:
        return DecodeStop(where, StopReason.CORRUPT,
                          f"negative last offset delta {last_offset_delta} or record count {count}")
    return None


def decode_batch(buf: bytes, pos: int = 0, *, file_base: int = 0) -> RecordBatch:
    """Decode the one whole batch at ``buf[pos:]``, raising ``RecordFormatError`` if it is torn or invalid."""
    stop = _diagnose(buf, pos, file_base)
    if stop is not None:
        raise RecordFormatError(f"no valid batch at position {stop.position}: {stop.reason.value} {stop.detail}")
    size = LOG_OVERHEAD + int.from_bytes(buf[pos + 8:pos + 12], "big")
    decoder = BatchDecoder(buf[pos:pos + size], file_base + pos)
    for _position, _size, batch in decoder.located():
        return batch
    raise RecordFormatError(f"batch at position {decoder.stop.position}: {decoder.stop.detail}")


def _decompressed_batch(buf: bytes, pos: int, end: int) -> RecordBatch:
    """The CRC-valid compressed batch at ``buf[pos:end]``: its records decompressed and parsed as an uncompressed
    batch of the same header would be, its compressed bytes kept. Raises ``UnsupportedCompressionError`` for a codec
    Kafka does not define, ``RecordFormatError`` for records that do not decompress or parse."""
    (base_offset, _, leader_epoch, _, _, attributes, last_offset_delta, base_ts, max_ts, producer_id, producer_epoch,
     base_sequence, count) = _HEADER.unpack_from(buf, pos)
    codec = attributes & _COMPRESSION_MASK
    if codec not in CODEC_NAMES:
        raise UnsupportedCompressionError(f"batch attributes name compression codec {codec}, which Kafka does not "
                                          "define (1 gzip, 2 snappy, 3 lz4, 4 zstd)")
    if attributes & _CONTROL_FLAG:
        raise RecordFormatError("a control batch is never compressed")
    payload = bytes(buf[pos + BATCH_OVERHEAD:end])
    try:
        plain = decompress(codec, payload)
    except DecompressionError as e:
        raise RecordFormatError(str(e)) from None
    inner = BatchDecoder(_seal(base_offset, leader_epoch, attributes & ~_COMPRESSION_MASK, last_offset_delta, base_ts,
                               max_ts, producer_id, producer_epoch, base_sequence, count, plain))
    batches = [batch for _, _, batch in inner.located()]
    if len(batches) != 1 or inner.stop.reason is not StopReason.END:
        raise RecordFormatError(f"its {CODEC_NAMES[codec]} records do not parse: {inner.stop.detail}")
    return replace(batches[0], compression=codec, compressed_records=payload)


class BatchDecoder:
    """Iterates the valid batches of a buffer and records why it stopped.

    Iteration never raises on a torn or corrupt tail: it ends, and ``stop`` gives the position (a file position,
    ``start_offset_in_file`` + index) of the first byte not consumed and the reason, so the caller can truncate
    there (or read more bytes, when the buffer is a chunk of a larger file). A compressed batch is decompressed (see
    ``RecordBatch.compressed_records``); one whose codec Kafka does not define raises ``UnsupportedCompressionError``.
    """

    __slots__ = ("_buf", "_file_base", "_stop")

    def __init__(self, buf: bytes, start_offset_in_file: int = 0) -> None:
        self._buf = bytes(buf)
        self._file_base = start_offset_in_file
        self._stop: DecodeStop | None = None

    @property
    def stop(self) -> DecodeStop:
        """Where and why iteration ended; only known once iteration has finished."""
        if self._stop is None:
            raise RuntimeError("BatchDecoder.stop is only known after iteration has finished")
        return self._stop

    def spans(self) -> Iterator[BatchSpan]:
        """Framing, magic and CRC validation without parsing records: what recovery on open needs."""
        buf, base, pos = self._buf, self._file_base, 0
        n = len(buf)
        view = memoryview(buf)
        unpack, builder, span_cls = _HEADER.unpack_from, _SpanBuilder, BatchSpan
        while n - pos >= BATCH_OVERHEAD:
            (base_offset, length, _, magic, crc, _, last_offset_delta, _, _, _, _, _, count) = unpack(buf, pos)
            end = pos + length + LOG_OVERHEAD
            if (length < _MIN_LENGTH or end > n or magic != MAGIC or last_offset_delta < 0 or count < 0
                    or crc32c(view[pos + _ATTRIBUTES_OFFSET:end]) != crc):
                break
            span = builder(base + pos, end - pos, base_offset, base_offset + last_offset_delta)
            span.__class__ = span_cls
            yield span
            pos = end
        self._stop = _diagnose(buf, pos, base)
        assert self._stop is not None, f"fast path rejected a batch the careful path accepts at {base + pos}"

    def __iter__(self) -> Iterator[RecordBatch]:
        for _position, _size, batch in self.located():
            yield batch

    def located(self, start: int = 0) -> Iterator[tuple[int, int, RecordBatch]]:
        """Like iteration (from ``start``, an index into the buffer), but yields ``(file position, size, batch)``.

        This is the hot loop of a log load, so header checks, record parsing and object construction are fused
        into one frame: one- and two-byte varints are decoded inline and longer ones through ``read_uvarint``;
        every record must end exactly where its length prefix says, and the records exactly at the batch end.
        """
        buf, base, pos = self._buf, self._file_base, start
        n = len(buf)
        view = memoryview(buf)
        unpack, flags_of = _HEADER.unpack_from, _FLAGS
        record_builder, record_cls, batch_builder, batch_cls = _RecordBuilder, Record, _BatchBuilder, RecordBatch
        while n - pos >= BATCH_OVERHEAD:
            (base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta, base_ts, max_ts,
             producer_id, producer_epoch, base_sequence, count) = unpack(buf, pos)
            end = pos + length + LOG_OVERHEAD
            if (length < _MIN_LENGTH or end > n or magic != MAGIC or last_offset_delta < 0 or count < 0
                    or crc32c(view[pos + _ATTRIBUTES_OFFSET:end]) != crc):
                break
            if attributes & _COMPRESSION_MASK:
                try:
                    compressed = _decompressed_batch(buf, pos, end)
                except RecordFormatError as e:
                    if isinstance(e, UnsupportedCompressionError):
                        raise
                    self._stop = DecodeStop(base + pos, StopReason.CORRUPT, f"compressed batch: {e}")
                    return
                yield base + pos, end - pos, compressed
                pos = end
                continue
            timestamp_type, transactional, control, delete_horizon = (flags_of.get(attributes)
                                                                      or _attribute_flags(attributes))
            fixed_ts = max_ts if timestamp_type else None  # LOG_APPEND_TIME: records carry the batch's max timestamp
            records: list[Record] = []
            append = records.append
            p = pos + BATCH_OVERHEAD
            try:
                for _ in range(count):
                    b = buf[p]
                    if b < 0x80:
                        p += 1
                    elif buf[p + 1] < 0x80:
                        b = (b & 0x7F) | (buf[p + 1] << 7)
                        p += 2
                    else:
                        b, p = read_uvarint(buf, p)
                    record_end = p + (b >> 1)
                    if b & 1 or record_end > end:
                        raise _Malformed(f"record length {(b >> 1) ^ -(b & 1)} at {base + p} does not fit the batch")
                    p += 1  # the unused attributes byte
                    t = buf[p]  # timestamp delta
                    if t < 0x80:
                        p += 1
                    elif buf[p + 1] < 0x80:
                        t = (t & 0x7F) | (buf[p + 1] << 7)
                        p += 2
                    else:
                        t, p = read_uvarint(buf, p)
                    o = buf[p]  # offset delta (zigzag: two bytes from delta 64 on)
                    if o < 0x80:
                        p += 1
                    elif buf[p + 1] < 0x80:
                        o = (o & 0x7F) | (buf[p + 1] << 7)
                        p += 2
                    else:
                        o, p = read_uvarint(buf, p)
                    b = buf[p]
                    if b < 0x80:
                        p += 1
                    elif buf[p + 1] < 0x80:
                        b = (b & 0x7F) | (buf[p + 1] << 7)
                        p += 2
                    else:
                        b, p = read_uvarint(buf, p)
                    if b & 1:
                        if b != 1:
                            raise _Malformed(f"negative key length {(b >> 1) ^ -1} at {base + p}")
                        key = None
                    else:
                        key = buf[p:p + (b >> 1)]
                        p += b >> 1
                    b = buf[p]
                    if b < 0x80:
                        p += 1
                    elif buf[p + 1] < 0x80:
                        b = (b & 0x7F) | (buf[p + 1] << 7)
                        p += 2
                    else:
                        b, p = read_uvarint(buf, p)
                    if b & 1:
                        if b != 1:
                            raise _Malformed(f"negative value length {(b >> 1) ^ -1} at {base + p}")
                        value = None
                    else:
                        value = buf[p:p + (b >> 1)]
                        p += b >> 1
                    if buf[p] == 0:
                        headers: tuple[Header, ...] = ()
                        p += 1
                    else:
                        headers, p = _decode_headers(buf, p)
                    if p != record_end:
                        raise _Malformed(f"record ends at {base + p}, its length prefix says {base + record_end}")
                    record = record_builder(base_offset + ((o >> 1) ^ -(o & 1)),
                                            base_ts + ((t >> 1) ^ -(t & 1)) if fixed_ts is None else fixed_ts,
                                            key, value, headers)
                    record.__class__ = record_cls
                    append(record)
                if p != end:
                    raise _Malformed(f"{end - p} bytes left over after {count} records")
            except (_Malformed, IndexError, VarintError, UnicodeDecodeError) as e:
                self._stop = DecodeStop(base + pos, StopReason.CORRUPT, f"malformed record: {e}")
                return
            batch = batch_builder(base_offset, tuple(records), last_offset_delta, base_ts, max_ts, leader_epoch,
                                  timestamp_type, transactional, control, delete_horizon, producer_id, producer_epoch,
                                  base_sequence, 0, None)
            batch.__class__ = batch_cls
            yield base + pos, end - pos, batch
            pos = end
        self._stop = _diagnose(buf, pos, base)
        assert self._stop is not None, f"fast path rejected a batch the careful path accepts at {base + pos}"

    def last_values(self, into: LastValues, index: Callable[[int, int], None], index_interval_bytes: int
                    ) -> Iterator[tuple[int, int, RecordBatch]]:
        """A load of a compacted topic's view: for every valid batch, the last value per key, without batch objects.

        Validates each batch as ``located`` does (length, magic, CRC, record structure) and also that its base
        offset is not below ``into.next_offset`` (a lower one stops the scan as ``CORRUPT``), except that an in-order
        batch below ``into.trusted_below`` (the recovery point) is not CRC-checked. The records of a plain batch
        (every record with a key and no headers, uncompressed, not control) go into ``into.latest``; any other
        valid batch is decoded by ``located`` and yielded whole as ``(position, size, batch)``, in its place in the
        log, for the caller to apply (a compressed batch raises, as in ``located``); anything the plain parse does
        not accept goes that careful way too, which reports a malformed batch exactly as ``located`` does.
        ``index(base_offset, position)`` is called for the first valid batch that starts ``index_interval_bytes``
        or more after ``into.indexed_at`` (a sparse offset index, as Kafka's ``index.interval.bytes``), which then
        moves there. This is the load path of a coordinator log (one-record batches from fsync per batch, larger
        ones from group commit): per record it builds the key, the value and their entry, nothing else.
        """
        buf, base, pos = self._buf, self._file_base, 0
        n = len(buf)
        unpack, crc_of, uvarint = _LOAD_HEADER.unpack_from, crc32c, read_uvarint
        overhead, log_overhead, crc_start = BATCH_OVERHEAD, LOG_OVERHEAD, _ATTRIBUTES_OFFSET  # locals: the loop's
        min_length, not_plain = _MIN_LENGTH, _NOT_PLAIN  # constants, looked up once
        records_start = BATCH_OVERHEAD - _ATTRIBUTES_OFFSET  # where the records begin in the CRC-covered body
        latest, trusted = into.latest, into.trusted_below
        next_offset, top_epoch = into.next_offset, into.top_leader_epoch
        index_from = into.indexed_at - base + index_interval_bytes  # the next batch at or after this is indexed
        # records put into `latest`: one per batch but the careful ones, plus `extra` for larger plain batches
        batches = careful = extra = 0
        try:
            while n - pos >= overhead:
                (base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta, count) = unpack(buf,
                                                                                                              pos)
                end = pos + length + log_overhead
                if length < min_length or end > n or magic != MAGIC or last_offset_delta < 0 or count < 0:
                    break
                plain = count > 0 and not attributes & not_plain
                if plain:  # each record: length, attributes, timestamp delta, offset delta, key, value, headers
                    body = buf[pos + crc_start:end]  # a copy of a small batch beats a memoryview, and its positions
                    # are small ints (no allocation per step of the parse below); below the recovery point an
                    # in-order batch is trusted, anything else is checked as `located` checks it (CRC, then order)
                    if base_offset < next_offset or base_offset + last_offset_delta >= trusted:
                        if crc_of(body) != crc:
                            break
                        if base_offset < next_offset:
                            self._stop = out_of_order(base + pos, base_offset, next_offset)
                            return
                    size = length + log_overhead - crc_start  # len(body)
                    p = records_start
                    try:
                        if count == 1:  # the common case (fsync per batch), kept apart: ~9 % faster than the loop
                            b = body[p]
                            if b < 0x80:
                                p += 1
                            elif body[p + 1] < 0x80:
                                b = (b & 0x7F) | (body[p + 1] << 7)
                                p += 2
                            else:
                                b, p = uvarint(body, p)
                            if p + (b >> 1) != size or b & 1:  # the record must fill the batch: else the careful way
                                raise _NotPlain
                            p += 1  # the unused attributes byte
                            if body[p] < 0x80:  # timestamp delta: skipped
                                p += 1
                            elif body[p + 1] < 0x80:
                                p += 2
                            else:
                                p = uvarint(body, p)[1]
                            o = body[p]  # offset delta
                            if o < 0x80:
                                p += 1
                            elif body[p + 1] < 0x80:
                                o = (o & 0x7F) | (body[p + 1] << 7)
                                p += 2
                            else:
                                o, p = uvarint(body, p)
                            b = body[p]  # key length; odd = null key (or malformed): the careful way
                            if b < 0x80:
                                p += 1
                            elif body[p + 1] < 0x80:
                                b = (b & 0x7F) | (body[p + 1] << 7)
                                p += 2
                            else:
                                b, p = uvarint(body, p)
                            if b & 1:
                                raise _NotPlain
                            key = body[p:p + (b >> 1)]
                            p += b >> 1
                            b = body[p]  # value length; -1 = a tombstone
                            if b < 0x80:
                                p += 1
                            elif body[p + 1] < 0x80:
                                b = (b & 0x7F) | (body[p + 1] << 7)
                                p += 2
                            else:
                                b, p = uvarint(body, p)
                            if b & 1:
                                if b != 1:
                                    raise _NotPlain
                                value = None
                            else:
                                value = body[p:p + (b >> 1)]
                                p += b >> 1
                            if p + 1 != size or body[p]:  # headers, or a record that does not end where it says
                                raise _NotPlain
                            latest[key] = (value, base_offset + ((o >> 1) ^ -(o & 1)))
                        else:  # several records (group commit): staged, stored only once the whole batch parsed
                            staged = {}
                            for remaining in range(count - 1, -1, -1):
                                b = body[p]
                                if b < 0x80:
                                    p += 1
                                elif body[p + 1] < 0x80:
                                    b = (b & 0x7F) | (body[p + 1] << 7)
                                    p += 2
                                else:
                                    b, p = uvarint(body, p)
                                record_end = p + (b >> 1)
                                # the records must fill the batch exactly; anything else goes the careful way
                                if b & 1 or record_end > size or (not remaining and record_end != size):
                                    raise _NotPlain
                                p += 1  # the unused attributes byte
                                if body[p] < 0x80:  # timestamp delta: skipped
                                    p += 1
                                elif body[p + 1] < 0x80:
                                    p += 2
                                else:
                                    p = uvarint(body, p)[1]
                                o = body[p]  # offset delta
                                if o < 0x80:
                                    p += 1
                                elif body[p + 1] < 0x80:
                                    o = (o & 0x7F) | (body[p + 1] << 7)
                                    p += 2
                                else:
                                    o, p = uvarint(body, p)
                                b = body[p]  # key length; odd = null key (or malformed): the careful way
                                if b < 0x80:
                                    p += 1
                                elif body[p + 1] < 0x80:
                                    b = (b & 0x7F) | (body[p + 1] << 7)
                                    p += 2
                                else:
                                    b, p = uvarint(body, p)
                                if b & 1:
                                    raise _NotPlain
                                key = body[p:p + (b >> 1)]
                                p += b >> 1
                                b = body[p]  # value length; -1 = a tombstone
                                if b < 0x80:
                                    p += 1
                                elif body[p + 1] < 0x80:
                                    b = (b & 0x7F) | (body[p + 1] << 7)
                                    p += 2
                                else:
                                    b, p = uvarint(body, p)
                                if b & 1:
                                    if b != 1:
                                        raise _NotPlain
                                    value = None
                                else:
                                    value = body[p:p + (b >> 1)]
                                    p += b >> 1
                                if p + 1 != record_end or body[p]:  # headers, or a record not ending where it says
                                    raise _NotPlain
                                p = record_end
                                staged[key] = (value, base_offset + ((o >> 1) ^ -(o & 1)))
                            latest.update(staged)
                            extra += count - 1  # (`batches` counts the batch's first record below)
                    except (_NotPlain, IndexError, VarintError):
                        plain = False  # nothing was stored: the careful path decodes it, or says why it is bad
                whole: tuple[int, int, RecordBatch] | None = None
                if not plain:  # the careful path decodes this batch, or sets `stop` to why it cannot
                    whole = next(self.located(pos), None)
                    if whole is None:
                        return
                    if base_offset < next_offset:
                        self._stop = out_of_order(base + pos, base_offset, next_offset)
                        return
                    careful += 1
                if pos >= index_from:
                    index(base_offset, base + pos)
                    index_from = pos + index_interval_bytes
                next_offset = base_offset + last_offset_delta + 1
                batches += 1
                if leader_epoch > top_epoch:
                    top_epoch = leader_epoch
                if whole is not None:
                    self._settle(into, next_offset, top_epoch, index_from + base - index_interval_bytes, batches,
                                 careful, extra)
                    batches = careful = extra = 0
                    yield whole
                pos = end
            self._stop = _diagnose(buf, pos, base)
            assert self._stop is not None, f"fast path rejected a batch the careful path accepts at {base + pos}"
        finally:
            self._settle(into, next_offset, top_epoch, index_from + base - index_interval_bytes, batches, careful,
                         extra)

    @staticmethod
    def _settle(into: LastValues, next_offset: int, top_epoch: int, indexed_at: int, batches: int,
                careful: int, extra: int) -> None:
        into.next_offset, into.top_leader_epoch, into.indexed_at = next_offset, top_epoch, indexed_at
        into.records += batches - careful + extra
        into.batches += batches


def out_of_order(position: int, base_offset: int, expected: int) -> DecodeStop:
    """Where a scan stops at a batch whose base offset is below the end of the batches before it."""
    return DecodeStop(position, StopReason.CORRUPT, f"batch at position {position} has base offset {base_offset}, "
                      f"below the expected {expected}")


def decode_batches(buf: bytes, start_offset_in_file: int = 0) -> BatchDecoder:
    """Decode every whole batch in ``buf``; see ``BatchDecoder`` for the stop semantics."""
    return BatchDecoder(buf, start_offset_in_file)
