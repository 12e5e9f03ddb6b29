"""Classic-protocol members of a KIP-848 consumer group, as Kafka 4.0.2's GroupMetadataManager serves them beyond the
basic migration: a static JoinGroup without a member id takes over the member holding its instance id (whatever
its state and protocol; getOrMaybeSubscribeStaticConsumerGroupMember + replaceMember), which may convert the group
back to a classic group (validateOnlineDowngradeWithReplacedMember); a static JoinGroup naming a member id whose
instance id nobody holds is UNKNOWN_MEMBER_ID; and a LeaveGroup fences its valid members in one step
(classicGroupLeaveToConsumerGroup + consumerGroupFenceMembers)."""

from __future__ import annotations

from typing import Any

from kcoord.impl.assignors import Subscription, decode_assignment, encode_subscription

from .helpers import T1, Harness
from .test_consumer_migration import classic_stable, record_types

G = "mig"


def protocols(*owned: int, topics: tuple[str, ...] = ("orders",)) -> Any:
    return (("range", encode_subscription(Subscription.of(topics, owned_partitions=[("orders", p) for p in owned]))),)


def settle(h: Harness, *members: tuple[str, str | None]) -> None:
    """Heartbeat the consumer-protocol members (id, instance) until each is Stable at the target epoch, owning what
    it holds (revoking what it must)."""
    for _ in range(4):
        for member_id, instance in members:
            inst = h.member(G, member_id)
            assert inst is not None
            owned = tuple(sorted(int(p.rsplit("-", 1)[1]) for p in inst["assigned"]))
            h.cg(G, member_id, inst["member_epoch"], owned=((T1, owned),) if owned else (), instance=instance)


# ---------------------------------------------------------------------------------------------- take-over


def test_a_static_classic_join_without_member_id_takes_over_a_live_consumer_member(h: Harness) -> None:
    """Two consumer-protocol members (so no downgrade): the static one's instance is taken over by a classic
    JoinGroup without a member id. Kafka answers NONE with a new member id, tombstones the old member and writes
    the new one (metadata, target, current assignment at epoch 0, then its reconciliation)."""
    h.cg(G, "c1", 0)
    s = h.cg(G, "s1", 0, instance="i1")
    assert s.error == "NONE"
    settle(h, ("c1", None), ("s1", "i1"))
    s_before = h.member(G, "s1")
    assert s_before is not None and s_before["state"] == "Stable" and s_before["assigned"]
    epoch = h.consumer_group(G)["group_epoch"]
    mark = h.mark()
    join = h.join(G, "", instance="i1", protocols=protocols()).result()
    assert join.error == "NONE", join
    new = join.member_id
    assert new and new != "s1"
    assert h.member(G, "s1") is None, "the old member is gone"
    m = h.member(G, new)
    assert m is not None and m["classic"] and m["instance_id"] == "i1"
    assert m["assigned"] == s_before["assigned"], "the new member id inherits the assignment"
    assert m["state"] == "Stable" and join.generation_id == m["member_epoch"] == epoch
    g = h.consumer_group(G)
    assert g["members"] == {"c1", new} and g["classic_members"] == {new} and g["group_epoch"] == epoch, \
        "same subscription: no new group epoch (surprise 16)"
    kinds = record_types(h.records_since(mark))
    assert kinds[:6] == [("ConsumerGroupCurrentMemberAssignment", True), ("ConsumerGroupTargetAssignmentMember", True),
                         ("ConsumerGroupMemberMetadata", True), ("ConsumerGroupMemberMetadata", False),
                         ("ConsumerGroupTargetAssignmentMember", False),
                         ("ConsumerGroupCurrentMemberAssignment", False)], "replaceMember's records"
    sync = h.sync(G, new, join.generation_id, instance="i1").result()
    assert sync.error == "NONE"
    assert {f"{tp.topic}-{tp.partition}" for tp in decode_assignment(sync.assignment).partitions} == m["assigned"]


def _classic_holder(h: Harness) -> tuple[str, dict[str, Any]]:
    """A consumer-protocol member c1 and a classic-protocol static member of instance i1 (a classic JoinGroup that
    took the instance over from a consumer-protocol member), both Stable at the target epoch; (its id, its state)."""
    h.cg(G, "c1", 0)
    assert h.cg(G, "s1", 0, instance="i1").error == "NONE"
    settle(h, ("c1", None), ("s1", "i1"))
    join = h.join(G, "", instance="i1", protocols=protocols()).result()
    assert join.error == "NONE", join
    assert h.sync(G, join.member_id, join.generation_id, instance="i1").result().error == "NONE"
    classic = h.member(G, join.member_id)
    assert classic is not None and classic["classic"] and classic["state"] == "Stable" and classic["assigned"]
    return join.member_id, classic


def test_a_consumer_heartbeat_takes_over_the_instance_of_a_live_classic_member(h: Harness) -> None:
    """Kafka 4.0.2's getOrMaybeSubscribeStaticConsumerGroupMember checks throwIfInstanceIdIsUnreleased only when the
    holder uses the consumer protocol too: a live classic-protocol holder is replaced (replaceMember) by the epoch-0
    ConsumerGroupHeartbeat's member id, at epoch 0 with its assignment, as a take-over of a member at -2."""
    classic_id, classic = _classic_holder(h)
    epoch = h.consumer_group(G)["group_epoch"]
    mark = h.mark()
    r = h.cg(G, "fresh", 0, instance="i1")
    assert r.error == "NONE", r
    assert r.member_id == "fresh" and r.member_epoch == epoch
    assert h.member(G, classic_id) is None, "the classic member is gone"
    m = h.member(G, "fresh")
    assert m is not None and not m["classic"] and m["instance_id"] == "i1" and m["state"] == "Stable"
    assert m["assigned"] == classic["assigned"], "the new member id inherits the assignment"
    g = h.consumer_group(G)
    assert g["members"] == {"c1", "fresh"} and g["classic_members"] == set()
    assert g["static_instances"] == {"i1"} and g["group_epoch"] == epoch, "same subscription: no new group epoch"
    kinds = record_types(h.records_since(mark))
    assert kinds == [("ConsumerGroupCurrentMemberAssignment", True), ("ConsumerGroupTargetAssignmentMember", True),
                     ("ConsumerGroupMemberMetadata", True), ("ConsumerGroupMemberMetadata", False),
                     ("ConsumerGroupTargetAssignmentMember", False), ("ConsumerGroupCurrentMemberAssignment", False),
                     ("ConsumerGroupMemberMetadata", False), ("ConsumerGroupCurrentMemberAssignment", False)], \
        "replaceMember's records, then the member's metadata without its classic part and its reconciliation"
    written = h.records_since(mark)
    copy, updated = written[3][1], written[6][1]
    assert copy.classic_member_metadata is not None, "replaceMember writes the holder's copy, classic part and all"
    assert updated.classic_member_metadata is None and updated.instance_id == "i1"
    assert written[5][1].member_epoch == 0 and written[7][1].member_epoch == epoch
    assert h.hb(G, classic_id, classic["member_epoch"], instance="i1") == "FENCED_INSTANCE_ID", \
        "the instance is the new member's now"
    assert h.hb(G, classic_id, classic["member_epoch"]) == "UNKNOWN_MEMBER_ID", "the classic member id is gone"


def test_a_consumer_heartbeat_under_a_classic_members_own_id_replaces_it_at_epoch_0(h: Harness) -> None:
    """The same take-over, the ConsumerGroupHeartbeat naming the classic member's own id: Kafka's replaceMember
    tombstones the member and writes its copy at epoch 0 under the same id, which then uses the consumer protocol and
    is reconciled from epoch 0 (previous epoch 0)."""
    classic_id, classic = _classic_holder(h)
    epoch = h.consumer_group(G)["group_epoch"]
    mark = h.mark()
    r = h.cg(G, classic_id, 0, instance="i1")
    assert r.error == "NONE", r
    assert r.member_id == classic_id and r.member_epoch == epoch
    m = h.member(G, classic_id)
    assert m is not None and not m["classic"] and m["state"] == "Stable" and m["assigned"] == classic["assigned"]
    assert m["previous_member_epoch"] == 0, "reconciled from the copy at epoch 0"
    g = h.consumer_group(G)
    assert g["members"] == {"c1", classic_id} and g["classic_members"] == set() and g["group_epoch"] == epoch
    written = h.records_since(mark)
    assert record_types(written) == [
        ("ConsumerGroupCurrentMemberAssignment", True), ("ConsumerGroupTargetAssignmentMember", True),
        ("ConsumerGroupMemberMetadata", True), ("ConsumerGroupMemberMetadata", False),
        ("ConsumerGroupTargetAssignmentMember", False), ("ConsumerGroupCurrentMemberAssignment", False),
        ("ConsumerGroupMemberMetadata", False), ("ConsumerGroupCurrentMemberAssignment", False)]
    assert written[5][1].member_epoch == 0 and written[7][1].member_epoch == epoch
    assert written[7][1].previous_member_epoch == 0
    assert h.hb(G, classic_id, classic["member_epoch"], instance="i1") != "NONE", "no longer a classic member"


def test_a_static_classic_join_naming_an_unknown_member_id_for_a_free_instance_is_refused(h: Harness) -> None:
    """throwIfStaticMemberIsUnknown: the request names a member id (no createIfNotExists) and no member holds the
    instance id; nothing is created."""
    h.cg(G, "c1", 0)
    mark = h.mark()
    join = h.join(G, "someone", instance="i9", protocols=protocols()).result()
    assert join.error == "UNKNOWN_MEMBER_ID"
    assert h.member(G, "someone") is None and h.records_since(mark) == []


def test_taking_over_the_only_consumer_member_downgrades_the_group_without_a_rebalance(h: Harness) -> None:
    """A kafka-python-style classic group is upgraded by a static consumer-protocol member; that member's instance
    is taken over by a classic JoinGroup with the same subscription: the group becomes a classic group again
    (validateOnlineDowngradeWithReplacedMember), Stable at the consumer group's epoch, holding the joining member in
    place of the old one, with the old one's target assignment; no rebalance."""
    (old,) = classic_stable(h)
    assert h.cg(G, "s1", 0, instance="i1").error == "NONE"
    epoch = h.consumer_group(G)["group_epoch"]
    target_of_s1 = h.shard(G).spec.consumer[G].target.get("s1", {})
    mark = h.mark()
    join = h.join(G, "", instance="i1", protocols=protocols()).result()
    assert join.error == "NONE", join
    new = join.member_id
    assert h.shard(G).get("ConsumerGroup", (G,)) is None, "no consumer group any more"
    classic = h.group(G)
    assert (classic["state"], classic["generation"], classic["members"]) == ("Stable", epoch, {old, new})
    assert classic["static_members"] == {new}
    kinds = record_types(h.records_since(mark))
    assert kinds[-1] == ("GroupMetadata", False) and ("ConsumerGroupMetadata", True) in kinds
    assert ("ConsumerGroupMemberMetadata", True) in kinds
    sync = h.sync(G, new, classic["generation"], instance="i1").result()
    assert sync.error == "NONE"
    got = {tp.partition for tp in decode_assignment(sync.assignment).partitions}
    assert got == set(target_of_s1.get(T1, frozenset())), "the joining member takes the replaced one's target"


def test_taking_over_the_only_consumer_member_with_a_new_subscription_rebalances(h: Harness) -> None:
    (old,) = classic_stable(h)
    assert h.cg(G, "s1", 0, instance="i1").error == "NONE"
    epoch = h.consumer_group(G)["group_epoch"]
    join = h.join(G, "", instance="i1", protocols=protocols(topics=("orders", "payments"))).result()
    assert join.error == "NONE" and join.generation_id == 0, "Kafka answers the copy's epoch: no reconciliation"
    classic = h.group(G)
    assert (classic["state"], classic["generation"]) == ("PreparingRebalance", epoch)
    assert h.hb(G, old, epoch) == "REBALANCE_IN_PROGRESS"


def test_no_downgrade_by_a_take_over_unless_the_policy_allows_it(tmp_path: Any) -> None:
    from kcoord.impl.group import GroupConfig

    h = Harness(tmp_path, config=GroupConfig(num_partitions=1, consumer_migration_policy="upgrade"))
    (old,) = classic_stable(h)
    h.cg(G, "s1", 0, instance="i1")
    join = h.join(G, "", instance="i1", protocols=protocols()).result()
    assert join.error == "NONE"
    g = h.consumer_group(G)
    assert g["members"] == {old, join.member_id} == g["classic_members"]


def test_a_take_over_of_a_member_in_an_unknown_state_owning_partitions_is_fenced(h: Harness) -> None:
    """CurrentAssignmentBuilder fences a copy in UNKNOWN that reports owned partitions: the JoinGroup fails with
    FENCED_MEMBER_EPOCH and nothing is written (the take-over is undone with the rest)."""
    from kcoord.impl.storage import group_log_schema as schema
    from kcoord.impl.storage.log import PartitionLog, partition_dir_name

    h.cg(G, "c1", 0)
    h.cg(G, "s1", 0, instance="i1")
    inst = h.member(G, "s1")
    assert inst is not None
    # replay an assignment record with a MemberState byte this version does not know (a newer coordinator's)
    h.c.unload(0)
    log = PartitionLog.open(h.path / partition_dir_name("__consumer_offsets", 0))
    try:
        value = schema.ConsumerGroupCurrentMemberAssignmentValue(member_epoch=inst["member_epoch"],
                                                                 previous_member_epoch=0, state=99,
                                                                 assigned_partitions=(),
                                                                 partitions_pending_revocation=())
        log.append([(schema.encode_key(schema.ConsumerGroupCurrentMemberAssignmentKey(G, "s1")),
                     schema.encode_value(value))], timestamp_ms=h.clock.now_ms())
        log.flush()
    finally:
        log.close()
    h.c.load(0)
    assert h.member(G, "s1")["state"] == "Unknown"  # type: ignore[index]
    mark = h.mark()
    join = h.join(G, "", instance="i1", protocols=protocols(0)).result()
    assert join.error == "FENCED_MEMBER_EPOCH"
    assert h.records_since(mark) == [] and h.member(G, "s1") is not None


# ---------------------------------------------------------------------------------------------- LeaveGroup batches


def two_classic_and_one_consumer(h: Harness) -> tuple[str, str]:
    """A consumer group of one consumer-protocol member c1 and two classic-protocol members (their ids)."""
    h.cg(G, "c1", 0)
    ids = []
    for _ in range(2):
        first = h.join(G, protocols=protocols()).result()
        join = h.join(G, first.member_id, protocols=protocols()).result()
        assert join.error == "NONE", join
        ids.append(first.member_id)
    return ids[0], ids[1]


def test_a_leave_group_batch_is_fenced_in_one_step(h: Harness) -> None:
    k1, k2 = two_classic_and_one_consumer(h)
    epoch = h.consumer_group(G)["group_epoch"]
    left = h.leave(G, (k1, None), (k2, None))
    assert [e for _, e in left.members] == ["NONE", "NONE"]
    g = h.consumer_group(G)
    assert g["members"] == {"c1"} and g["group_epoch"] == epoch + 1, "one bump for the batch"


def test_a_member_named_twice_in_a_leave_group_batch_is_answered_twice(h: Harness) -> None:
    k1, _ = two_classic_and_one_consumer(h)
    left = h.leave(G, (k1, None), (k1, None), ("nobody", None))
    assert [e for _, e in left.members] == ["NONE", "NONE", "UNKNOWN_MEMBER_ID"]


def test_a_leave_group_batch_downgrades_once_at_the_epoch_it_found(h: Harness) -> None:
    """LeaveGroup naming the consumer-protocol member and one classic member: the one classic member that stays
    makes a classic group at the consumer group's epoch (validateOnlineDowngradeWithFencedMembers on the whole
    batch), and both identities are answered NONE."""
    k1, k2 = two_classic_and_one_consumer(h)
    epoch = h.consumer_group(G)["group_epoch"]
    left = h.leave(G, ("c1", None), (k1, None))
    assert [e for _, e in left.members] == ["NONE", "NONE"]
    assert h.shard(G).get("ConsumerGroup", (G,)) is None
    classic = h.group(G)
    assert (classic["state"], classic["generation"], classic["members"]) == ("PreparingRebalance", epoch, {k2})
