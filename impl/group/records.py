"""The `__consumer_offsets` records the group coordinator writes, built from its state (Kafka's
`GroupCoordinatorRecordHelpers`), as `(key bytes, value bytes | None)` pairs in the schemas of
`kcoord.impl.storage.group_log_schema` at the versions Kafka 4.0 writes (GroupMetadata value v3, OffsetCommit value
v1 with an expire timestamp else v3, consumer-group values v0, the regular-expression resolutions of type 16 v0).

Owns: record builders only (no decisions). Must not import: `kcoord.model`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from .._generated.consumer_group_member import State as MemberState
from ..assignors._java import uuid_sort_key
from ..assignors.server import TopicMetadata
from ..runtime.shard import RecordBytes
from ..storage import group_log_schema as schema
from .state import Assignment, ClassicGroupData, ConsumerMember, ResolvedRegex

GROUP_METADATA_VALUE_VERSION = 3
UNKNOWN_STATE_BYTE = 127
MEMBER_STATE_BYTES = {MemberState.Stable: 0, MemberState.UnrevokedPartitions: 1, MemberState.UnreleasedPartitions: 2,
                      MemberState.Unknown: 127}


def record(key: schema.GroupKey, value: schema.GroupValue | None) -> RecordBytes:
    return schema.encode_key(key), schema.encode_value(value)


# ---------------------------------------------------------------------------------------------- classic groups


def group_metadata(group_id: str, instance: Mapping[str, Any], data: ClassicGroupData, *,
                   assignment: Mapping[str, bytes] | None = None) -> RecordBytes:
    """GroupMetadata of the group as `instance` (the spec post-state) and `data` describe it. `assignment`
    overrides the members' stored assignments (the leader's SyncGroup); members it leaves out get empty bytes."""
    protocol = str(instance["protocol"])
    members = []
    for member_id in data.members:
        member = data.members[member_id]
        given = member.assignment if assignment is None else assignment.get(member_id, b"")
        members.append(schema.MemberMetadata(
            member_id=member_id, client_id=member.client_id, client_host=member.client_host,
            session_timeout=member.session_timeout_ms, subscription=member.metadata(protocol), assignment=given,
            group_instance_id=member.instance_id, rebalance_timeout=member.rebalance_timeout_ms))
    value = schema.GroupMetadataValue(
        protocol_type=str(instance["protocol_type"]), generation=int(instance["generation"]),
        protocol=protocol or None, leader=str(instance["leader"]) or None, members=tuple(members),
        current_state_timestamp=data.state_timestamp_ms if data.state_timestamp_ms is not None else -1)
    return schema.encode_key(schema.GroupMetadataKey(group_id)), \
        schema.encode_value(value, GROUP_METADATA_VALUE_VERSION)


def empty_group_metadata(group_id: str, state_timestamp_ms: int) -> RecordBytes:
    """newEmptyGroupMetadataRecord: a group that exists, generation 0, no protocol type."""
    value = schema.GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None, members=(),
                                      current_state_timestamp=state_timestamp_ms)
    return schema.encode_key(schema.GroupMetadataKey(group_id)), \
        schema.encode_value(value, GROUP_METADATA_VALUE_VERSION)


def group_tombstone(group_id: str) -> RecordBytes:
    return schema.encode_key(schema.GroupMetadataKey(group_id)), None


# ---------------------------------------------------------------------------------------------- offsets


def offset_commit(group_id: str, topic: str, partition: int, value: schema.OffsetCommitValue) -> RecordBytes:
    return record(schema.OffsetCommitKey(group_id, topic, partition), value)


def offset_tombstone(group_id: str, topic: str, partition: int) -> RecordBytes:
    return schema.encode_key(schema.OffsetCommitKey(group_id, topic, partition)), None


# ---------------------------------------------------------------------------------------------- KIP-848 groups


def topic_partitions(assignment: Mapping[uuid.UUID, frozenset[int]]) -> tuple[schema.TopicPartitions, ...]:
    """Deterministic order: topic ids as Kafka's Uuid.compareTo orders them, partitions ascending."""
    return tuple(schema.TopicPartitions(t, tuple(sorted(assignment[t])))
                 for t in sorted(assignment, key=uuid_sort_key) if assignment[t])


def from_topic_partitions(items: tuple[schema.TopicPartitions, ...]) -> Assignment:
    return {tp.topic_id: frozenset(tp.partitions) for tp in items if tp.partitions}


def consumer_group_epoch(group_id: str, epoch: int) -> RecordBytes:
    return record(schema.ConsumerGroupMetadataKey(group_id), schema.ConsumerGroupMetadataValue(epoch))


def partition_metadata(group_id: str, metadata: Mapping[str, TopicMetadata]) -> RecordBytes:
    topics = tuple(schema.TopicMetadata(m.topic_id, m.name, m.num_partitions) for _, m in sorted(metadata.items()))
    return record(schema.ConsumerGroupPartitionMetadataKey(group_id),
                  schema.ConsumerGroupPartitionMetadataValue(topics))


def member_metadata(group_id: str, member: ConsumerMember) -> RecordBytes:
    value = schema.ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=tuple(sorted(set(member.subscribed_topic_names))),
        subscribed_topic_regex=member.subscribed_topic_regex, server_assignor=member.server_assignor,
        rebalance_timeout_ms=member.rebalance_timeout_ms, classic_member_metadata=_classic_metadata(member))
    return record(schema.ConsumerGroupMemberMetadataKey(group_id, member.member_id), value)


def _classic_metadata(member: ConsumerMember) -> schema.ClassicMemberMetadata | None:
    if member.classic_protocols is None or member.classic_session_timeout_ms is None:
        return None
    return schema.ClassicMemberMetadata(member.classic_session_timeout_ms, tuple(
        schema.ClassicProtocol(name, metadata) for name, metadata in member.classic_protocols))


def target_member(group_id: str, member_id: str, assignment: Assignment) -> RecordBytes:
    return record(schema.ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
                  schema.ConsumerGroupTargetAssignmentMemberValue(topic_partitions(assignment)))


def target_epoch(group_id: str, epoch: int) -> RecordBytes:
    return record(schema.ConsumerGroupTargetAssignmentMetadataKey(group_id),
                  schema.ConsumerGroupTargetAssignmentMetadataValue(epoch))


def current_assignment(group_id: str, member_id: str, *, epoch: int, previous_epoch: int, state: int,
                       assigned: Assignment, pending: Assignment) -> RecordBytes:
    value = schema.ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=epoch, previous_member_epoch=previous_epoch, state=state,
        assigned_partitions=topic_partitions(assigned), partitions_pending_revocation=topic_partitions(pending))
    return record(schema.ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), value)


def member_tombstones(group_id: str, member_id: str) -> list[RecordBytes]:
    """removeMember: current assignment (8), target assignment (7), member metadata (5), in that order."""
    return [
        (schema.encode_key(schema.ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id)), None),
        (schema.encode_key(schema.ConsumerGroupTargetAssignmentMemberKey(group_id, member_id)), None),
        (schema.encode_key(schema.ConsumerGroupMemberMetadataKey(group_id, member_id)), None),
    ]


def regular_expression(group_id: str, regex: str, resolved: ResolvedRegex) -> RecordBytes:
    """newConsumerGroupRegularExpressionRecord (record type 16): the topics sorted."""
    return record(schema.ConsumerGroupRegularExpressionKey(group_id, regex),
                  schema.ConsumerGroupRegularExpressionValue(tuple(sorted(resolved.topics)), resolved.version,
                                                             resolved.timestamp_ms))


def regular_expression_tombstone(group_id: str, regex: str) -> RecordBytes:
    return schema.encode_key(schema.ConsumerGroupRegularExpressionKey(group_id, regex)), None


def consumer_group_tombstones(group_id: str, member_ids: Sequence[str],
                              regexes: Sequence[str] = ()) -> list[RecordBytes]:
    """ConsumerGroup.createGroupTombstoneRecords: 8 per member, 7 per member, 6, 5 per member, 16 per resolved
    regular expression, 4, 3."""
    out: list[RecordBytes] = []
    out += [(schema.encode_key(schema.ConsumerGroupCurrentMemberAssignmentKey(group_id, m)), None) for m in member_ids]
    out += [(schema.encode_key(schema.ConsumerGroupTargetAssignmentMemberKey(group_id, m)), None) for m in member_ids]
    out.append((schema.encode_key(schema.ConsumerGroupTargetAssignmentMetadataKey(group_id)), None))
    out += [(schema.encode_key(schema.ConsumerGroupMemberMetadataKey(group_id, m)), None) for m in member_ids]
    out += [regular_expression_tombstone(group_id, regex) for regex in regexes]
    out.append((schema.encode_key(schema.ConsumerGroupPartitionMetadataKey(group_id)), None))
    out.append((schema.encode_key(schema.ConsumerGroupMetadataKey(group_id)), None))
    return out
