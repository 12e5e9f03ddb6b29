"""Offsets (kafka-reference.md §2.8, §3.8, §8): OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, offset
expiration, and the `__consumer_offsets` side of WriteTxnMarkers.

Owns: the handlers. Member/generation validation is the specs' (ClassicGroup.OffsetCommit / TxnOffsetCommit,
ConsumerGroup.OffsetCommit then ConsumerGroupMember.OffsetCommit / OffsetFetch); the producer epoch check of a
transactional write and of a marker is PartitionProducer's (CoordinatorAppend, WriteMarker). The per-partition
metadata size limit, retention, the committed/pending views and expiration are this module's.
KAFKA-17507: a marker's answer is given only after the producer's pending offsets are materialised (COMMIT) or
dropped (ABORT); `Context.bug_kafka_17507` restores the old order (answer first, materialise later, every pending
offset of the producer) so that trace checkers can be shown to catch it.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..interfaces import TxnMarker
from ..runtime.completion import Completion
from ..runtime.shard import Change, Plan, Shard
from ..storage.batch import ControlType, end_txn_marker_entry
from ..storage.group_log_schema import OffsetCommitValue
from . import records
from .classic_ops import ClassicTxn, hb_key
from .classic_protocol import is_subscribed
from .context import Context
from .messages import (
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
from .offset_store import OffsetEntry
from .planning import PlanBuilder
from .shard_state import GroupShardState

Topics = tuple[tuple[str, tuple[OffsetCommitPartition, ...]], ...]


def is_consumer_group(shard: Shard, group_id: str) -> bool:
    """A KIP-848 group holds this id (else the classic machine answers, including for unknown ids)."""
    return shard.get("ConsumerGroup", (group_id,)) is not None


def all_partitions(topics: Topics, error: str) -> PartitionErrors:
    return tuple((topic, tuple((p.partition, error) for p in parts)) for topic, parts in topics)


def metadata_too_large(ctx: Context, metadata: str | None) -> bool:
    """offset.metadata.max.bytes, counted like Java's String.length(): UTF-16 code units."""
    return metadata is not None and len(metadata.encode("utf-16-le")) // 2 > ctx.config.offset_metadata_max_bytes


# ---------------------------------------------------------------------------------------------- validation


def _validate(ctx: Context, shard: Shard, state: GroupShardState, b: PlanBuilder, group_id: str, member_id: str,
              instance_id: str | None, generation_id: int, *, transactional: bool, api_version: int) -> str:
    """The specs' answer to a commit: NONE or the error every partition gets."""
    if is_consumer_group(shard, group_id):
        tables = ctx.tables
        args = {"epoch": generation_id, "transactional": transactional, "api_version": api_version}
        b.decide(tables.consumer, (group_id,), "OffsetCommit", args)
        has_members = bool(b.instance(tables.consumer, (group_id,))["members"])
        d = b.decide(tables.member, (group_id, member_id), "OffsetCommit", {**args, "group_has_members": has_members})
        return d.error
    data = state.classic.get(group_id)
    mapped = data.static_member_id(instance_id) if data is not None else ""
    event = "TxnOffsetCommit" if transactional else "OffsetCommit"
    classic_args: dict[str, Any] = {"member_id": member_id, "instance_id": instance_id or "", "mapped_member": mapped,
                            "generation_id": generation_id}
    if not transactional:
        classic_args["api_version"] = api_version
    d = b.decide(ctx.tables.classic, (group_id,), event, classic_args)
    if d.accepted and data is None:
        b.then(lambda: state.classic.setdefault(group_id, _empty_classic()))  # the simple group that was created
    return d.error


def _empty_classic() -> Any:
    from .state import ClassicGroupData

    return ClassicGroupData()


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
                answers.append((p.partition, "OFFSET_METADATA_TOO_LARGE"))
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
            answers.append((p.partition, "NONE"))
        out.append((topic, tuple(answers)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------- OffsetCommit


def offset_commit(ctx: Context, shard: Shard, state: GroupShardState, req: OffsetCommitRequest,
                  out: Completion[OffsetCommitResponse]) -> Plan:
    b = PlanBuilder(shard)
    error = _validate(ctx, shard, state, b, req.group_id, req.member_id, req.group_instance_id, req.generation_id,
                      transactional=False, api_version=req.api_version)
    if error != "NONE":
        b.then(lambda: _set(out, OffsetCommitResponse(all_partitions(req.topics, error))))
        return b.plan()
    _maybe_extend_session(ctx, shard, state, b, req)
    expire_ms = -1 if req.retention_time_ms == -1 else ctx.now_ms() + req.retention_time_ms
    answers = _write_offsets(ctx, shard, state, b, req.group_id, req.topics, expire_timestamp_ms=expire_ms,
                             producer_id=None)
    b.then(lambda: _set(out, OffsetCommitResponse(answers)))
    return b.plan()


def _maybe_extend_session(ctx: Context, shard: Shard, state: GroupShardState, b: PlanBuilder,
                          req: OffsetCommitRequest) -> None:
    """A classic member's commit in Stable or PreparingRebalance resets its session timer (commitOffset)."""
    inst = shard.get("ClassicGroup", (req.group_id,))
    data = state.classic.get(req.group_id)
    if inst is None or data is None or inst["state"] not in ("Stable", "PreparingRebalance"):
        return
    member = data.members.get(req.member_id)
    if member is None:
        return
    timeout_ms = member.session_timeout_ms

    def reschedule() -> None:
        from .classic_ops import member_expired, submit_internal

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
    error = _validate(ctx, shard, state, b, req.group_id, req.member_id, req.group_instance_id, req.generation_id,
                      transactional=True, api_version=req.api_version)
    if error != "NONE":
        b.then(lambda: _set(out, TxnOffsetCommitResponse(all_partitions(req.topics, error))))
        return b.plan()
    valid = any(not metadata_too_large(ctx, p.metadata) for _, parts in req.topics for p in parts)
    if valid:
        key = (state.topic_partition, req.producer_id)
        args = {"epoch": req.producer_epoch, "verification_ok": True, "first_offset": shard.log.log_end_offset,
                "timestamp_ms": ctx.now_ms()}
        d = b.decide(ctx.tables.producer, key, "CoordinatorAppend", args, record=0)
        if not d.accepted:
            b.then(lambda: _set(out, TxnOffsetCommitResponse(all_partitions(req.topics, d.error))))
            return b.plan()
        b.producer = (req.producer_id, req.producer_epoch, False)
    answers = _write_offsets(ctx, shard, state, b, req.group_id, req.topics, expire_timestamp_ms=-1,
                             producer_id=req.producer_id)
    b.then(lambda: _set(out, TxnOffsetCommitResponse(answers)))
    return b.plan()


# ---------------------------------------------------------------------------------------------- OffsetFetch


def offset_fetch(ctx: Context, shard: Shard, state: GroupShardState, req: OffsetFetchRequest,
                 out: Completion[OffsetFetchResponse]) -> Plan:
    b = PlanBuilder(shard)
    group_id = req.group_id
    if is_consumer_group(shard, group_id):
        d = b.decide(ctx.tables.member, (group_id, req.member_id or ""), "OffsetFetch",
                     {"epoch": req.member_epoch, "member_given": req.member_id is not None})
        if d.error != "NONE":
            b.then(lambda: _set(out, OffsetFetchResponse(d.error)))
            return b.plan()
        found = True
    else:
        # ClassicGroup.validateOffsetFetch has no spec event: an unknown or Dead group reads as "not found"
        inst = shard.get("ClassicGroup", (group_id,))
        found = inst is not None and inst["state"] != "Dead"
    b.then(lambda: _set(out, _fetch(state, req, found)))
    return b.plan()


def _fetch(state: GroupShardState, req: OffsetFetchRequest, found: bool) -> OffsetFetchResponse:
    store = state.offsets
    offsets = store.group_offsets(req.group_id) if found else {}
    wanted = req.topics
    if wanted is None:  # fetchAllOffsets: every committed offset of the group
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(offsets):
            by_topic.setdefault(topic, []).append(partition)
        wanted = tuple((t, tuple(ps)) for t, ps in by_topic.items())
    topics = []
    for topic, partitions in wanted:
        fetched = []
        for partition in partitions:
            entry = offsets.get((topic, partition))
            if req.require_stable and store.has_pending(req.group_id, topic, partition):
                fetched.append(FetchedOffset(partition, error="UNSTABLE_OFFSET_COMMIT"))
            elif entry is None:
                fetched.append(FetchedOffset(partition))
            else:
                fetched.append(FetchedOffset(partition, entry.offset, entry.leader_epoch, entry.metadata))
        topics.append((topic, tuple(fetched)))
    return OffsetFetchResponse("NONE", tuple(topics))


# ---------------------------------------------------------------------------------------------- OffsetDelete


def offset_delete(ctx: Context, shard: Shard, state: GroupShardState, req: OffsetDeleteRequest,
                  out: Completion[OffsetDeleteResponse]) -> Plan:
    """OffsetMetadataManager.deleteOffsets. No spec machine has an OffsetDelete event, so the group-level checks
    (validateOffsetDelete) are restated here: an unknown or Dead group is GROUP_ID_NOT_FOUND; a classic group that
    is not Empty and does not use the consumer protocol is NON_EMPTY_GROUP; a topic the group subscribes to is
    GROUP_SUBSCRIBED_TO_TOPIC per partition."""
    b = PlanBuilder(shard)
    error, subscribed = _offset_delete_group(shard, state, req.group_id)
    if error != "NONE":
        b.then(lambda: _set(out, OffsetDeleteResponse(error)))
        return b.plan()
    store = state.offsets
    topics = []
    for topic, partitions in req.topics:
        if subscribed(topic):
            topics.append((topic, tuple((p, "GROUP_SUBSCRIBED_TO_TOPIC") for p in partitions)))
            continue
        for p in partitions:
            if store.get(req.group_id, topic, p) is not None or store.has_pending(req.group_id, topic, p):
                b.write(records.offset_tombstone(req.group_id, topic, p))
                b.then(lambda t=topic, n=p: store.remove(req.group_id, t, n))  # type: ignore[misc]
        topics.append((topic, tuple((p, "NONE") for p in partitions)))
    answer = OffsetDeleteResponse("NONE", tuple(topics))
    b.then(lambda: _set(out, answer))
    return b.plan()


def _offset_delete_group(shard: Shard, state: GroupShardState, group_id: str) -> tuple[str, Callable[[str], bool]]:
    consumer = state.consumer.get(group_id)
    if is_consumer_group(shard, group_id) and consumer is not None:
        names = consumer.subscribed_topic_names()
        return "NONE", names.__contains__
    inst = shard.get("ClassicGroup", (group_id,))
    if inst is None or inst["state"] == "Dead":
        return "GROUP_ID_NOT_FOUND", lambda topic: False
    protocol_type = inst["protocol_type"]
    if inst["state"] != "Empty" and protocol_type != "consumer":
        return "NON_EMPTY_GROUP", lambda topic: False
    data = state.classic.get(group_id)
    subscribed = data.subscribed_topics if data is not None else None
    return "NONE", lambda topic: is_subscribed(protocol_type, subscribed, topic)


# ---------------------------------------------------------------------------------------------- expiration


def expire_group_offsets(ctx: Context, shard: Shard, state: GroupShardState, group_id: str) -> Plan:
    """cleanupExpiredOffsets then maybeDeleteGroup, for one group (offsets.retention.check.interval.ms job)."""
    if is_consumer_group(shard, group_id):
        from .consumer import expire_consumer_group

        return expire_consumer_group(ctx, shard, state, group_id)
    t = ClassicTxn(ctx, shard, state, group_id)
    inst = t.inst
    store = state.offsets
    condition = _classic_expiration_base(inst, t.current)
    expired: list[tuple[str, int]] = []
    if not store.has_offsets(group_id):
        all_expired = True  # a group without offsets counts as all expired
    elif condition is None:
        return t.plan()
    else:
        base, subscribed = condition
        expired, all_expired = store.expired(group_id, ctx.now_ms(), ctx.config.offsets_retention_ms, base,
                                             subscribed)
    for topic, partition in expired:
        t.b.write(records.offset_tombstone(group_id, topic, partition))
        t.then(lambda tp=(topic, partition): store.remove(group_id, *tp))  # type: ignore[misc]
    if all_expired and t.enabled("ExpireGroup", {}):
        t.decide("ExpireGroup", {})
        t.b.write_for_last(records.group_tombstone(group_id))
        t.forget = True
    return t.plan()


def _classic_expiration_base(inst: dict[str, Any], data: Any) -> tuple[Callable[[OffsetEntry], int],
                                                                        Callable[[str], bool]] | None:
    """ClassicGroup.offsetExpirationCondition: (retention base per offset, topics that never expire), or None when
    nothing of the group expires now."""
    def commit_time(e: OffsetEntry) -> int:
        return e.commit_timestamp_ms

    if not inst["protocol_type"]:
        return commit_time, lambda topic: False  # a simple group: by commit time
    if inst["state"] == "Empty":
        since = data.state_timestamp_ms
        return (lambda e: since if since is not None else e.commit_timestamp_ms), lambda topic: False
    if inst["protocol_type"] == "consumer" and data.subscribed_topics is not None and inst["state"] == "Stable":
        subscribed = data.subscribed_topics
        return commit_time, subscribed.__contains__
    return None


# ---------------------------------------------------------------------------------------------- markers


def complete_transaction(ctx: Context, shard: Shard, state: GroupShardState, marker: TxnMarker) -> Plan:
    """One WriteTxnMarkers entry for this partition: check the producer epoch (PartitionProducer.WriteMarker),
    append the marker, and — only then — settle the producer's pending offsets; the plan's answer is a Completion
    of the partition's error, set once the offsets are settled (KAFKA-17507)."""
    b = PlanBuilder(shard)
    table = ctx.tables.producer
    key = (state.topic_partition, marker.producer_id)
    now_ms = ctx.now_ms()
    args = {"result": marker.result, "epoch": marker.producer_epoch,
            "marker_coordinator_epoch": marker.coordinator_epoch, "timestamp_ms": now_ms}
    d = table.decide(b.instance(table, key), "WriteMarker", args)
    if not d.accepted:
        b.changes.append(Change(table, key, d, args))  # a rejection is traced like any answer
        return b.plan(Completion.of(d.error))
    control = ControlType.COMMIT if marker.result == "COMMIT" else ControlType.ABORT
    b.write(end_txn_marker_entry(control, marker.coordinator_epoch))
    b.producer = (marker.producer_id, marker.producer_epoch, True)
    marker_offset = shard.log.log_end_offset
    answer: Completion[str] = Completion()

    def materialise() -> None:
        """replayEndTransactionMarker: the marker's PartitionProducer transition and the offsets, together."""
        decision = table.decide(shard.instance_or_fresh(table, key), "WriteMarker", args)
        shard.apply(Change(table, key, decision, args))
        before = None if ctx.bug_kafka_17507 else marker_offset
        state.offsets.complete(marker.producer_id, marker.result == "COMMIT", before_offset=before)
        if state.materializing.get(marker.producer_id) is answer:
            del state.materializing[marker.producer_id]
        if not answer.done:
            answer.set("NONE")

    def after_apply() -> None:
        hook = ctx.materialize_hook
        if ctx.bug_kafka_17507:
            answer.set("NONE")  # the old bug: the marker is answered before its offsets are materialised
            if hook is not None:
                hook(materialise)
            else:
                shard.schedule(("materialize", marker.producer_id, marker_offset), ctx.now_ms(), materialise)
            return
        state.materializing[marker.producer_id] = answer
        if hook is not None:
            hook(materialise)
        else:
            materialise()

    b.then(after_apply)
    return b.plan(answer)


def _set(out: Completion[Any], value: Any) -> None:
    if not out.done:
        out.set(value)
