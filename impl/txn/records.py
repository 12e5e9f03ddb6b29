"""Transaction instances ↔ `__transaction_state` records.

Owns the mapping between a Transaction instance (the plain dict `decide` works on: every spec variable,
`transactional_id` and `state`) and Kafka's `TransactionLogKey`/`TransactionLogValue` (`kcoord.impl.storage.
txn_log_schema`, the reference decoder). What is persisted: producer id, previous/next producer id (tagged fields,
value version 1 only), epoch, timeout, state id, partitions (null when Empty), the two timestamps and the client
transaction version (v1 only). What is not: `last_producer_epoch` (loads as -1, so an InitProducerId retry across a
failover is fenced, as in Kafka) and `has_failed_epoch_fence` (loads as false). Pending-only states
(PrepareEpochFence, Dead) are never written; Dead is a tombstone (null value).

Encoding and decoding are on the hot paths (every write; every record of a load): they use the generic codec's
compiled readers and writers of the same declaration on plain tuples (no dataclass per record), with a cache of
partition sets; a property test checks they give exactly the schema module's bytes and values.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._generated.transaction import State as TxnState
from ..errors import IllegalStateError
from ..statemachine import Instance
from ..storage.codec import Encoded
from ..storage.txn_log_schema import (
    CODEC,
    SchemaError,
    TransactionLogKey,
    TransactionLogValue,
    TransactionStatus,
    TxnPartitions,
    decode_key,
    encode_key,
    encode_value,
    value_version_for,
)

__all__ = [
    "PERSISTED_FIELDS",
    "STATE_OF_STATUS",
    "STATUS_OF_STATE",
    "PartitionsCache",
    "RecordCodec",
    "decode_instance",
    "decode_persisted",
    "decode_txn_key",
    "encode_instance",
    "encode_txn_key",
    "group_partitions",
    "instance_from_value",
    "value_from_instance",
    "value_version_for",
]

#: spec state name -> persisted TransactionStatus (the pending-only states have ids but are never written)
STATUS_OF_STATE: Final[Mapping[str, TransactionStatus]] = {
    TxnState.Empty: TransactionStatus.EMPTY,
    TxnState.Ongoing: TransactionStatus.ONGOING,
    TxnState.PrepareCommit: TransactionStatus.PREPARE_COMMIT,
    TxnState.PrepareAbort: TransactionStatus.PREPARE_ABORT,
    TxnState.CompleteCommit: TransactionStatus.COMPLETE_COMMIT,
    TxnState.CompleteAbort: TransactionStatus.COMPLETE_ABORT,
    TxnState.Dead: TransactionStatus.DEAD,
    TxnState.PrepareEpochFence: TransactionStatus.PREPARE_EPOCH_FENCE,
}
STATE_OF_STATUS: Final[Mapping[int, str]] = {int(status): state for state, status in STATUS_OF_STATE.items()}
#: the state written with a null partition list (a frozenset: the write path reads it per record, and reading an enum
#: member costs ~0.1 µs on CPython 3.11, whose EnumType.__getattr__ slows every class attribute)
_PARTITIONLESS: Final = frozenset({TxnState.Empty})
_NEVER_WRITTEN: Final = frozenset({TxnState.Dead, TxnState.PrepareEpochFence})
#: the states a value holds -> their TransactionStatus id (the encoder's lookup)
_WRITTEN_STATUS: Final[Mapping[str, int]] = {state: int(status) for state, status in STATUS_OF_STATE.items()
                                             if state not in _NEVER_WRITTEN}

#: the instance variables a record carries at value version 1 (version 0 drops the last three)
PERSISTED_FIELDS: Final = ("state", "producer_id", "producer_epoch", "txn_timeout_ms", "partitions",
                           "txn_last_update_timestamp_ms", "txn_start_timestamp_ms", "previous_producer_id",
                           "next_producer_id", "client_txn_version")
_V1_ONLY: Final = ("previous_producer_id", "next_producer_id", "client_txn_version")

_I16 = struct.Struct(">h")


# ---------------------------------------------------------------------------------------------- keys


def encode_txn_key(transactional_id: str) -> bytes:
    return encode_key(TransactionLogKey(transactional_id))


def decode_txn_key(buf: bytes) -> str:
    """The transactional id of a `TransactionLogKey` (version 0)."""
    return decode_key(buf).transactional_id


# ---------------------------------------------------------------------------------------------- partitions


def group_partitions(partitions: Iterable[str]) -> tuple[TxnPartitions, ...]:
    """`{"a-1", "b-0", "a-0"}` → (a: (0, 1)), (b: (0,)): topics and ids sorted, so the bytes are deterministic."""
    by_topic: dict[str, list[int]] = {}
    for text in partitions:
        topic, _, number = text.rpartition("-")
        if not topic or not number.isdigit():
            raise IllegalStateError(f"partition {text!r} is not 'topic-N'")
        by_topic.setdefault(topic, []).append(int(number))
    return tuple(TxnPartitions(topic, tuple(sorted(ids))) for topic, ids in sorted(by_topic.items()))


def _partition_names(groups: Iterable[TxnPartitions]) -> frozenset[str]:
    return frozenset(f"{g.topic}-{p}" for g in groups for p in g.partition_ids)


# ---------------------------------------------------------------------------------------------- the reference path


def value_from_instance(instance: Mapping[str, Any]) -> TransactionLogValue:
    """The `TransactionLogValue` describing `instance` (a persisted state only)."""
    state = instance["state"]
    if state in _NEVER_WRITTEN:
        raise IllegalStateError(f"transaction {instance['transactional_id']!r}: {state} is never written")
    return TransactionLogValue(
        producer_id=instance["producer_id"],
        producer_epoch=instance["producer_epoch"],
        transaction_timeout_ms=instance["txn_timeout_ms"],
        transaction_status=STATUS_OF_STATE[state],
        transaction_partitions=None if state == TxnState.Empty else group_partitions(instance["partitions"]),
        transaction_last_update_timestamp_ms=instance["txn_last_update_timestamp_ms"],
        transaction_start_timestamp_ms=instance["txn_start_timestamp_ms"],
        previous_producer_id=instance["previous_producer_id"],
        next_producer_id=instance["next_producer_id"],
        client_transaction_version=instance["client_txn_version"],
    )


def instance_from_value(transactional_id: str, value: TransactionLogValue) -> Instance:
    """The instance a value describes, with the unpersisted variables at their load values."""
    status = int(value.transaction_status)
    state = STATE_OF_STATUS[status]
    if state in _NEVER_WRITTEN:
        raise SchemaError(f"transaction {transactional_id!r}: the log holds state {state}, which is never written")
    return {
        "transactional_id": transactional_id,
        "state": state,
        "producer_id": value.producer_id,
        "previous_producer_id": value.previous_producer_id,
        "next_producer_id": value.next_producer_id,
        "producer_epoch": value.producer_epoch,
        "last_producer_epoch": -1,
        "txn_timeout_ms": value.transaction_timeout_ms,
        "partitions": _partition_names(value.transaction_partitions or ()),
        "txn_start_timestamp_ms": value.transaction_start_timestamp_ms,
        "txn_last_update_timestamp_ms": value.transaction_last_update_timestamp_ms,
        "client_txn_version": value.client_transaction_version,
        "has_failed_epoch_fence": False,
    }


# ---------------------------------------------------------------------------------------------- the hot path
# The coordinator encodes every write and decodes every record of a load: the generic codec's readers and writers of
# TransactionLogValue are used on plain tuples (its declaration's fields, in declaration order) rather than on the
# dataclass, and a partition set is grouped (or named) once per distinct set.

_PARTITIONS = "TransactionPartitions"
_RAW_READERS: Final = {v: CODEC.reader("TransactionLogValue", v, raw=True, spans=frozenset({_PARTITIONS}))
                       for v in (0, 1)}
_RAW_WRITERS: Final = {v: CODEC.writer("TransactionLogValue", v, raw=True) for v in (0, 1)}
_PARTITION_READERS: Final = {v: CODEC.field_reader("TransactionLogValue", v, _PARTITIONS, raw=True) for v in (0, 1)}
_PARTITION_WRITERS: Final = {v: CODEC.field_writer("TransactionLogValue", v, _PARTITIONS, raw=True) for v in (0, 1)}
_VERSIONS: Final = {v: _I16.pack(v) for v in (0, 1)}


class PartitionsCache:
    """Bounded memo of partition sets ↔ their encoded `TransactionPartitions` field: a transaction's set is encoded
    for Ongoing and again for its Prepare record, and many transactions use the same few sets, so a set is grouped
    and encoded (or decoded and named) once. Cleared when full (no eviction order to keep); owned by one codec,
    never shared between threads."""

    __slots__ = ("_encoded", "_named", "max_entries")

    def __init__(self, max_entries: int = 4_096) -> None:
        self.max_entries = max_entries
        self._encoded: dict[tuple[frozenset[str], int], Encoded] = {}
        self._named: dict[tuple[bytes, int], frozenset[str]] = {}

    def encoded(self, partitions: frozenset[str], version: int) -> Encoded:
        key = (partitions, version)
        found = self._encoded.get(key)
        if found is None:
            out: list[bytes] = []
            _PARTITION_WRITERS[version](tuple((g.topic, g.partition_ids) for g in group_partitions(partitions)), out)
            found = Encoded(b"".join(out))
            if len(self._encoded) >= self.max_entries:
                self._encoded.clear()
            self._encoded[key] = found
        return found

    def named(self, section: Encoded, version: int) -> frozenset[str]:
        key = (section.data, version)
        found = self._named.get(key)
        if found is None:
            grouped, _ = _PARTITION_READERS[version](section.data, 0)
            found = frozenset(f"{topic}-{p}" for topic, ids in grouped for p in ids)
            if len(self._named) >= self.max_entries:
                self._named.clear()
            self._named[key] = found
        return found


def encode_instance(instance: Mapping[str, Any], version: int, cache: PartitionsCache | None = None) -> bytes:
    """`encode_value(value_from_instance(instance), version)`, built from the instance directly (the write path)."""
    state = instance["state"]
    status = _WRITTEN_STATUS.get(state)
    if status is None:
        raise IllegalStateError(f"transaction {instance['transactional_id']!r}: {state} is never written")
    if version not in _RAW_WRITERS:
        return encode_value(value_from_instance(instance), version)  # type: ignore[return-value]  # raises
    partitions = instance["partitions"]
    if state in _PARTITIONLESS:
        if partitions:
            raise IllegalStateError(f"transaction {instance['transactional_id']!r}: Empty with partitions")
        section = None
    else:
        section = (cache or PartitionsCache()).encoded(partitions, version)
    linked = version >= 1  # version 0 has no place for the producer-id links: left out
    fields = (instance["producer_id"], instance["previous_producer_id"] if linked else -1,
              instance["next_producer_id"] if linked else -1, instance["producer_epoch"], instance["txn_timeout_ms"],
              status, section, instance["txn_last_update_timestamp_ms"], instance["txn_start_timestamp_ms"],
              instance["client_txn_version"])
    out = [_VERSIONS[version]]
    _RAW_WRITERS[version](fields, out)
    return b"".join(out)


def decode_instance(transactional_id: str, buf: bytes, cache: PartitionsCache | None = None) -> Instance:
    """The instance a (non-null) value describes; see `instance_from_value` for the unpersisted variables."""
    fields = _persisted(buf)
    producer_id, previous_pid, next_pid, epoch, timeout_ms, status, section, last_update_ms, start_ms, client_tv = \
        fields
    return {
        "transactional_id": transactional_id, "state": _state(status), "producer_id": producer_id,
        "previous_producer_id": previous_pid, "next_producer_id": next_pid, "producer_epoch": epoch,
        "last_producer_epoch": -1, "txn_timeout_ms": timeout_ms,
        "partitions": _EMPTY if section is None else (cache or PartitionsCache()).named(section, buf[1]),
        "txn_start_timestamp_ms": start_ms, "txn_last_update_timestamp_ms": last_update_ms,
        "client_txn_version": client_tv, "has_failed_epoch_fence": False,
    }


_EMPTY: Final[frozenset[str]] = frozenset()


def _persisted(buf: bytes) -> tuple[Any, ...]:
    """The declaration's fields of a value, in declaration order (the partitions still encoded)."""
    reader = _RAW_READERS.get(buf[1]) if len(buf) >= 2 and buf[0] == 0 else None
    if reader is None:
        version = _I16.unpack_from(buf)[0] if len(buf) >= 2 else None
        raise SchemaError(f"TransactionLogValue: unknown value version {version}, expected one of (0, 1)"
                          if version is not None else f"TransactionLogValue: {len(buf)} bytes, too short for a "
                          "version")
    fields, end = reader(buf, 2)
    if end != len(buf):
        raise SchemaError(f"TransactionLogValue v{buf[1]}: {len(buf) - end} unexpected trailing bytes")
    return fields  # type: ignore[no-any-return]


def _state(status: int) -> str:
    state = STATE_OF_STATUS.get(status)
    if state is None:
        raise SchemaError(f"TransactionLogValue: unknown TransactionStatus {status}")
    if state in _NEVER_WRITTEN:
        raise SchemaError(f"the log holds state {state}, which is never written")
    return state


def decode_persisted(buf: bytes, cache: PartitionsCache | None = None) -> tuple[Any, ...]:
    """The persisted fields of a (non-null) value, in `PERSISTED_FIELDS` order (a version 0 value has -1, -1, 0 for
    the last three): what `decode_instance` returns, without building the instance (the write path's record check)."""
    producer_id, previous_pid, next_pid, epoch, timeout_ms, status, section, last_update_ms, start_ms, client_tv = \
        _persisted(buf)
    names = _EMPTY if section is None else (cache or PartitionsCache()).named(section, buf[1])
    return (_state(status), producer_id, epoch, timeout_ms, names, last_update_ms, start_ms, previous_pid, next_pid,
            client_tv)


def persisted_view(instance: Mapping[str, Any], version: int) -> dict[str, Any]:
    """The part of an instance a value of `version` carries (what must survive a write and a reload)."""
    view = {name: instance[name] for name in PERSISTED_FIELDS}
    if version == 0:
        for name in _V1_ONLY:
            view[name] = -1 if name != "client_txn_version" else 0
    return view


class RecordCodec:
    """The records of one `__transaction_state` value version, with bounded caches for the hot paths (the key bytes
    of a transactional id, partition sections). One per coordinator; not thread-safe."""

    __slots__ = ("_ids", "_keys", "max_keys", "partitions", "version")

    def __init__(self, version: int, max_keys: int = 100_000) -> None:
        self.version = version
        self.partitions = PartitionsCache()
        self.max_keys = max_keys
        self._keys: dict[str, bytes] = {}
        self._ids: dict[bytes, str] = {}

    def key(self, transactional_id: str) -> bytes:
        key = self._keys.get(transactional_id)
        if key is None:
            key = encode_txn_key(transactional_id)
            if len(self._keys) >= self.max_keys:
                self._keys.clear()
            self._keys[transactional_id] = key
        return key

    def transactional_id(self, key: bytes) -> str:
        transactional_id = self._ids.get(key)
        if transactional_id is None:
            transactional_id = decode_txn_key(key)
            if len(self._ids) >= self.max_keys:
                self._ids.clear()
            self._ids[key] = transactional_id
        return transactional_id

    def encode(self, instance: Mapping[str, Any]) -> bytes:
        return encode_instance(instance, self.version, self.partitions)

    def decode(self, transactional_id: str, buf: bytes) -> Instance:
        return decode_instance(transactional_id, buf, self.partitions)

    def decode_persisted(self, buf: bytes) -> tuple[Any, ...]:
        """`decode_persisted` with this codec's partitions cache."""
        return decode_persisted(buf, self.partitions)
