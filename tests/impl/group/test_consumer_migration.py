"""Classic-protocol members in a KIP-848 consumer group and the online upgrade/downgrade between the protocols
(group.consumer.migration.policy), as Kafka 4.0.2's GroupMetadataManager does them: the records, the states of the
three machines, and what each protocol's requests answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.assignors import Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription
from kcoord.impl.assignors.classic import TopicPartition
from kcoord.impl.group import GroupConfig
from kcoord.impl.group.messages import ConsumerGroupHeartbeatRequest, OffsetCommitPartition, OffsetCommitRequest
from kcoord.impl.storage import group_log_schema as schema

from .helpers import T1, Harness, parts

G = "mig"


def protocols(*owned: int) -> Any:
    return (("range", encode_subscription(Subscription.of(("orders",), owned_partitions=[("orders", p)
                                                                                        for p in owned]))),)


def classic_stable(h: Harness, n: int = 1) -> list[str]:
    """A classic group of `n` members at generation 1, the leader's assignment a real consumer-protocol one (orders
    split by partition number modulo n)."""
    joins = []
    for _ in range(n):
        first = h.join(G, protocols=protocols()).result()
        joins.append(h.join(G, first.member_id, protocols=protocols()))
    h.advance(h.config.initial_rebalance_delay_ms + 100)
    answers = [j.result() for j in joins]
    ids = [a.member_id for a in answers]
    leader = answers[0].leader
    split = {m: encode_assignment(Assignment(tuple(TopicPartition("orders", p) for p in range(6) if p % n == i)))
             for i, m in enumerate(ids)}
    syncs = [h.sync(G, m, 1, list(split.items()) if m == leader else ()) for m in ids]
    assert all(s.result().error == "NONE" for s in syncs)
    assert h.group(G)["state"] == "Stable"
    return ids


def record_types(records: list[tuple[Any, Any]]) -> list[tuple[str, bool]]:
    return [(type(k).__name__.removesuffix("Key"), v is None) for k, v in records]


def test_a_consumer_heartbeat_upgrades_a_live_classic_group(h: Harness) -> None:
    (old,) = classic_stable(h)
    mark = h.mark()
    r = h.cg(G, "new", 0)
    assert r.error == "NONE"
    kinds = record_types(h.records_since(mark))
    assert kinds[:7] == [("GroupMetadata", True), ("ConsumerGroupMemberMetadata", False),
                         ("ConsumerGroupPartitionMetadata", False), ("ConsumerGroupMetadata", False),
                         ("ConsumerGroupTargetAssignmentMember", False),
                         ("ConsumerGroupTargetAssignmentMetadata", False),
                         ("ConsumerGroupCurrentMemberAssignment", False)], "createConsumerGroupRecords' order"
    _, converted = h.records_since(mark)[1]
    assert converted.classic_member_metadata is not None and converted.classic_member_metadata.session_timeout_ms > 0
    g = h.consumer_group(G)
    assert g["classic_members"] == {old} and g["members"] == {old, "new"}
    assert g["group_epoch"] == 2, "the classic generation (1), bumped by the new member"
    assert h.shard(G).get("ClassicGroup", (G,)) is None
    old_member = h.member(G, old)
    assert old_member is not None and old_member["classic"] and old_member["member_epoch"] == 1
    assert h.hb(G, old, 1) == "REBALANCE_IN_PROGRESS", "the group epoch moved past the classic member"
    assert parts(r) == set(), "everything is still owned by the classic member"


def test_a_classic_member_rejoins_the_consumer_group_and_syncs_its_assignment(h: Harness) -> None:
    (old,) = classic_stable(h)
    h.cg(G, "new", 0)
    join = h.join(G, old, protocols=protocols(*range(6))).result()
    assert (join.error, join.protocol_type, join.protocol_name, join.leader) == ("NONE", "consumer", "range", "")
    m = h.member(G, old)
    assert m is not None and m["state"] == "UnrevokedPartitions" and join.generation_id == m["member_epoch"] == 1
    join = h.join(G, old, protocols=protocols(0, 1, 2)).result()  # eager: rejoins owning its kept half
    assert join.error == "NONE" and join.generation_id == 2
    sync = h.sync(G, old, join.generation_id, protocol_type="consumer", protocol_name="range").result()
    assert sync.error == "NONE"
    assert {tp.partition for tp in decode_assignment(sync.assignment).partitions} == {0, 1, 2}
    assert h.hb(G, old, 2) == "NONE"
    assert h.hb(G, old, 1) == "ILLEGAL_GENERATION"
    assert h.sync(G, old, 1).result().error == "ILLEGAL_GENERATION"
    r = h.cg(G, "new", 2, owned=())
    assert len(parts(r)) == 3, "released: the consumer member gets its half"
    commit = h.c.offset_commit(OffsetCommitRequest(G, (("orders", (OffsetCommitPartition(0, 5),)),), old, 1,
                                                   api_version=7)).result()
    assert commit.topics[0][1][0][1] == "ILLEGAL_GENERATION", "a classic member's generation is its epoch"


def test_the_last_consumer_member_leaving_downgrades_the_group(h: Harness) -> None:
    (old,) = classic_stable(h)
    h.cg(G, "new", 0)
    epoch = h.consumer_group(G)["group_epoch"]
    mark = h.mark()
    assert h.cg(G, "new", -1).error == "NONE"
    kinds = record_types(h.records_since(mark))
    assert kinds[-1] == ("GroupMetadata", False) and ("ConsumerGroupMetadata", True) in kinds
    assert h.shard(G).get("ConsumerGroup", (G,)) is None and h.member(G, old) is None
    classic = h.group(G)
    assert (classic["state"], classic["generation"], classic["members"], classic["protocol"]) == \
        ("PreparingRebalance", epoch, {old}, "range")
    _, value = h.records_since(mark)[-1]
    assert isinstance(value, schema.GroupMetadataValue) and value.generation == epoch
    assert h.hb(G, old, epoch) == "REBALANCE_IN_PROGRESS"
    join = h.join(G, old, protocols=protocols())
    h.advance(100)
    assert join.result().error == "NONE" and join.result().generation_id == epoch + 1


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_no_upgrade_unless_the_policy_allows_it(tmp_path: Path, policy: str) -> None:
    h = Harness(tmp_path, config=GroupConfig(num_partitions=1, consumer_migration_policy=policy))
    classic_stable(h)
    assert h.cg(G, "new", 0).error == "GROUP_ID_NOT_FOUND"
    assert h.group(G)["state"] == "Stable"


def test_no_downgrade_unless_the_policy_allows_it(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=GroupConfig(num_partitions=1, consumer_migration_policy="upgrade"))
    (old,) = classic_stable(h)
    h.cg(G, "new", 0)
    assert h.cg(G, "new", -1).error == "NONE"
    g = h.consumer_group(G)
    assert g["members"] == {old} == g["classic_members"], "a consumer group of classic members only"


def test_a_classic_member_joins_a_consumer_group(h: Harness) -> None:
    h.cg(G, "c1", 0)
    first = h.join(G, protocols=protocols()).result()
    assert first.error == "MEMBER_ID_REQUIRED" and first.member_id
    assert h.consumer_group(G)["members"] == {"c1"}, "nothing is kept for MEMBER_ID_REQUIRED"
    join = h.join(G, first.member_id, protocols=protocols()).result()
    assert join.error == "NONE" and join.generation_id == h.consumer_group(G)["group_epoch"]
    assert h.join(G, "", protocol_type="connect", protocols=protocols()).result().error == \
        "INCONSISTENT_GROUP_PROTOCOL"
    kept = parts(h.cg(G, "c1", 1, owned=((T1, tuple(range(6))),)))
    assert len(kept) == 3 and h.member(G, "c1")["state"] == "UnrevokedPartitions"  # type: ignore[index]
    assert h.cg(G, "c1", 1, owned=((T1, tuple(sorted(p for _, p in kept))),)).member_epoch == 2
    assert h.hb(G, first.member_id, join.generation_id) == "REBALANCE_IN_PROGRESS", "its partitions are free now"
    again = h.join(G, first.member_id, protocols=protocols()).result()
    sync = h.sync(G, first.member_id, again.generation_id).result()
    assert len(decode_assignment(sync.assignment).partitions) == 3
    left = h.leave(G, (first.member_id, None))
    assert left.members[0][1] == "NONE" and h.consumer_group(G)["members"] == {"c1"}


def test_a_converted_group_is_loaded_back(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    (old,) = classic_stable(h)
    h.cg(G, "new", 0)
    before = h.c.snapshot(0)
    h.c.close()
    after = Harness(tmp_path).c.snapshot(0)
    assert after["instances"]["ConsumerGroup"] == before["instances"]["ConsumerGroup"]
    assert after["instances"]["ConsumerGroupMember"][(G, old)]["classic"] is True


def test_an_upgrade_during_the_first_join_phase_is_refused(h: Harness) -> None:
    """Kafka 4.0.2's fromClassicGroup reads protocolName().get() before any protocol was selected and fails the
    coordinator partition (NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS on the reference cluster, a Kafka bug);
    kcoord refuses the heartbeat with UNKNOWN_SERVER_ERROR and the classic group goes on."""
    first = h.join(G, protocols=protocols()).result()
    parked = h.join(G, first.member_id, protocols=protocols())
    assert h.group(G)["state"] == "PreparingRebalance" and h.group(G)["protocol"] == ""
    mark = h.mark()
    assert h.cg(G, "new", 0).error == "UNKNOWN_SERVER_ERROR"
    assert h.records_since(mark) == [] and h.group(G)["state"] == "PreparingRebalance"
    h.advance(h.config.initial_rebalance_delay_ms + 100)
    assert parked.result().error == "NONE"


def test_a_consumer_member_that_joins_with_joingroup_becomes_a_classic_member_and_back(tmp_path: Path) -> None:
    """Kafka 4.0.2's classicGroupJoinToConsumerGroup finds the member by id with no protocol check
    (getOrMaybeSubscribeDynamicConsumerGroupMember(..., useClassicProtocol=true) skips every member check) and rebuilds
    it with setClassicMemberMetadata: a consumer-protocol member whose id joins with JoinGroup is a classic-protocol
    member afterwards (SyncGroup and Heartbeat accept it, the group counts it for a downgrade). A ConsumerGroupHeartbeat
    rebuilds it with setClassicMemberMetadata(null): a consumer-protocol member again. Both are in its metadata
    record, so a reload finds the same member."""
    h = Harness(tmp_path)
    first = h.cg(G, "c1", 0)
    assert first.member_epoch == 1 and len(parts(first)) == 6
    mark = h.mark()
    join = h.join(G, "c1", protocols=protocols(*range(6))).result()
    assert (join.error, join.member_id, join.generation_id, join.leader) == ("NONE", "c1", 1, "")
    m = h.member(G, "c1")
    assert m is not None and (m["state"], m["member_epoch"], m["classic"]) == ("Stable", 1, True)
    assert h.consumer_group(G)["classic_members"] == {"c1"}
    (value,) = [v for k, v in h.records_since(mark) if isinstance(k, schema.ConsumerGroupMemberMetadataKey)]
    assert value.classic_member_metadata is not None and value.classic_member_metadata.session_timeout_ms == 10_000
    sync = h.sync(G, "c1", 1, protocol_type="consumer", protocol_name="range").result()
    assert sync.error == "NONE" and len(decode_assignment(sync.assignment).partitions) == 6
    assert h.hb(G, "c1", 1) == "NONE"
    before = h.c.snapshot(0)
    h.c.close()
    h = Harness(tmp_path)
    assert h.c.snapshot(0) == before
    # back to the consumer protocol with a ConsumerGroupHeartbeat
    r = h.cg(G, "c1", 1, owned=((T1, tuple(range(6))),))
    assert r.error == "NONE" and r.member_epoch == 1
    m = h.member(G, "c1")
    assert m is not None and not m["classic"] and h.consumer_group(G)["classic_members"] == frozenset()
    assert h.hb(G, "c1", 1) == "UNKNOWN_MEMBER_ID", "Heartbeat is for classic-protocol members only"
    before = h.c.snapshot(0)
    h.c.close()
    assert Harness(tmp_path).c.snapshot(0) == before


def test_the_last_consumer_member_leaving_downgrades_a_group_whose_other_member_converted(h: Harness) -> None:
    """A member converted to the classic protocol by its JoinGroup counts as a classic-protocol member for
    validateOnlineDowngradeWithFencedMembers: once the other (consumer-protocol) member leaves, the group is a
    classic group."""
    h.cg(G, "c1", 0)
    h.cg(G, "c2", 0)
    join = h.join(G, "c1", protocols=protocols(*range(6))).result()
    assert join.error == "NONE" and h.consumer_group(G)["classic_members"] == {"c1"}
    assert h.cg(G, "c2", -1).error == "NONE"
    assert h.shard(G).get("ConsumerGroup", (G,)) is None
    classic = h.group(G)
    assert (classic["state"], classic["members"]) == ("PreparingRebalance", {"c1"})


def test_a_static_classic_member_at_minus_two_rejoins_with_the_consumer_protocol(h: Harness) -> None:
    """A static classic-protocol member that left with -2 and rejoins under its own member id with an epoch-0
    ConsumerGroupHeartbeat is replaced by its copy (getOrMaybeSubscribeStaticConsumerGroupMember), rebuilt without
    ClassicMemberMetadata: a consumer-protocol member, counted once."""
    h.cg(G, "c1", 0)
    join = h.join(G, protocols=protocols(), instance="i1").result()
    assert join.error == "NONE" and h.consumer_group(G)["classic_members"] == {join.member_id}
    assert h.cg(G, join.member_id, -2, instance="i1").error == "NONE"
    r = h.cg(G, join.member_id, 0, instance="i1")
    assert r.error == "NONE", r
    m = h.member(G, join.member_id)
    assert m is not None and not m["classic"] and h.consumer_group(G)["classic_members"] == frozenset()


def test_a_refused_upgrading_heartbeat_leaves_the_classic_group_as_it_was(h: Harness) -> None:
    """An epoch-0 ConsumerGroupHeartbeat that would convert a live classic group but is refused (here an invalid
    regular expression, or the epoch of the classic member's converted copy) writes nothing and leaves the classic
    group (Kafka's handler throws: no record). kcoord failed the handler: the refusal, decided on the converted
    group, was recorded after the conversion was undone (IllegalStateError 'decided in Stable but the instance is in
    Empty')."""
    (old,) = classic_stable(h)
    mark = h.mark()
    # a new member id: the expression is refused; the classic member's own id: its converted copy is at epoch 1, so
    # an epoch-0 join is FENCED_MEMBER_EPOCH first (throwIfConsumerGroupMemberEpochIsInvalid)
    for member, error in (("n", "INVALID_REGULAR_EXPRESSION"), (old, "FENCED_MEMBER_EPOCH")):
        req = ConsumerGroupHeartbeatRequest(G, member, 0, rebalance_timeout_ms=30_000,
                                            subscribed_topic_regex="(unclosed", topic_partitions=())
        assert h.c.consumer_group_heartbeat(req).result().error == error
    assert h.records_since(mark) == [] and h.group(G)["state"] == "Stable"
    assert h.shard(G).get("ConsumerGroup", (G,)) is None and h.hb(G, old, 1) == "NONE"


def test_a_classic_member_back_on_the_consumer_protocol_with_a_bare_heartbeat_from_the_same_client(h: Harness) -> None:
    """A ConsumerGroupHeartbeat that changes no field of the member (no owned partitions, the same client id and
    host) still turns a classic-protocol member into a consumer-protocol one: its metadata loses the classic part and
    is written (the conformance scenario converted-member; the steady-heartbeat shortcut of member_metadata_after must
    not keep the classic metadata)."""
    first = h.cg(G, "c1", 0)
    assert first.member_epoch == 1
    join = h.join(G, "c1", protocols=protocols(*range(6))).result()
    assert join.error == "NONE"
    assert h.consumer_group(G)["classic_members"] == {"c1"}
    mark = h.mark()
    r = h.cg(G, "c1", 1, owned=None, client_host="/10.0.0.1")  # the JoinGroup's client id and host
    assert r.error == "NONE" and r.member_epoch == 1
    m = h.member(G, "c1")
    assert m is not None and not m["classic"] and h.consumer_group(G)["classic_members"] == frozenset()
    (value,) = [v for k, v in h.records_since(mark) if isinstance(k, schema.ConsumerGroupMemberMetadataKey)]
    assert value.classic_member_metadata is None
    assert h.hb(G, "c1", 1) == "UNKNOWN_MEMBER_ID", "Heartbeat is for classic-protocol members only"
