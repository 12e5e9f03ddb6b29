"""Online migration between the classic and the consumer group protocols (KIP-848), as Kafka 4.0.2's
GroupMetadataManager does it (convertToConsumerGroup with ConsumerGroup.fromClassicGroup, convertToClassicGroup
with ClassicGroup.fromConsumerGroup), under group.consumer.migration.policy (bidirectional by default).

- Upgrade: an epoch-0 ConsumerGroupHeartbeat for the id of a live classic group that uses the consumer protocol
  converts it (`upgrade`): the classic group's tombstone, then the records of a consumer group whose members are the
  classic members, classic-protocol members Stable at the classic generation with their last assignment as current
  and target assignment (every member's metadata, the subscription metadata, the epoch, the targets, the target
  epoch, the current assignments), then the heartbeat's own records. Parked JoinGroup/SyncGroup requests are
  answered REBALANCE_IN_PROGRESS. A subscription or assignment that does not parse, or an assignment with a custom
  assignor's user data, makes the heartbeat fail with GROUP_ID_NOT_FOUND (the conversion would lose it).
- Downgrade: when members leave (or one is fenced) and every member that stays uses the classic protocol
  (`downgrade`): the consumer group's tombstones and one GroupMetadata record of a classic group at the consumer
  group's epoch, Stable with the remaining members (each assigned its target assignment), which then rebalances.
  Also when a static classic JoinGroup takes over the group's only consumer-protocol member (`downgrade_replacing`):
  the joining member stands in the classic group in place of the replaced one, with its target assignment, and the
  group rebalances only if the subscription changed.

It sits beside `classic/` and `consumer/` (neither may import the other); the coordinator hands `online_upgrade`,
`upgrade`, `downgrade` and `downgrade_replacing` to the consumer handlers through the `Context` (`Migration`).

Owns: `online_upgrade`, `upgrade`, `downgrade`, `downgrade_replacing`. Decisions are the ClassicGroup, ConsumerGroup
and ConsumerGroupMember specs' (UpgradeToConsumerGroup, ConvertedFromClassic, the downgrade rows of MembersRemoved
and StaticMemberReplaced, and ConvertedFromConsumer).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import uuid
from typing import Any

from .._generated.classic_group import Event as ClassicGroupEvent
from .._generated.classic_group import State as ClassicGroupState
from .._generated.consumer_group import Event as ConsumerGroupEvent
from .._generated.consumer_group import State as ConsumerGroupState
from .._generated.consumer_group_member import Event as MemberEvent
from ..assignors import Assignment as ClassicAssignment
from ..assignors import ConsumerProtocolError, decode_assignment, decode_subscription, encode_assignment
from ..assignors.classic import TopicPartition
from ..errors import Errors
from . import records
from .classic.group import ClassicTxn, hb_key, join_key, sync_key
from .classic.protocol import select_protocol, subscribed_topics
from .consumer.group import ConsumerTxn
from .messages import JoinGroupResponse, SyncGroupResponse
from .state import Assignment, ClassicGroupData, ClassicMember, ConsumerGroupData, ConsumerMember

CONSUMER_PROTOCOL_TYPE = "consumer"


class NotConvertible(Exception):
    """fromClassicGroup threw (a malformed subscription or assignment, or user data that would be lost)."""


# ---------------------------------------------------------------------------------------------- upgrade


def _classic_members(t: ConsumerTxn, data: ClassicGroupData, protocol: str) -> list[tuple[ConsumerMember, Assignment]]:
    """ConsumerGroup.fromClassicGroup's members: metadata and assignment of each classic member."""
    out = []
    for member in data.members.values():
        assigned: Assignment = {}
        if member.assignment:
            try:
                assignment = decode_assignment(member.assignment)
            except (ConsumerProtocolError, ValueError) as e:
                raise NotConvertible(f"member {member.member_id}'s assignment: {e}") from e
            if assignment.user_data:
                raise NotConvertible("userData from a custom assignor would be lost")
            assigned = _topic_ids(t, assignment.partitions)
        try:
            subscription = decode_subscription(member.metadata(protocol))
        except (ConsumerProtocolError, ValueError) as e:
            raise NotConvertible(f"member {member.member_id}'s subscription: {e}") from e
        out.append((ConsumerMember(
            member.member_id, member.instance_id, subscription.rack_id, member.client_id, member.client_host,
            tuple(sorted(set(subscription.topics))), "", None, member.rebalance_timeout_ms,
            member.session_timeout_ms, tuple(member.protocols)), assigned))
    return out


def _topic_ids(t: ConsumerTxn, partitions: tuple[TopicPartition, ...]) -> Assignment:
    """toTopicPartitionMap: by topic id; topics the cluster does not know are dropped."""
    out: dict[uuid.UUID, set[int]] = {}
    for tp in partitions:
        metadata = t.ctx.describe(tp.topic)
        if metadata is not None:
            out.setdefault(metadata.topic_id, set()).add(tp.partition)
    return {topic_id: frozenset(ps) for topic_id, ps in out.items()}


def online_upgrade(t: ConsumerTxn) -> bool:
    """validateOnlineUpgrade and fromClassicGroup's parsing: the policy allows upgrades, the members fit in
    group.consumer.max.size, and every subscription and assignment converts."""
    classic = t.state.classic.get(t.group_id) or ClassicGroupData()
    if not t.ctx.config.upgrade_enabled or len(classic.members) > t.ctx.config.consumer_max_size:
        return False
    protocol = t.b.instance(t.ctx.tables.classic, (t.group_id,))["protocol"]
    if not protocol:
        return True  # no protocol selected yet: Kafka fails before it parses anything (the spec's refusal row)
    try:
        _classic_members(t, classic, protocol)
    except NotConvertible:
        return False
    return True


def upgrade(t: ConsumerTxn) -> str:
    """convertToConsumerGroup (or the deletion of an Empty classic group), when the ClassicGroup's
    UpgradeToConsumerGroup is enabled. Returns the error to answer, "NONE" once done; a converted group's data is then
    `t.current`."""
    classic_table, classic_key = t.ctx.tables.classic, (t.group_id,)
    inst = t.b.instance(classic_table, classic_key)
    classic = t.state.classic.get(t.group_id) or ClassicGroupData()
    d = t.b.decide(classic_table, classic_key, ClassicGroupEvent.UpgradeToConsumerGroup,
                   {"online_upgrade": online_upgrade(t)})
    if d.error != Errors.NONE:
        return d.error
    t.b.write_for_last(records.group_tombstone(t.group_id))
    _forget_classic(t, classic)
    if d.from_state != ClassicGroupState.Empty:
        _install_consumer_group(t, inst["generation"], _classic_members(t, classic, inst["protocol"]))
    return Errors.NONE


def _forget_classic(t: ConsumerTxn, classic: ClassicGroupData) -> None:
    """The classic group is gone: parked requests answered REBALANCE_IN_PROGRESS, its timers cancelled."""
    shard, state, group_id = t.shard, t.state, t.group_id
    timers = [join_key(group_id), sync_key(group_id), *(hb_key(group_id, m) for m in classic.members)]
    waiters: list[Any] = []
    for member in classic.members.values():
        if member.join_waiter is not None:
            waiters.append((member.join_waiter,
                            JoinGroupResponse(Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id)))
        if member.sync_waiter is not None:
            waiters.append((member.sync_waiter, SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)))

    def effect() -> None:
        state.classic.pop(group_id, None)
        shard.instances["ClassicGroup"].pop((group_id,), None)
        for key in timers:
            shard.timers.cancel(key)
        for waiter, response in waiters:
            if not waiter.done:
                waiter.set(response)

    t.then(effect)


def _install_consumer_group(t: ConsumerTxn, generation: int, members: list[tuple[ConsumerMember, Assignment]]) -> None:
    """fromClassicGroup + createConsumerGroupRecords, then the converted group is what the heartbeat works on."""
    data = ConsumerGroupData()
    names = t.ctx.names
    for member, assigned in members:
        data.members[member.member_id] = member
        data.target[member.member_id] = assigned
        for p in names.to_set(assigned):
            data.owners[p] = member.member_id
    t.current, t._staged = data, None
    data.subscription_metadata = t.subscription_metadata()
    t.decide_group(ConsumerGroupEvent.ConvertedFromClassic, {
        "converted": frozenset(data.members), "generation": generation,
        "statics": frozenset(m.instance_id for m, _ in members if m.instance_id)})
    for member, _ in members:
        t.b.write(records.member_metadata(t.group_id, member))
    t.b.write(records.partition_metadata(t.group_id, data.subscription_metadata))
    t.b.write_for_last(records.consumer_group_epoch(t.group_id, generation))
    for member, assigned in members:
        t.b.write(records.target_member(t.group_id, member.member_id, assigned))
    t.b.write(records.target_epoch(t.group_id, generation))
    for member, assigned in members:
        d = t.decide_member(member.member_id, MemberEvent.ConvertedFromClassic, {
            "epoch": generation, "classic_assigned": names.to_set(assigned), "instance": member.instance_id or "",
            "rebalance_timeout": member.rebalance_timeout_ms})
        assert d.post is not None
        t.current_assignment_record(d.post)
        t.schedule_session(member.member_id, member.classic_session_timeout_ms)
    t.current, t._staged, t.installs_current = t.view, None, True  # the heartbeat goes on with the converted group


# ---------------------------------------------------------------------------------------------- downgrade


def downgrade(t: ConsumerTxn, removed_args: dict[str, Any], member_changes: dict[str, int]) -> None:
    """convertToClassicGroup, once MembersRemoved's downgrade row is enabled for the members leaving (their ids ->
    the index of their removal in the plan): the consumer group's tombstones (every member, the leaving ones too),
    then the classic group's GroupMetadata; the classic group rebalances."""
    current = t.view
    epoch = t.group["group_epoch"]
    removed = t.decide_group(ConsumerGroupEvent.MembersRemoved, removed_args)
    assert removed.to_state == ConsumerGroupState.Dead, removed
    member_ids = list(current.members)
    tombstones = records.consumer_group_tombstones(t.group_id, member_ids, sorted(current.resolved))
    for i, rec in enumerate(tombstones[:-1]):
        index = t.b.write(rec)
        if i < len(member_ids) and member_ids[i] in member_changes:
            t.b.attach(member_changes[member_ids[i]], index)  # its current-assignment tombstone describes its removal
    t.b.write_for_last(tombstones[-1])
    stays = [m for m in member_ids if m not in member_changes]
    _become_classic(t, epoch, [(current.members[m], current.target.get(m, {})) for m in stays], rebalance=True)
    _forget_consumer_members(t, stays)


def downgrade_replacing(t: ConsumerTxn, replaced_args: dict[str, Any], joining: ConsumerMember,
                        rebalance: bool) -> None:
    """convertToClassicGroup with a joining member, once StaticMemberReplaced's downgrade row is enabled (the
    replaced member's records are tombstoned already and its copy under the joining member's id written): the
    consumer group's tombstones, the joining member's id in place of the replaced one's
    (createGroupTombstoneRecordsWithReplacedMember), then a classic group holding the other members and the joining
    one (with the replaced member's target assignment), which rebalances only when the subscription changed."""
    current = t.view
    epoch = t.group["group_epoch"]
    replaced = t.decide_group(ConsumerGroupEvent.StaticMemberReplaced, replaced_args)
    assert replaced.to_state == ConsumerGroupState.Dead, replaced
    member_ids = list(current.members)
    tombstones = records.consumer_group_tombstones(t.group_id, member_ids, sorted(current.resolved))
    for rec in tombstones[:-1]:
        t.b.write(rec)
    t.b.write_for_last(tombstones[-1])
    stays = [m for m in member_ids if m != joining.member_id]
    members = [(current.members[m], current.target.get(m, {})) for m in stays]
    members.append((joining, current.target.get(joining.member_id, {})))
    _become_classic(t, epoch, members, rebalance=rebalance)
    _forget_consumer_members(t, stays)


def _become_classic(t: ConsumerTxn, epoch: int, members: list[tuple[ConsumerMember, Assignment]], *,
                    rebalance: bool) -> None:
    """ClassicGroup.fromConsumerGroup and its records: a classic group at `epoch` of `members` (each assigned its
    target assignment, serialized at its protocol's version), Stable, then rebalancing when `rebalance`."""
    classic = _classic_group_data(t, [m for m, _ in members])
    ids = [m.member_id for m, _ in members]
    c = ClassicTxn(t.ctx, t.shard, t.state, t.group_id)
    c.b, c._staged = t.b, classic
    selected = select_protocol(classic, ids)
    for member, target in members:
        classic_member = classic.member(member.member_id)
        classic_member.assignment = _serialized_target(t, target, classic_member.metadata(selected))
    converted = c.decide(ClassicGroupEvent.ConvertedFromConsumer, {
        "converted": frozenset(ids), "statics": frozenset(m for m in ids if classic.members[m].instance_id),
        "epoch": epoch, "selected_protocol": selected, "first": ids[0],
        "group_rebalance_timeout_ms": classic.rebalance_timeout_ms(), "rebalance": rebalance})
    assert converted.post is not None
    classic.subscribed_topics = subscribed_topics(CONSUMER_PROTOCOL_TYPE, selected, classic)
    t.b.write_for_last(records.group_metadata(t.group_id, converted.post, classic))
    for member_id in ids:
        c.schedule_heartbeat(member_id, classic.members[member_id].session_timeout_ms)
    if rebalance:
        c.after_prepare(ClassicGroupState.Stable)  # prepareRebalance of the group fromConsumerGroup built Stable
    t.forget = True
    t.b.then(c._install)


def _classic_group_data(t: ConsumerTxn, members: list[ConsumerMember]) -> ClassicGroupData:
    data = ClassicGroupData(state_timestamp_ms=t.now_ms)
    for m in members:
        assert m.classic_protocols is not None and m.classic_session_timeout_ms is not None, m.member_id
        data.members[m.member_id] = ClassicMember(
            member_id=m.member_id, instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms, session_timeout_ms=m.classic_session_timeout_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE, protocols=m.classic_protocols)
    return data


def _serialized_target(t: ConsumerTxn, target: Assignment, metadata: bytes) -> bytes:
    names = t.ctx.names
    partitions = tuple(sorted(TopicPartition(names.name(topic_id), p) for topic_id, ps in target.items() for p in ps))
    version = int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0
    return encode_assignment(ClassicAssignment(partitions), max(0, min(version, 3)))


def _forget_consumer_members(t: ConsumerTxn, member_ids: list[str]) -> None:
    """The consumer group is gone: its members' instances and timers with it (Kafka drops the group object)."""
    shard, group_id = t.shard, t.group_id
    for member_id in member_ids:
        t.cancel_timers(member_id)

    def effect() -> None:
        for member_id in member_ids:
            shard.instances["ConsumerGroupMember"].pop((group_id, member_id), None)

    t.then(effect)
