"""Records of ``__consumer_offsets``: classic group, offset commit, KIP-848 consumer-group, share-group and
regular-expression records, as Python values.

The layouts are Kafka 4.0.2's own declarations (``messages/*Key.json`` and ``*Value.json`` of the group coordinator),
read and written by the one generic codec (``kcoord.impl.storage.codec``); this module binds them to the classes
below, maps record types to declarations and says which versions Kafka writes. A key is ``int16 record type | key
fields`` where the record type *is* the key's version, and a value is ``int16 value version | value fields`` or null
(a tombstone: the entity was deleted).

| type  | key                                              | value (versions)                 | Kafka writes       |
|-------|--------------------------------------------------|----------------------------------|--------------------|
| 0, 1  | OffsetCommitKey {group, topic, partition}        | OffsetCommitValue (0-4)          | key 1; value 1 if  |
|       |                                                  |                                  | expireTimestamp is |
|       |                                                  |                                  | set, else 3        |
| 2     | GroupMetadataKey {group}                         | GroupMetadataValue (0-4)         | 3                  |
| 3-8   | ConsumerGroup{Metadata, PartitionMetadata, MemberMetadata, TargetAssignmentMetadata,                   |
|       | TargetAssignmentMember, CurrentMemberAssignment}Key {GroupId[, MemberId]} | ...Value (0) | 0                 |
| 9-15  | ShareGroup* (KIP-932, early access in 4.0)       | ...Value (0)                     | 0                  |
| 16    | ConsumerGroupRegularExpressionKey {GroupId, RegularExpression} | ...Value (0)       | 0                  |

The share-group records (9-15) have no class of their own: they read as ``OtherValue`` (the declaration's name and its
fields as a tuple, in declaration order). A record type no declaration has (streams groups, Kafka 4.1+) raises
``UnknownRecordTypeError``, which a loader may skip as Kafka's does. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from .codec import SchemaError, shared_codec

__all__ = [
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupRegularExpressionKey",
    "ConsumerGroupRegularExpressionValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "GroupKey",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "GroupValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "OtherKey",
    "OtherValue",
    "PartitionMetadata",
    "SchemaError",
    "TopicMetadata",
    "TopicPartitions",
    "UnknownRecordTypeError",
    "decode_any_key",
    "decode_any_value",
    "decode_key",
    "decode_record",
    "decode_value",
    "default_value_version",
    "encode_key",
    "encode_value",
    "record_type",
    "value_versions",
]

class UnknownRecordTypeError(SchemaError):
    """A key whose record type this module does not know (share/streams groups, newer Kafka)."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown __consumer_offsets record type {record_type} (Kafka 4.0 declares 0-16)")
        self.record_type = record_type


# ------------------------------------------------------------------------------------------------ keys


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group_id: str
    regular_expression: str


GroupKey: TypeAlias = (
    OffsetCommitKey | GroupMetadataKey | ConsumerGroupMetadataKey | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
)

# ------------------------------------------------------------------------------------------------ values


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1  # v3+
    expire_timestamp: int = -1  # v1 only


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None  # v3+
    rebalance_timeout: int = -1  # v1+


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...]
    current_state_timestamp: int = -1  # v2+


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    racks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int = -1
    classic_member_metadata: ClassicMemberMetadata | None = None  # tagged field 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState id
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    """A resolved regular expression: the topics it matched (written sorted), the metadata version and the time of
    the resolution."""

    topics: tuple[str, ...]
    version: int
    timestamp: int


GroupValue: TypeAlias = (
    OffsetCommitValue | GroupMetadataValue | ConsumerGroupMetadataValue | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)

@dataclass(frozen=True, slots=True)
class OtherKey:
    """A key of a record type kcoord has no class for: its declaration and its fields in declaration order."""

    record_type: int
    message: str
    fields: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class OtherValue:
    """A value of a record type kcoord has no class for: its declaration and its fields in declaration order."""

    message: str
    fields: tuple[Any, ...]


# ------------------------------------------------------------------------------------------------ bindings

CODEC = shared_codec()
_BOUND: Final[dict[str, type]] = {
    "OffsetCommitKey": OffsetCommitKey, "OffsetCommitValue": OffsetCommitValue,
    "GroupMetadataKey": GroupMetadataKey, "GroupMetadataValue": GroupMetadataValue,
    "GroupMetadataValue.members": MemberMetadata,
    "ConsumerGroupMetadataKey": ConsumerGroupMetadataKey, "ConsumerGroupMetadataValue": ConsumerGroupMetadataValue,
    "ConsumerGroupPartitionMetadataKey": ConsumerGroupPartitionMetadataKey,
    "ConsumerGroupPartitionMetadataValue": ConsumerGroupPartitionMetadataValue,
    "ConsumerGroupPartitionMetadataValue.Topics": TopicMetadata,
    "ConsumerGroupPartitionMetadataValue.Topics.PartitionMetadata": PartitionMetadata,
    "ConsumerGroupMemberMetadataKey": ConsumerGroupMemberMetadataKey,
    "ConsumerGroupMemberMetadataValue": ConsumerGroupMemberMetadataValue,
    "ConsumerGroupMemberMetadataValue.ClassicMemberMetadata": ClassicMemberMetadata,
    "ConsumerGroupMemberMetadataValue.ClassicMemberMetadata.SupportedProtocols": ClassicProtocol,
    "ConsumerGroupTargetAssignmentMetadataKey": ConsumerGroupTargetAssignmentMetadataKey,
    "ConsumerGroupTargetAssignmentMetadataValue": ConsumerGroupTargetAssignmentMetadataValue,
    "ConsumerGroupTargetAssignmentMemberKey": ConsumerGroupTargetAssignmentMemberKey,
    "ConsumerGroupTargetAssignmentMemberValue": ConsumerGroupTargetAssignmentMemberValue,
    "ConsumerGroupTargetAssignmentMemberValue.TopicPartitions": TopicPartitions,
    "ConsumerGroupCurrentMemberAssignmentKey": ConsumerGroupCurrentMemberAssignmentKey,
    "ConsumerGroupCurrentMemberAssignmentValue": ConsumerGroupCurrentMemberAssignmentValue,
    "ConsumerGroupCurrentMemberAssignmentValue.AssignedPartitions": TopicPartitions,
    "ConsumerGroupCurrentMemberAssignmentValue.PartitionsPendingRevocation": TopicPartitions,
    "ConsumerGroupRegularExpressionKey": ConsumerGroupRegularExpressionKey,
    "ConsumerGroupRegularExpressionValue": ConsumerGroupRegularExpressionValue,
}
for _path, _cls in _BOUND.items():
    CODEC.bind(_path, _cls)


def _record_types() -> dict[int, tuple[str, str]]:
    """Record type → (key declaration, value declaration): a key declaration's versions are its record types."""
    out: dict[int, tuple[str, str]] = {}
    for name, message in CODEC.messages.items():
        if message.coordinator == "group" and name.endswith("Key") and name.removesuffix("Key") + "Value" in \
                CODEC.messages:
            for rtype in message.versions():
                out[rtype] = (name, name.removesuffix("Key") + "Value")
    return out


_TYPES: Final = _record_types()
_TYPE_OF_KEY: Final[dict[type, int]] = {OffsetCommitKey: 1, **{
    cls: rtype for rtype, (key, _) in _TYPES.items() if rtype > 1 for cls in [_BOUND.get(key)] if cls is not None}}
_TYPE_OF_VALUE: Final[dict[type, int]] = {OffsetCommitValue: 1, **{
    cls: rtype for rtype, (_, value) in _TYPES.items() if rtype > 1 for cls in [_BOUND.get(value)]
    if cls is not None}}
_VERSION = struct.Struct(">h")

# ------------------------------------------------------------------------------------------------ keys


def record_type(key: bytes) -> int:
    """The record type of an encoded key: its first int16."""
    if len(key) < 2:
        raise SchemaError(f"__consumer_offsets key of {len(key)} bytes is too short for a record type")
    return int(_VERSION.unpack_from(key)[0])


def encode_key(key: GroupKey | OtherKey) -> bytes:
    if isinstance(key, OtherKey):
        return _VERSION.pack(key.record_type) + CODEC.write(key.message, key.record_type, key.fields, raw=True)
    rtype = _TYPE_OF_KEY.get(type(key))
    if rtype is None:
        raise TypeError(f"not a __consumer_offsets key: {key!r}")
    return _VERSION.pack(rtype) + CODEC.write(_TYPES[rtype][0], rtype, key)


def decode_key(buf: bytes) -> GroupKey:
    """A key of a record type with a class (0-8, 16); others raise `UnknownRecordTypeError` (a coordinator's load skips
    them, as Kafka's does the types it does not serve)."""
    key = decode_any_key(buf)
    if isinstance(key, OtherKey):
        raise UnknownRecordTypeError(key.record_type)
    return key


def decode_any_key(buf: bytes) -> GroupKey | OtherKey:
    """A key of any record type Kafka 4.0 declares (9-15 as `OtherKey`)."""
    rtype = record_type(buf)
    names = _TYPES.get(rtype)
    if names is None:
        raise UnknownRecordTypeError(rtype)
    if names[0] in _BOUND:
        key: GroupKey = CODEC.read(names[0], rtype, buf, 2)
        return key
    return OtherKey(rtype, names[0], CODEC.read(names[0], rtype, buf, 2, raw=True))


# ------------------------------------------------------------------------------------------------ values


def value_versions(rtype: int) -> tuple[int, ...]:
    """Every value version decodable for a record type."""
    if rtype not in _TYPES:
        raise UnknownRecordTypeError(rtype)
    return tuple(CODEC.messages[_TYPES[rtype][1]].versions())


def default_value_version(value: GroupValue) -> int:
    """The version Kafka writes: OffsetCommit 1 with an expire timestamp else 3, GroupMetadata 3, others 0."""
    if isinstance(value, OffsetCommitValue):
        return 1 if value.expire_timestamp != -1 else 3
    if isinstance(value, GroupMetadataValue):
        return 3
    return 0


def encode_value(value: GroupValue | OtherValue | None, version: int | None = None) -> bytes | None:
    """Encode at ``version`` (default: what Kafka writes); None encodes a tombstone (None)."""
    if value is None:
        return None
    if isinstance(value, OtherValue):
        v = 0 if version is None else version
        return _VERSION.pack(v) + CODEC.write(value.message, v, value.fields, raw=True)
    rtype = _TYPE_OF_VALUE.get(type(value))
    if rtype is None:
        raise TypeError(f"not a __consumer_offsets value: {value!r}")
    name = _TYPES[rtype][1]
    v = default_value_version(value) if version is None else version
    if v not in CODEC.messages[name].valid:
        raise SchemaError(f"{name}: cannot write version {v}, valid versions are {value_versions(rtype)}")
    return _VERSION.pack(v) + CODEC.write(name, v, value)


def decode_value(rtype: int, buf: bytes | None) -> GroupValue | None:
    """The value of a record of type ``rtype`` with a class (see ``record_type``); None (a tombstone) gives None."""
    value = decode_any_value(rtype, buf)
    if isinstance(value, OtherValue):
        raise UnknownRecordTypeError(rtype)
    return value


def decode_any_value(rtype: int, buf: bytes | None) -> GroupValue | OtherValue | None:
    """The value of a record of any type Kafka 4.0 declares (9-15 as `OtherValue`)."""
    names = _TYPES.get(rtype)
    if names is None:
        raise UnknownRecordTypeError(rtype)
    if buf is None:
        return None
    name = names[1]
    if len(buf) < 2:
        raise SchemaError(f"{name}: {len(buf)} bytes, too short for a version")
    v = int(_VERSION.unpack_from(buf)[0])
    if v not in CODEC.messages[name].valid:
        raise SchemaError(f"{name}: unknown value version {v}, expected one of {value_versions(rtype)}")
    if name in _BOUND:
        value: GroupValue = CODEC.read(name, v, buf, 2)
        return value
    return OtherValue(name, CODEC.read(name, v, buf, 2, raw=True))


def decode_record(key: bytes, value: bytes | None) -> tuple[GroupKey, GroupValue | None]:
    """Decode a ``__consumer_offsets`` record's key and value together (types with a class)."""
    decoded_key = decode_key(key)
    return decoded_key, decode_value(record_type(key), value)
