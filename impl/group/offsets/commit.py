"""Offsets (kafka-reference.md §2.8, §3.8): OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete.

Owns: the handlers. Every group-state-dependent answer is the specs': member/generation validation
(ClassicGroup.OffsetCommit / TxnOffsetCommit, ConsumerGroup.OffsetCommit then ConsumerGroupMember.OffsetCommit /
OffsetFetch), whether the group is found for a fetch (ClassicGroup.OffsetFetch), UNSTABLE_OFFSET_COMMIT
(OffsetFetchPartition), OffsetDelete's group and partition answers (OffsetDelete, OffsetDeletePartition); the
producer epoch check of a transactional write is PartitionProducer's (CoordinatorAppend). This module computes their
parameters from the offset store (pending offsets, stored offsets, timestamps) and the members' subscriptions
(`subscription_facts`, which expiration shares), and writes the records. The per-partition metadata size limit
(OFFSET_METADATA_TOO_LARGE, request validation that no group state decides) is this module's.
Expiration is `expiration`'s, the `__consumer_offsets` side of WriteTxnMarkers `markers`'.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..._generated.classic_group import Event as ClassicGroupEvent
from ..._generated.consumer_group import Event as ConsumerGroupEvent
from ..._generated.consumer_group_member import Event as MemberEvent
from ..._generated.partition_producer import Event as PartitionProducerEvent
from ...errors import Errors
from ...runtime.completion import Completion
from ...runtime.shard import Plan, Shard
from ...statemachine import MachineTable
from ...storage.group_log_schema import OffsetCommitValue
from .. import records
from ..classic.group import hb_key, member_expired, submit_internal
from ..context import Context
from ..messages import (
    FetchedOffset,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionErrors,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from ..planning import PlanBuilder, settle
from ..shard_state import GroupShardState
from ..state import ClassicGroupData
from .store import OffsetEntry, OffsetStore

Topics = tuple[tuple[str, tuple[OffsetCommitPartition, ...]], ...]


def is_consumer_group(shard: Shard, group_id: str) -> bool:
    """A KIP-848 group holds this id (else the classic machine answers, including for unknown ids)."""
    return shard.get("ConsumerGroup", (group_id,)) is not None


@dataclass(frozen=True, slots=True)
class GroupMachine:
    """The machine that answers for a group, classic or KIP-848, and its events: the offset events both machines
    answer (OffsetFetchPartition, OffsetDelete, OffsetDeletePartition, ExpireOffset) have the same names in both."""

    table: MachineTable
    events: type[ClassicGroupEvent] | type[ConsumerGroupEvent]


def group_machine(ctx: Context, shard: Shard, group_id: str) -> GroupMachine:
    if is_consumer_group(shard, group_id):
        return GroupMachine(ctx.tables.consumer, ConsumerGroupEvent)
    return GroupMachine(ctx.tables.classic, ClassicGroupEvent)


def all_partitions(topics: Topics, error: str) -> PartitionErrors:
    return tuple((topic, tuple((p.partition, error) for p in parts)) for topic, parts in topics)


def metadata_too_large(ctx: Context, metadata: str | None) -> bool:
    """offset.metadata.max.bytes, counted like Java's String.length(): UTF-16 code units."""
    return metadata is not None and len(metadata.encode("utf-16-le")) // 2 > ctx.config.offset_metadata_max_bytes


def _answered(b: PlanBuilder, out: Completion[Any], response: Any) -> Plan:
    """The plan so far, answering `response` once it is applied."""
    b.then(lambda: settle(out, response))
    return b.plan()


# ---------------------------------------------------------------------------------------------- validation


def _validate(ctx: Context, shard: Shard, state: GroupShardState, b: PlanBuilder,
              req: OffsetCommitRequest | TxnOffsetCommitRequest, *, transactional: bool) -> str:
    """The specs' answer to a commit: NONE or the error every partition gets."""
    group_id, member_id, instance_id = req.group_id, req.member_id, req.group_instance_id
    generation_id, api_version = req.generation_id, req.api_version
    if is_consumer_group(shard, group_id):
        tables = ctx.tables
        args = {"epoch": generation_id, "transactional": transactional, "api_version": api_version}
        b.decide(tables.consumer, (group_id,), ConsumerGroupEvent.OffsetCommit, args)
        has_members = bool(b.instance(tables.consumer, (group_id,))["members"])
        d = b.decide(tables.member, (group_id, member_id), MemberEvent.OffsetCommit,
                     {**args, "group_has_members": has_members})
        return d.error
    data = state.classic.get(group_id)
    mapped = data.static_member_id(instance_id) if data is not None else ""
    event = ClassicGroupEvent.TxnOffsetCommit if transactional else ClassicGroupEvent.OffsetCommit
    classic_args: dict[str, Any] = {"member_id": member_id, "instance_id": instance_id or "", "mapped_member": mapped,
                            "generation_id": generation_id}
    if not transactional:
        classic_args["api_version"] = api_version
    d = b.decide(ctx.tables.classic, (group_id,), event, classic_args)
    if d.accepted and data is None:
        b.then(lambda: state.classic.setdefault(group_id, ClassicGroupData()))  # the simple group that was created
    return d.error


def _write_offsets(ctx: Context, shard: Shard, state: GroupShardState, b: PlanBuilder, group_id: str,
                   topics: Topics, *, expire_timestamp_ms: int, producer_id: int | None) -> PartitionErrors:
    """One record per valid partition; the store takes them when durable (pending for a transaction)."""
    now_ms = ctx.now_ms()
    base_offset = shard.log.log_end_offset  # this plan's batch is appended right after the handler returns
    out: list[tuple[str, tuple[tuple[int, str], ...]]] = []
    for topic, parts in topics:
        answers: list[tuple[int, str]] = []
        for p in parts:
            if metadata_too_large(ctx, p.metadata):
                answers.append((p.partition, Errors.OFFSET_METADATA_TOO_LARGE))
                continue
            value = OffsetCommitValue(offset=p.offset, metadata=p.metadata or "", commit_timestamp=now_ms,
                                      leader_epoch=p.leader_epoch, expire_timestamp=expire_timestamp_ms)
            index = b.write(records.offset_commit(group_id, topic, p.partition, value))
            entry = OffsetEntry.of(value, base_offset + index)
            if producer_id is None:
                b.then(lambda t=topic, n=p.partition, e=entry: state.offsets.put(group_id, t, n, e))  # type: ignore[misc]
            else:
                b.then(lambda t=topic, n=p.partition, e=entry, pid=producer_id:  # type: ignore[misc]
                       state.offsets.put_pending(pid, group_id, t, n, e))
            answers.append((p.partition, Errors.NONE))
        out.append((topic, tuple(answers)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------- OffsetCommit


def offset_commit(ctx: Context, shard: Shard, state: GroupShardState, req: OffsetCommitRequest,
                  out: Completion[OffsetCommitResponse]) -> Plan:
    b = PlanBuilder(shard)
    error = _validate(ctx, shard, state, b, req, transactional=False)
    if error != Errors.NONE:
        return _answered(b, out, OffsetCommitResponse(all_partitions(req.topics, error)))
    _maybe_extend_session(ctx, shard, state, b, req)
    expire_ms = -1 if req.retention_time_ms == -1 else ctx.now_ms() + req.retention_time_ms
    answers = _write_offsets(ctx, shard, state, b, req.group_id, req.topics, expire_timestamp_ms=expire_ms,
                             producer_id=None)
    return _answered(b, out, OffsetCommitResponse(answers))


def _maybe_extend_session(ctx: Context, shard: Shard, state: GroupShardState, b: PlanBuilder,
                          req: OffsetCommitRequest) -> None:
    """commitOffset: a classic member's accepted commit resets its session timer. Kafka does it in Stable and
    PreparingRebalance, which are exactly the states where the ClassicGroup spec answers a member's OffsetCommit with
    NONE (CompletingRebalance answers REBALANCE_IN_PROGRESS; an Empty group has no members)."""
    data = state.classic.get(req.group_id)
    member = data.members.get(req.member_id) if data is not None else None
    if member is None or is_consumer_group(shard, req.group_id):
        return
    timeout_ms = member.session_timeout_ms

    def reschedule() -> None:
        def fire() -> None:
            submit_internal(ctx, shard, state, req.group_id, lambda t: member_expired(t, req.member_id))

        shard.schedule(hb_key(req.group_id, req.member_id), ctx.now_ms() + timeout_ms, fire)
    b.then(reschedule)


# ---------------------------------------------------------------------------------------------- TxnOffsetCommit


def txn_offset_commit(ctx: Context, shard: Shard, state: GroupShardState, req: TxnOffsetCommitRequest,
                      out: Completion[TxnOffsetCommitResponse]) -> Plan:
    """After the transaction coordinator verified the partition: validate, check the producer epoch, append the
    offsets as a transactional batch of (producer id, epoch); they stay pending until the producer's marker."""
    b = PlanBuilder(shard)
    error = _validate(ctx, shard, state, b, req, transactional=True)
    if error != Errors.NONE:
        return _answered(b, out, TxnOffsetCommitResponse(all_partitions(req.topics, error)))
    valid = any(not metadata_too_large(ctx, p.metadata) for _, parts in req.topics for p in parts)
    if valid:
        key = (state.topic_partition, req.producer_id)
        now_ms = ctx.now_ms()
        args = {"epoch": req.producer_epoch, "verification_ok": True, "first_offset": shard.log.log_end_offset,
                "timestamp_ms": now_ms}
        d = b.decide(ctx.tables.producer, key, PartitionProducerEvent.CoordinatorAppend, args, record=0)
        if not d.accepted:
            return _answered(b, out, TxnOffsetCommitResponse(all_partitions(req.topics, d.error)))
        b.producer = (req.producer_id, req.producer_epoch, False, now_ms)
    answers = _write_offsets(ctx, shard, state, b, req.group_id, req.topics, expire_timestamp_ms=-1,
                             producer_id=req.producer_id)
    return _answered(b, out, TxnOffsetCommitResponse(answers))


# ---------------------------------------------------------------------------------------------- OffsetFetch


def offset_fetch(ctx: Context, shard: Shard, state: GroupShardState, req: OffsetFetchRequest,
                 out: Completion[OffsetFetchResponse]) -> Plan:
    """OffsetMetadataManager.fetchOffsets / fetchAllOffsets: the group's answer (a consumer group's member validates
    the request; a classic group answers OffsetFetch), then one OffsetFetchPartition answer per partition."""
    b = PlanBuilder(shard)
    group_id = req.group_id
    machine = group_machine(ctx, shard, group_id)
    if machine.table is ctx.tables.consumer:
        d = b.decide(ctx.tables.member, (group_id, req.member_id or ""), MemberEvent.OffsetFetch,
                     {"epoch": req.member_epoch, "member_given": req.member_id is not None})
    else:
        d = b.decide(machine.table, (group_id,), ClassicGroupEvent.OffsetFetch, {})
    found = d.error == Errors.NONE
    if not found and d.error != Errors.GROUP_ID_NOT_FOUND:
        return _answered(b, out, OffsetFetchResponse(d.error))
    # GROUP_ID_NOT_FOUND is caught by fetchOffsets: every partition reads "no offset", without an error
    answer = _fetch(b, machine, state.offsets, req, found)
    return _answered(b, out, answer)


def _fetch(b: PlanBuilder, machine: GroupMachine, store: OffsetStore, req: OffsetFetchRequest,
           found: bool) -> OffsetFetchResponse:
    offsets = store.group_offsets(req.group_id) if found else {}
    wanted = req.topics
    if wanted is None:  # fetchAllOffsets: every committed offset of the group
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(offsets):
            by_topic.setdefault(topic, []).append(partition)
        wanted = tuple((t, tuple(ps)) for t, ps in by_topic.items())
    key = (req.group_id,)
    topics = []
    for topic, partitions in wanted:
        fetched = []
        for partition in partitions:
            args = {"topic": topic, "partition": partition, "require_stable": req.require_stable,
                    "pending_offset": store.has_pending(req.group_id, topic, partition)}
            error = b.decide(machine.table, key, machine.events.OffsetFetchPartition, args).error
            entry = offsets.get((topic, partition))
            if error != Errors.NONE:
                fetched.append(FetchedOffset(partition, error=error))
            elif entry is None:
                fetched.append(FetchedOffset(partition))
            else:
                fetched.append(FetchedOffset(partition, entry.offset, entry.leader_epoch, entry.metadata))
        topics.append((topic, tuple(fetched)))
    return OffsetFetchResponse(Errors.NONE, tuple(topics))


# ---------------------------------------------------------------------------------------------- OffsetDelete


def offset_delete(ctx: Context, shard: Shard, state: GroupShardState, req: OffsetDeleteRequest,
                  out: Completion[OffsetDeleteResponse]) -> Plan:
    """OffsetMetadataManager.deleteOffsets: the group's OffsetDelete answer is the top-level error; then each
    partition's OffsetDeletePartition answer, and a tombstone for each partition the spec deletes."""
    b = PlanBuilder(shard)
    group_id = req.group_id
    machine, subscription = subscription_facts(ctx, shard, state, group_id)
    d = b.decide(machine.table, (group_id,), machine.events.OffsetDelete, {})
    if d.error != Errors.NONE:
        return _answered(b, out, OffsetDeleteResponse(d.error))
    store = state.offsets
    topics = []
    for topic, partitions in req.topics:
        answers = []
        for p in partitions:
            has_offset = store.get(group_id, topic, p) is not None or store.has_pending(group_id, topic, p)
            args = {"topic": topic, "partition": p, "has_offset": has_offset, **subscription(topic)}
            pd = b.decide(machine.table, (group_id,), machine.events.OffsetDeletePartition, args)
            if pd.accepted:
                b.write_for_last(records.offset_tombstone(group_id, topic, p))
                b.then(lambda t=topic, n=p: store.remove(group_id, t, n))  # type: ignore[misc]
            answers.append((p, pd.error))
        topics.append((topic, tuple(answers)))
    answer = OffsetDeleteResponse(Errors.NONE, tuple(topics))
    return _answered(b, out, answer)


def subscription_facts(ctx: Context, shard: Shard, state: GroupShardState,
                       group_id: str) -> tuple[GroupMachine, Callable[[str], dict[str, bool]]]:
    """The machine that answers for the group, and what it is told about a topic: a consumer group whether a member
    subscribes to it; a classic group whether its members' subscriptions are known and include it (the spec decides
    what unknown subscriptions mean)."""
    machine = group_machine(ctx, shard, group_id)
    if machine.table is ctx.tables.consumer:
        consumer = state.consumer.get(group_id)
        names = consumer.subscribed_topic_names() if consumer is not None else set()
        return machine, lambda topic: {"subscribed": topic in names}
    data = state.classic.get(group_id)
    known = data.subscribed_topics if data is not None else None
    return machine, lambda topic: {"subscriptions_known": known is not None,
                                   "in_subscriptions": known is not None and topic in known}
