"""What the KIP-848 handlers share (kafka-reference.md §3.3, §3.5, §3.7, §3.10): the per-request transaction on one
consumer group, subscription metadata, the target assignment (server-side assignors), member removal with Kafka's
tombstone order, and the member timers.

Owns: `ConsumerTxn`, and the timers' handlers (`session_expired`, `rebalance_expired`). Decisions come from the
ConsumerGroup and ConsumerGroupMember specs; this module computes their parameters (targets, held partitions) and
writes the records that describe them.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..._generated.consumer_group import Event as ConsumerGroupEvent
from ..._generated.consumer_group import State as ConsumerGroupState
from ..._generated.consumer_group_member import Event as MemberEvent
from ..._generated.consumer_group_member import State as MemberState
from ...assignors.server import GroupSpec, MemberSpec, PartitionAssignorError, SubscribedTopicDescriber, TopicMetadata
from ...errors import Errors, KafkaError
from ...runtime.completion import Completion
from ...runtime.shard import Plan, Shard
from ...statemachine import Decision, Instance
from .. import records
from ..context import Context
from ..planning import PlanBuilder, first_row, raise_bugs
from ..shard_state import GroupShardState
from ..state import Assignment, ConsumerGroupData, ConsumerMember

_NOTHING: frozenset[str] = frozenset()
GROUP = "ConsumerGroup"
MEMBER = "ConsumerGroupMember"


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-rebalance", group_id, member_id)


def join_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic-protocol member's join timer (consumerGroupJoinKey)."""
    return ("consumer-join", group_id, member_id)


def sync_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic-protocol member's sync timer (consumerGroupSyncKey)."""
    return ("consumer-sync", group_id, member_id)


class ConsumerTxn:
    def __init__(self, ctx: Context, shard: Shard, state: GroupShardState, group_id: str,
                 b: PlanBuilder | None = None) -> None:
        self.ctx, self.shard, self.state, self.group_id = ctx, shard, state, group_id
        self.b = b or PlanBuilder(shard)
        self.gkey = (group_id,)
        self.now_ms = ctx.now_ms()
        self.current = state.consumer.get(group_id) or ConsumerGroupData()
        self._staged: ConsumerGroupData | None = None
        self.forget = False
        self.installs_current = False  # `current` is a group this handler made (a converted classic group)
        self.b.then(self._install)

    @property
    def data(self) -> ConsumerGroupData:
        if self._staged is None:
            self._staged = self.current.stage()
        return self._staged

    @property
    def view(self) -> ConsumerGroupData:
        """The group's data as this handler sees it, without copying it (read-only)."""
        return self._staged if self._staged is not None else self.current

    def _install(self) -> None:
        if self.forget:
            self.state.consumer.pop(self.group_id, None)
        elif self._staged is not None:
            self.state.consumer[self.group_id] = self._staged
        elif self.installs_current:
            self.state.consumer[self.group_id] = self.current

    # ------------------------------------------------------------ spec

    @property
    def group(self) -> Instance:
        return self.b.instance(self.ctx.tables.consumer, self.gkey)

    def member(self, member_id: str) -> Instance:
        return self.b.instance(self.ctx.tables.member, (self.group_id, member_id))

    def decide_group(self, event: str, args: dict[str, Any]) -> Decision:
        return self.b.decide(self.ctx.tables.consumer, self.gkey, event, args)

    def decide_member(self, member_id: str, event: str, args: dict[str, Any]) -> Decision:
        return self.b.decide(self.ctx.tables.member, (self.group_id, member_id), event, args)

    def then(self, effect: Callable[[], object]) -> None:
        self.b.then(effect)

    def plan(self, response: Any = None) -> Plan:
        return self.b.plan(response)

    # ------------------------------------------------------------ subscription metadata and target

    def subscription_metadata(self) -> dict[str, TopicMetadata]:
        """computeSubscriptionMetadata: the existing topics the members subscribe to."""
        out: dict[str, TopicMetadata] = {}
        for name in sorted(self.data.subscribed_topic_names()):
            metadata = self.ctx.describe(name)
            if metadata is not None:
                out[name] = TopicMetadata(metadata.topic_id, metadata.name, metadata.num_partitions)
        return out

    def refresh_metadata(self) -> bool:
        """Recompute the subscription metadata; write it (ConsumerGroupPartitionMetadata) when it changed."""
        metadata = self.subscription_metadata()
        self.data.metadata_refresh_deadline_ms = self.now_ms + self.ctx.config.consumer_metadata_refresh_interval_ms
        if metadata == self.data.subscription_metadata:
            return False
        self.data.subscription_metadata = metadata
        self.b.write(records.partition_metadata(self.group_id, metadata))
        return True

    def compute_target(self) -> None:
        """updateTargetAssignment: run the preferred assignor, write the changed member targets and the epoch."""
        data = self.data
        assignor_name = data.preferred_assignor(self.ctx.config.consumer_assignors[0])
        assignor = self.ctx.assignors[assignor_name]
        by_name = data.subscription_metadata
        members = {
            member_id: MemberSpec(
                subscribed_topic_ids=frozenset(by_name[t].topic_id for t in data.member_topics(m) if t in by_name),
                assignment=data.target.get(member_id, {}), instance_id=m.instance_id, rack_id=m.rack_id)
            for member_id, m in data.members.items()}
        try:
            target = assignor.assign(GroupSpec(members), SubscribedTopicDescriber(by_name.values()))
        except (PartitionAssignorError, ValueError) as e:
            raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, f"failed to compute a new target assignment: {e}") from e
        for member_id in data.members:
            new = {t: ps for t, ps in target.get(member_id, {}).items() if ps}
            if new != data.target.get(member_id, {}):
                self.b.write(records.target_member(self.group_id, member_id, new))
            data.target[member_id] = new
        d = self.decide_group(ConsumerGroupEvent.TargetAssignmentComputed, {})
        assert d.post is not None
        self.b.write(records.target_epoch(self.group_id, d.post["assignment_epoch"]))

    def target_of(self, member_id: str) -> frozenset[str]:
        target = self.view.target.get(member_id)
        return self.ctx.names.target_set(target) if target else _NOTHING

    def held_in_group(self, member_id: str, target: frozenset[str]) -> frozenset[str]:
        """The partitions with a partition epoch that the member's rows read: its own, and those of its target held
        by anyone (the rows only intersect `held_in_group` with the target; see the report)."""
        own: frozenset[str] = self.member(member_id)["held"]
        return own | (self.view.owners.keys() & target)  # (iterates the target, not the group's owners)

    # ------------------------------------------------------------ members

    def current_assignment_record(self, post: Mapping[str, Any]) -> int:
        """ConsumerGroupCurrentMemberAssignment for a member's post-state (the last decision's)."""
        names = self.ctx.names
        state = records.MEMBER_STATE_BYTES.get(post["state"], records.MEMBER_STATE_BYTES[MemberState.Stable])
        if post["state"] == MemberState.StaticLeft:
            state = self.state_byte(post["member_id"])
            self.data.left_states[post["member_id"]] = state
        return self.b.write_for_last(records.current_assignment(
            self.group_id, post["member_id"], epoch=post["member_epoch"], previous_epoch=post["previous_member_epoch"],
            state=state, assigned=names.to_assignment(post["assigned"]),
            pending=names.to_assignment(post["pending_revocation"])))

    def state_byte(self, member_id: str) -> int:
        """The member's MemberState byte as Kafka holds it (what a static leave keeps, only the epoch becoming -2,
        and what replaceMember's copy carries): a member that left with -2 keeps the one it had then."""
        before = self.shard.get(MEMBER, (self.group_id, member_id))
        if before is None:
            return records.MEMBER_STATE_BYTES[MemberState.Stable]
        if before["state"] == MemberState.StaticLeft:
            return self.view.left_states.get(member_id, records.MEMBER_STATE_BYTES[MemberState.Stable])
        return records.MEMBER_STATE_BYTES.get(before["state"], 0)

    def protocol_changed(self, member_id: str, post: Mapping[str, Any]) -> None:
        """The member the last decision kept may have changed protocol (a consumer-protocol member's JoinGroup, a
        classic-protocol member's ConsumerGroupHeartbeat): the group counts it among its classic-protocol members
        or no longer, as the member is now (ConsumerGroup.updateMember). A member the request created or took over
        was counted by MemberJoined or StaticMemberReplaced already."""
        group = self.group
        if member_id in group["members"] and (member_id in group["classic_members"]) != post["classic"]:
            self.decide_group(ConsumerGroupEvent.ProtocolChanged, {"m": member_id, "classic": post["classic"]})

    def instance_adopted(self, member_id: str, pre: Mapping[str, Any], post: Mapping[str, Any]) -> None:
        """The member the last decision kept took an instance nobody held (an epoch-0 static heartbeat that reached
        it by its member id: ConsumerGroupMember.Join's adopted rows): the group maps the instance to it. A member
        at -2 that did so is no longer one that left."""
        instance, group = post["instance_id"], self.group
        if instance and member_id in group["members"] and instance not in group["static_instances"]:
            self.decide_group(ConsumerGroupEvent.InstanceAdopted,
                              {"m": member_id, "old_instance": pre["instance_id"], "instance": instance})
            if pre["state"] == MemberState.StaticLeft:
                self.data.left_states.pop(member_id, None)

    def move_ownership(self, member_id: str, before: frozenset[str], after: frozenset[str]) -> None:
        owners = self.data.owners
        for p in before - after:
            if owners.get(p) == member_id:
                del owners[p]
        for p in after:
            owners[p] = member_id

    def remove_member(self, member_id: str, decision: Decision) -> None:
        """consumerGroupFenceMember after the member's removal was decided (the last change of the plan)."""
        self.remove_members([(member_id, decision, len(self.b.changes) - 1)])

    def remove_members(self, removed: list[tuple[str, Decision, int]]) -> None:
        """consumerGroupFenceMembers after each member's removal was decided: (member id, decision, its change's
        index in the plan). When members stay and every one of them uses the classic protocol and the policy allows
        it, the group is converted back to a classic group instead (MembersRemoved's downgrade row;
        `Context.migration`). Otherwise: tombstones 8, 7, 5 per member; the resolutions of the regular expressions
        they were the last subscribers of (16); the subscription metadata without them; MembersRemoved (the group
        epoch + 1, once)."""
        data = self.view
        ids = [member_id for member_id, _, _ in removed]
        counts = data.regex_counts()
        leaving: dict[str, int] = {}
        for member_id in ids:
            regex = data.members[member_id].regex if member_id in data.members else ""
            if regex:
                leaving[regex] = leaving.get(regex, 0) + 1
        dropped = frozenset(r for r, n in leaving.items() if counts.get(r, 0) == n)
        config, migration = self.ctx.config, self.ctx.migration
        args = {"ms": frozenset(ids), "instances": frozenset(d.pre["instance_id"] for _, d, _ in removed
                                                             if d.pre["instance_id"]),
                "dropped": dropped, "downgrade_allowed": config.downgrade_enabled and migration is not None,
                "classic_fits": len(data.members) - len(ids) <= config.max_size}
        if migration is not None:
            row = first_row(self.ctx.tables.consumer, self.group, ConsumerGroupEvent.MembersRemoved, args)
            if row is not None and row.target == ConsumerGroupState.Dead:
                for member_id in ids:
                    self.cancel_timers(member_id)
                migration.downgrade(self, args, {member_id: change for member_id, _, change in removed})
                return
        for member_id, decision, change in removed:
            self.tombstone_member(member_id, decision, change)
        data = self.data
        for regex in sorted(dropped):
            self.b.write(records.regular_expression_tombstone(self.group_id, regex))
            data.resolved.pop(regex, None)
        self.refresh_metadata()
        self.decide_group(ConsumerGroupEvent.MembersRemoved, args)
        self.b.write_for_last(records.consumer_group_epoch(self.group_id, self.group["group_epoch"]))

    def tombstone_member(self, member_id: str, decision: Decision, change: int) -> None:
        """removeMember: the member's tombstones (8, 7, 5; the first describes its removal, change `change`), its
        partitions freed, its data and timers dropped. Nothing of the group is decided."""
        tombstones = records.member_tombstones(self.group_id, member_id)
        self.b.attach(change, self.b.write(tombstones[0]))
        for rec in tombstones[1:]:
            self.b.write(rec)
        data = self.data
        self.move_ownership(member_id, decision.pre["held"], frozenset())
        data.members.pop(member_id, None)
        data.target.pop(member_id, None)
        data.left_states.pop(member_id, None)
        self.cancel_timers(member_id)

    # ------------------------------------------------------------ timers

    def schedule_session(self, member_id: str, timeout_ms: int | None = None) -> None:
        """(Re)start the member's session timer: group.consumer.session.timeout.ms, or a classic-protocol member's
        own session timeout."""
        delay_ms = self.ctx.config.consumer_session_timeout_ms if timeout_ms is None else timeout_ms
        self._schedule(session_key(self.group_id, member_id), delay_ms, lambda t: session_expired(t, member_id))

    def schedule_classic_timer(self, key: Any, member_id: str, timeout_ms: int, *, if_absent: bool = False) -> None:
        """A classic-protocol member's join or sync timer (scheduleConsumerGroupJoinTimeoutIfAbsent,
        scheduleConsumerGroupSyncTimeout): when it fires, the member is fenced as by its session timeout."""
        ctx, shard, state, group_id = self.ctx, self.shard, self.state, self.group_id

        def fire() -> None:
            submit_internal(ctx, shard, state, group_id, lambda t: session_expired(t, member_id))

        def start() -> None:
            if not (if_absent and shard.timers.deadline(key) is not None):
                shard.schedule(key, ctx.now_ms() + timeout_ms, fire)

        self.then(start)

    def cancel_timer(self, key: Any) -> None:
        self.then(lambda: self.shard.timers.cancel(key))

    def schedule_rebalance(self, member_id: str, epoch: int, timeout_ms: int) -> None:
        self._schedule(rebalance_key(self.group_id, member_id), timeout_ms,
                       lambda t: rebalance_expired(t, member_id, epoch))

    def cancel_timers(self, member_id: str) -> None:
        timers, group_id = self.shard.timers, self.group_id
        keys = [session_key(group_id, member_id), rebalance_key(group_id, member_id), join_key(group_id, member_id),
                sync_key(group_id, member_id)]
        self.then(lambda: [timers.cancel(key) for key in keys])

    def cancel_rebalance(self, member_id: str) -> None:
        self.then(lambda: self.shard.timers.cancel(rebalance_key(self.group_id, member_id)))

    def _schedule(self, key: Any, delay_ms: int, fn: Callable[[ConsumerTxn], object]) -> None:
        ctx, shard, state, group_id = self.ctx, self.shard, self.state, self.group_id

        def fire() -> None:
            submit_internal(ctx, shard, state, group_id, fn)

        self.then(lambda: shard.schedule(key, ctx.now_ms() + delay_ms, fire))


def submit_internal(ctx: Context, shard: Shard, state: GroupShardState, group_id: str,
                    fn: Callable[[ConsumerTxn], Any]) -> Completion[Any]:
    """Run `fn` as an internal event of the group once no write for it is in flight."""
    def handler() -> Plan:
        t = ConsumerTxn(ctx, shard, state, group_id)
        fn(t)
        return t.plan()

    done = shard.submit([(GROUP, (group_id,))], handler, when_pending="wait")
    done.then(raise_bugs)
    return done


def session_expired(t: ConsumerTxn, member_id: str) -> None:
    """group.consumer.session.timeout.ms passed without a heartbeat: fence the member (a -2 member too)."""
    d = t.decide_member(member_id, MemberEvent.SessionTimeout, {})
    if d.accepted:
        t.remove_member(member_id, d)


def rebalance_expired(t: ConsumerTxn, member_id: str, epoch: int) -> None:
    """The member did not revoke within its rebalance timeout at `epoch`: fence it (ignored if it moved on)."""
    d = t.decide_member(member_id, MemberEvent.RebalanceTimeout, {"epoch": epoch})
    if d.accepted:
        t.remove_member(member_id, d)


def member_metadata_after(r_member: ConsumerMember, *, instance_id: str | None, rack_id: str | None,
                          rebalance_timeout_ms: int, server_assignor: str | None, topics: tuple[str, ...] | None,
                          regex: str | None, client_id: str, client_host: str) -> ConsumerMember:
    """ConsumerGroupMember.Builder's maybeUpdate*: a field the request leaves out keeps its value. The subscribed
    names are a set in Kafka (duplicates collapse), held sorted here as the record writes them. A request that
    changes nothing gets `r_member` itself back (a steady heartbeat: every field left out, the same client, a member
    of the consumer protocol already; a classic-protocol member's metadata loses its classic part here)."""
    if (instance_id is None and rack_id is None and rebalance_timeout_ms == -1 and server_assignor is None
            and topics is None and regex is None and client_id == r_member.client_id
            and client_host == r_member.client_host and r_member.classic_protocols is None
            and r_member.classic_session_timeout_ms is None):
        return r_member
    return ConsumerMember(
        member_id=r_member.member_id,
        instance_id=instance_id if instance_id is not None else r_member.instance_id,
        rack_id=rack_id if rack_id is not None else r_member.rack_id,
        client_id=client_id, client_host=client_host,
        subscribed_topic_names=tuple(sorted(set(topics))) if topics is not None else r_member.subscribed_topic_names,
        subscribed_topic_regex=regex if regex is not None else r_member.subscribed_topic_regex,
        server_assignor=server_assignor if server_assignor is not None else r_member.server_assignor,
        rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else r_member.rebalance_timeout_ms)


def assignment_tuple(assignment: Assignment) -> tuple[tuple[Any, tuple[int, ...]], ...]:
    return tuple((tp.topic_id, tp.partitions) for tp in records.topic_partitions(assignment))
