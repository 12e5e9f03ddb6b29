"""The front door of Produce on a data partition: is this a batch the leader may validate at all?

Owns `decode_produce_batch`, Kafka's request-level and `LogValidator` checks that do not depend on any producer's
state (so they are not the spec's business), each mapped to Kafka's error:

| check (Kafka source)                                                          | error                        |
|-------------------------------------------------------------------------------|------------------------------|
| not magic 2 (`ProduceRequest.validateRecords`, v3+)                           | INVALID_RECORD               |
| torn, trailing garbage, or a CRC-32C mismatch (`batch.isValid`)               | CORRUPT_MESSAGE              |
| not exactly one batch (`ProduceRequest.validateRecords`)                      | INVALID_RECORD               |
| batch larger than `message.max.bytes`                                         | MESSAGE_TOO_LARGE            |
| base offset ≠ 0 from a client (`analyzeAndValidateRecords`)                   | INVALID_RECORD               |
| no records, or offsets not dense from the base (`validateBatch`)              | INVALID_RECORD               |
| a control batch (`validateBatch`: clients never write markers)                | INVALID_RECORD               |
| a producer id with a base sequence < 0 from a client, or an epoch < 0         | INVALID_RECORD               |
| transactional without a producer id                                           | INVALID_RECORD               |
| coordinator origin: a producer id on a non-transactional batch                | INVALID_RECORD               |
| a record timestamp below -1 (`validateTimestamp`)                             | INVALID_TIMESTAMP            |
| a compression codec Kafka does not define (attributes bits 0-2 above 4)       | UNSUPPORTED_COMPRESSION_TYPE |
| compressed records that do not decompress, parse, or fit 64 MiB decompressed  | CORRUPT_MESSAGE              |

Must not import: `kcoord.model`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Errors
from ..storage.batch import (
    MAGIC,
    RecordBatch,
    StopReason,
    UnsupportedCompressionError,
    encode_batch,
)
from ..storage.batch_decoder import BatchDecoder, decode_only_batch
from .types import AppendOrigin

_MAGIC_POSITION = 16  # base_offset int64 + length int32 + partition_leader_epoch int32


@dataclass(frozen=True, slots=True)
class Rejected:
    error: str
    message: str


def decode_produce_batch(data: bytes | RecordBatch, origin: AppendOrigin, *,
                         max_message_bytes: int) -> RecordBatch | Rejected:
    """The one batch of a Produce request's partition data, or why it is refused (see the module table)."""
    raw = encode_batch(data) if isinstance(data, RecordBatch) else bytes(data)
    if len(raw) > _MAGIC_POSITION and raw[_MAGIC_POSITION] != MAGIC:
        return Rejected(Errors.INVALID_RECORD, f"produce requests must use record batch magic {MAGIC}, got "
                                          f"{raw[_MAGIC_POSITION]}")
    batch = decode_only_batch(raw)  # the usual case: one valid uncompressed batch, exactly the request's bytes
    if batch is None:
        careful = _decode_careful(raw)
        if isinstance(careful, Rejected):
            return careful
        batch = careful
    if len(raw) > max_message_bytes:
        return Rejected(Errors.MESSAGE_TOO_LARGE, f"the record batch is {len(raw)} bytes, more than message.max.bytes "
                                             f"{max_message_bytes}")
    problem = _batch_problem(batch, origin)
    if problem is not None:
        return problem
    return batch


def _decode_careful(raw: bytes) -> RecordBatch | Rejected:
    """The one batch of `raw` by `BatchDecoder`, or why there is not exactly one valid batch."""
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
    return batches[0]


def _batch_problem(batch: RecordBatch, origin: AppendOrigin) -> Rejected | None:
    if origin is AppendOrigin.CLIENT and batch.base_offset != 0:
        return Rejected(Errors.INVALID_RECORD,
                        f"the base offset of a produced batch must be 0, got {batch.base_offset}")
    records, base = batch.records, batch.base_offset
    if not records or len(records) != batch.last_offset_delta + 1 or (
            [r.offset for r in records] != list(range(base, base + len(records)))):
        return Rejected(Errors.INVALID_RECORD, f"the batch's {len(records)} records do not fill its offset range "
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
    bad = [r.timestamp_ms for r in records if r.timestamp_ms < -1]
    if bad:
        return Rejected(Errors.INVALID_TIMESTAMP, f"record timestamp {bad[0]} is negative (only -1 means none)")
    return None

