"""`decode_produce_batch` takes a produce request's usual batch (one valid uncompressed batch, exactly the partition
data) by `decode_only_batch` and everything else by `BatchDecoder`; the answer — the batch, or the error and its
message — is the one the decoder alone gave (`_reference`: the function before the fast path, kept verbatim), over
valid batches and torn, corrupt, re-stamped, compressed, doubled and padded ones, from a client and from the group
coordinator."""

from __future__ import annotations

import gzip
import struct

import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from kcoord.impl.errors import Errors
from kcoord.impl.partition.types import AppendOrigin
from kcoord.impl.partition.validation import Rejected, decode_produce_batch
from kcoord.impl.storage.batch import (
    BATCH_OVERHEAD,
    MAGIC,
    Record,
    RecordBatch,
    StopReason,
    UnsupportedCompressionError,
    _seal,
    encode_batch,
)
from kcoord.impl.storage.batch_decoder import BatchDecoder, decode_only_batch
from tests.impl.storage.test_batch import record_batches

MAX_BYTES = 4_000
_MAGIC_POSITION = 16


def _reference(data: bytes, origin: AppendOrigin, *, max_message_bytes: int) -> RecordBatch | Rejected:
    """decode_produce_batch as it was before `decode_only_batch` (1f496b8), for bytes."""
    raw = bytes(data)
    if len(raw) > _MAGIC_POSITION and raw[_MAGIC_POSITION] != MAGIC:
        return Rejected(Errors.INVALID_RECORD, f"produce requests must use record batch magic {MAGIC}, got "
                                          f"{raw[_MAGIC_POSITION]}")
    decoder = BatchDecoder(raw)
    try:
        batches = list(decoder)
    except UnsupportedCompressionError as e:
        return Rejected(Errors.UNSUPPORTED_COMPRESSION_TYPE, str(e))
    stop = decoder.stop
    if stop.reason is not StopReason.END:
        return Rejected(Errors.CORRUPT_MESSAGE, f"record batch at byte {stop.position} is {stop.reason.value}: "
                                           f"{stop.detail}")
    if len(batches) != 1:
        return Rejected(Errors.INVALID_RECORD, f"a produce request carries exactly one record batch per partition, "
                                          f"got {len(batches)}")
    if len(raw) > max_message_bytes:
        return Rejected(Errors.MESSAGE_TOO_LARGE, f"the record batch is {len(raw)} bytes, more than message.max.bytes "
                                             f"{max_message_bytes}")
    batch = batches[0]
    if origin is AppendOrigin.CLIENT and batch.base_offset != 0:
        return Rejected(Errors.INVALID_RECORD,
                        f"the base offset of a produced batch must be 0, got {batch.base_offset}")
    if not batch.records or len(batch.records) != batch.last_offset_delta + 1 or any(
            r.offset != batch.base_offset + i for i, r in enumerate(batch.records)):
        return Rejected(Errors.INVALID_RECORD, f"the batch's {len(batch.records)} records do not fill its offset range "
                                          f"0..{batch.last_offset_delta}")
    if batch.is_control:
        return Rejected(Errors.INVALID_RECORD, "producers are not allowed to write control records")
    if batch.producer_id >= 0:
        if batch.producer_epoch < 0:
            return Rejected(Errors.INVALID_RECORD, f"producer {batch.producer_id} sent epoch {batch.producer_epoch}")
        if origin is AppendOrigin.CLIENT and batch.base_sequence < 0:
            return Rejected(Errors.INVALID_RECORD, f"invalid sequence number {batch.base_sequence} for producer "
                                              f"{batch.producer_id}")
        if origin is AppendOrigin.COORDINATOR and not batch.is_transactional:
            return Rejected(Errors.INVALID_RECORD, "the group coordinator writes a producer id only in transactional "
                                              "offset commits")
    elif batch.is_transactional:
        return Rejected(Errors.INVALID_RECORD, "a transactional batch needs a producer id")
    bad = [r.timestamp_ms for r in batch.records if r.timestamp_ms < -1]
    if bad:
        return Rejected(Errors.INVALID_TIMESTAMP, f"record timestamp {bad[0]} is negative (only -1 means none)")
    return batch


def _restamped(data: bytes, attributes: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def _gzipped(data: bytes) -> bytes:
    (base, _, epoch, _, _, attributes, lod, base_ts, max_ts, pid, pepoch, seq, count) = struct.unpack_from(
        ">qiibIhiqqqhii", data)
    return _seal(base, epoch, attributes | 1, lod, base_ts, max_ts, pid, pepoch, seq, count,
                 gzip.compress(data[BATCH_OVERHEAD:], mtime=0))


@st.composite
def produce_data(draw: st.DrawFn) -> bytes:
    batch = draw(record_batches())
    if draw(st.booleans()):  # the usual client batch: base offset 0, dense offsets
        records = tuple(Record(i, r.timestamp_ms, r.key, r.value, r.headers) for i, r in enumerate(batch.records))
        batch = RecordBatch(0, records, max(len(records) - 1, 0), batch.base_timestamp_ms, batch.max_timestamp_ms,
                            batch.partition_leader_epoch, batch.timestamp_type, batch.is_transactional,
                            batch.is_control, False, batch.producer_id, batch.producer_epoch, batch.base_sequence)
    data = encode_batch(batch)
    change = draw(st.sampled_from(("none", "none", "cut", "flip", "flip_sealed", "attributes", "gzip", "twice",
                                   "pad", "length")))
    at = draw(st.integers(0, len(data) - 1))
    if change == "cut":
        data = data[:at]
    elif change == "flip":
        data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]
    elif change == "flip_sealed" and at >= BATCH_OVERHEAD:  # a record byte changed, the CRC-32C made to match
        data = _restamped(data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1:], struct.unpack_from(">h", data, 21)[0])
    elif change == "attributes":
        data = _restamped(data, draw(st.sampled_from((0x08, 0x10, 0x20, 0x40, 0x100, 0x02, 0x07))))
    elif change == "gzip":
        data = _gzipped(data)
    elif change == "twice":
        data += data
    elif change == "pad":
        data += bytes(draw(st.integers(1, 70)))
    elif change == "length":
        data = data[:8] + struct.pack(">i", struct.unpack_from(">i", data, 8)[0] + draw(st.sampled_from((-1, 1)))) \
            + data[12:]
    return data


@settings(max_examples=1_500, deadline=None)
@given(produce_data(), st.sampled_from((AppendOrigin.CLIENT, AppendOrigin.COORDINATOR)))
def test_decode_produce_batch_answers_as_the_decoder_alone(data: bytes, origin: AppendOrigin) -> None:
    expected = _reference(data, origin, max_message_bytes=MAX_BYTES)
    got = decode_produce_batch(data, origin, max_message_bytes=MAX_BYTES)
    assert type(got) is type(expected) and got == expected


@settings(max_examples=500, deadline=None)
@given(produce_data())
def test_decode_only_batch_is_the_decoders_only_batch_or_none(data: bytes) -> None:
    fast = decode_only_batch(data)
    if fast is not None:
        decoder = BatchDecoder(data)
        assert list(decoder) == [fast] and decoder.stop.reason is StopReason.END
        assert type(fast) is RecordBatch  # (not the decoder's mutable twin)


def test_the_usual_client_batch_takes_the_fast_path() -> None:
    data = encode_batch(RecordBatch.of([Record(0, 5, None, b"v")], producer_id=7, producer_epoch=0, base_sequence=0,
                                       is_transactional=True))
    assert decode_only_batch(data) == decode_produce_batch(data, AppendOrigin.CLIENT, max_message_bytes=MAX_BYTES)
    assert decode_only_batch(data + b"\0") is None and decode_only_batch(data[:-1]) is None
