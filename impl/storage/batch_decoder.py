"""Decoding Kafka v2 record batches (the format and its encoding are `batch`'s): what a log load, recovery and a
produce request's validation read.

Owns: `BatchDecoder` (the valid batches of a buffer and why it stopped: `spans` for recovery, `located` and iteration
for a careful load, `last_values` for a compacted topic's view), `decode_batch`, `decode_batches`, and the careful
checks behind the fast loops (`_diagnose`). A compressed batch is decompressed (`compression`). The record loops are
`_record_loops`': one record's parse, written once. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Final

from crc32c import crc32c

from ._record_loops import Malformed, NotPlain, parse_records, plain_record, plain_records, unchecked_builder
from ._varint import VarintError
from .batch import (
    _ATTRIBUTES_OFFSET,
    _COMPRESSION_MASK,
    _CONTROL_FLAG,
    _DELETE_HORIZON_FLAG,
    _HEADER,
    _MIN_LENGTH,
    _NOT_PLAIN,
    _TIMESTAMP_TYPE_FLAG,
    _TRANSACTIONAL_FLAG,
    BATCH_OVERHEAD,
    LOG_OVERHEAD,
    MAGIC,
    BatchSpan,
    DecodeStop,
    LastValues,
    RecordBatch,
    RecordFormatError,
    StopReason,
    TimestampType,
    UnsupportedCompressionError,
    _seal,
    out_of_order,
)
from .compression import CODEC_NAMES, DecompressionError, decompress

__all__ = ["BatchDecoder", "decode_batch", "decode_batches", "decode_only_batch"]

# The header fields a last-value load needs: base offset, length, leader epoch, magic, CRC, attributes, last offset
# delta, (timestamps, producer id and epoch, base sequence skipped), record count.
_LOAD_HEADER = struct.Struct(">qiibIhi30xi")
_BatchBuilder = unchecked_builder(RecordBatch)
_SpanBuilder = unchecked_builder(BatchSpan)


def _attribute_flags(attributes: int) -> tuple[TimestampType, bool, bool, bool]:
    """(timestamp type, transactional, control, delete horizon) of an uncompressed batch's attributes."""
    return (TimestampType.LOG_APPEND_TIME if attributes & _TIMESTAMP_TYPE_FLAG else TimestampType.CREATE_TIME,
            bool(attributes & _TRANSACTIONAL_FLAG), bool(attributes & _CONTROL_FLAG),
            bool(attributes & _DELETE_HORIZON_FLAG))


# Every uncompressed attributes value with only the defined bits set; others go through _attribute_flags.
_FLAGS: Final = {a: _attribute_flags(a) for a in range(0x80) if not a & _COMPRESSION_MASK}


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


def decode_only_batch(buf: bytes) -> RecordBatch | None:
    """``buf`` as exactly one valid uncompressed batch — the batch ``BatchDecoder(buf)`` would yield as its only one,
    stopping at ``END`` — or None for anything else (compressed, torn, corrupt, followed by more bytes...), which
    ``BatchDecoder`` then decodes or explains. A produce request's batch (one per partition) takes this path: the
    checks and the record parse of ``located``, without its generator and the closing ``_diagnose``."""
    n = len(buf)
    if n < BATCH_OVERHEAD:
        return None
    (base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta, base_ts, max_ts, producer_id,
     producer_epoch, base_sequence, count) = _HEADER.unpack_from(buf, 0)
    if (length + LOG_OVERHEAD != n or length < _MIN_LENGTH or magic != MAGIC or last_offset_delta < 0 or count < 0
            or attributes & _COMPRESSION_MASK or crc32c(memoryview(buf)[_ATTRIBUTES_OFFSET:]) != crc):
        return None
    timestamp_type, transactional, control, delete_horizon = _FLAGS.get(attributes) or _attribute_flags(attributes)
    try:
        records = parse_records(buf, BATCH_OVERHEAD, n, count, base_offset, base_ts,
                                max_ts if timestamp_type else None, 0)
    except (Malformed, IndexError, VarintError, UnicodeDecodeError):
        return None
    batch = _BatchBuilder(base_offset, tuple(records), last_offset_delta, base_ts, max_ts, leader_epoch, timestamp_type,
                          transactional, control, delete_horizon, producer_id, producer_epoch, base_sequence, 0, None)
    batch.__class__ = RecordBatch
    return batch  # type: ignore[no-any-return]


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

        This is the hot loop of a log load: the records of a batch are parsed by `parse_records` (one frame a batch,
        varints decoded inline: `_record_loops`); every record must end exactly where its length prefix says, and
        the records exactly at the batch end.
        """
        buf, base, pos = self._buf, self._file_base, start
        n = len(buf)
        view = memoryview(buf)
        unpack, flags_of, parse = _HEADER.unpack_from, _FLAGS, parse_records
        batch_builder, batch_cls = _BatchBuilder, RecordBatch
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
            try:
                records = parse(buf, pos + BATCH_OVERHEAD, end, count, base_offset, base_ts, fixed_ts, base)
            except (Malformed, IndexError, VarintError, UnicodeDecodeError) as e:
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
        unpack, crc_of, one, many = _LOAD_HEADER.unpack_from, crc32c, plain_record, plain_records
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
                    # are small ints (no allocation per step of the parse); below the recovery point an
                    # in-order batch is trusted, anything else is checked as `located` checks it (CRC, records, then
                    # order)
                    if (base_offset < next_offset or base_offset + last_offset_delta >= trusted) and \
                            crc_of(body) != crc:
                        break
                    if base_offset < next_offset:  # refused below, once decoded as `located` decodes it (so a
                        plain = False  # batch also malformed is called malformed, as the careful load calls it)
                    else:
                        size = length + log_overhead - crc_start  # len(body)
                        try:
                            if count == 1:  # the common case (fsync per batch)
                                one(body, records_start, size, base_offset, latest)
                            else:  # several records (group commit): stored only once the whole batch parsed
                                many(body, records_start, size, count, base_offset, latest)
                                extra += count - 1  # (`batches` counts the batch's first record below)
                        except (NotPlain, Malformed, IndexError, VarintError, UnicodeDecodeError):
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


def decode_batches(buf: bytes, start_offset_in_file: int = 0) -> BatchDecoder:
    """Decode every whole batch in ``buf``; see ``BatchDecoder`` for the stop semantics."""
    return BatchDecoder(buf, start_offset_in_file)
