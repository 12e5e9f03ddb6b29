"""Transaction instances ↔ `__transaction_state` records.

Owns the mapping between a Transaction instance (the plain dict `decide` works on: every spec variable,
`transactional_id` and `state`) and Kafka's `TransactionLogKey`/`TransactionLogValue` (`kcoord.impl.storage.
txn_log_schema`, the reference decoder). What is persisted: producer id, previous/next producer id (tagged fields,
value version 1 only), epoch, timeout, state id, partitions (null when Empty), the two timestamps and the client
transaction version (v1 only). What is not: `last_producer_epoch` (loads as -1, so an InitProducerId retry across a
failover is fenced, as in Kafka) and `has_failed_epoch_fence` (loads as false). Pending-only states
(PrepareEpochFence, Dead) are never written; Dead is a tombstone (null value).

Encoding and decoding are on the hot paths (every write; every record of a load), so this module has its own
struct-based codec for the two value versions. It is byte-identical to the schema module's `encode_value`/
`decode_value` (a property test checks both directions) and falls back to the schema decoder, which names the bad
field, on anything it does not expect.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .._generated.transaction import State as TxnState
from ..errors import IllegalStateError
from ..statemachine import Instance
from ..storage.txn_log_schema import (
    KEY_VERSION,
    SchemaError,
    TransactionLogKey,
    TransactionLogValue,
    TransactionStatus,
    TxnPartitions,
    decode_key,
    decode_value,
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

_HEAD = struct.Struct(">hqhib")  # version, ProducerId, ProducerEpoch, TransactionTimeoutMs, TransactionStatus
_TAIL = struct.Struct(">qq")  # TransactionLastUpdateTimestampMs, TransactionStartTimestampMs
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_KEY_HEAD = struct.Struct(">hh")
#: v1 tails with their tagged fields: none (count 0); the previous producer id only (count 1, tag 0, size 8, int64)
_TAIL_NO_TAGS = struct.Struct(">qqB")
_TAIL_PREVIOUS = struct.Struct(">qq3sq")
_TAG_PREVIOUS, _TAG_NEXT, _TAG_CLIENT_TV = 0, 1, 2


# ---------------------------------------------------------------------------------------------- keys


def encode_txn_key(transactional_id: str) -> bytes:
    return encode_key(TransactionLogKey(transactional_id))


def decode_txn_key(buf: bytes) -> str:
    """The transactional id of a `TransactionLogKey` (version 0: int16 version | int16 length | UTF-8)."""
    if len(buf) >= 4:
        version, length = _KEY_HEAD.unpack_from(buf)
        if version == KEY_VERSION and length >= 0 and len(buf) == 4 + length:
            return buf[4:].decode("utf-8")
    return decode_key(buf).transactional_id  # the reference decoder names what is wrong


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


# ---------------------------------------------------------------------------------------------- the fast path


def _uvarint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _partitions_section(partitions: frozenset[str], version: int) -> bytes:
    """The encoded `TransactionPartitions` array of a non-Empty state."""
    groups = group_partitions(partitions)
    parts = [_uvarint(len(groups) + 1) if version else _I32.pack(len(groups))]
    for g in groups:
        topic = g.topic.encode("utf-8")
        ids = g.partition_ids
        if version:
            parts += (_uvarint(len(topic) + 1), topic, _uvarint(len(ids) + 1), struct.pack(f">{len(ids)}i", *ids),
                      b"\x00")
        else:
            parts += (_I16.pack(len(topic)), topic, _I32.pack(len(ids)), struct.pack(f">{len(ids)}i", *ids))
    return b"".join(parts)


class PartitionsCache:
    """Bounded memo of partition sets ↔ their encoded section: a transaction's set is encoded for Ongoing and again
    for its Prepare record, and many transactions use the same few sets. Cleared when full (no eviction order to
    keep); owned by one codec, never shared between threads."""

    __slots__ = ("_decoded", "_encoded", "max_entries")

    def __init__(self, max_entries: int = 4_096) -> None:
        self.max_entries = max_entries
        self._encoded: dict[tuple[frozenset[str], int], bytes] = {}
        self._decoded: dict[bytes, frozenset[str]] = {}

    def encoded(self, partitions: frozenset[str], version: int) -> bytes:
        key = (partitions, version)
        section = self._encoded.get(key)
        if section is None:
            section = _partitions_section(partitions, version)
            if len(self._encoded) >= self.max_entries:
                self._encoded.clear()
            self._encoded[key] = section
        return section

    def decoded(self, section: bytes) -> frozenset[str] | None:
        return self._decoded.get(section)

    def remember(self, section: bytes, names: frozenset[str]) -> None:
        if len(self._decoded) >= self.max_entries:
            self._decoded.clear()
        self._decoded[section] = names


def encode_instance(instance: Mapping[str, Any], version: int, cache: PartitionsCache | None = None) -> bytes:
    """`encode_value(value_from_instance(instance), version)`, built directly (the write hot path)."""
    state = instance["state"]
    status = _WRITTEN_STATUS.get(state)
    if status is None:
        raise IllegalStateError(f"transaction {instance['transactional_id']!r}: {state} is never written")
    client_tv = instance["client_txn_version"]
    if version not in (0, 1) or (version == 0 and client_tv != 0):
        return encode_value(value_from_instance(instance), version)  # type: ignore[return-value]  # raises
    partitions = instance["partitions"]
    if state in _PARTITIONLESS:
        if partitions:
            raise IllegalStateError(f"transaction {instance['transactional_id']!r}: Empty with partitions")
        section = b"\x00" if version else b"\xff\xff\xff\xff"
    elif cache is not None:
        section = cache.encoded(partitions, version)
    else:
        section = _partitions_section(partitions, version)
    head = _HEAD.pack(version, instance["producer_id"], instance["producer_epoch"], instance["txn_timeout_ms"],
                      status)
    if not version:
        return head + section + _TAIL.pack(instance["txn_last_update_timestamp_ms"],
                                           instance["txn_start_timestamp_ms"])
    previous_pid, next_pid = instance["previous_producer_id"], instance["next_producer_id"]
    if next_pid == -1 and client_tv == 0:  # the common shapes: no tagged field, or the previous producer id only
        if previous_pid == -1:
            return head + section + _TAIL_NO_TAGS.pack(instance["txn_last_update_timestamp_ms"],
                                                       instance["txn_start_timestamp_ms"], 0)
        return head + section + _TAIL_PREVIOUS.pack(instance["txn_last_update_timestamp_ms"],
                                                    instance["txn_start_timestamp_ms"], b"\x01\x00\x08", previous_pid)
    tail = _TAIL.pack(instance["txn_last_update_timestamp_ms"], instance["txn_start_timestamp_ms"])
    tagged = []
    if previous_pid != -1:
        tagged.append(b"\x00\x08" + _I64.pack(previous_pid))
    if next_pid != -1:
        tagged.append(b"\x01\x08" + _I64.pack(next_pid))
    if client_tv != 0:
        tagged.append(b"\x02\x02" + _I16.pack(client_tv))
    return b"".join((head, section, tail, bytes((len(tagged),)), *tagged))


class _Fallback(Exception):
    """The fast decoder met something it does not handle; the reference decoder takes over."""


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise _Fallback
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def decode_instance(transactional_id: str, buf: bytes, cache: PartitionsCache | None = None) -> Instance:
    """The instance a (non-null) value describes; see `instance_from_value` for the unpersisted variables."""
    try:
        return _decode_fast(transactional_id, buf, cache)
    except (_Fallback, struct.error, IndexError, UnicodeDecodeError, KeyError):
        value = decode_value(buf)  # raises SchemaError naming the field
        assert value is not None
        return instance_from_value(transactional_id, value)


def _decode_fast(transactional_id: str, buf: bytes, cache: PartitionsCache | None) -> Instance:
    (state, producer_id, epoch, timeout_ms, names, last_update_ms, start_ms, previous_pid, next_pid,
     client_tv) = _decode_persisted(buf, cache)
    return {
        "transactional_id": transactional_id, "state": state, "producer_id": producer_id,
        "previous_producer_id": previous_pid, "next_producer_id": next_pid, "producer_epoch": epoch,
        "last_producer_epoch": -1, "txn_timeout_ms": timeout_ms, "partitions": names,
        "txn_start_timestamp_ms": start_ms, "txn_last_update_timestamp_ms": last_update_ms,
        "client_txn_version": client_tv, "has_failed_epoch_fence": False,
    }


def decode_persisted(buf: bytes, cache: PartitionsCache | None = None) -> tuple[Any, ...]:
    """The persisted fields of a (non-null) value, in `PERSISTED_FIELDS` order (a version 0 value has -1, -1, 0 for
    the last three): what `decode_instance` returns, without building the instance (the write path's record check)."""
    try:
        return _decode_persisted(buf, cache)
    except (_Fallback, struct.error, IndexError, UnicodeDecodeError, KeyError):
        value = decode_value(buf)  # raises SchemaError naming the field
        assert value is not None
        instance = instance_from_value("", value)
        return tuple(instance[name] for name in PERSISTED_FIELDS)


def _decode_persisted(buf: bytes, cache: PartitionsCache | None) -> tuple[Any, ...]:
    version, producer_id, epoch, timeout_ms, status = _HEAD.unpack_from(buf)
    state = STATE_OF_STATUS[status]
    if state in _NEVER_WRITTEN or version not in (0, 1):
        raise _Fallback
    start = _HEAD.size
    end = _partitions_end(buf, start, version)
    section = buf[start:end]
    names = cache.decoded(section) if cache is not None else None
    if names is None:
        names = _partition_names_of(section, version)
        if cache is not None:
            cache.remember(section, names)
    previous_pid = next_pid = -1
    client_tv = 0
    if not version:
        last_update_ms, start_ms = _TAIL.unpack_from(buf, end)
        pos = end + _TAIL.size
    else:
        shape = _TAG_SHAPES.get(buf[end + 16:end + 19])  # the tagged fields kcoord and Kafka write, in one unpack
        if shape is not None and len(buf) == end + shape[0].size and (not shape[1] or _shape_matches(buf, end,
                                                                                                    shape[1])):
            values = shape[0].unpack_from(buf, end)
            last_update_ms, start_ms = values[0], values[1]
            previous_pid, next_pid, client_tv = shape[2](values)
            pos = len(buf)
        else:
            last_update_ms, start_ms = _TAIL.unpack_from(buf, end)
            previous_pid, next_pid, client_tv, pos = _read_tags(buf, end + _TAIL.size)
    if pos != len(buf):
        raise _Fallback
    return (state, producer_id, epoch, timeout_ms, names, last_update_ms, start_ms, previous_pid, next_pid,
            client_tv)


#: The common tagged-field sections of a v1 value, keyed by their first three bytes (count, first tag, its size):
#: (struct of tail + tags, other (offset, bytes) that must match, the tag values). Anything else: `_read_tags`.
_TAG_SHAPES: Final[dict[bytes, tuple[struct.Struct, tuple[tuple[int, bytes], ...], Any]]] = {
    b"\x00": (struct.Struct(">qqx"), (), lambda v: (-1, -1, 0)),
    b"\x01\x00\x08": (struct.Struct(">qq3xq"), (), lambda v: (v[2], -1, 0)),
    b"\x02\x00\x08": (struct.Struct(">qq3xq2xh"), ((27, b"\x02\x02"),), lambda v: (v[2], -1, v[3])),
    b"\x03\x00\x08": (struct.Struct(">qq3xq2xq2xh"), ((27, b"\x01\x08"), (37, b"\x02\x02")),
                        lambda v: (v[2], v[3], v[4])),
}


def _shape_matches(buf: bytes, end: int, expected: tuple[tuple[int, bytes], ...]) -> bool:
    return all(buf[end + at:end + at + len(data)] == data for at, data in expected)


def _partitions_end(buf: bytes, pos: int, version: int) -> int:
    """Where the `TransactionPartitions` array starting at `pos` ends (lengths only, nothing decoded). One-byte
    varints (every realistic length) are read inline."""
    if version:
        count = buf[pos]
        pos += 1
        if count >= 0x80:
            count, pos = _read_uvarint(buf, pos - 1)
        count -= 1
    else:
        (count,) = _I32.unpack_from(buf, pos)
        pos += 4
    for _ in range(count):
        if version:
            length = buf[pos]
            pos += 1
            if length >= 0x80:
                length, pos = _read_uvarint(buf, pos - 1)
            if length == 0:
                raise _Fallback  # a null topic name: the reference decoder reports it
            pos += length - 1
            n = buf[pos]
            pos += 1
            if n >= 0x80:
                n, pos = _read_uvarint(buf, pos - 1)
            if n == 0:
                raise _Fallback
            pos += 4 * (n - 1)
            if buf[pos] != 0:
                raise _Fallback  # tagged fields inside a partition entry: let the reference decoder handle them
            pos += 1
        else:
            (length,) = _I16.unpack_from(buf, pos)
            pos += 2 + length
            (n,) = _I32.unpack_from(buf, pos)
            if n < 0 or length < 0:
                raise _Fallback
            pos += 4 + 4 * n
    if pos > len(buf):
        raise _Fallback
    return pos


def _partition_names_of(section: bytes, version: int) -> frozenset[str]:
    names: list[str] = []
    pos = 0
    if version:
        count, pos = _read_uvarint(section, pos)
        count -= 1
    else:
        (count,) = _I32.unpack_from(section, pos)
        pos += 4
    for _ in range(max(count, 0)):
        if version:
            length, pos = _read_uvarint(section, pos)
            length -= 1
        else:
            (length,) = _I16.unpack_from(section, pos)
            pos += 2
        topic = section[pos:pos + length].decode("utf-8")
        pos += length
        if version:
            n, pos = _read_uvarint(section, pos)
            n -= 1
        else:
            (n,) = _I32.unpack_from(section, pos)
            pos += 4
        names += [f"{topic}-{p}" for p in struct.unpack_from(f">{n}i", section, pos)]
        pos += 4 * n + (1 if version else 0)
    return frozenset(names)


def _read_tags(buf: bytes, pos: int) -> tuple[int, int, int, int]:
    previous_pid = next_pid = -1
    client_tv = 0
    count = buf[pos]
    pos += 1
    if count >= 0x80:
        count, pos = _read_uvarint(buf, pos - 1)
    for _ in range(count):
        tag, size = buf[pos], buf[pos + 1]
        pos += 2
        if tag >= 0x80 or size >= 0x80:
            tag, pos = _read_uvarint(buf, pos - 2)
            size, pos = _read_uvarint(buf, pos)
        if tag == _TAG_PREVIOUS and size == 8:
            (previous_pid,) = _I64.unpack_from(buf, pos)
        elif tag == _TAG_NEXT and size == 8:
            (next_pid,) = _I64.unpack_from(buf, pos)
        elif tag == _TAG_CLIENT_TV and size == 2:
            (client_tv,) = _I16.unpack_from(buf, pos)
        elif tag <= _TAG_CLIENT_TV:
            raise _Fallback  # a known tag with a wrong size: the reference decoder reports it
        pos += size  # unknown tags (e.g. KIP-939's NextProducerEpoch) are skipped, as Kafka does
    return previous_pid, next_pid, client_tv, pos


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
