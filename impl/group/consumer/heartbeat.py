"""ConsumerGroupHeartbeat and the rest of the KIP-848 consumer group (kafka-reference.md §3): one heartbeat drives
the ConsumerGroup machine (the group-level checks, then the group events its outcome implies) and the
ConsumerGroupMember machine (join, heartbeat, leave -1, static leave -2, reconciliation), in the order the spec
authors' `Coordinator` shows: Heartbeat → MemberJoined | StaticMemberReplaced | SubscriptionChanged →
TargetAssignmentComputed → the member's event → MemberReconciled.

Owns: `consumer_heartbeat`, `delete_consumer_group`, `delete_empty_consumer_group`, `describe_consumer_group`
(the member timers are `group`'s, offset expiration is `offsets`').
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..._generated.classic_group import Event as ClassicGroupEvent
from ..._generated.consumer_group import Event as ConsumerGroupEvent
from ..._generated.consumer_group_member import Event as MemberEvent
from ..._generated.consumer_group_member import State as MemberState
from ...errors import Errors
from ...runtime.completion import Completion
from ...runtime.shard import Change, Plan, Shard
from ...statemachine import Decision
from .. import records
from ..context import Context
from ..messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    group_not_found,
)
from ..offsets.store import delete_all_offsets
from ..planning import Checkpoint, PlanBuilder, settle
from ..shard_state import GroupShardState
from ..state import ConsumerGroupData, ConsumerMember
from . import regex as regex_module
from .group import ConsumerTxn, assignment_tuple, member_metadata_after

_NOTHING: frozenset[str] = frozenset()


class _NeedsTarget(Exception):
    """The member's decision reads the target: the group stage must run first (not a rejection by a check)."""


def _needs_target() -> Any:
    raise _NeedsTarget


def consumer_heartbeat(ctx: Context, shard: Shard, state: GroupShardState, r: ConsumerGroupHeartbeatRequest,
                       out: Completion[ConsumerGroupHeartbeatResponse]) -> Plan:
    t = ConsumerTxn(ctx, shard, state, r.group_id)
    classic = shard.get("ClassicGroup", (r.group_id,))
    # a classic group holds the id: an epoch-0 heartbeat takes it over where the spec allows (an Empty one is deleted,
    # a live one converted when group.consumer.migration.policy allows it), else the id is another type's
    migration = ctx.migration
    online = classic is not None and migration is not None and bool(classic["members"]) and migration.online_upgrade(t)
    upgrade = (classic is not None and r.member_epoch == 0
               and t.b.enabled(ctx.tables.classic, (r.group_id,), ClassicGroupEvent.UpgradeToConsumerGroup,
                               {"online_upgrade": online}))
    foreign = classic is not None and classic["exists"] and not upgrade
    owned = ctx.names.to_set(dict(r.topic_partitions)) if r.topic_partitions else _NOTHING
    gate = t.decide_group(ConsumerGroupEvent.Heartbeat, _gate_args(ctx, t, r, foreign, owned))
    if gate.error != Errors.NONE:
        t.then(lambda: settle(out, ConsumerGroupHeartbeatResponse(gate.error)))
        return t.plan()
    before_upgrade = t.b.checkpoint()
    if upgrade:
        error = migration.upgrade(t) if migration is not None else _delete_empty_classic_group(ctx, t)
        if error != Errors.NONE:
            t.then(lambda: settle(out, ConsumerGroupHeartbeatResponse(error)))
            return t.plan()
    if r.member_epoch < 0:
        _leave(t, r, out)
    else:
        _heartbeat(t, r, out, owned, before_upgrade if upgrade else None)
    return t.plan()


def _blank(value: str | None) -> bool:
    """throwIfEmptyString's test: empty, or only whitespace (Java's String.trim)."""
    return value is not None and not value.strip(_JAVA_TRIMMED)


_JAVA_TRIMMED = "".join(chr(c) for c in range(0x21))  # String.trim drops every char <= U+0020


def _gate_args(ctx: Context, t: ConsumerTxn, r: ConsumerGroupHeartbeatRequest, foreign: bool,
               owned: frozenset[str]) -> dict[str, Any]:
    return {"member_id": r.member_id, "epoch": r.member_epoch, "api_version": r.api_version,
            "member_id_blank": _blank(r.member_id), "group_id_blank": _blank(r.group_id),
            "instance": r.instance_id or "", "instance_given": r.instance_id is not None,
            "instance_blank": _blank(r.instance_id), "rack_given": r.rack_id is not None,
            "rack_blank": _blank(r.rack_id), "rebalance_timeout": r.rebalance_timeout_ms,
            "owned": owned, "owned_given": r.topic_partitions is not None,
            "topics_given": r.subscribed_topic_names is not None, "regex_given": r.subscribed_topic_regex is not None,
            "assignor_given": r.server_assignor is not None, "assignor_known": r.server_assignor in ctx.assignors,
            "foreign_group": foreign, "group_size": len(t.group["members"]), "max_size": ctx.config.consumer_max_size,
            "holder": t.current.static_member_id(r.instance_id) if r.instance_id is not None else ""}


def _delete_empty_classic_group(ctx: Context, t: ConsumerTxn) -> str:
    """Without `Context.migration` (a coordinator of consumer groups alone): an Empty classic group with this id is
    deleted before the consumer group takes it (§3.9); nothing converts."""
    d = t.b.decide(ctx.tables.classic, (t.group_id,), ClassicGroupEvent.UpgradeToConsumerGroup,
                   {"online_upgrade": False})
    t.b.write_for_last(records.group_tombstone(t.group_id))
    state, shard, group_id = t.state, t.shard, t.group_id
    t.then(lambda: (state.classic.pop(group_id, None), shard.instances["ClassicGroup"].pop((group_id,), None)))
    return d.error


# ---------------------------------------------------------------------------------------------- epoch >= 0


def _heartbeat(t: ConsumerTxn, r: ConsumerGroupHeartbeatRequest, out: Completion[ConsumerGroupHeartbeatResponse],
               owned: frozenset[str], before_upgrade: Checkpoint | None = None) -> None:
    """`before_upgrade`: the plan before a classic group was converted for this heartbeat; a refusal undoes the
    conversion too (Kafka's handler throws and writes nothing)."""
    ctx = t.ctx
    member_id = r.member_id or ctx.new_uuid()
    holder = t.current.static_member_id(r.instance_id)
    entity_id = holder or member_id
    entity = t.member(entity_id)
    # a static take-over (getOrMaybeSubscribeStaticConsumerGroupMember): of a member at -2, or of a live
    # classic-protocol holder (Kafka checks throwIfInstanceIdIsUnreleased only when both use the consumer protocol)
    replacing = r.member_epoch == 0 and bool(holder) and (entity["state"] == MemberState.StaticLeft
                                                          or bool(entity["classic"]))
    base = t.current.members.get(entity_id) or ConsumerMember(member_id)
    if replacing:  # ConsumerGroupMember.Builder(member, memberId): the holder's metadata under the request's id
        base = dataclasses.replace(base, member_id=member_id)
    updated = member_metadata_after(
        base, instance_id=r.instance_id, rack_id=r.rack_id, rebalance_timeout_ms=r.rebalance_timeout_ms,
        server_assignor=r.server_assignor, topics=r.subscribed_topic_names, regex=r.subscribed_topic_regex,
        client_id=r.client_id, client_host=r.client_host)
    metadata_changed = (updated is not base and updated != base) or entity["state"] == MemberState.Absent
    if r.member_epoch == 0:
        event = MemberEvent.Join
        args: dict[str, Any] = {"sender": member_id, "instance": r.instance_id or "",
                                "rebalance_timeout": updated.rebalance_timeout_ms, "metadata_changed": metadata_changed,
                                "inherited": entity["assigned"] if replacing and holder != member_id else frozenset()}
    else:
        event = MemberEvent.Heartbeat
        args = {"sender": member_id, "instance": r.instance_id or "", "epoch": r.member_epoch, "owned": owned,
                "owned_given": r.topic_partitions is not None, "rebalance_timeout": r.rebalance_timeout_ms,
                "metadata_changed": metadata_changed, "classic_join": False}
    may_assign = (t.group["group_epoch"] > t.group["assignment_epoch"] or metadata_changed
                  or t.now_ms >= t.current.metadata_refresh_deadline_ms)
    if may_assign and _rejected_early(t, entity_id, event, args, out, r, before_upgrade):
        return
    pre_member = t.member(entity_id)
    checkpoint = before_upgrade or t.b.checkpoint()
    assert t._staged is None, "the group's data is not changed before the group stage"
    counts = t.current.regex_counts()
    old_regex = "" if entity["state"] == MemberState.Absent else base.regex
    if replacing:
        _replace_static_member(t, entity_id, member_id, base, args)
    refused = group_stage(t, member_id, entity["state"], updated, base,
                           updated != base if replacing else metadata_changed, counts)
    d: Decision | None = None
    pre: Mapping[str, Any] = pre_member
    if refused is None:
        computed = t.group["group_epoch"] > t.group["assignment_epoch"]
        if computed:
            t.compute_target()
        # group.targetAssignment(memberId, instanceId) looks a static member's target up by its instance id as the
        # group held it before the request: an instance nobody held has none unless this request computed a target
        unheld = r.instance_id is not None and not holder and not computed
        target = _NOTHING if unheld else t.target_of(member_id)
        args.update(target=target, target_epoch=t.group["assignment_epoch"],
                    held_in_group=t.held_in_group(member_id, target))
        if replacing and holder != member_id:
            args["inherited"] = pre_member["assigned"]
            args["metadata_changed"] = True  # a new member id: all of its metadata is new
        # a take-over's copy (replaceMember) is at epoch 0 and previous epoch 0, holding what the holder held
        pre = pre_member if not replacing else {**t.member(member_id), "held": pre_member["held"], "member_epoch": 0,
                                                "previous_member_epoch": 0}
        d = t.decide_member(member_id if replacing else entity_id, event, args)
        refused = d if d.error != Errors.NONE else None
    # a refusal answers the error alone, no member id (Kafka 4.0's GroupCoordinatorService: code and message only)
    if refused is not None:  # refused after all (no early check ran): nothing of the group stage happens
        rejection = t.b.changes[-1]
        _undo(t, checkpoint, before_upgrade)
        if before_upgrade is None:  # else decided on the converted group, which is undone with the rest
            t.b.changes.append(rejection)
        error = refused.error
        t.then(lambda: settle(out, ConsumerGroupHeartbeatResponse(error)))
        return
    assert d is not None
    regex_module.maybe_refresh(t, old_regex, updated.regex, counts)
    _after_member(t, r, member_id, d, pre, out)


def _undo(t: ConsumerTxn, checkpoint: Checkpoint, before_upgrade: Checkpoint | None) -> None:
    t.b.rollback(checkpoint)
    t._staged = None
    if before_upgrade is not None:  # the conversion is undone with the rest
        t.current, t.installs_current = t.state.consumer.get(t.group_id) or ConsumerGroupData(), False


def _rejected_early(t: ConsumerTxn, entity_id: str, event: str, args: dict[str, Any],
                    out: Completion[ConsumerGroupHeartbeatResponse], r: ConsumerGroupHeartbeatRequest,
                    before_upgrade: Checkpoint | None) -> bool:
    """Kafka validates the member (epoch, instance) before it touches the group; so do we: the member's decision
    with a target that may not be read. A rejection by a check is final (nothing else is decided)."""
    probe = {**args, "target": _needs_target, "target_epoch": _needs_target, "held_in_group": _needs_target}
    if event == MemberEvent.Join:
        probe["inherited"] = args["inherited"]
    try:
        d = t.ctx.tables.member.decide(t.member(entity_id), event, probe)
    except _NeedsTarget:
        return False
    if d.error == Errors.NONE:
        return False
    if before_upgrade is not None:  # decided on the converted group, which is undone: no instance to record it on
        _undo(t, before_upgrade, before_upgrade)
    else:
        t.b.changes.append(Change(t.ctx.tables.member, (t.group_id, entity_id), d, args))
    t.then(lambda: settle(out, ConsumerGroupHeartbeatResponse(d.error)))
    return True


def group_stage(t: ConsumerTxn, member_id: str, entity_state: str, updated: ConsumerMember, base: ConsumerMember,
                metadata_changed: bool, counts: dict[str, int], *, classic: bool = False) -> Decision | None:
    """Step 1 of consumerGroupHeartbeat: the member's metadata (hasMemberSubscriptionChanged), its regular
    expression (maybeUpdateRegularExpressions: the tombstone of one it was the last subscriber of), the subscription
    metadata and the group epoch (updateSubscriptionMetadata). A refusal (INVALID_REGULAR_EXPRESSION) is returned,
    to be rolled back by the caller. `counts` are the group's subscribed expressions before this request; `classic`:
    a classic-protocol member's JoinGroup (classicGroupJoinToConsumerGroup)."""
    new = entity_state == MemberState.Absent
    names_changed = set(updated.subscribed_topic_names) != set(() if new else base.subscribed_topic_names)
    old_regex, new_regex = ("" if new else base.regex), updated.regex
    regex_changed = old_regex != new_regex
    old_last = bool(old_regex) and counts.get(old_regex, 0) == 1
    if metadata_changed:  # (`t.data` copies the group's data for this request: only when it changes)
        t.data.members[member_id] = updated
        t.b.write(records.member_metadata(t.group_id, updated))
    if regex_changed and old_last:
        t.b.write(records.regular_expression_tombstone(t.group_id, old_regex))
        t.data.resolved.pop(old_regex, None)
    group = t.group
    bump = (group["group_epoch"] == 0 or names_changed
            or (regex_changed and new_regex != "" and new_regex in group["resolved"])
            or (classic and old_regex != ""))  # a classic JoinGroup updating a member that had an expression
    refreshed = False
    if bump or t.now_ms >= t.view.metadata_refresh_deadline_ms:
        refreshed = t.refresh_metadata()
    valid = regex_module.is_valid(new_regex) if new_regex else True
    if new:
        d = t.decide_group(ConsumerGroupEvent.MemberJoined, {"m": member_id, "instance": updated.instance_id or "",
                                            "names_changed": names_changed, "regex": new_regex, "regex_valid": valid,
                                            "metadata_changed": refreshed, "classic": classic})
    elif bump or refreshed or regex_changed:
        d = t.decide_group(ConsumerGroupEvent.SubscriptionChanged, {"old_regex": old_regex, "new_regex": new_regex,
                                                   "old_regex_last": old_last, "new_regex_valid": valid,
                                                   "names_changed": names_changed, "metadata_changed": refreshed,
                                                   "classic": classic})
    else:
        return None
    if d.error != Errors.NONE:
        return d
    if d.post is not None and d.post["group_epoch"] != d.pre["group_epoch"]:
        t.b.write_for_last(records.consumer_group_epoch(t.group_id, t.group["group_epoch"]))
    return None


def _replace_static_member(t: ConsumerTxn, old_id: str, new_id: str, copied: ConsumerMember,
                           args: dict[str, Any]) -> None:
    """getOrMaybeSubscribeStaticConsumerGroupMember + replaceMember: the member at -2, or the live classic-protocol
    member, holding the instance is replaced by `new_id` (possibly the same id), inheriting its assignment and
    subscription at epoch 0 (surprise 16): the copy's records carry its MemberState, pending revocations and (for a
    classic-protocol holder) ClassicMemberMetadata. `copied` is the old member's metadata under the new id; what the
    request changes of it is the group stage's (SubscriptionChanged)."""
    data = t.data
    old_instance = t.member(old_id)
    old_target = data.target.get(old_id, {})
    state_byte = t.state_byte(old_id)
    if old_id != new_id:
        target = t.target_of(old_id)
        gone = t.decide_member(old_id, MemberEvent.Join, {
            **args, "target": target, "target_epoch": t.group["assignment_epoch"],
            "held_in_group": t.held_in_group(old_id, target)})
        assert gone.to_state == MemberState.Removed, gone
        t.tombstone_member(old_id, gone, len(t.b.changes) - 1)
    else:
        for rec in records.member_tombstones(t.group_id, old_id):
            t.b.write(rec)
        t.move_ownership(old_id, old_instance["held"], frozenset())
        data.target.pop(old_id, None)
        data.left_states.pop(old_id, None)
        t.cancel_timers(old_id)  # a classic-protocol holder's join and sync timers (its session timer restarts)
    data.members[new_id] = copied
    data.target[new_id] = old_target
    names = t.ctx.names
    t.b.write(records.member_metadata(t.group_id, copied))
    t.b.write(records.target_member(t.group_id, new_id, old_target))
    t.b.write(records.current_assignment(t.group_id, new_id, epoch=0, previous_epoch=0, state=state_byte,
                                         assigned=names.to_assignment(old_instance["assigned"]),
                                         pending=names.to_assignment(old_instance["pending_revocation"])))
    t.move_ownership(new_id, frozenset(), old_instance["held"])
    t.decide_group(ConsumerGroupEvent.StaticMemberReplaced, {
        "old_member": old_id, "new_member": new_id, "instance": copied.instance_id or "", "classic": False,
        "downgrade_allowed": False, "classic_fits": True})  # only a classic take-over may downgrade


def _after_member(t: ConsumerTxn, r: ConsumerGroupHeartbeatRequest, member_id: str, d: Decision,
                  pre: Mapping[str, Any], out: Completion[ConsumerGroupHeartbeatResponse]) -> None:
    """Step 3 (maybeReconcile's record and timers), MemberReconciled, the session timer and the response."""
    post = d.post if d.post is not None else d.pre
    changed = d.accepted and any(post[f] != pre[f] for f in
                                 ("state", "member_epoch", "previous_member_epoch", "assigned", "pending_revocation"))
    if changed:
        t.current_assignment_record(post)
        t.move_ownership(member_id, pre["held"], post["held"])
        if post["state"] == MemberState.UnrevokedPartitions:
            t.schedule_rebalance(member_id, post["member_epoch"], post["rebalance_timeout_ms"])
        else:
            t.cancel_rebalance(member_id)
    if d.accepted:  # a classic-protocol member's ConsumerGroupHeartbeat: it uses the consumer protocol now
        t.protocol_changed(member_id, post)
        t.instance_adopted(member_id, pre, post)
    group = t.group
    if post["state"] == MemberState.Stable and post["member_epoch"] == group["assignment_epoch"] \
            and member_id in group["unreconciled"]:
        t.decide_group(ConsumerGroupEvent.MemberReconciled, {"m": member_id})
    t.schedule_session(member_id)
    full = r.member_epoch == 0 or (r.rebalance_timeout_ms != -1 and r.subscribed_topic_names is not None
                                   and r.topic_partitions is not None)
    assignment = None
    if full or post["assigned"] != pre["assigned"]:
        assignment = assignment_tuple(t.ctx.names.to_assignment(post["assigned"]))
    response = ConsumerGroupHeartbeatResponse(Errors.NONE, member_id=member_id, member_epoch=post["member_epoch"],
                                              heartbeat_interval_ms=t.ctx.config.consumer_heartbeat_interval_ms,
                                              assignment=assignment)
    t.then(lambda: settle(out, response))


# ---------------------------------------------------------------------------------------------- epoch -1, -2


def _leave(t: ConsumerTxn, r: ConsumerGroupHeartbeatRequest, out: Completion[ConsumerGroupHeartbeatResponse]) -> None:
    holder = t.current.static_member_id(r.instance_id)
    entity_id = holder or r.member_id
    event = MemberEvent.Leave if r.member_epoch == -1 else MemberEvent.StaticLeave
    d = t.decide_member(entity_id, event, {"sender": r.member_id, "instance": r.instance_id or ""})
    if not d.accepted:
        t.then(lambda: settle(out, ConsumerGroupHeartbeatResponse(d.error)))
        return
    if d.to_state == MemberState.Removed:
        t.remove_member(entity_id, d)
    else:
        assert d.post is not None
        t.current_assignment_record(d.post)
        t.move_ownership(entity_id, d.pre["held"], d.post["held"])
        t.cancel_rebalance(entity_id)
        t.decide_group(ConsumerGroupEvent.StaticMemberLeft, {"m": entity_id, "instance": d.post["instance_id"]})
    member_id = r.member_id if d.to_state == MemberState.Removed else entity_id
    response = ConsumerGroupHeartbeatResponse(Errors.NONE, member_id=member_id, member_epoch=r.member_epoch)
    t.then(lambda: settle(out, response))


# ---------------------------------------------------------------------------------------------- group lifecycle


def delete_consumer_group(t: ConsumerTxn) -> str:
    """DeleteGroups for a consumer group: offsets, then the group's tombstones (createGroupTombstoneRecords)."""
    d = t.decide_group(ConsumerGroupEvent.Delete, {})
    if d.accepted:
        delete_all_offsets(t.state.offsets, t.b, t.group_id)
        tombstones = records.consumer_group_tombstones(t.group_id, list(t.current.members),
                                                       sorted(t.current.resolved))
        for rec in tombstones[:-1]:
            t.b.write(rec)
        t.b.write_for_last(tombstones[-1])
        t.forget = True
    return d.error


def delete_empty_consumer_group(ctx: Context, shard: Shard, state: GroupShardState, b: PlanBuilder,
                                group_id: str) -> None:
    """A classic JoinGroup for the id of an Empty consumer group deletes it first (maybeDeleteEmptyConsumerGroup)."""
    t = ConsumerTxn(ctx, shard, state, group_id, b)
    d = t.decide_group(ConsumerGroupEvent.Delete, {})
    if d.accepted:
        tombstones = records.consumer_group_tombstones(group_id, list(t.current.members))
        for rec in tombstones[:-1]:
            b.write(rec)
        b.write_for_last(tombstones[-1])
        t.forget = True


def describe_consumer_group(ctx: Context, shard: Shard, state: GroupShardState,
                            group_id: str) -> DescribedConsumerGroup:
    inst = shard.get("ConsumerGroup", (group_id,))
    data = state.consumer.get(group_id)
    if inst is None or data is None:
        classic = shard.get("ClassicGroup", (group_id,))
        # Kafka 4.0 answers an empty state (not Dead) for a group it does not describe
        return DescribedConsumerGroup(group_id, Errors.GROUP_ID_NOT_FOUND, state="", message=group_not_found(
            group_id, classic is not None and bool(classic["exists"]), "consumer"))
    names = ctx.names
    members = []
    for member_id, meta in data.members.items():
        m = shard.get("ConsumerGroupMember", (group_id, member_id))
        if m is None:
            continue
        members.append(DescribedConsumerMember(
            member_id, meta.instance_id, meta.rack_id, m["member_epoch"], meta.client_id, meta.client_host,
            tuple(sorted(set(meta.subscribed_topic_names))), assignment_tuple(names.to_assignment(m["assigned"])),
            assignment_tuple(data.target.get(member_id, {})), meta.subscribed_topic_regex))
    return DescribedConsumerGroup(group_id, Errors.NONE, inst["state"], inst["group_epoch"], inst["assignment_epoch"],
                                  data.preferred_assignor(ctx.config.consumer_assignors[0]), tuple(members))
