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
- LeaveGroup fences the members named, validated against the group as the request found it
  (ConsumerGroupMember.Leave), in one step (ConsumerGroup.MembersRemoved, `ConsumerTxn.remove_members`: one
  group-epoch bump for the batch, or one conversion back to a classic group when only classic-protocol members stay).

A static classic member that joins without a member id while its instance id is held takes the holder over,
whatever its state and protocol (`takeover.take_over`); one that names a member id must name the holder.

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
from ...statemachine import Decision
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
from .takeover import finish_join, member_after_join, owned_ids, refuse, take_over

CONSUMER_PROTOCOL_TYPE = "consumer"


def join_group(ctx: Context, shard: Shard, state: GroupShardState, req: JoinGroupRequest,
               out: Completion[JoinGroupResponse]) -> Plan:
    t = ConsumerTxn(ctx, shard, state, req.group_id)
    given = req.member_id != ""
    member_id = req.member_id or ctx.new_uuid()
    cfg = ctx.config
    gate = t.decide_group(ConsumerGroupEvent.ClassicJoin, {
        "member_id": member_id, "member_id_given": given, "instance": req.group_instance_id or "",
        "requires_known_member_id": req.api_version >= 4, "protocols_supported": _supported(t, req),
        "session_timeout_ok": cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms,
        "group_size": len(t.group["members"]), "max_size": cfg.consumer_max_size})
    if gate.error != Errors.NONE:
        answer = JoinGroupResponse(gate.error, member_id=member_id if gate.error == Errors.MEMBER_ID_REQUIRED else "")
        t.then(lambda: settle(out, answer))
        return t.plan()
    holder = t.current.static_member_id(req.group_instance_id)
    try:
        subscription = decode_subscription(req.protocols[0][1]) if req.protocols else None
    except (ConsumerProtocolError, ValueError):
        subscription = None
    if subscription is None:
        t.then(lambda: settle(out, JoinGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL)))
        return t.plan()
    if req.group_instance_id and not given and holder:  # a static member without a member id: it takes over
        take_over(t, req, holder, member_id, subscription, out)
    else:
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
    updated = member_after_join(req, base, member_id, subscription)
    metadata_changed = updated != base or entity["state"] == MemberState.Absent
    checkpoint = t.b.checkpoint()
    refused = group_stage(t, member_id, entity["state"], updated, base, metadata_changed,
                          t.current.regex_counts(), classic=True)
    if refused is None:
        if t.group["group_epoch"] > t.group["assignment_epoch"]:
            t.compute_target()
        target = t.target_of(member_id)
        owned = t.ctx.names.to_set(owned_ids(t, subscription))
        pre = t.member(entity_id)
        d = t.decide_member(entity_id, MemberEvent.Heartbeat, {
            "sender": member_id, "instance": req.group_instance_id or "", "epoch": pre["member_epoch"],
            "owned": owned, "owned_given": True, "rebalance_timeout": updated.rebalance_timeout_ms,
            "metadata_changed": metadata_changed, "target": target, "target_epoch": t.group["assignment_epoch"],
            "held_in_group": t.held_in_group(member_id, target), "classic_join": True})
        refused = d if d.error != Errors.NONE else None
    if refused is not None:
        refuse(t, checkpoint, refused.error, req.member_id, out)
        return
    post = d.post if d.post is not None else d.pre
    if d.accepted and any(post[f] != pre[f] for f in ("state", "member_epoch", "previous_member_epoch", "assigned",
                                                      "pending_revocation")):
        t.current_assignment_record(post)
        t.move_ownership(member_id, pre["held"], post["held"])
    if d.accepted:  # a consumer-protocol member's id joined: it is a classic-protocol member now
        t.protocol_changed(entity_id, post)
    group = t.group
    if post["state"] == MemberState.Stable and post["member_epoch"] == group["assignment_epoch"] \
            and member_id in group["unreconciled"]:
        t.decide_group(ConsumerGroupEvent.MemberReconciled, {"m": member_id})
    finish_join(t, req, member_id, post["member_epoch"], out)


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
    """classicGroupLeaveToConsumerGroup: every identity is validated against the group as the request found it
    (ConsumerGroupMember.Leave; a member named twice is answered twice and fenced once), then the valid members are
    fenced in one step (consumerGroupFenceMembers: one group-epoch bump, or one downgrade for the batch)."""
    t = ConsumerTxn(ctx, shard, state, req.group_id)
    view = t.current
    answers: list[tuple[MemberIdentity, str]] = []
    removed: list[tuple[str, Decision, int]] = []
    before: dict[str, Any] = {}
    for identity in req.members:
        entity_id = view.static_member_id(identity.group_instance_id) or identity.member_id
        args = {"sender": identity.member_id, "instance": identity.group_instance_id or ""}
        if entity_id in before:  # named again: decided on the member as the request found it, fenced once
            answers.append((identity, ctx.tables.member.decide(before[entity_id], MemberEvent.Leave, args).error))
            continue
        pre = t.member(entity_id)
        d = t.decide_member(entity_id, MemberEvent.Leave, args)
        answers.append((identity, d.error))
        if d.accepted:
            before[entity_id] = pre
            removed.append((entity_id, d, len(t.b.changes) - 1))
    if removed:
        t.remove_members(removed)
    response = LeaveGroupResponse(Errors.NONE, tuple(answers))
    t.then(lambda: settle(out, response))
    return t.plan()
