"""JoinGroup for classic groups (kafka-reference.md §2.3, §2.4, §2.9): GroupMetadataManager.classicGroupJoin*,
restated as ClassicGroup spec events (JoinNewDynamicMember, JoinNewStaticMember, JoinKnownMember) followed by what
their outcome implies (prepare a rebalance, complete the join phase, park or answer the request).

Owns: `join_group`. The handler computes the spec's parameters (mapped member, capacity, protocol agreement,
metadata equality, the next leader) from the group's side data and never decides a state-dependent answer itself.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from typing import Any

from ..._generated.classic_group import Event as ClassicGroupEvent
from ..._generated.classic_group import State as ClassicGroupState
from ...errors import Errors
from ...runtime.completion import Completion
from ...runtime.shard import Plan, Shard
from ...statemachine import Decision, Instance
from .. import records
from ..context import Context
from ..messages import JoinGroupRequest, JoinGroupResponse
from ..planning import settle
from ..shard_state import GroupShardState
from ..state import ClassicMember
from .group import ClassicTxn, hb_key
from .protocol import common_protocol, select_protocol

STORAGE_ERROR = Errors.NOT_COORDINATOR  # appendGroupMetadataErrorToResponseError(KAFKA_STORAGE_ERROR)


def join_group(ctx: Context, shard: Shard, state: GroupShardState, req: JoinGroupRequest,
               out: Completion[JoinGroupResponse], t: ClassicTxn | None = None) -> Plan:
    t = t or ClassicTxn(ctx, shard, state, req.group_id)
    written_before = len(t.b.records)
    existed = t.inst["exists"]
    if not existed:
        t.data.state_timestamp_ms = t.now_ms  # a new ClassicGroup starts Empty, now
    if req.member_id == "" and req.group_instance_id:
        _join_new_static(t, req, out)
    elif req.member_id == "":
        _join_new_dynamic(t, req, out)
    else:
        _join_known(t, req, out)
    if not existed and t.inst["exists"] and len(t.b.records) == written_before:
        # a JoinGroup that creates the group writes its (empty) record, even when the answer is an error (§2.3.5)
        t.b.write(records.empty_group_metadata(req.group_id, t.now_ms))
    return t.plan(on_failure=lambda e: _failed(out))


def _failed(out: Completion[JoinGroupResponse]) -> Plan:
    return Plan(response=None, after_apply=lambda: settle(out, JoinGroupResponse(STORAGE_ERROR)))


def _common_args(t: ClassicTxn, req: JoinGroupRequest) -> dict[str, Any]:
    inst = t.inst
    cfg = t.ctx.config
    return {"req_protocol_type": req.protocol_type or "", "common_protocol": common_protocol(t.data, req.protocols),
            "join_phase_full": len(inst["awaiting_join"]) >= cfg.max_size,
            "group_full": len(inst["members"]) >= cfg.max_size, "session_timeout_ms": req.session_timeout_ms,
            "min_session_timeout_ms": cfg.min_session_timeout_ms, "max_session_timeout_ms": cfg.max_session_timeout_ms}


def _rebalance_timeout_ms(req: JoinGroupRequest) -> int:
    return req.session_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms


def _new_member(req: JoinGroupRequest, member_id: str) -> ClassicMember:
    return ClassicMember(member_id=member_id, instance_id=req.group_instance_id, client_id=req.client_id,
                         client_host=req.client_host, rebalance_timeout_ms=_rebalance_timeout_ms(req),
                         session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
                         protocols=req.protocols)


def _after_add(t: ClassicTxn, d: Decision) -> None:
    """maybePrepareRebalanceOrCompleteJoin after a member was added or updated."""
    if d.to_state == ClassicGroupState.PreparingRebalance and d.from_state != ClassicGroupState.PreparingRebalance:
        t.after_prepare(d.from_state)
    else:
        t.try_complete_join("ALL_JOINED")


def _join_new_dynamic(t: ClassicTxn, req: JoinGroupRequest, out: Completion[JoinGroupResponse]) -> None:
    new_id = f"{req.client_id}-{t.ctx.new_uuid()}"
    args = {**_common_args(t, req), "new_member_id": new_id, "requires_known_member_id": req.api_version >= 4}
    d = t.decide(ClassicGroupEvent.JoinNewDynamicMember, args)
    if d.error == Errors.MEMBER_ID_REQUIRED:
        t.schedule_heartbeat(new_id, req.session_timeout_ms)
        t.reply(out, JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id=new_id))
    elif d.error != Errors.NONE:
        t.reply(out, JoinGroupResponse(d.error))
    else:
        t.add_member(_new_member(req, new_id), out)
        _after_add(t, d)


def _join_new_static(t: ClassicTxn, req: JoinGroupRequest, out: Completion[JoinGroupResponse]) -> None:
    instance_id = str(req.group_instance_id)
    mapped = t.data.static_member_id(instance_id)
    new_id = f"{instance_id}-{t.ctx.new_uuid()}"
    args = {**_common_args(t, req), "instance_id": instance_id, "mapped_member": mapped, "new_member_id": new_id,
            "protocol_unchanged": _protocol_unchanged(t, mapped, req) if mapped else True}
    d = t.decide(ClassicGroupEvent.JoinNewStaticMember, args)
    if d.error != Errors.NONE:
        t.reply(out, JoinGroupResponse(d.error))
    elif not mapped:
        t.add_member(_new_member(req, new_id), out)
        _after_add(t, d)
    elif d.to_state == ClassicGroupState.Stable:
        _replace_without_rebalance(t, req, mapped, new_id, d, out)
    else:
        _replace_static(t, req, mapped, new_id, out)
        _after_add(t, d)


def _protocol_unchanged(t: ClassicTxn, old_id: str, req: JoinGroupRequest) -> bool:
    """Whether, with the replaced member's new protocols, the vote still selects the current protocol."""
    probe = t.data.stage()
    member = probe.member(old_id)
    member.protocols = req.protocols
    if not probe.candidate_protocols():
        return False
    return bool(select_protocol(probe, list(probe.members)) == t.inst["protocol"])


def _replace_static(t: ClassicTxn, req: JoinGroupRequest, old_id: str, new_id: str,
                    out: Completion[JoinGroupResponse] | None) -> ClassicMember:
    """replaceStaticMember + updateMember: the old id's parked requests are fenced; the new id takes its place."""
    old = t.data.members[old_id]
    t.remove_member(old_id, join_error=Errors.FENCED_INSTANCE_ID)
    new = ClassicMember(member_id=new_id, instance_id=old.instance_id, client_id=old.client_id,
                        client_host=old.client_host, rebalance_timeout_ms=_rebalance_timeout_ms(req),
                        session_timeout_ms=req.session_timeout_ms, protocol_type=old.protocol_type,
                        protocols=req.protocols, assignment=old.assignment, join_waiter=out)
    t.data.members[new_id] = new
    t.schedule_heartbeat(new_id, old.session_timeout_ms)
    return new


def _replace_without_rebalance(t: ClassicTxn, req: JoinGroupRequest, old_id: str, new_id: str, d: Decision,
                               out: Completion[JoinGroupResponse]) -> None:
    """Stable, selected protocol unchanged (§2.9): persist the group with the new id, answer with the current
    generation once written; a failed write leaves the group as it was and answers the error with member id ""."""
    _replace_static(t, req, old_id, new_id, None)
    assert d.post is not None
    post: Instance = d.post
    t.b.write_for_last(records.group_metadata(t.group_id, post, t.data))
    leader = post["leader"] == new_id
    if req.api_version >= 9:  # JoinGroupRequest.supportsSkippingAssignment
        t.reply(out, lambda: t.join_response(new_id, post, with_members=leader, skip_assignment=leader))
    else:
        t.reply(out, lambda: t.join_response(new_id, {**post, "leader": d.pre["leader"]}, with_members=False))


def _join_known(t: ClassicTxn, req: JoinGroupRequest, out: Completion[JoinGroupResponse]) -> None:
    member_id = req.member_id
    inst = t.inst
    mapped = t.data.static_member_id(req.group_instance_id)
    known = t.data.members.get(member_id)
    args = {**_common_args(t, req), "member_id": member_id, "instance_id": req.group_instance_id or "",
            "mapped_member": mapped, "same_metadata": known is not None and known.protocols == req.protocols,
            "next_leader": t.next_leader(frozenset({member_id}))}
    d = t.decide(ClassicGroupEvent.JoinKnownMember, args)
    if d.error == Errors.GROUP_MAX_SIZE_REACHED:
        if d.accepted:
            if member_id in inst["members"]:
                t.remove_member(member_id, join_error=None)
            else:
                t.cancel(hb_key(t.group_id, member_id))
        t.reply(out, JoinGroupResponse(Errors.GROUP_MAX_SIZE_REACHED))
    elif not d.accepted and d.error == Errors.NONE:
        # a retried JoinGroup (CompletingRebalance) or a follower without changes (Stable): the current generation;
        # the leader gets the member list (the spec answers a leader NONE only in CompletingRebalance)
        with_members = member_id == inst["leader"]
        t.reply(out, lambda: t.join_response(member_id, inst, with_members=with_members))
    elif d.error != Errors.NONE:
        t.reply(out, JoinGroupResponse(d.error, member_id=member_id))
    elif member_id in inst["pending_members"]:
        t.cancel(hb_key(t.group_id, member_id))
        t.add_member(_new_member(req, member_id), out)
        _after_add(t, d)
    else:
        member = t.data.member(member_id)
        member.protocols, member.session_timeout_ms = req.protocols, req.session_timeout_ms
        member.rebalance_timeout_ms = _rebalance_timeout_ms(req)
        member.join_waiter = out
        _after_add(t, d)
