"""SyncGroup, Heartbeat, LeaveGroup and DeleteGroups for classic groups (kafka-reference.md §2.5-§2.7, §2.9):
GroupMetadataManager.classicGroupSync*, classicGroupHeartbeat*, classicGroupLeave*, restated as ClassicGroup spec
events.

Owns: `sync_group` (the leader's assignment is written in a GroupMetadata record before any member gets it),
`heartbeat`, `leave_group` (batched), `delete_classic_group`, `describe_classic_group`.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from ..._generated.classic_group import Event as ClassicGroupEvent
from ..._generated.classic_group import State as ClassicGroupState
from ...errors import Errors
from ...runtime.completion import Completion
from ...runtime.shard import Plan, Shard
from ...statemachine import Decision
from .. import records
from ..context import Context
from ..messages import (
    DescribedGroup,
    DescribedMember,
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    SyncGroupRequest,
    SyncGroupResponse,
    group_not_found,
)
from ..offsets.store import delete_all_offsets
from ..planning import is_check_row
from ..shard_state import GroupShardState
from .group import ClassicTxn, hb_key

#: the Heartbeat answers after which the member's session is extended (a set: read per heartbeat, where an enum
#: member's read is slow on CPython 3.11)
_SESSION_EXTENDED = frozenset({Errors.NONE, Errors.REBALANCE_IN_PROGRESS})
STORAGE_ERROR = Errors.NOT_COORDINATOR  # appendGroupMetadataErrorToResponseError(KAFKA_STORAGE_ERROR)


# ---------------------------------------------------------------------------------------------- SyncGroup


def sync_group(ctx: Context, shard: Shard, state: GroupShardState, req: SyncGroupRequest,
               out: Completion[SyncGroupResponse]) -> Plan:
    t = ClassicTxn(ctx, shard, state, req.group_id)
    d = _decide_sync(t, req, out)
    if d is None:
        return t.plan()
    member_id = req.member_id
    # the stored assignment (first sync of the generation, or a repeated one)
    if d.to_state == ClassicGroupState.Stable:
        inst = t.inst
        t.reply(out, SyncGroupResponse(Errors.NONE, inst["protocol_type"] or None, inst["protocol"] or None,
                                       t.current.members[member_id].assignment))
        return t.plan()
    t.data.member(member_id).sync_waiter = out
    if member_id != d.pre["leader"]:
        return t.plan()  # a follower waits for the leader's assignment
    assignment = dict(req.assignments)
    for other in t.data.members:
        assignment.setdefault(other, b"")
    written = t.decide(ClassicGroupEvent.AssignmentWritten, {"generation_id": req.generation_id})
    assert written.post is not None
    t.b.write_for_last(records.group_metadata(req.group_id, written.post, t.data, assignment=assignment))
    for other in list(t.data.members):
        member = t.data.member(other)
        member.assignment = assignment[other]
        waiter, member.sync_waiter = member.sync_waiter, None
        if waiter is not None:  # setAndPropagateAssignment: each parked SyncGroup gets its member's assignment
            t.reply(waiter, SyncGroupResponse(Errors.NONE, written.post["protocol_type"] or None,
                                              written.post["protocol"] or None, member.assignment))
            t.schedule_heartbeat(other, member.session_timeout_ms)
    return t.plan(on_failure=lambda e: _sync_write_failed(ctx, shard, state, req, out))


def _decide_sync(t: ClassicTxn, req: SyncGroupRequest, out: Completion[SyncGroupResponse]) -> Decision | None:
    """The SyncGroup decision; an error is answered here (None)."""
    mapped = t.current.static_member_id(req.group_instance_id)
    args = {"member_id": req.member_id, "instance_id": req.group_instance_id or "", "mapped_member": mapped,
            "generation_id": req.generation_id, "req_protocol_type": req.protocol_type or "",
            "req_protocol": req.protocol_name or ""}
    d = t.decide(ClassicGroupEvent.SyncGroup, args)
    if d.error != Errors.NONE:
        t.reply(out, SyncGroupResponse(d.error))
        return None
    return d


def _sync_write_failed(ctx: Context, shard: Shard, state: GroupShardState, req: SyncGroupRequest,
                       out: Completion[SyncGroupResponse]) -> Plan:
    """The leader's GroupMetadata write failed: every parked SyncGroup gets the error, assignments are cleared and
    a rebalance starts (AssignmentWriteFailed). Nothing was applied, so the decisions are made again."""
    t = ClassicTxn(ctx, shard, state, req.group_id)
    d = _decide_sync(t, req, out)
    assert d is not None
    t.data.member(req.member_id).sync_waiter = out
    failed = t.decide(ClassicGroupEvent.AssignmentWriteFailed, {"generation_id": req.generation_id})
    for member in list(t.data.members.values()):
        if member.sync_waiter is not None:
            t.reply(member.sync_waiter, SyncGroupResponse(STORAGE_ERROR))
    t.after_prepare(failed.from_state)
    plan = t.plan()
    if plan.records:
        raise AssertionError("a failed SyncGroup write cannot lead to another write")
    return plan


# ---------------------------------------------------------------------------------------------- Heartbeat


def heartbeat(ctx: Context, shard: Shard, state: GroupShardState, req: HeartbeatRequest,
              out: Completion[HeartbeatResponse]) -> Plan:
    t = ClassicTxn(ctx, shard, state, req.group_id)
    mapped = t.current.static_member_id(req.group_instance_id)
    d = t.decide(ClassicGroupEvent.Heartbeat, {"member_id": req.member_id, "instance_id": req.group_instance_id or "",
                                               "mapped_member": mapped, "generation_id": req.generation_id})
    member = t.current.members.get(req.member_id)
    if d.error in _SESSION_EXTENDED and member is not None:
        t.schedule_heartbeat(req.member_id, member.session_timeout_ms)  # a valid member's session is extended
    t.reply(out, HeartbeatResponse(d.error))
    return t.plan()


# ---------------------------------------------------------------------------------------------- LeaveGroup


def leave_group(ctx: Context, shard: Shard, state: GroupShardState, req: LeaveGroupRequest,
                out: Completion[LeaveGroupResponse]) -> Plan:
    t = ClassicTxn(ctx, shard, state, req.group_id)
    answers: list[tuple[MemberIdentity, str]] = []
    prepared_from: str | None = None
    removed = False
    for identity in req.members:
        pre = t.inst
        mapped = t.data.static_member_id(identity.group_instance_id)
        leaving = mapped if identity.member_id == "" else identity.member_id
        d = t.decide(ClassicGroupEvent.LeaveGroupMember, {
            "member_id": identity.member_id, "instance_id": identity.group_instance_id or "", "mapped_member": mapped,
            "next_leader": t.next_leader(frozenset({leaving}))})
        if not d.accepted and is_check_row(d.row) and d.error == Errors.UNKNOWN_MEMBER_ID:
            # no such group: Kafka's GroupCoordinatorService.leaveGroup answers it as every member's error
            t.reply(out, LeaveGroupResponse(Errors.NONE, tuple((m, Errors.UNKNOWN_MEMBER_ID) for m in req.members)))
            return t.plan()
        if not d.accepted and is_check_row(d.row):  # the group itself: the batch's top-level error
            t.reply(out, LeaveGroupResponse(d.error))
            return t.plan()
        answers.append((identity, d.error))
        if not d.accepted:
            continue
        removed = True
        if leaving in pre["pending_members"]:
            t.cancel(hb_key(t.group_id, leaving))
        else:
            t.remove_member(leaving)
        if d.to_state == ClassicGroupState.PreparingRebalance and d.from_state != ClassicGroupState.PreparingRebalance:
            prepared_from = d.from_state
    if prepared_from is not None:
        t.after_prepare(prepared_from)
    elif removed:
        t.try_complete_join("ALL_JOINED")  # maybeCompleteJoinPhase
    t.reply(out, LeaveGroupResponse(Errors.NONE, tuple(answers)))
    return t.plan()


# ---------------------------------------------------------------------------------------------- DeleteGroups


def delete_classic_group(t: ClassicTxn) -> str:
    """The classic part of DeleteGroups: offsets and group tombstones when the spec accepts (the caller answers)."""
    d = t.decide(ClassicGroupEvent.DeleteGroup, {})
    if d.accepted:
        delete_all_offsets(t.state.offsets, t.b, t.group_id)
        t.b.write_for_last(records.group_tombstone(t.group_id))
        t.forget = True
    return d.error


def describe_classic_group(state: GroupShardState, instance: dict[str, object] | None, group_id: str,
                           consumer_group: bool = False) -> DescribedGroup:
    """GroupMetadataManager.describeGroups: each member's assignment (the one it still has, outside Stable too:
    ClassicGroupMember.describeNoMetadata), and its metadata in a Stable group only. An unknown, Dead or KIP-848
    (`consumer_group`) group id is GROUP_ID_NOT_FOUND with the message of Kafka's GroupIdNotFoundException
    (KIP-1043; what DescribeGroups v6 answers)."""
    if instance is None or not instance["exists"] or instance["state"] == ClassicGroupState.Dead:
        return DescribedGroup(group_id, Errors.GROUP_ID_NOT_FOUND,
                              message=group_not_found(group_id, consumer_group, "classic"))
    data = state.classic.get(group_id)
    stable = instance["state"] == ClassicGroupState.Stable
    protocol = str(instance["protocol"]) if stable else ""
    members = tuple(
        DescribedMember(m.member_id, m.instance_id, m.client_id, m.client_host,
                        m.metadata(protocol) if stable else b"", m.assignment)
        for m in (data.members.values() if data is not None else ()))
    return DescribedGroup(group_id, Errors.NONE, str(instance["state"]), str(instance["protocol_type"]), protocol,
                          members)
