"""Records of ``__consumer_offsets``: classic group, offset commit and KIP-848 consumer-group records.

Restates Kafka's ``group-coordinator/src/main/resources/common/message/*.json`` at 4.0
(``GroupCoordinatorRecordSerde``): a key is ``int16 record type | key fields`` where the record type *is* the key's
version, and a value is ``int16 value version | value fields`` or null (a tombstone: the entity was deleted).

| type | key (fields)                                    | value, versions (flexible from) | Kafka writes       |
|------|-------------------------------------------------|---------------------------------|--------------------|
| 0, 1 | OffsetCommitKey {group, topic, partition}       | OffsetCommitValue 0-4 (4)       | key 1; value 1 if  |
|      |                                                 |                                 | expireTimestamp is |
|      |                                                 |                                 | set, else 3        |
| 2    | GroupMetadataKey {group}                        | GroupMetadataValue 0-4 (4)      | 3                  |
| 3    | ConsumerGroupMetadataKey {GroupId}              | ConsumerGroupMetadataValue 0    | 0                  |
| 4    | ConsumerGroupPartitionMetadataKey {GroupId}     | ...PartitionMetadataValue 0     | 0                  |
| 5    | ConsumerGroupMemberMetadataKey {GroupId, MemberId} | ...MemberMetadataValue 0     | 0                  |
| 6    | ConsumerGroupTargetAssignmentMetadataKey {GroupId} | ...TargetAssignmentMetadataValue 0 | 0            |
| 7    | ConsumerGroupTargetAssignmentMemberKey {GroupId, MemberId} | ...TargetAssignmentMemberValue 0 | 0      |
| 8    | ConsumerGroupCurrentMemberAssignmentKey {GroupId, MemberId} | ...CurrentMemberAssignmentValue 0 | 0    |
| 16   | ConsumerGroupRegularExpressionKey {GroupId, RegularExpression} | ...RegularExpressionValue 0 | 0       |

All consumer-group values (types 3-8 and 16, Kafka 4.0's regular-expression resolutions) are flexible from version
0; keys are never flexible. Fields absent from
the version being written are dropped, as Kafka does for fields it marks ignorable (all of them here are).
Share-group (9-15) and other record types raise ``UnknownRecordTypeError``, which a loader may skip as Kafka's
does. Unknown tagged fields are skipped on read. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from ._codec import Reader, SchemaError, Writer

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
    "PartitionMetadata",
    "SchemaError",
    "TopicMetadata",
    "TopicPartitions",
    "UnknownRecordTypeError",
    "decode_key",
    "decode_record",
    "decode_value",
    "default_value_version",
    "encode_key",
    "encode_value",
    "record_type",
    "value_versions",
]

_VERSION = struct.Struct(">h")


class UnknownRecordTypeError(SchemaError):
    """A key whose record type this module does not know (share/streams groups, newer Kafka)."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown __consumer_offsets record type {record_type} (known: 0-8, 16)")
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

# ------------------------------------------------------------------------------------------------ key codecs


def _key_fields(key: GroupKey) -> tuple[int, tuple[str, ...], int | None]:
    """(record type Kafka writes, string fields in order, trailing int32 partition or None)."""
    match key:
        case OffsetCommitKey(group, topic, partition):
            return 1, (group, topic), partition
        case GroupMetadataKey(group):
            return 2, (group,), None
        case ConsumerGroupMetadataKey(group_id):
            return 3, (group_id,), None
        case ConsumerGroupPartitionMetadataKey(group_id):
            return 4, (group_id,), None
        case ConsumerGroupMemberMetadataKey(group_id, member_id):
            return 5, (group_id, member_id), None
        case ConsumerGroupTargetAssignmentMetadataKey(group_id):
            return 6, (group_id,), None
        case ConsumerGroupTargetAssignmentMemberKey(group_id, member_id):
            return 7, (group_id, member_id), None
        case ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id):
            return 8, (group_id, member_id), None
        case ConsumerGroupRegularExpressionKey(group_id, regex):
            return 16, (group_id, regex), None
    raise TypeError(f"not a __consumer_offsets key: {key!r}")


def encode_key(key: GroupKey) -> bytes:
    record, strings, partition = _key_fields(key)
    w = Writer(flexible=False)
    w.int16(record)
    for s in strings:
        w.string(s)
    if partition is not None:
        w.int32(partition)
    return w.getvalue()


def record_type(key: bytes) -> int:
    """The record type of an encoded key: its first int16."""
    if len(key) < 2:
        raise SchemaError(f"__consumer_offsets key of {len(key)} bytes is too short for a record type")
    return int(_VERSION.unpack_from(key)[0])


_KEY_CLASSES_ONE_STRING: Final[dict[int, Callable[[str], GroupKey]]] = {
    2: GroupMetadataKey, 3: ConsumerGroupMetadataKey, 4: ConsumerGroupPartitionMetadataKey,
    6: ConsumerGroupTargetAssignmentMetadataKey,
}
_KEY_CLASSES_TWO_STRINGS: Final[dict[int, Callable[[str, str], GroupKey]]] = {
    5: ConsumerGroupMemberMetadataKey, 7: ConsumerGroupTargetAssignmentMemberKey,
    8: ConsumerGroupCurrentMemberAssignmentKey,
}


def decode_key(buf: bytes) -> GroupKey:
    rtype = record_type(buf)
    r = Reader(buf, flexible=False, what=f"__consumer_offsets key type {rtype}", pos=2)
    key: GroupKey
    if rtype in (0, 1):
        key = OffsetCommitKey(r.string("group"), r.string("topic"), r.int32("partition"))
    elif rtype in _KEY_CLASSES_ONE_STRING:
        key = _KEY_CLASSES_ONE_STRING[rtype](r.string("group"))
    elif rtype in _KEY_CLASSES_TWO_STRINGS:
        key = _KEY_CLASSES_TWO_STRINGS[rtype](r.string("GroupId"), r.string("MemberId"))
    elif rtype == 16:
        key = ConsumerGroupRegularExpressionKey(r.string("GroupId"), r.string("RegularExpression"))
    else:
        raise UnknownRecordTypeError(rtype)
    r.expect_end()
    return key


# ------------------------------------------------------------------------------------------------ value codecs
# One writer and one reader per value type; `v` is the value version, `flex` whether it is a flexible version.


def _end_struct(w: Writer, tagged: list[tuple[int, bytes]] | None = None) -> None:
    if w.flexible:
        w.tagged_fields(tagged or [])


def _skip_tags(r: Reader) -> dict[int, bytes]:
    return r.tagged_fields() if r.flexible else {}


def _write_offset_commit(w: Writer, v: int, value: OffsetCommitValue) -> None:
    w.int64(value.offset)
    if v >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata)
    w.int64(value.commit_timestamp)
    if v == 1:
        w.int64(value.expire_timestamp)
    _end_struct(w)


def _read_offset_commit(r: Reader, v: int) -> OffsetCommitValue:
    offset = r.int64("offset")
    leader_epoch = r.int32("leaderEpoch") if v >= 3 else -1
    metadata = r.string("metadata")
    commit_timestamp = r.int64("commitTimestamp")
    expire_timestamp = r.int64("expireTimestamp") if v == 1 else -1
    _skip_tags(r)
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


def _write_group_metadata(w: Writer, v: int, value: GroupMetadataValue) -> None:
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.string(value.protocol, nullable=True)
    w.string(value.leader, nullable=True)
    if v >= 2:
        w.int64(value.current_state_timestamp)

    def write_member(m: MemberMetadata) -> None:
        w.string(m.member_id)
        if v >= 3:
            w.string(m.group_instance_id, nullable=True)
        w.string(m.client_id)
        w.string(m.client_host)
        if v >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        _end_struct(w)

    w.array(value.members, write_member)
    _end_struct(w)


def _read_group_metadata(r: Reader, v: int) -> GroupMetadataValue:
    protocol_type = r.string("protocolType")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    current_state_timestamp = r.int64("currentStateTimestamp") if v >= 2 else -1

    def read_member() -> MemberMetadata:
        member_id = r.string("memberId")
        group_instance_id = r.nullable_string("groupInstanceId") if v >= 3 else None
        client_id = r.string("clientId")
        client_host = r.string("clientHost")
        rebalance_timeout = r.int32("rebalanceTimeout") if v >= 1 else -1
        session_timeout = r.int32("sessionTimeout")
        subscription = r.bytes_("subscription")
        assignment = r.bytes_("assignment")
        _skip_tags(r)
        return MemberMetadata(member_id, client_id, client_host, session_timeout, subscription, assignment,
                              group_instance_id, rebalance_timeout)

    members = r.array("members", read_member)
    _skip_tags(r)
    return GroupMetadataValue(protocol_type, generation, protocol, leader, members, current_state_timestamp)


def _write_consumer_group_metadata(w: Writer, v: int, value: ConsumerGroupMetadataValue) -> None:
    w.int32(value.epoch)
    _end_struct(w)


def _read_consumer_group_metadata(r: Reader, v: int) -> ConsumerGroupMetadataValue:
    epoch = r.int32("Epoch")
    _skip_tags(r)
    return ConsumerGroupMetadataValue(epoch)


def _write_partition_metadata(w: Writer, v: int, value: ConsumerGroupPartitionMetadataValue) -> None:
    def write_partition(p: PartitionMetadata) -> None:
        w.int32(p.partition)
        w.array(p.racks, w.string)
        _end_struct(w)

    def write_topic(t: TopicMetadata) -> None:
        w.uuid(t.topic_id)
        w.string(t.topic_name)
        w.int32(t.num_partitions)
        w.array(t.partition_metadata, write_partition)
        _end_struct(w)

    w.array(value.topics, write_topic)
    _end_struct(w)


def _read_partition_metadata(r: Reader, v: int) -> ConsumerGroupPartitionMetadataValue:
    def read_partition() -> PartitionMetadata:
        partition = r.int32("Partition")
        racks = r.array("Racks", lambda: r.string("Racks[]"))
        _skip_tags(r)
        return PartitionMetadata(partition, racks)

    def read_topic() -> TopicMetadata:
        topic_id = r.uuid("TopicId")
        name = r.string("TopicName")
        num_partitions = r.int32("NumPartitions")
        partitions = r.array("PartitionMetadata", read_partition)
        _skip_tags(r)
        return TopicMetadata(topic_id, name, num_partitions, partitions)

    topics = r.array("Topics", read_topic)
    _skip_tags(r)
    return ConsumerGroupPartitionMetadataValue(topics)


def _write_member_metadata(w: Writer, v: int, value: ConsumerGroupMemberMetadataValue) -> None:
    w.string(value.instance_id, nullable=True)
    w.string(value.rack_id, nullable=True)
    w.string(value.client_id)
    w.string(value.client_host)
    w.array(value.subscribed_topic_names, w.string)
    w.string(value.subscribed_topic_regex, nullable=True)
    w.int32(value.rebalance_timeout_ms)
    w.string(value.server_assignor, nullable=True)
    tagged = []
    classic = value.classic_member_metadata
    if classic is not None:
        inner = Writer(flexible=True)
        inner.raw(b"\x01")  # a nullable struct in a tagged field: unsigned varint 1 = present
        inner.int32(classic.session_timeout_ms)

        def write_protocol(p: ClassicProtocol) -> None:
            inner.string(p.name)
            inner.bytes_(p.metadata)
            _end_struct(inner)

        inner.array(classic.supported_protocols, write_protocol)
        _end_struct(inner)
        tagged.append((0, inner.getvalue()))
    _end_struct(w, tagged)


def _read_classic_member_metadata(r: Reader) -> ClassicMemberMetadata | None:
    if r.uvarint("ClassicMemberMetadata presence") == 0:
        return None
    session_timeout_ms = r.int32("SessionTimeoutMs")

    def read_protocol() -> ClassicProtocol:
        name = r.string("Name")
        metadata = r.bytes_("Metadata")
        _skip_tags(r)
        return ClassicProtocol(name, metadata)

    protocols = r.array("SupportedProtocols", read_protocol)
    _skip_tags(r)
    r.expect_end()
    return ClassicMemberMetadata(session_timeout_ms, protocols)


def _read_member_metadata(r: Reader, v: int) -> ConsumerGroupMemberMetadataValue:
    instance_id = r.nullable_string("InstanceId")
    rack_id = r.nullable_string("RackId")
    client_id = r.string("ClientId")
    client_host = r.string("ClientHost")
    topics = r.array("SubscribedTopicNames", lambda: r.string("SubscribedTopicNames[]"))
    regex = r.nullable_string("SubscribedTopicRegex")
    rebalance_timeout_ms = r.int32("RebalanceTimeoutMs")
    server_assignor = r.nullable_string("ServerAssignor")
    tagged = _skip_tags(r)
    classic = None
    if 0 in tagged:
        classic = _read_classic_member_metadata(r.sub_reader(tagged[0], "ClassicMemberMetadata"))
    return ConsumerGroupMemberMetadataValue(instance_id, rack_id, client_id, client_host, topics, regex,
                                            server_assignor, rebalance_timeout_ms, classic)


def _write_target_assignment_metadata(w: Writer, v: int, value: ConsumerGroupTargetAssignmentMetadataValue) -> None:
    w.int32(value.assignment_epoch)
    _end_struct(w)


def _read_target_assignment_metadata(r: Reader, v: int) -> ConsumerGroupTargetAssignmentMetadataValue:
    epoch = r.int32("AssignmentEpoch")
    _skip_tags(r)
    return ConsumerGroupTargetAssignmentMetadataValue(epoch)


def _write_topic_partitions(w: Writer, items: tuple[TopicPartitions, ...]) -> None:
    def write_one(tp: TopicPartitions) -> None:
        w.uuid(tp.topic_id)
        w.array(tp.partitions, w.int32)
        _end_struct(w)

    w.array(items, write_one)


def _read_topic_partitions(r: Reader, field: str) -> tuple[TopicPartitions, ...]:
    def read_one() -> TopicPartitions:
        topic_id = r.uuid("TopicId")
        partitions = r.array("Partitions", lambda: r.int32("Partitions[]"))
        _skip_tags(r)
        return TopicPartitions(topic_id, partitions)

    return r.array(field, read_one)


def _write_target_assignment_member(w: Writer, v: int, value: ConsumerGroupTargetAssignmentMemberValue) -> None:
    _write_topic_partitions(w, value.topic_partitions)
    _end_struct(w)


def _read_target_assignment_member(r: Reader, v: int) -> ConsumerGroupTargetAssignmentMemberValue:
    tps = _read_topic_partitions(r, "TopicPartitions")
    _skip_tags(r)
    return ConsumerGroupTargetAssignmentMemberValue(tps)


def _write_current_assignment(w: Writer, v: int, value: ConsumerGroupCurrentMemberAssignmentValue) -> None:
    w.int32(value.member_epoch)
    w.int32(value.previous_member_epoch)
    w.int8(value.state)
    _write_topic_partitions(w, value.assigned_partitions)
    _write_topic_partitions(w, value.partitions_pending_revocation)
    _end_struct(w)


def _read_current_assignment(r: Reader, v: int) -> ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch = r.int32("MemberEpoch")
    previous_member_epoch = r.int32("PreviousMemberEpoch")
    state = r.int8("State")
    assigned = _read_topic_partitions(r, "AssignedPartitions")
    pending = _read_topic_partitions(r, "PartitionsPendingRevocation")
    _skip_tags(r)
    return ConsumerGroupCurrentMemberAssignmentValue(member_epoch, previous_member_epoch, state, assigned, pending)


def _write_regular_expression(w: Writer, v: int, value: ConsumerGroupRegularExpressionValue) -> None:
    w.array(value.topics, w.string)
    w.int64(value.version)
    w.int64(value.timestamp)
    _end_struct(w)


def _read_regular_expression(r: Reader, v: int) -> ConsumerGroupRegularExpressionValue:
    topics = r.array("Topics", lambda: r.string("Topics[]"))
    version = r.int64("Version")
    timestamp = r.int64("Timestamp")
    _skip_tags(r)
    return ConsumerGroupRegularExpressionValue(topics, version, timestamp)


@dataclass(frozen=True, slots=True)
class _ValueSchema:
    name: str
    value_class: type
    versions: tuple[int, ...]
    flexible_from: int
    write: Callable[[Writer, int, Any], None]  # Any: each writer takes its own value class
    read: Callable[[Reader, int], GroupValue]


_OFFSET_COMMIT = _ValueSchema("OffsetCommitValue", OffsetCommitValue, (0, 1, 2, 3, 4), 4,
                              _write_offset_commit, _read_offset_commit)
_SCHEMAS: Final[dict[int, _ValueSchema]] = {
    0: _OFFSET_COMMIT,
    1: _OFFSET_COMMIT,
    2: _ValueSchema("GroupMetadataValue", GroupMetadataValue, (0, 1, 2, 3, 4), 4,
                    _write_group_metadata, _read_group_metadata),
    3: _ValueSchema("ConsumerGroupMetadataValue", ConsumerGroupMetadataValue, (0,), 0,
                    _write_consumer_group_metadata, _read_consumer_group_metadata),
    4: _ValueSchema("ConsumerGroupPartitionMetadataValue", ConsumerGroupPartitionMetadataValue, (0,), 0,
                    _write_partition_metadata, _read_partition_metadata),
    5: _ValueSchema("ConsumerGroupMemberMetadataValue", ConsumerGroupMemberMetadataValue, (0,), 0,
                    _write_member_metadata, _read_member_metadata),
    6: _ValueSchema("ConsumerGroupTargetAssignmentMetadataValue", ConsumerGroupTargetAssignmentMetadataValue, (0,), 0,
                    _write_target_assignment_metadata, _read_target_assignment_metadata),
    7: _ValueSchema("ConsumerGroupTargetAssignmentMemberValue", ConsumerGroupTargetAssignmentMemberValue, (0,), 0,
                    _write_target_assignment_member, _read_target_assignment_member),
    8: _ValueSchema("ConsumerGroupCurrentMemberAssignmentValue", ConsumerGroupCurrentMemberAssignmentValue, (0,), 0,
                    _write_current_assignment, _read_current_assignment),
    16: _ValueSchema("ConsumerGroupRegularExpressionValue", ConsumerGroupRegularExpressionValue, (0,), 0,
                     _write_regular_expression, _read_regular_expression),
}
_RECORD_TYPE_OF_VALUE: Final = {schema.value_class: rtype for rtype, schema in _SCHEMAS.items() if rtype != 0}


def value_versions(rtype: int) -> tuple[int, ...]:
    """Every value version decodable for a record type."""
    if rtype not in _SCHEMAS:
        raise UnknownRecordTypeError(rtype)
    return _SCHEMAS[rtype].versions


def default_value_version(value: GroupValue) -> int:
    """The version Kafka writes: OffsetCommit 1 with an expire timestamp else 3, GroupMetadata 3, others 0."""
    if isinstance(value, OffsetCommitValue):
        return 1 if value.expire_timestamp != -1 else 3
    if isinstance(value, GroupMetadataValue):
        return 3
    return 0


def encode_value(value: GroupValue | None, version: int | None = None) -> bytes | None:
    """Encode at ``version`` (default: what Kafka writes); None encodes a tombstone (None)."""
    if value is None:
        return None
    rtype = _RECORD_TYPE_OF_VALUE.get(type(value))
    if rtype is None:
        raise TypeError(f"not a __consumer_offsets value: {value!r}")
    schema = _SCHEMAS[rtype]
    v = default_value_version(value) if version is None else version
    if v not in schema.versions:
        raise SchemaError(f"{schema.name}: cannot write version {v}, valid versions are {schema.versions}")
    w = Writer(flexible=v >= schema.flexible_from)
    w.int16(v)
    schema.write(w, v, value)
    return w.getvalue()


def decode_value(rtype: int, buf: bytes | None) -> GroupValue | None:
    """Decode the value of a record of type ``rtype`` (see ``record_type``); None (a tombstone) gives None."""
    schema = _SCHEMAS.get(rtype)
    if schema is None:
        raise UnknownRecordTypeError(rtype)
    if buf is None:
        return None
    if len(buf) < 2:
        raise SchemaError(f"{schema.name}: {len(buf)} bytes, too short for a version")
    v = int(_VERSION.unpack_from(buf)[0])
    if v not in schema.versions:
        raise SchemaError(f"{schema.name}: unknown value version {v}, expected one of {schema.versions}")
    r = Reader(buf, flexible=v >= schema.flexible_from, what=f"{schema.name} v{v}", pos=2)
    value = schema.read(r, v)
    r.expect_end()
    return value


def decode_record(key: bytes, value: bytes | None) -> tuple[GroupKey, GroupValue | None]:
    """Decode a ``__consumer_offsets`` record's key and value together."""
    decoded_key = decode_key(key)
    return decoded_key, decode_value(record_type(key), value)
