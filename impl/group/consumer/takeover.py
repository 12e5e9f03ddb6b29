"""A static classic-protocol member taking over its instance id in a KIP-848 consumer group, as Kafka 4.0.2's
classicGroupJoinToConsumerGroup does it: a JoinGroup with an instance id and no member id, while some member holds
the instance (getOrMaybeSubscribeStaticConsumerGroupMember with createIfNotExists and the classic protocol, then
replaceMember). Unlike a ConsumerGroupHeartbeat, it takes over the holder whatever its state (no need to have left
with -2) and protocol:

1. the holder is removed (ConsumerGroupMember.Replaced: its tombstones 8, 7, 5), and a copy of it under the new
   member id is written at epoch 0 (its metadata, the holder's target assignment, its current assignment with the
   holder's MemberState, assignment and pending revocations);
2. when the holder was the group's only consumer-protocol member and the policy allows downgrades, the group is
   converted back to a classic group holding the new member in its place
   (ConsumerGroup.StaticMemberReplaced's downgrade row, `Migration.downgrade_replacing`): Stable when the
   subscription is unchanged, else rebalancing; the JoinGroup answers the reconciled member epoch, or 0 when the
   subscription changed (Kafka skips the reconciliation then);
3. otherwise the group stays (StaticMemberReplaced), the member's metadata update follows as any classic join's
   (SubscriptionChanged, bumping the epoch when the subscription changed or the holder had a regular expression),
   the target assignment, and the copy's reconciliation with the owned partitions of the subscription
   (ConsumerGroupMember.ClassicTakeOver; a copy in an unknown state that owns partitions fails the whole JoinGroup
   with FENCED_MEMBER_EPOCH, nothing written).

Owns: `take_over`, and what every classic JoinGroup to a consumer group shares: `member_after_join` (the member's
metadata after the request), `owned_ids`, `finish_join` (timers and the answer). Must not import: `kcoord.model`,
`kcoord.impl.group.classic`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..._generated.consumer_group import Event as ConsumerGroupEvent
from ..._generated.consumer_group import State as ConsumerGroupState
from ..._generated.consumer_group_member import Event as MemberEvent
from ..._generated.consumer_group_member import State as MemberState
from ...errors import Errors
from ...runtime.completion import Completion
from .. import records
from ..messages import JoinGroupRequest, JoinGroupResponse
from ..planning import first_row, settle
from ..state import ConsumerMember
from .group import ConsumerTxn, join_key, sync_key
from .heartbeat import group_stage

CONSUMER_PROTOCOL_TYPE = "consumer"
#: MemberState -> the spec's CopiedState (a member at -2 is copied with the state it had when it left)
_COPIED: dict[str, str] = {MemberState.Stable: "STABLE", MemberState.UnrevokedPartitions: "UNREVOKED",
                           MemberState.UnreleasedPartitions: "UNRELEASED"}
_COPIED_BYTES = {0: "STABLE", 1: "UNREVOKED", 2: "UNRELEASED"}


def member_after_join(req: JoinGroupRequest, base: ConsumerMember, member_id: str, subscription: Any
                      ) -> ConsumerMember:
    """The member's metadata after a classic JoinGroup (ConsumerGroupMember.Builder's maybeUpdate*: the instance
    and rack ids and the rebalance timeout only when given; the subscription's topics, no regular expression, the
    ClassicMemberMetadata of the request)."""
    rebalance_timeout_ms = req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else base.rebalance_timeout_ms
    if rebalance_timeout_ms == -1:
        rebalance_timeout_ms = req.session_timeout_ms  # JoinGroup v0 has none: the classic group's rule
    return ConsumerMember(
        member_id, req.group_instance_id or base.instance_id, subscription.rack_id or base.rack_id, req.client_id,
        req.client_host, tuple(sorted(set(subscription.topics))), "", base.server_assignor, rebalance_timeout_ms,
        req.session_timeout_ms, tuple(req.protocols))


def owned_ids(t: ConsumerTxn, subscription: Any) -> dict[Any, set[int]]:
    """toTopicPartitions: the subscription's owned partitions by topic id (unknown topics dropped)."""
    out: dict[Any, set[int]] = {}
    for tp in subscription.owned_partitions:
        metadata = t.ctx.describe(tp.topic)
        if metadata is not None:
            out.setdefault(metadata.topic_id, set()).add(tp.partition)
    return out


def finish_join(t: ConsumerTxn, req: JoinGroupRequest, member_id: str, generation: int,
                out: Completion[JoinGroupResponse]) -> None:
    """The join is written: the member's join timer is cancelled, its session (its own session timeout) and sync
    (its rebalance timeout) timers start, and the answer carries its epoch as generation, no leader."""
    t.cancel_timer(join_key(t.group_id, member_id))
    t.schedule_session(member_id, req.session_timeout_ms)
    t.schedule_classic_timer(sync_key(t.group_id, member_id), member_id, req.rebalance_timeout_ms
                             if req.rebalance_timeout_ms != -1 else req.session_timeout_ms)
    response = JoinGroupResponse(Errors.NONE, member_id=member_id, generation_id=generation,
                                 protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=req.protocols[0][0])
    t.then(lambda: settle(out, response))


def refuse(t: ConsumerTxn, checkpoint: Any, error: str, member_id: str, out: Completion[JoinGroupResponse]) -> None:
    """Kafka's handler threw: nothing since `checkpoint` happens, but the refusing decision stays in the trace."""
    rejection = t.b.changes[-1]
    t.b.rollback(checkpoint)
    t._staged = None
    t.b.changes.append(rejection)
    t.then(lambda: settle(out, JoinGroupResponse(error, member_id=member_id)))


# ---------------------------------------------------------------------------------------------- the take-over


def _copied_state(t: ConsumerTxn, holder: str, state: Any) -> str:
    """The holder's MemberState as Kafka's copy keeps it (a member at -2: the state it had when it left)."""
    if state == MemberState.StaticLeft:
        return _COPIED_BYTES.get(t.view.left_states.get(holder, 0), "UNKNOWN")
    return _COPIED.get(str(state), "UNKNOWN")


def _take_over_args(t: ConsumerTxn, new_id: str, copied: str, old: Mapping[str, Any], updated: ConsumerMember,
                    owned: frozenset[str], target: frozenset[str]) -> dict[str, Any]:
    """ClassicTakeOver's arguments. `held_in_group`: the partitions of the target held by another member (the
    copy's own are its inheritance)."""
    owners = t.view.owners
    held = frozenset(p for p in target if owners.get(p, new_id) != new_id)
    return {"sender": new_id, "instance": updated.instance_id or "", "copied": copied, "inherited": old["assigned"],
            "inherited_pending": old["pending_revocation"], "owned": owned,
            "rebalance_timeout": updated.rebalance_timeout_ms, "target": target,
            "target_epoch": t.group["assignment_epoch"], "held_in_group": held}


def take_over(t: ConsumerTxn, req: JoinGroupRequest, holder: str, new_id: str, subscription: Any,
              out: Completion[JoinGroupResponse]) -> None:
    """The static JoinGroup without a member id takes over `holder` (see the module docstring)."""
    checkpoint = t.b.checkpoint()
    view, cfg, migration = t.view, t.ctx.config, t.ctx.migration
    old = t.member(holder)
    copied = _copied_state(t, holder, old["state"])
    copy = dataclasses.replace(view.members[holder], member_id=new_id)  # Builder(member, newMemberId)
    old_target = view.target.get(holder, {})
    counts = view.regex_counts()
    updated = member_after_join(req, copy, new_id, subscription)
    owned = t.ctx.names.to_set(owned_ids(t, subscription))
    rebalance = set(updated.subscribed_topic_names) != set(copy.subscribed_topic_names) or copy.regex != ""
    replaced = {"old_member": holder, "new_member": new_id, "instance": updated.instance_id or "", "classic": True,
                "downgrade_allowed": cfg.downgrade_enabled and migration is not None,
                "classic_fits": len(view.members) <= cfg.max_size}
    gone = t.decide_member(holder, MemberEvent.Replaced, {"sender": new_id, "instance": updated.instance_id or ""})
    assert gone.to_state == MemberState.Removed, gone
    t.tombstone_member(holder, gone, len(t.b.changes) - 1)
    copy_record = _write_copy(t, copy, old_target, old, copied)
    row = first_row(t.ctx.tables.consumer, t.group, ConsumerGroupEvent.StaticMemberReplaced, replaced)
    if row is not None and row.target == ConsumerGroupState.Dead and migration is not None:
        generation = 0
        if not rebalance:  # Kafka reconciles the copy first, only to answer its epoch (the group is gone after)
            probe = t.ctx.tables.member.fresh({"group_id": t.group_id, "member_id": new_id})
            target = t.ctx.names.to_set(old_target)
            d = t.ctx.tables.member.decide(probe, MemberEvent.ClassicTakeOver,
                                           _take_over_args(t, new_id, copied, old, updated, owned, target))
            if d.error != Errors.NONE:
                t.b.rollback(checkpoint)
                t._staged = None
                t.then(lambda: settle(out, JoinGroupResponse(d.error)))
                return
            assert d.post is not None
            generation = d.post["member_epoch"]
        t.b.write(records.member_metadata(t.group_id, updated))
        migration.downgrade_replacing(t, replaced, updated, rebalance)
        response = JoinGroupResponse(Errors.NONE, member_id=new_id, generation_id=generation,
                                     protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=req.protocols[0][0])
        t.cancel_timer(join_key(t.group_id, new_id))
        t.then(lambda: settle(out, response))
        return
    t.decide_group(ConsumerGroupEvent.StaticMemberReplaced, replaced)
    refused = group_stage(t, new_id, old["state"], updated, copy, True, counts, classic=True)
    if refused is not None:
        refuse(t, checkpoint, refused.error, req.member_id, out)
        return
    _reconcile(t, req, new_id, copied, old, updated, owned, (checkpoint, copy_record), out)


def _write_copy(t: ConsumerTxn, copy: ConsumerMember, target: Any, old: Mapping[str, Any], copied: str) -> int:
    """replaceMember's records for the new member id: the holder's metadata, target and current assignment (at
    epoch 0, with the holder's MemberState), and the partition epochs it inherits. The current assignment's index
    in the plan."""
    data, names, new_id = t.data, t.ctx.names, copy.member_id
    data.members[new_id] = copy
    data.target[new_id] = target
    byte = {v: k for k, v in _COPIED_BYTES.items()}.get(copied, records.MEMBER_STATE_BYTES[MemberState.Unknown])
    t.b.write(records.member_metadata(t.group_id, copy))
    t.b.write(records.target_member(t.group_id, new_id, target))
    index = t.b.write(records.current_assignment(t.group_id, new_id, epoch=0, previous_epoch=0, state=byte,
                                                 assigned=names.to_assignment(old["assigned"]),
                                                 pending=names.to_assignment(old["pending_revocation"])))
    t.move_ownership(new_id, frozenset(), old["held"])
    return index


def _reconcile(t: ConsumerTxn, req: JoinGroupRequest, new_id: str, copied: str, old: Mapping[str, Any],
               updated: ConsumerMember, owned: frozenset[str], marks: tuple[Any, int],
               out: Completion[JoinGroupResponse]) -> None:
    """The target assignment, then the copy's reconciliation (ClassicTakeOver), MemberReconciled, timers, answer.
    `marks`: the plan's checkpoint before the take-over, and the index of the copy's current-assignment record."""
    checkpoint, copy_record = marks
    if t.group["group_epoch"] > t.group["assignment_epoch"]:
        t.compute_target()
    d = t.decide_member(new_id, MemberEvent.ClassicTakeOver,
                        _take_over_args(t, new_id, copied, old, updated, owned, t.target_of(new_id)))
    if d.error != Errors.NONE:
        refuse(t, checkpoint, d.error, req.member_id, out)
        return
    post = d.post
    assert post is not None
    fields = ("member_epoch", "previous_member_epoch", "assigned", "pending_revocation")
    if tuple(post[f] for f in fields) != (0, 0, old["assigned"], old["pending_revocation"]):
        t.current_assignment_record(post)  # maybeReconcile wrote it only when the copy changed
    else:
        t.b.attach(len(t.b.changes) - 1, copy_record)  # the copy's own record describes it
    t.move_ownership(new_id, old["held"], post["held"])
    group = t.group
    if post["state"] == MemberState.Stable and post["member_epoch"] == group["assignment_epoch"] \
            and new_id in group["unreconciled"]:
        t.decide_group(ConsumerGroupEvent.MemberReconciled, {"m": new_id})
    finish_join(t, req, new_id, post["member_epoch"], out)
