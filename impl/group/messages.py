"""Requests and responses of the group coordinator's APIs, as plain values (the wire layer maps kio messages to them).

Owns: one request and one response dataclass per API (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
TxnOffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups, DeleteGroups, ConsumerGroupHeartbeat,
ConsumerGroupDescribe). Field names follow Kafka's JSON message schemas in snake case; `None` is Kafka's null.
Error fields hold Kafka error names (`Errors.java`), "NONE" for success; `group_not_found` words the message that
goes with GROUP_ID_NOT_FOUND in the describe answers.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from .._generated.classic_group import State as ClassicGroupState
from .._generated.consumer_group import State as ConsumerGroupState
from ..errors import Errors

Protocols = tuple[tuple[str, bytes], ...]  # JoinGroup protocols: (name, metadata), in the client's preference order


def group_not_found(group_id: str, exists_as_other_type: bool, wanted_type: str) -> str:
    """The message of Kafka's GroupIdNotFoundException when a describe of `wanted_type` ("classic", "consumer")
    finds no such group, or a group of the other type."""
    return f"Group {group_id} is not a {wanted_type} group." if exists_as_other_type else f"Group {group_id} not found."


# ---------------------------------------------------------------------------------------------- classic group APIs


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str = ""
    group_instance_id: str | None = None
    protocol_type: str = "consumer"
    protocols: Protocols = ()
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = -1  # -1 (v0): the session timeout is used
    client_id: str = "client"
    client_host: str = "/127.0.0.1"
    api_version: int = 9
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    error: str
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinGroupMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()  # (member id, assignment): only the leader sends them
    api_version: int = 5


@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    error: str
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: str


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]


@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    error: str  # top-level
    members: tuple[tuple[MemberIdentity, str], ...] = ()  # (identity, error) per member


# ---------------------------------------------------------------------------------------------- offsets


@dataclass(frozen=True, slots=True)
class OffsetCommitPartition:
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    topics: tuple[tuple[str, tuple[OffsetCommitPartition, ...]], ...]
    member_id: str = ""
    generation_id: int = -1  # generationIdOrMemberEpoch
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    api_version: int = 9


PartitionErrors = tuple[tuple[str, tuple[tuple[int, str], ...]], ...]  # topic -> ((partition, error), ...)


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    topics: PartitionErrors


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    topics: tuple[tuple[str, tuple[OffsetCommitPartition, ...]], ...]
    member_id: str = ""
    generation_id: int = -1
    group_instance_id: str | None = None
    api_version: int = 3


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse:
    topics: PartitionErrors


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...] | None = None  # None: every committed offset of the group
    require_stable: bool = False
    member_id: str | None = None  # v9+ (consumer groups)
    member_epoch: int = -1


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    partition: int
    offset: int = -1
    leader_epoch: int = -1
    metadata: str = ""
    error: str = Errors.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    error: str
    topics: tuple[tuple[str, tuple[FetchedOffset, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResponse:
    error: str
    topics: PartitionErrors = ()


# ---------------------------------------------------------------------------------------------- admin


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    """One group as DescribeGroups answers it. An unknown group (or one that is not classic) is GROUP_ID_NOT_FOUND
    with Kafka's message; the wire layer answers clients before DescribeGroups v6 with a Dead group instead."""
    group_id: str
    error: str
    state: str = ClassicGroupState.Dead
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[DescribedMember, ...] = ()
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str  # "classic" | "consumer"


# ---------------------------------------------------------------------------------------------- KIP-848


TopicIdPartitions = tuple[tuple[uuid.UUID, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: TopicIdPartitions | None = None  # owned partitions; None = not sent
    client_id: str = "client"
    client_host: str = "/127.0.0.1"
    api_version: int = 1  # from v1 the client generates its member id (CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION)


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error: str
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicIdPartitions | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: TopicIdPartitions
    target_assignment: TopicIdPartitions
    subscribed_topic_regex: str | None = None  # as Kafka stores it ("" for a member without one)


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    group_id: str
    error: str
    state: str = ConsumerGroupState.Dead
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedConsumerMember, ...] = field(default_factory=tuple)
    message: str | None = None
