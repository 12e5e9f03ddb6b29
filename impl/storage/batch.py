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
Decoding is ``batch_decoder``'s (``BatchDecoder``, ``decode_batch``, ``decode_batches``); this module owns what it
decodes into and reports (``Record``, ``RecordBatch``, ``DecodeStop``, ``BatchSpan``, ``LastValues``).
Must not import ``kcoord.model``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, Final

from crc32c import crc32c

from ._varint import zigzag_varint

if TYPE_CHECKING:
    from _typeshed import IdentityFunction

try:  # mypy_extensions comes with mypy (the test extra); kcoord runs without it
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover
    def mypyc_attr(*attrs: str, **kwattrs: object) -> IdentityFunction:
        """A no-op: `@mypyc_attr(native_class=False)` only tells mypyc (benchmarks/compile_hot.py, which compiles
        this module ahead of time) to keep a class a plain Python class."""
        return lambda cls: cls

__all__ = [
    "BATCH_OVERHEAD",
    "LOG_OVERHEAD",
    "MAGIC",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
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
_HEADER_TO_CRC = struct.Struct(">qiibI")  # `_HEADER` up to and with the CRC ...
_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")  # ... and after it (what the CRC-32C covers, with the records)
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


# a plain class even when compiled: the decoder relabels slot twins (`obj.__class__ = cls`,
# _record_loops.unchecked_builder), which a native class forbids; the same for RecordBatch and BatchSpan
@mypyc_attr(native_class=False)
@dataclass(frozen=True, slots=True)
class Record:
    """One record with its absolute offset and timestamp; the on-disk deltas are derived from the batch."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


@mypyc_attr(native_class=False)
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
    try:  # the part the CRC-32C covers first (attributes to the record count), then the part before it
        tail = _HEADER_AFTER_CRC.pack(attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
                                      producer_epoch, base_sequence, count)
        return _HEADER_TO_CRC.pack(base_offset, length, partition_leader_epoch, MAGIC,
                                   crc32c(records, crc32c(tail))) + tail + records
    except struct.error as e:
        raise RecordFormatError(f"batch header field out of range: {e}") from e


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


def moved(encoded: bytes, base_offset: int, partition_leader_epoch: int) -> bytes:
    """An encoded batch moved to `base_offset` and stamped with `partition_leader_epoch`: the same bytes as encoding
    the batch with those two fields changed (its records hold offset deltas, and the CRC-32C covers neither field:
    it starts at the attributes), as Kafka's leader assigns offsets in place."""
    out = bytearray(encoded)
    _BASE_OFFSET.pack_into(out, 0, base_offset)
    _LEADER_EPOCH.pack_into(out, _LEADER_EPOCH_OFFSET, partition_leader_epoch)
    return bytes(out)


_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_OFFSET = 12


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


@mypyc_attr(native_class=False)
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


def out_of_order(position: int, base_offset: int, expected: int) -> DecodeStop:
    """Where a scan stops at a batch whose base offset is below the end of the batches before it."""
    return DecodeStop(position, StopReason.CORRUPT, f"batch at position {position} has base offset {base_offset}, "
                      f"below the expected {expected}")
