"""Records of ``__transaction_state``: ``TransactionLogKey`` and ``TransactionLogValue``.

Restates Kafka's ``transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json`` (version 0)
and ``TransactionLogValue.json`` (versions 0-1, flexible from 1). A record's key is ``int16 key version (0) |
TransactionalId string``; its value is ``int16 value version | fields``, or null (a tombstone: the transactional
id expired). Field order (version 1 adds compact lengths and the tagged fields)::

    ProducerId int64 | ProducerEpoch int16 | TransactionTimeoutMs int32 | TransactionStatus int8
    | TransactionPartitions []{Topic string, PartitionIds []int32} (nullable; null when Empty)
    | TransactionLastUpdateTimestampMs int64 | TransactionStartTimestampMs int64
    | tagged: 0 PreviousProducerId int64 (-1), 1 NextProducerId int64 (-1), 2 ClientTransactionVersion int16 (0)

Which value version is written: 1 when the transaction version feature is >= 1, else 0. At version 1 we persist
PreviousProducerId/NextProducerId (newer Kafka does; Kafka 4.0-SNAPSHOT left them -1 on disk). Version 0 cannot
carry them: like Kafka, the encoder leaves them out there, and refuses a non-zero ClientTransactionVersion (Kafka's
generated code throws ``UnsupportedVersionException`` for it). Unknown tags (KIP-939's NextProducerEpoch, tag 3)
are skipped on read. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from ._codec import Reader, SchemaError, Writer

__all__ = [
    "KEY_VERSION",
    "VALUE_VERSIONS",
    "SchemaError",
    "TransactionLogKey",
    "TransactionLogValue",
    "TransactionStatus",
    "TxnPartitions",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "value_version",
    "value_version_for",
]

KEY_VERSION: Final = 0
VALUE_VERSIONS: Final = (0, 1)
_FLEXIBLE_FROM: Final = 1
_TAG_PREVIOUS_PRODUCER_ID: Final = 0
_TAG_NEXT_PRODUCER_ID: Final = 1
_TAG_CLIENT_TRANSACTION_VERSION: Final = 2
_VERSION = struct.Struct(">h")


class TransactionStatus(IntEnum):
    """``TxnState.id`` as persisted in ``TransactionStatus``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7


@dataclass(frozen=True, slots=True)
class TransactionLogKey:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class TxnPartitions:
    """One ``PartitionsSchema`` entry: a topic and the partitions of it in the transaction."""

    topic: str
    partition_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: TransactionStatus
    transaction_partitions: tuple[TxnPartitions, ...] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


def value_version_for(transaction_version: int) -> int:
    """The value version Kafka writes for a ``transaction.version`` feature level."""
    return 1 if transaction_version >= 1 else 0


def encode_key(key: TransactionLogKey) -> bytes:
    w = Writer(flexible=False)
    w.int16(KEY_VERSION)
    w.string(key.transactional_id)
    return w.getvalue()


def decode_key(buf: bytes) -> TransactionLogKey:
    r = Reader(buf, flexible=False, what="TransactionLogKey")
    version = r.int16("version")
    if version != KEY_VERSION:
        raise SchemaError(f"TransactionLogKey: unknown key version {version}, expected {KEY_VERSION}")
    key = TransactionLogKey(r.string("TransactionalId"))
    r.expect_end()
    return key


def encode_value(value: TransactionLogValue | None, version: int) -> bytes | None:
    """Encode at ``version`` (see ``value_version_for``); None encodes a tombstone (None)."""
    if value is None:
        return None
    if version not in VALUE_VERSIONS:
        raise SchemaError(f"TransactionLogValue: cannot write version {version}, valid versions are {VALUE_VERSIONS}")
    if value.transaction_status == TransactionStatus.EMPTY and value.transaction_partitions:
        raise SchemaError("TransactionLogValue: state Empty must have no partitions (Kafka writes null), "
                          f"got {value.transaction_partitions}")
    flexible = version >= _FLEXIBLE_FROM
    if not flexible and value.client_transaction_version != 0:
        raise SchemaError(f"TransactionLogValue: version 0 cannot carry ClientTransactionVersion="
                          f"{value.client_transaction_version}; write version 1 (transaction.version >= 1)")
    w = Writer(flexible=flexible)
    w.int16(version)
    w.int64(value.producer_id)
    w.int16(value.producer_epoch)
    w.int32(value.transaction_timeout_ms)
    w.int8(int(value.transaction_status))

    def write_partitions(p: TxnPartitions) -> None:
        w.string(p.topic)
        w.array(p.partition_ids, w.int32)
        if flexible:
            w.tagged_fields(())

    w.array(value.transaction_partitions, write_partitions, nullable=True)
    w.int64(value.transaction_last_update_timestamp_ms)
    w.int64(value.transaction_start_timestamp_ms)
    if flexible:
        tagged = []
        if value.previous_producer_id != -1:
            tagged.append((_TAG_PREVIOUS_PRODUCER_ID, struct.pack(">q", value.previous_producer_id)))
        if value.next_producer_id != -1:
            tagged.append((_TAG_NEXT_PRODUCER_ID, struct.pack(">q", value.next_producer_id)))
        if value.client_transaction_version != 0:
            tagged.append((_TAG_CLIENT_TRANSACTION_VERSION, struct.pack(">h", value.client_transaction_version)))
        w.tagged_fields(tagged)
    return w.getvalue()


def value_version(buf: bytes) -> int:
    """The version prefix of an encoded value."""
    if len(buf) < 2:
        raise SchemaError(f"TransactionLogValue: {len(buf)} bytes, too short for a version")
    return int(_VERSION.unpack_from(buf)[0])


def decode_value(buf: bytes | None) -> TransactionLogValue | None:
    """Decode a value of any supported version; None (a tombstone) decodes to None."""
    if buf is None:
        return None
    version = value_version(buf)
    if version not in VALUE_VERSIONS:
        raise SchemaError(f"TransactionLogValue: unknown value version {version}, expected one of {VALUE_VERSIONS}")
    flexible = version >= _FLEXIBLE_FROM
    r = Reader(buf, flexible=flexible, what=f"TransactionLogValue v{version}", pos=2)
    producer_id = r.int64("ProducerId")
    producer_epoch = r.int16("ProducerEpoch")
    timeout_ms = r.int32("TransactionTimeoutMs")
    status_id = r.int8("TransactionStatus")
    try:
        status = TransactionStatus(status_id)
    except ValueError:
        raise SchemaError(f"TransactionLogValue: unknown TransactionStatus {status_id}") from None

    def read_partitions() -> TxnPartitions:
        topic = r.string("Topic")
        ids = r.array("PartitionIds", lambda: r.int32("PartitionIds[]"))
        if flexible:
            r.tagged_fields()
        return TxnPartitions(topic, ids)

    partitions = r.nullable_array("TransactionPartitions", read_partitions)
    last_update_ms = r.int64("TransactionLastUpdateTimestampMs")
    start_ms = r.int64("TransactionStartTimestampMs")
    previous_pid, next_pid, client_tv = -1, -1, 0
    if flexible:
        tagged = r.tagged_fields()
        if _TAG_PREVIOUS_PRODUCER_ID in tagged:
            previous_pid = r.sub_reader(tagged[_TAG_PREVIOUS_PRODUCER_ID], "PreviousProducerId").int64("value")
        if _TAG_NEXT_PRODUCER_ID in tagged:
            next_pid = r.sub_reader(tagged[_TAG_NEXT_PRODUCER_ID], "NextProducerId").int64("value")
        if _TAG_CLIENT_TRANSACTION_VERSION in tagged:
            client_tv = r.sub_reader(tagged[_TAG_CLIENT_TRANSACTION_VERSION], "ClientTransactionVersion").int16("value")
    r.expect_end()
    return TransactionLogValue(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transaction_timeout_ms=timeout_ms,
        transaction_status=status,
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=last_update_ms,
        transaction_start_timestamp_ms=start_ms,
        previous_producer_id=previous_pid,
        next_producer_id=next_pid,
        client_transaction_version=client_tv,
    )
