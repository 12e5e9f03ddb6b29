"""The rebalance mechanics of a classic group that several requests and timers share (kafka-reference.md §2.4):
preparing a rebalance, completing the join phase, the initial-delay, join, pending-sync and heartbeat timers.

Owns: `ClassicTxn` — one handler's work on one classic group: the spec decisions (through `PlanBuilder`), the staged
side data (`ClassicGroupData`, changed freely by the handler and installed when the plan is applied) and the effects
(parked responses, timers) that run after the records are durable. Every state-dependent answer comes from the
ClassicGroup spec; this module computes the spec's parameters and the outputs.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._generated.classic_group import Event as ClassicGroupEvent
from ..._generated.classic_group import State as ClassicGroupState
from ...errors import Errors
from ...runtime.completion import Completion
from ...runtime.shard import Plan, Shard
from ...statemachine import Decision, Instance
from .. import records
from ..context import Context
from ..messages import JoinGroupMember, JoinGroupResponse, SyncGroupResponse
from ..planning import PlanBuilder, raise_bugs, settle
from ..shard_state import GroupShardState
from ..state import ClassicGroupData, ClassicMember
from .protocol import select_protocol, subscribed_topics

MACHINE = "ClassicGroup"


def hb_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("classic-heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("classic-join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("classic-sync", group_id)


class ClassicTxn:
    """One handler's view of one classic group; `plan()` hands the result to the runtime."""

    def __init__(self, ctx: Context, shard: Shard, state: GroupShardState, group_id: str) -> None:
        self.ctx, self.shard, self.state, self.group_id = ctx, shard, state, group_id
        self.table = ctx.tables.classic
        self.key = (group_id,)
        self.b = PlanBuilder(shard)
        self.now_ms = ctx.now_ms()
        self.current = state.classic.get(group_id) or ClassicGroupData()  # read-only: the shard's
        self._staged: ClassicGroupData | None = None
        self.forget = False  # the group is deleted: drop it (instance and data) once applied
        self.b.then(self._install)

    @property
    def data(self) -> ClassicGroupData:
        """The group's side data as this handler changes it (copied on first use; installed when applied)."""
        if self._staged is None:
            self._staged = self.current.stage()
        return self._staged

    # ------------------------------------------------------------ spec

    @property
    def inst(self) -> Instance:
        return self.b.instance(self.table, self.key)

    def decide(self, event: str, args: dict[str, Any], *, record: int | None = None) -> Decision:
        before = self.inst["state"]
        d = self.b.decide(self.table, self.key, event, args, record=record)
        if d.post is not None and d.post["state"] != before:
            self.data.state_timestamp_ms = self.now_ms  # transitionTo sets currentStateTimestamp
        return d

    def enabled(self, event: str, args: dict[str, Any]) -> bool:
        return self.b.enabled(self.table, self.key, event, args)

    # ------------------------------------------------------------ effects

    def _install(self) -> None:
        if self.forget:
            self.state.classic.pop(self.group_id, None)
            self.shard.instances[MACHINE].pop(self.key, None)
        elif self._staged is not None:
            self.state.classic[self.group_id] = self._staged
        elif self.key in self.shard.instances[MACHINE]:
            self.state.classic.setdefault(self.group_id, self.current)

    def then(self, effect: Callable[[], object]) -> None:
        self.b.then(effect)

    def reply(self, out: Completion[Any], response: Any | Callable[[], Any]) -> None:
        """Answer `out` once the plan is applied (a callable is evaluated then, on the final staged data)."""
        self.then(lambda: settle(out, response() if callable(response) else response))

    def schedule(self, key: Any, delay_ms: int, fn: Callable[[ClassicTxn], object]) -> None:
        """Run `fn` on this group as an internal event `delay_ms` after the plan is applied."""
        ctx, shard, state, group_id = self.ctx, self.shard, self.state, self.group_id

        def fire() -> None:
            submit_internal(ctx, shard, state, group_id, fn)

        self.then(lambda: shard.schedule(key, ctx.now_ms() + delay_ms, fire))

    def cancel(self, key: Any) -> None:
        self.then(lambda: self.shard.timers.cancel(key))

    def plan(self, on_failure: Callable[[BaseException], Plan] | None = None) -> Plan:
        return self.b.plan(None, on_failure)

    # ------------------------------------------------------------ members

    def add_member(self, member: ClassicMember, out: Completion[JoinGroupResponse] | None) -> None:
        """addMemberThenRebalanceOrCompleteJoin's member part: parked JoinGroup, the 5-minute new-member timer."""
        member.join_waiter = out
        self.data.members[member.member_id] = member
        self.schedule_heartbeat(member.member_id, self.ctx.config.new_member_join_timeout_ms)

    def remove_member(self, member_id: str, *, join_error: str | None = Errors.UNKNOWN_MEMBER_ID) -> None:
        """Drop a member: its timer goes, a parked JoinGroup (and SyncGroup) is answered with `join_error`."""
        member = self.data.members.pop(member_id, None)
        self.cancel(hb_key(self.group_id, member_id))
        if member is None or join_error is None:
            return
        if member.join_waiter is not None:
            self.reply(member.join_waiter, JoinGroupResponse(join_error, member_id=""))
        if member.sync_waiter is not None:
            self.reply(member.sync_waiter, SyncGroupResponse(join_error))

    def schedule_heartbeat(self, member_id: str, timeout_ms: int) -> None:
        self.schedule(hb_key(self.group_id, member_id), timeout_ms, lambda t: member_expired(t, member_id))

    def ordered(self, ids: frozenset[str]) -> list[str]:
        """`ids` in the group's member order (insertion order stands for Kafka's map order)."""
        return [m for m in self.data.members if m in ids]

    def next_leader(self, leaving: frozenset[str]) -> str:
        rest = [m for m in self.data.members if m not in leaving]
        return rest[0] if rest else ""

    # ------------------------------------------------------------ rebalance mechanics

    def after_prepare(self, from_state: str) -> None:
        """prepareRebalance's side effects, after a decision moved the group into PreparingRebalance."""
        if from_state == ClassicGroupState.CompletingRebalance:
            for member in list(self.data.members.values()):
                waiter = member.sync_waiter
                updated = self.data.member(member.member_id)
                updated.assignment, updated.sync_waiter = b"", None
                if waiter is not None:
                    self.reply(waiter, SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS))
        self.cancel(sync_key(self.group_id))
        if from_state == ClassicGroupState.Empty:
            delay_ms = self.ctx.config.initial_rebalance_delay_ms
            remaining_ms = max(self.data.rebalance_timeout_ms() - delay_ms, 0)
            self.schedule(join_key(self.group_id), delay_ms,
                          lambda t: initial_delay_fired(t, delay_ms, remaining_ms))
        else:
            self.complete_join_else_schedule()

    def complete_join_else_schedule(self) -> None:
        if not self.try_complete_join("ALL_JOINED"):
            self.schedule(join_key(self.group_id), self.data.rebalance_timeout_ms(),
                          lambda t: t.try_complete_join("REBALANCE_TIMEOUT"))

    def try_complete_join(self, trigger: str, *, delay_exhausted: bool = False) -> bool:
        """Fire CompleteJoin if the spec enables it now; returns whether it fired."""
        probe = {"trigger": trigger, "delay_exhausted": delay_exhausted, "selected_protocol": "",
                 "joined_leader": "", "group_rebalance_timeout_ms": 0}
        # the rows' guards read only trigger and delay_exhausted
        if not self.enabled(ClassicGroupEvent.CompleteJoin, probe):
            return False
        inst = self.inst
        awaiting = inst["awaiting_join"]
        staying = self.ordered(awaiting | inst["static_members"])
        args = {**probe, "selected_protocol": select_protocol(self.data, staying) if awaiting else "",
                "joined_leader": (self.ordered(awaiting) or staying or [""])[0],
                "group_rebalance_timeout_ms": self.data.rebalance_timeout_ms(staying)}
        for member_id in [m for m in self.data.members if m not in set(staying)]:
            self.remove_member(member_id, join_error=None)  # dynamic members that did not rejoin
        self.cancel(join_key(self.group_id))
        d = self.decide(ClassicGroupEvent.CompleteJoin, args)
        post = d.post
        assert post is not None
        if post["state"] == ClassicGroupState.Empty:
            self.data.subscribed_topics = subscribed_topics(post["protocol_type"], "", self.data)
            self.b.write_for_last(records.group_metadata(self.group_id, post, self.data))
        elif post["state"] == ClassicGroupState.CompletingRebalance:
            self._new_generation(post)
        else:  # nobody rejoined, static members remain: wait another rebalance timeout
            self.schedule(join_key(self.group_id), self.data.rebalance_timeout_ms(),
                          lambda t: t.try_complete_join("REBALANCE_TIMEOUT"))
        return True

    def _new_generation(self, post: Instance) -> None:
        """initNextGeneration into CompletingRebalance: every parked JoinGroup is answered (the leader gets the
        members), heartbeats are rescheduled, and the pending-sync timer starts."""
        protocol = post["protocol"]
        self.data.subscribed_topics = subscribed_topics(post["protocol_type"], protocol, self.data)
        for member_id in list(self.data.members):
            member = self.data.member(member_id)
            waiter, member.join_waiter = member.join_waiter, None
            if waiter is not None:
                self.reply(waiter, self._join_response_for(member_id, post))
            self.schedule_heartbeat(member_id, member.session_timeout_ms)
        generation = post["generation"]
        self.schedule(sync_key(self.group_id), post["rebalance_timeout_ms"],
                      lambda t: pending_sync_expired(t, generation))

    def _join_response_for(self, member_id: str, post: Instance) -> Callable[[], JoinGroupResponse]:
        def build() -> JoinGroupResponse:
            return self.join_response(member_id, post, with_members=member_id == post["leader"])
        return build

    def join_response(self, member_id: str, inst: Instance, *, with_members: bool,
                      skip_assignment: bool = False) -> JoinGroupResponse:
        members: tuple[JoinGroupMember, ...] = ()
        if with_members:
            members = tuple(JoinGroupMember(m.member_id, m.instance_id, m.metadata(inst["protocol"]))
                            for m in self.data.members.values())
        return JoinGroupResponse(Errors.NONE, member_id=member_id, generation_id=inst["generation"],
                                 protocol_type=inst["protocol_type"] or None, protocol_name=inst["protocol"] or None,
                                 leader=inst["leader"], members=members, skip_assignment=skip_assignment)


# ---------------------------------------------------------------------------------------------- timers


def submit_internal(ctx: Context, shard: Shard, state: GroupShardState, group_id: str,
                    fn: Callable[[ClassicTxn], Any]) -> Completion[Any]:
    """Run `fn` as an internal event of the group once no write for it is in flight."""
    def handler() -> Plan:
        t = ClassicTxn(ctx, shard, state, group_id)
        fn(t)
        return t.plan()

    done = shard.submit([(MACHINE, (group_id,))], handler, when_pending="wait")
    done.then(raise_bugs)
    return done


def initial_delay_fired(t: ClassicTxn, delay_ms: int, remaining_ms: int) -> None:
    """tryCompleteInitialRebalanceElseSchedule (surprise §9.14): extend while members keep joining and time remains
    within the rebalance timeout, else complete the join phase."""
    exhausted = remaining_ms == 0
    if t.enabled(ClassicGroupEvent.ExtendInitialDelay, {"delay_exhausted": exhausted}):
        t.decide(ClassicGroupEvent.ExtendInitialDelay, {"delay_exhausted": exhausted})
        new_delay_ms = min(t.ctx.config.initial_rebalance_delay_ms, remaining_ms)
        new_remaining_ms = max(remaining_ms - delay_ms, 0)
        t.schedule(join_key(t.group_id), new_delay_ms,
                   lambda t2: initial_delay_fired(t2, new_delay_ms, new_remaining_ms))
    else:
        t.try_complete_join("INITIAL_DELAY", delay_exhausted=exhausted)


def member_expired(t: ClassicTxn, member_id: str) -> None:
    """expireClassicGroupMemberHeartbeat."""
    inst = t.inst
    leaving = frozenset({member_id})
    d = t.decide(ClassicGroupEvent.MemberExpired, {"member_id": member_id, "next_leader": t.next_leader(leaving)})
    if not d.accepted:
        return
    from_state, to_state = d.from_state, d.to_state
    if member_id in inst["pending_members"]:
        t.cancel(hb_key(t.group_id, member_id))
        t.try_complete_join("MEMBER_EXPIRED")
        return
    t.remove_member(member_id)
    if to_state == ClassicGroupState.PreparingRebalance and from_state != ClassicGroupState.PreparingRebalance:
        t.after_prepare(from_state)
    else:
        t.try_complete_join("MEMBER_EXPIRED")


def pending_sync_expired(t: ClassicTxn, generation: int) -> None:
    """expirePendingSync: members that did not SyncGroup within the rebalance timeout are removed."""
    inst = t.inst
    missing = inst["pending_sync"]
    d = t.decide(ClassicGroupEvent.PendingSyncExpired,
                 {"generation_id": generation, "next_leader": t.next_leader(missing)})
    if not d.accepted:
        return
    for member_id in t.ordered(missing):
        t.remove_member(member_id)
    t.after_prepare(d.from_state)


def after_load_over_capacity(ctx: Context, shard: Shard, state: GroupShardState, group_id: str) -> None:
    """onLoaded: a loaded group above group.max.size rebalances (the surplus is dropped by the join phase)."""
    def rebalance(t: ClassicTxn) -> None:
        d = t.decide(ClassicGroupEvent.RebalanceOverCapacity, {})
        t.after_prepare(d.from_state)

    submit_internal(ctx, shard, state, group_id, rebalance)
