"""Classic-protocol members of a KIP-848 consumer group (KIP-848 migration, kafka-reference.md §3.9), as Kafka
4.0.2's GroupMetadataManager serves them: classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup.

A classic consumer (kafka-python, aiokafka, librdkafka with group.protocol=classic) keeps speaking
JoinGroup/SyncGroup/Heartbeat/LeaveGroup; the consumer group computes its assignment like any member's and reconciles
it (revoke before assign) at each JoinGroup, with the owned partitions of its subscription:

- JoinGroup: the group checks (ConsumerGroup.ClassicJoin: session timeout, size, protocols, MEMBER_ID_REQUIRED with a
  generated id and nothing kept), then the member's metadata (with ClassicMemberMetadata: session timeout and
  protocols), the group epoch, the target assignment and the reconciliation (ConsumerGroupMember.Heartbeat with
  `classic_join`). The answer, once written: the member epoch as generation, protocol type "consumer", the member's
  first protocol, no leader (every classic member is a follower: its SyncGroup carries no assignment). Its session
  timer (its own session timeout) and a sync timer (its rebalance timeout) start.
- SyncGroup answers the member's current assignment in the consumer protocol's format, at the version of its
  subscription (ClassicSync), or REBALANCE_IN_PROGRESS when the group epoch moved on (its join timer starts).
- Heartbeat answers REBALANCE_IN_PROGRESS when the member must join again (ClassicHeartbeat).
- LeaveGroup fences the members named (ConsumerGroupMember.Leave; the last consumer-protocol member's leaving may
  convert the group back to a classic group, `ConsumerTxn.remove_member`). Members are removed one at a time (Kafka
  fences a batch in one step; a client names only itself).

A static classic member that joins with an unknown member id while its instance id is held by another member
(Kafka replaces that member, whatever its protocol) is answered UNKNOWN_MEMBER_ID here: not supported yet.

Owns: `join_group`, `sync_group`, `heartbeat`, `leave_group` for a consumer group. Must not import: `kcoord.model`,
`kcoord.impl.group.classic`.
"""

from __future__ import annotations

from typing import Any

from ..._generated.consumer_group import Event as ConsumerGroupEvent
from ..._generated.consumer_group_member import Event as MemberEvent
from ..._generated.consumer_group_member import State as MemberState
from ...assignors import Assignment as ClassicAssignment
from ...assignors import ConsumerProtocolError, decode_subscription, encode_assignment
from ...assignors.classic import TopicPartition
from ...errors import Errors
from ...runtime.completion import Completion
from ...runtime.shard import Plan, Shard
from ..context import Context
from ..messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..planning import settle
from ..shard_state import GroupShardState
from ..state import ConsumerMember
from .group import ConsumerTxn, join_key, sync_key
from .heartbeat import group_stage

CONSUMER_PROTOCOL_TYPE = "consumer"


def join_group(ctx: Context, shard: Shard, state: GroupShardState, req: JoinGroupRequest,
               out: Completion[JoinGroupResponse]) -> Plan:
    t = ConsumerTxn(ctx, shard, state, req.group_id)
    given = req.member_id != ""
    member_id = req.member_id or ctx.new_uuid()
    cfg = ctx.config
    gate = t.decide_group(ConsumerGroupEvent.ClassicJoin, {
        "member_id": member_id, "member_id_given": given, "instance_given": req.group_instance_id is not None,
        "requires_known_member_id": req.api_version >= 4, "protocols_supported": _supported(t, req),
        "session_timeout_ok": cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms,
        "group_size": len(t.group["members"]), "max_size": cfg.consumer_max_size})
    if gate.error != Errors.NONE:
        answer = JoinGroupResponse(gate.error, member_id=member_id if gate.error == Errors.MEMBER_ID_REQUIRED else "")
        t.then(lambda: settle(out, answer))
        return t.plan()
    holder = t.current.static_member_id(req.group_instance_id)
    if req.group_instance_id and not given and holder:
        t.then(lambda: settle(out, JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID)))
        return t.plan()
    try:
        subscription = decode_subscription(req.protocols[0][1]) if req.protocols else None
    except (ConsumerProtocolError, ValueError):
        subscription = None
    if subscription is None:
        t.then(lambda: settle(out, JoinGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL)))
        return t.plan()
    _join(t, req, holder or member_id, member_id, subscription, out)
    return t.plan()


def _supported(t: ConsumerTxn, req: JoinGroupRequest) -> bool:
    """ConsumerGroup.supportsClassicProtocols: protocol type "consumer", and one of the request's protocols that
    every classic-protocol member of the group supports (any one when it has none)."""
    if req.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    classic = [m for m in t.current.members.values() if m.classic_protocols is not None]
    names = {name for name, _ in req.protocols}
    return any(all(name in {n for n, _ in m.classic_protocols or ()} for m in classic) for name in names)


def _join(t: ConsumerTxn, req: JoinGroupRequest, entity_id: str, member_id: str, subscription: Any,
          out: Completion[JoinGroupResponse]) -> None:
    entity = t.member(entity_id)
    base = t.current.members.get(entity_id) or ConsumerMember(member_id)
    rebalance_timeout_ms = req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else base.rebalance_timeout_ms
    if rebalance_timeout_ms == -1:
        rebalance_timeout_ms = req.session_timeout_ms  # JoinGroup v0 has none: the classic group's rule
    updated = ConsumerMember(
        member_id, req.group_instance_id or base.instance_id, subscription.rack_id or base.rack_id, req.client_id,
        req.client_host, tuple(sorted(set(subscription.topics))), "", base.server_assignor, rebalance_timeout_ms,
        req.session_timeout_ms, tuple(req.protocols))
    metadata_changed = updated != base or entity["state"] == MemberState.Absent
    checkpoint = t.b.checkpoint()
    refused = group_stage(t, member_id, entity["state"], updated, base, metadata_changed,
                          t.current.regex_counts(), classic=True)
    if refused is None:
        if t.group["group_epoch"] > t.group["assignment_epoch"]:
            t.compute_target()
        target = t.target_of(member_id)
        owned = t.ctx.names.to_set(_owned_ids(t, subscription))
        pre = t.member(entity_id)
        d = t.decide_member(entity_id, MemberEvent.Heartbeat, {
            "sender": member_id, "instance": req.group_instance_id or "", "epoch": pre["member_epoch"],
            "owned": owned, "owned_given": True, "rebalance_timeout": rebalance_timeout_ms,
            "metadata_changed": metadata_changed, "target": target, "target_epoch": t.group["assignment_epoch"],
            "held_in_group": t.held_in_group(member_id, target), "classic_join": True})
        refused = d if d.error != Errors.NONE else None
    if refused is not None:
        rejection = t.b.changes[-1]
        t.b.rollback(checkpoint)
        t._staged = None
        t.b.changes.append(rejection)
        error = refused.error
        t.then(lambda: settle(out, JoinGroupResponse(error, member_id=req.member_id)))
        return
    post = d.post if d.post is not None else d.pre
    if d.accepted and any(post[f] != pre[f] for f in ("state", "member_epoch", "previous_member_epoch", "assigned",
                                                      "pending_revocation")):
        t.current_assignment_record(post)
        t.move_ownership(member_id, pre["held"], post["held"])
    group = t.group
    if post["state"] == MemberState.Stable and post["member_epoch"] == group["assignment_epoch"] \
            and member_id in group["unreconciled"]:
        t.decide_group(ConsumerGroupEvent.MemberReconciled, {"m": member_id})
    t.cancel_timer(join_key(t.group_id, member_id))
    t.schedule_session(member_id, req.session_timeout_ms)
    t.schedule_classic_timer(sync_key(t.group_id, member_id), member_id, req.rebalance_timeout_ms
                             if req.rebalance_timeout_ms != -1 else req.session_timeout_ms)
    response = JoinGroupResponse(Errors.NONE, member_id=member_id, generation_id=post["member_epoch"],
                                 protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=req.protocols[0][0])
    t.then(lambda: settle(out, response))


def _owned_ids(t: ConsumerTxn, subscription: Any) -> dict[Any, set[int]]:
    """toTopicPartitions: the subscription's owned partitions by topic id (unknown topics dropped)."""
    out: dict[Any, set[int]] = {}
    for tp in subscription.owned_partitions:
        metadata = t.ctx.describe(tp.topic)
        if metadata is not None:
            out.setdefault(metadata.topic_id, set()).add(tp.partition)
    return out


# ---------------------------------------------------------------------------------------------- SyncGroup, Heartbeat


def _entity(t: ConsumerTxn, member_id: str, instance_id: str | None) -> str:
    """validateConsumerGroupMember: a request with an instance id is addressed to the member holding it."""
    return t.current.static_member_id(instance_id) or member_id


def sync_group(ctx: Context, shard: Shard, state: GroupShardState, req: SyncGroupRequest,
               out: Completion[SyncGroupResponse]) -> Plan:
    t = ConsumerTxn(ctx, shard, state, req.group_id)
    entity_id = _entity(t, req.member_id, req.group_instance_id)
    meta = t.current.members.get(entity_id)
    first = meta.classic_protocols[0] if meta is not None and meta.classic_protocols else ("", b"")
    protocol_ok = (req.protocol_type in (None, CONSUMER_PROTOCOL_TYPE)
                   and (req.protocol_name is None or req.protocol_name == first[0]))
    d = t.decide_member(entity_id, MemberEvent.ClassicSync, {
        "sender": req.member_id, "instance": req.group_instance_id or "", "generation": req.generation_id,
        "protocol_ok": protocol_ok, "group_epoch": t.group["group_epoch"]})
    if d.error == Errors.REBALANCE_IN_PROGRESS:
        t.schedule_classic_timer(join_key(t.group_id, entity_id), entity_id, d.pre["rebalance_timeout_ms"],
                                 if_absent=True)
    if d.error != Errors.NONE:
        t.then(lambda: settle(out, SyncGroupResponse(d.error)))
        return t.plan()
    assert meta is not None and meta.classic_session_timeout_ms is not None
    t.cancel_timer(sync_key(t.group_id, entity_id))
    t.schedule_session(entity_id, meta.classic_session_timeout_ms)
    assignment = _serialized(t, d.pre["assigned"], first[1])
    response = SyncGroupResponse(Errors.NONE, req.protocol_type, req.protocol_name, assignment)
    t.then(lambda: settle(out, response))
    return t.plan()


def _serialized(t: ConsumerTxn, assigned: frozenset[str], metadata: bytes) -> bytes:
    """prepareAssignment: the member's assigned partitions in the consumer protocol, at its subscription's version."""
    names = t.ctx.names
    partitions = sorted(TopicPartition(names.name(topic_id), p)
                        for topic_id, ps in names.to_assignment(assigned).items() for p in ps)
    version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
    return encode_assignment(ClassicAssignment(tuple(partitions)), max(0, min(version, 3)))


def heartbeat(ctx: Context, shard: Shard, state: GroupShardState, req: HeartbeatRequest,
              out: Completion[HeartbeatResponse]) -> Plan:
    t = ConsumerTxn(ctx, shard, state, req.group_id)
    entity_id = _entity(t, req.member_id, req.group_instance_id)
    d = t.decide_member(entity_id, MemberEvent.ClassicHeartbeat, {
        "sender": req.member_id, "instance": req.group_instance_id or "", "generation": req.generation_id,
        "group_epoch": t.group["group_epoch"], "waiting": _waiting(t, entity_id)})
    meta = t.current.members.get(entity_id)
    if d.error in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS) and meta is not None:
        t.schedule_session(entity_id, meta.classic_session_timeout_ms)
    if d.error == Errors.REBALANCE_IN_PROGRESS:
        t.schedule_classic_timer(join_key(t.group_id, entity_id), entity_id, d.pre["rebalance_timeout_ms"],
                                 if_absent=True)
    t.then(lambda: settle(out, HeartbeatResponse(d.error)))
    return t.plan()


def _waiting(t: ConsumerTxn, member_id: str) -> bool:
    """ConsumerGroup.waitingOnUnreleasedPartition: a partition of the member's target it does not have is still
    held (partition epoch != -1)."""
    member = t.member(member_id)
    if member["state"] != MemberState.UnreleasedPartitions:
        return False
    owners = t.view.owners
    return any(p not in member["assigned"] and p in owners for p in t.target_of(member_id))


# ---------------------------------------------------------------------------------------------- LeaveGroup


def leave_group(ctx: Context, shard: Shard, state: GroupShardState, req: LeaveGroupRequest,
                out: Completion[LeaveGroupResponse]) -> Plan:
    t = ConsumerTxn(ctx, shard, state, req.group_id)
    answers: list[tuple[MemberIdentity, str]] = []
    for identity in req.members:
        if t.forget:  # the group was converted back to a classic group by an earlier identity of the batch
            answers.append((identity, Errors.UNKNOWN_MEMBER_ID))
            continue
        entity_id = t.view.static_member_id(identity.group_instance_id) or identity.member_id
        d = t.decide_member(entity_id, MemberEvent.Leave, {"sender": identity.member_id,
                                                 "instance": identity.group_instance_id or ""})
        answers.append((identity, d.error))
        if d.accepted:
            t.remove_member(entity_id, d)
    response = LeaveGroupResponse(Errors.NONE, tuple(answers))
    t.then(lambda: settle(out, response))
    return t.plan()
