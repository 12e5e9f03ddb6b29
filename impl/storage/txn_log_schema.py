"""Records of ``__transaction_state``: ``TransactionLogKey`` and ``TransactionLogValue``, as Python values.

The layouts are Kafka's own declarations (``messages/TransactionLogKey.json``, version 0, and
``messages/TransactionLogValue.json``, versions 0-1, flexible from 1), read and written by the one generic codec
(``kcoord.impl.storage.codec``); this module only binds them to the classes below and says which versions are
written. A record's key is ``int16 key version (0) | TransactionalId string``; its value is ``int16 value version |
fields``, or null (a tombstone: the transactional id expired).

Which value version is written: 1 when the transaction version feature is >= 1, else 0. At version 1 kcoord persists
PreviousProducerId/NextProducerId (newer Kafka does; Kafka 4.0.2's ``TransactionLog.valueToBytes`` leaves them -1).
Version 0 cannot carry them: the encoder leaves them out there, and refuses a non-zero ClientTransactionVersion
(Kafka's generated code throws ``UnsupportedVersionException`` for it). Unknown tags (KIP-939's NextProducerEpoch,
tag 3) are skipped on read. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from .codec import SchemaError, shared_codec

__all__ = [
    "CODEC",
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


def _status(raw: int) -> TransactionStatus:
    try:
        return TransactionStatus(raw)
    except ValueError:
        raise SchemaError(f"TransactionLogValue: unknown TransactionStatus {raw}") from None


CODEC = shared_codec()
CODEC.bind("TransactionLogKey", TransactionLogKey)
CODEC.bind("TransactionLogValue", TransactionLogValue, {"transaction_status": _status})
CODEC.bind("TransactionLogValue.TransactionPartitions", TxnPartitions)


def encode_key(key: TransactionLogKey) -> bytes:
    return _VERSION.pack(KEY_VERSION) + CODEC.write("TransactionLogKey", KEY_VERSION, key)


def decode_key(buf: bytes) -> TransactionLogKey:
    version = value_version(buf, "TransactionLogKey")
    if version != KEY_VERSION:
        raise SchemaError(f"TransactionLogKey: unknown key version {version}, expected {KEY_VERSION}")
    key: TransactionLogKey = CODEC.read("TransactionLogKey", KEY_VERSION, buf, 2)
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
    if version == 0:  # the producer-id links have no place in version 0: left out, as Kafka's writer does
        value = dataclasses.replace(value, previous_producer_id=-1, next_producer_id=-1)
    return _VERSION.pack(version) + CODEC.write("TransactionLogValue", version, value)


def value_version(buf: bytes, what: str = "TransactionLogValue") -> int:
    """The version prefix of an encoded value (or key)."""
    if len(buf) < 2:
        raise SchemaError(f"{what}: {len(buf)} bytes, too short for a version")
    return int(_VERSION.unpack_from(buf)[0])


def decode_value(buf: bytes | None) -> TransactionLogValue | None:
    """Decode a value of any supported version; None (a tombstone) decodes to None."""
    if buf is None:
        return None
    version = value_version(buf)
    if version not in VALUE_VERSIONS:
        raise SchemaError(f"TransactionLogValue: unknown value version {version}, expected one of {VALUE_VERSIONS}")
    value: TransactionLogValue = CODEC.read("TransactionLogValue", version, buf, 2)
    return value
