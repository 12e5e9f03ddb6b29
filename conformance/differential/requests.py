"""Per step kind: the request a client sends (from its state on one broker) and what the answer changes.

Owns: `request_for(step, state)` -> (node, request body), and `absorb(step, state, response)` -> the
follow-up (node, request body) a real client would send at once, or None. The versions are ones both kcoord and
Apache Kafka 4.0 serve and the clients send: JoinGroup v7, SyncGroup v5, Heartbeat v4, LeaveGroup v4,
OffsetCommit v8 (v9 for a KIP-848 member), OffsetFetch v8, DescribeGroups v5, ConsumerGroupHeartbeat v1,
ConsumerGroupDescribe v0, InitProducerId v4, AddPartitionsToTxn v3, AddOffsetsToTxn v3, TxnOffsetCommit v3,
EndTxn v3, Produce v9, ListOffsets v7.
Must not import: `kcoord.impl` beyond the wire codec and the record batch encoder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import Records, i8, i16, i32, i64

from .actors import (
    PARTITIONS,
    REBALANCE_TIMEOUT_MS,
    SESSION_TIMEOUT_MS,
    TRANSACTION_TIMEOUT_MS,
    Producer,
    SideState,
    _ms,
    assignment,
    record_batch,
    subscription,
)
from .steps import Step

MEMBER_ID_REQUIRED = 79
Request = tuple[int, Any]


def _group_node(state: SideState, group: str) -> int:
    return state.coordinator(group, 0)


def _txn_node(state: SideState, transactional_id: str | None) -> int:
    if transactional_id is None:  # an idempotent producer's InitProducerId goes to any broker
        return min(state.side.nodes)
    return state.coordinator(transactional_id, 1)


# ---------------------------------------------------------------------------------------------- classic groups


def _join(step: Step, state: SideState) -> Request:
    from kio.schema.join_group.v7.request import JoinGroupRequest, JoinGroupRequestProtocol

    member = state.classic[step.actor]
    if step.flag:
        member.instance_id = f"{state.names.prefix}-i{step.actor}"
    group = state.names.group
    return _group_node(state, group), JoinGroupRequest(
        group_id=GroupId(group), session_timeout=_ms(SESSION_TIMEOUT_MS), rebalance_timeout=_ms(REBALANCE_TIMEOUT_MS),
        member_id=member.member_id, group_instance_id=member.instance_id, protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=subscription(state.names.topic)),))


def _sync(step: Step, state: SideState) -> Request:
    from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment

    member = state.classic[step.actor]
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()
    if member.member_id and member.member_id == member.leader:
        by_actor = {m.member_id: i for i, m in enumerate(state.classic) if m.member_id}
        ordered = sorted(member.members, key=lambda m: (by_actor.get(m, 99), state.canon.member(m)))
        assignments = tuple(SyncGroupRequestAssignment(member_id=m, assignment=assignment(
            state.names.topic, [p for p in range(PARTITIONS) if p % len(ordered) == i]))
            for i, m in enumerate(ordered))
    group = state.names.group
    return _group_node(state, group), SyncGroupRequest(
        group_id=GroupId(group), generation_id=i32(member.generation), member_id=member.member_id,
        group_instance_id=member.instance_id, protocol_type="consumer", protocol_name="range",
        assignments=assignments)


def _heartbeat(step: Step, state: SideState) -> Request:
    from kio.schema.heartbeat.v4.request import HeartbeatRequest

    member, group = state.classic[step.actor], state.names.group
    return _group_node(state, group), HeartbeatRequest(group_id=GroupId(group), generation_id=i32(member.generation),
                                                       member_id=member.member_id,
                                                       group_instance_id=member.instance_id)


def _leave(step: Step, state: SideState) -> Request:
    from kio.schema.leave_group.v4.request import LeaveGroupRequest, MemberIdentity

    member, group = state.classic[step.actor], state.names.group
    return _group_node(state, group), LeaveGroupRequest(group_id=GroupId(group), members=(MemberIdentity(
        member_id=member.member_id, group_instance_id=member.instance_id),))


def _commit(step: Step, state: SideState) -> Request:
    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    member, group = state.classic[step.actor], state.names.group
    generation, member_id, instance = ((-1, "", None) if step.flag
                                       else (member.generation, member.member_id, member.instance_id))
    return _group_node(state, group), OffsetCommitRequest(
        group_id=GroupId(group), generation_id_or_member_epoch=i32(generation), member_id=member_id,
        group_instance_id=instance, topics=(OffsetCommitRequestTopic(name=TopicName(state.names.topic), partitions=(
            OffsetCommitRequestPartition(partition_index=i32(step.value % PARTITIONS),
                                         committed_offset=i64(step.value), committed_metadata=""),)),))


def _fetch_offsets(step: Step, state: SideState) -> Request:
    from kio.schema.offset_fetch.v8.request import (
        OffsetFetchRequest,
        OffsetFetchRequestGroup,
        OffsetFetchRequestTopics,
    )

    group = state.names.group_of(step.value)
    return _group_node(state, group), OffsetFetchRequest(groups=(OffsetFetchRequestGroup(
        group_id=GroupId(group), topics=(OffsetFetchRequestTopics(
            name=TopicName(state.names.topic), partition_indexes=tuple(i32(p) for p in range(PARTITIONS))),)),),
        require_stable=step.flag)


def _describe_group(step: Step, state: SideState) -> Request:
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest

    group = state.names.group_of(step.value)
    return _group_node(state, group), DescribeGroupsRequest(groups=(GroupId(group),),
                                                             include_authorized_operations=False)


# ---------------------------------------------------------------------------------------------- KIP-848 groups


def _cg_heartbeat(step: Step, state: SideState) -> Request:
    from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest, TopicPartitions

    member, group = state.consumers[step.actor], state.names.consumer_group
    topic_ids = {name: info.topic_id for name, info in state.side.topics.items()}
    owned: tuple[TopicPartitions, ...] | None
    if step.kind == "cg_join":
        if not member.configured:  # a client's group.instance.id is its configuration: fixed by its first join
            member.instance_id = f"{state.names.prefix}-ci{step.actor}" if step.flag else None
            member.configured = True
        epoch, timeout, topics, owned = 0, REBALANCE_TIMEOUT_MS, (TopicName(state.names.topic),), ()
    elif step.kind == "cg_leave":
        epoch, timeout, topics, owned = (-2 if member.instance_id else -1), -1, None, None
    else:
        epoch, timeout, topics = member.epoch, -1, None
        owned = tuple(TopicPartitions(topic_id=topic_ids[name], partitions=tuple(i32(p) for p in parts))
                      for name, parts in sorted(member.owned.items()))
    return _group_node(state, group), ConsumerGroupHeartbeatRequest(
        group_id=GroupId(group), member_id=state.names.consumer_member_id(step.actor), member_epoch=i32(epoch),
        instance_id=member.instance_id, rack_id=None, rebalance_timeout=_ms(timeout), subscribed_topic_names=topics,
        subscribed_topic_regex=None, server_assignor=None, topic_partitions=owned)


def _cg_describe(step: Step, state: SideState) -> Request:
    from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest

    group = state.names.group_of(step.value + 1)  # value 0: the KIP-848 group
    return _group_node(state, group), ConsumerGroupDescribeRequest(group_ids=(GroupId(group),),
                                                                   include_authorized_operations=False)


def _cg_commit(step: Step, state: SideState) -> Request:
    from kio.schema.offset_commit.v9.request import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    member, group = state.consumers[step.actor], state.names.consumer_group
    return _group_node(state, group), OffsetCommitRequest(
        group_id=GroupId(group), generation_id_or_member_epoch=i32(member.epoch),
        member_id=state.names.consumer_member_id(step.actor), group_instance_id=member.instance_id,
        topics=(OffsetCommitRequestTopic(name=TopicName(state.names.topic), partitions=(OffsetCommitRequestPartition(
            partition_index=i32(step.value % PARTITIONS), committed_offset=i64(step.value),
            committed_metadata=""),)),))


# ---------------------------------------------------------------------------------------------- transactions


def _init_pid(step: Step, state: SideState) -> Request:
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

    producer = state.producers[step.actor]
    producer.transactional_id = state.names.txn(step.value)
    pid, epoch = (producer.producer_id, producer.epoch) if step.flag else (-1, -1)
    return _txn_node(state, producer.transactional_id), InitProducerIdRequest(
        transactional_id=None if producer.transactional_id is None else TransactionalId(producer.transactional_id),
        transaction_timeout=_ms(TRANSACTION_TIMEOUT_MS), producer_id=ProducerId(pid), producer_epoch=i16(epoch))


def _txn_id(state: SideState, step: Step) -> str:
    return state.producers[step.actor].transactional_id or ""


def _add_partitions(step: Step, state: SideState) -> Request:
    from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic

    producer, txn = state.producers[step.actor], _txn_id(state, step)
    return _txn_node(state, txn or None), AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TransactionalId(txn), v3_and_below_producer_id=ProducerId(producer.producer_id),
        v3_and_below_producer_epoch=i16(producer.epoch), v3_and_below_topics=(AddPartitionsToTxnTopic(
            name=TopicName(state.names.topic), partitions=(i32(step.value % PARTITIONS),)),))


def _base_sequence(step: Step, producer: Producer) -> int:
    """The next sequence of the step's partition; one more (a gap) or the last batch's again, as the step says."""
    partition, skew = step.value % PARTITIONS, step.value // 2 % 3
    following = producer.next_sequence.get(partition, 0)
    if skew == 1:
        return following + 1
    return producer.last_sequence.get(partition, following) if skew == 2 else following


def _produce(step: Step, state: SideState) -> Request:
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

    producer, partition = state.producers[step.actor], step.value % PARTITIONS
    base = _base_sequence(step, producer)
    transactional = step.flag and producer.transactional_id is not None
    batch = record_batch(producer, base, transactional, f"p{step.actor}-s{base}".encode())
    return state.leader(partition), ProduceRequest(
        transactional_id=TransactionalId(producer.transactional_id) if transactional else None, acks=i16(-1),
        timeout=_ms(30_000), topic_data=(TopicProduceData(name=TopicName(state.names.topic), partition_data=(
            PartitionProduceData(index=i32(partition), records=Records(batch)),)),))


def _add_offsets(step: Step, state: SideState) -> Request:
    from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest

    producer, txn = state.producers[step.actor], _txn_id(state, step)
    return _txn_node(state, txn or None), AddOffsetsToTxnRequest(
        transactional_id=TransactionalId(txn), producer_id=ProducerId(producer.producer_id),
        producer_epoch=i16(producer.epoch), group_id=GroupId(state.names.group))


def _txn_commit_offsets(step: Step, state: SideState) -> Request:
    from kio.schema.txn_offset_commit.v3.request import (
        TxnOffsetCommitRequest,
        TxnOffsetCommitRequestPartition,
        TxnOffsetCommitRequestTopic,
    )

    producer, member, group = state.producers[step.actor], state.classic[0], state.names.group
    generation, member_id, instance = ((member.generation, member.member_id, member.instance_id) if step.flag
                                       else (-1, "", None))
    return _group_node(state, group), TxnOffsetCommitRequest(
        transactional_id=TransactionalId(_txn_id(state, step)), group_id=GroupId(group),
        producer_id=ProducerId(producer.producer_id), producer_epoch=i16(producer.epoch),
        generation_id=i32(generation), member_id=member_id, group_instance_id=instance,
        topics=(TxnOffsetCommitRequestTopic(name=TopicName(state.names.topic), partitions=(
            TxnOffsetCommitRequestPartition(partition_index=i32(step.value % PARTITIONS),
                                            committed_offset=i64(step.value), committed_metadata=""),)),))


def _end_txn(step: Step, state: SideState) -> Request:
    from kio.schema.end_txn.v3.request import EndTxnRequest

    producer, txn = state.producers[step.actor], _txn_id(state, step)
    return _txn_node(state, txn or None), EndTxnRequest(
        transactional_id=TransactionalId(txn), producer_id=ProducerId(producer.producer_id),
        producer_epoch=i16(producer.epoch), committed=step.flag)


def _list_offsets(step: Step, state: SideState) -> Request:
    from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
    from kio.schema.types import BrokerId

    partition = step.value % PARTITIONS
    return state.leader(partition), ListOffsetsRequest(
        replica_id=BrokerId(-1), isolation_level=i8(1 if step.flag else 0), topics=(ListOffsetsTopic(
            name=TopicName(state.names.topic), partitions=(ListOffsetsPartition(
                partition_index=i32(partition), timestamp=i64(-1)),)),))


BUILDERS: dict[str, Callable[[Step, SideState], Request]] = {
    "join": _join, "sync": _sync, "heartbeat": _heartbeat, "leave": _leave, "commit": _commit,
    "fetch_offsets": _fetch_offsets, "describe_group": _describe_group, "cg_join": _cg_heartbeat,
    "cg_heartbeat": _cg_heartbeat, "cg_leave": _cg_heartbeat, "cg_describe": _cg_describe, "cg_commit": _cg_commit,
    "init_pid": _init_pid, "add_partitions": _add_partitions, "produce": _produce, "add_offsets": _add_offsets,
    "txn_commit_offsets": _txn_commit_offsets, "end_txn": _end_txn, "list_offsets": _list_offsets,
}


def request_for(step: Step, state: SideState) -> Request:
    return BUILDERS[step.kind](step, state)


# ---------------------------------------------------------------------------------------------- answers

UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_MEMBER_EPOCH = 25, 22, 110


def _error(response: Any) -> int:
    return int(getattr(response, "error_code", 0))


def _absorb_classic(step: Step, state: SideState, response: Any) -> Request | None:
    member, error = state.classic[step.actor], _error(response)
    if step.kind == "join" and error == MEMBER_ID_REQUIRED and not member.member_id:
        member.member_id = response.member_id
        return _join(step, state)  # a client joins again at once with the id it was given
    if step.kind == "join" and error == 0:
        member.member_id, member.generation = response.member_id, int(response.generation_id)
        member.leader, member.members = response.leader, [m.member_id for m in response.members]
    elif step.kind == "leave" and error == 0:
        member.member_id, member.generation, member.leader, member.members = "", -1, "", []
    elif error == UNKNOWN_MEMBER_ID:
        member.member_id, member.generation = "", -1
    elif error == ILLEGAL_GENERATION:
        member.generation = -1
    return None


def _absorb_consumer(step: Step, state: SideState, response: Any) -> Request | None:
    member, error = state.consumers[step.actor], _error(response)
    if error in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH) or (step.kind == "cg_leave" and error == 0):
        member.epoch, member.owned = 0, {}
    elif error == 0:
        member.epoch = int(response.member_epoch)
        if response.assignment is not None:
            names = {info.topic_id: name for name, info in state.side.topics.items()}
            member.owned = {names.get(t.topic_id, str(t.topic_id)): tuple(sorted(int(p) for p in t.partitions))
                            for t in response.assignment.topic_partitions if t.partitions}
    return None


def _absorb_producer(step: Step, state: SideState, response: Any) -> Request | None:
    producer = state.producers[step.actor]
    if step.kind == "init_pid" and _error(response) == 0:
        producer.producer_id, producer.epoch = int(response.producer_id), int(response.producer_epoch)
        producer.next_sequence.clear()
        producer.last_sequence.clear()
    elif step.kind == "produce" and producer.producer_id >= 0:
        (topic,) = response.responses
        (answer,) = topic.partition_responses
        if _error(answer) == 0:
            partition, base = step.value % PARTITIONS, _base_sequence(step, producer)
            producer.next_sequence[partition] = max(producer.next_sequence.get(partition, 0), base + 1)
            producer.last_sequence[partition] = base
    return None


def absorb(step: Step, state: SideState, response: Any) -> Request | None:
    """What the answer changes in the client; the follow-up request a real client sends at once, if any."""
    if step.kind in {"join", "sync", "heartbeat", "leave"}:
        return _absorb_classic(step, state, response)
    if step.kind in {"cg_join", "cg_heartbeat", "cg_leave"}:
        return _absorb_consumer(step, state, response)
    if step.kind in {"init_pid", "produce"}:
        return _absorb_producer(step, state, response)
    return None


def restart(step: Step, state: SideState) -> None:
    """A client restarts: its connections are closed and what it knew is forgotten (a static member keeps nothing
    either: its next join names its instance id again when the step says so)."""
    from .actors import ClassicMember, actor_key

    state.restart(actor_key(step))
    if step.kind == "restart_member":
        state.classic[step.actor] = ClassicMember()
    else:
        state.producers[step.actor] = Producer()
