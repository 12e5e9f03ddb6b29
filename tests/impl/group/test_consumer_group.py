"""KIP-848 consumer groups on the coordinator (kafka-reference.md §3.2-§3.10): one test per row of the
ConsumerGroupHeartbeat tables, asserting errors, the ConsumerGroup/ConsumerGroupMember states and the records."""

from __future__ import annotations

from pathlib import Path

from kcoord.impl.group import GroupConfig
from kcoord.impl.group.messages import ConsumerGroupHeartbeatRequest, OffsetCommitPartition, TxnOffsetCommitRequest
from kcoord.impl.storage import group_log_schema as schema

from .helpers import T1, T2, Harness, parts
from .test_offsets import FakeVerifier


def hb_raw(h: Harness, **fields: object) -> str:
    base: dict[str, object] = {"group_id": "cg", "member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 30_000,
                               "subscribed_topic_names": ("orders",), "topic_partitions": ()}
    base.update(fields)
    return h.c.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(**base)).result().error  # type: ignore[arg-type]


def key_types(records: list[tuple[object, object]]) -> list[tuple[int, bool]]:
    """(record type, is tombstone) of each record, the way §3.10 lists them."""
    types = {schema.ConsumerGroupMetadataKey: 3, schema.ConsumerGroupPartitionMetadataKey: 4,
             schema.ConsumerGroupMemberMetadataKey: 5, schema.ConsumerGroupTargetAssignmentMetadataKey: 6,
             schema.ConsumerGroupTargetAssignmentMemberKey: 7, schema.ConsumerGroupCurrentMemberAssignmentKey: 8,
             schema.OffsetCommitKey: 1, schema.GroupMetadataKey: 2}
    return [(types[type(k)], v is None) for k, v in records]


# ---------------------------------------------------------------------------------------------- §3.2 validation


def test_3_2_request_validation(h: Harness) -> None:
    """throwIfConsumerGroupHeartbeatRequestIsInvalid as Kafka 4.0.2 has it: blank means empty or whitespace only,
    the member id is required from v1 (the client generates it), either topic names or a regular expression must be
    given on a join."""
    assert hb_raw(h, group_id="") == "INVALID_REQUEST"
    assert hb_raw(h, group_id="  ") == "INVALID_REQUEST", "String.trim: whitespace is empty"
    assert hb_raw(h, instance_id="") == "INVALID_REQUEST"
    assert hb_raw(h, instance_id=" ") == "INVALID_REQUEST"
    assert hb_raw(h, rack_id="") == "INVALID_REQUEST"
    assert hb_raw(h, member_epoch=-3) == "INVALID_REQUEST"
    assert hb_raw(h, member_id="", member_epoch=3) == "INVALID_REQUEST"
    assert hb_raw(h, member_id="", member_epoch=-1) == "INVALID_REQUEST"
    assert hb_raw(h, member_id="", member_epoch=0) == "INVALID_REQUEST", "v1: the client generates its member id"
    assert hb_raw(h, member_id=" ", member_epoch=0) == "INVALID_REQUEST"
    assert hb_raw(h, rebalance_timeout_ms=-1) == "INVALID_REQUEST"
    assert hb_raw(h, topic_partitions=((T1, (0,)),)) == "INVALID_REQUEST"
    assert hb_raw(h, topic_partitions=None) == "INVALID_REQUEST"
    assert hb_raw(h, subscribed_topic_names=None) == "INVALID_REQUEST", "neither names nor a regular expression"
    assert hb_raw(h, member_epoch=-2) == "INVALID_REQUEST", "a static leave needs an instance id"
    assert hb_raw(h, server_assignor="sticky") == "UNSUPPORTED_ASSIGNOR"
    assert h.records() == []
    rows = h.rows("ConsumerGroup")
    assert len(rows) == 16 and {r["kind"] for r in rows} == {"reject"}, "every rejection is traced"


def test_3_2_a_join_may_subscribe_to_nothing(h: Harness) -> None:
    """Kafka 4.0 accepts an empty list of topic names (or an empty regular expression) on a join: a member
    subscribed to nothing. ([S] refused an empty list.)"""
    assert hb_raw(h, subscribed_topic_names=()) == "NONE"
    assert hb_raw(h, member_id="n", subscribed_topic_names=None, subscribed_topic_regex="") == "NONE"
    assert set(h.consumer_group("cg")["members"]) == {"m", "n"}


def test_3_2_v0_lets_the_coordinator_pick_the_member_id(h: Harness) -> None:
    r = h.c.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        "cg", "", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=("orders",), topic_partitions=(),
        api_version=0)).result()
    assert r.error == "NONE" and r.member_id == "u0"


# ---------------------------------------------------------------------------------------------- §3.3


def test_3_3_1_first_member_creates_the_group_and_gets_everything(h: Harness) -> None:
    r = h.cg("cg", "a", 0)
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("NONE", "a", 1, 5000)
    assert parts(r) == {(T1, p) for p in range(6)}
    g = h.consumer_group("cg")
    assert (g["state"], g["group_epoch"], g["assignment_epoch"], g["members"]) == ("Stable", 1, 1, {"a"})
    m = h.member("cg", "a")
    assert m is not None and (m["state"], m["member_epoch"], m["previous_member_epoch"]) == ("Stable", 1, 0)
    # §3.3 steps 5-7: member metadata, subscription metadata, epoch, target (member + epoch), current assignment
    assert key_types(h.records()) == [(5, False), (4, False), (3, False), (7, False), (6, False), (8, False)]
    _, metadata = h.records()[1]
    assert [(t.topic_id, t.topic_name, t.num_partitions) for t in metadata.topics] == [(T1, "orders", 6)]


def test_3_3_1_heartbeat_for_an_unknown_group(h: Harness) -> None:
    assert h.cg("nope", "a", 3).error == "GROUP_ID_NOT_FOUND"
    assert h.cg("nope", "a", -1).error == "GROUP_ID_NOT_FOUND"


def test_3_3_1_a_classic_group_with_members_is_another_type(h: Harness) -> None:
    h.stable_group("g", 1)
    assert h.cg("g", "a", 0).error == "GROUP_ID_NOT_FOUND"


def test_3_3_1_an_empty_classic_group_is_deleted_and_replaced(h: Harness) -> None:
    h.commit("g", {("orders", 0): 5})  # a simple classic group
    mark = h.mark()
    assert h.cg("g", "a", 0).error == "NONE"
    assert h.shard("g").get("ClassicGroup", ("g",)) is None
    assert key_types(h.records_since(mark))[0] == (2, True)
    assert h.fetched("g") == {("orders", 0): 5}, "the offsets stay with the id"


def test_3_3_2_group_max_size(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=GroupConfig(num_partitions=1, consumer_max_size=1))
    h.cg("cg", "a", 0)
    assert h.cg("cg", "b", 0).error == "GROUP_MAX_SIZE_REACHED"
    assert h.cg("cg", "a", 1, owned=((T1, tuple(range(6))),)).error == "NONE"


def test_3_3_3_empty_member_id_is_generated(h: Harness) -> None:
    """Only at v0: from v1 the client must send its own (test_3_2_request_validation)."""
    r = h.cg("cg", "", 0, api_version=0)
    assert r.error == "NONE" and r.member_id == "u0" and h.member("cg", "u0") is not None


def test_3_3_4_unknown_dynamic_member_with_an_epoch(h: Harness) -> None:
    h.cg("cg", "a", 0)
    assert h.cg("cg", "ghost", 1).error == "UNKNOWN_MEMBER_ID"
    assert h.cg("cg", "a", 1, instance="nobody").error == "UNKNOWN_MEMBER_ID"


def test_3_3_4_static_member_rules(h: Harness) -> None:
    a = h.cg("cg", "a", 0, instance="host-1")
    refused = h.cg("cg", "a2", 0, instance="host-1")
    # Kafka 4.0 answers a refused heartbeat with no member id (GroupCoordinatorService: error code and message only)
    assert (refused.error, refused.member_id) == ("UNRELEASED_INSTANCE_ID", None)
    h.cg("cg", "b", 0)
    fenced = h.cg("cg", "b", 2, instance="host-1")
    assert (fenced.error, fenced.member_id) == ("FENCED_INSTANCE_ID", None)
    assert a.member_epoch == 1


def test_3_3_5_subscription_change_bumps_the_epoch_and_writes_metadata(h: Harness) -> None:
    r = h.cg("cg", "a", 0)
    mark = h.mark()
    req = ConsumerGroupHeartbeatRequest("cg", "a", 1, subscribed_topic_names=("orders", "payments"),
                                        topic_partitions=r.assignment)
    r2 = h.c.consumer_group_heartbeat(req).result()
    assert r2.member_epoch == 2 and parts(r2) == {(T1, p) for p in range(6)} | {(T2, p) for p in range(4)}
    assert key_types(h.records_since(mark)) == [(5, False), (4, False), (3, False), (7, False), (6, False), (8, False)]
    assert h.consumer_group("cg")["group_epoch"] == 2


def test_3_3_5_unchanged_heartbeat_writes_nothing(h: Harness) -> None:
    r = h.cg("cg", "a", 0)
    mark = h.mark()
    again = h.cg("cg", "a", 1, owned=r.assignment)
    assert (again.error, again.member_epoch, again.assignment) == ("NONE", 1, None)
    assert h.records_since(mark) == []


def test_3_3_6_preferred_server_assignor(h: Harness) -> None:
    h.cg("cg", "a", 0, server_assignor="range")
    h.cg("cg", "b", 0, server_assignor="range")
    (described,) = h.c.consumer_group_describe(["cg"])
    assert described.assignor == "range"
    targets = {m.member_id: m.target_assignment for m in described.members}
    assert targets == {"a": ((T1, (0, 1, 2)),), "b": ((T1, (3, 4, 5)),)}, "range: contiguous, by member id"


def test_3_3_8_response_assignment_only_when_full_or_changed(h: Harness) -> None:
    a = h.cg("cg", "a", 0)
    assert a.assignment is not None
    r = h.cg("cg", "a", 1, owned=a.assignment)
    assert r.assignment is None
    full = h.c.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        "cg", "a", 1, rebalance_timeout_ms=30_000, subscribed_topic_names=("orders",),
        topic_partitions=a.assignment)).result()
    assert full.assignment == a.assignment


# ---------------------------------------------------------------------------------------------- §3.6 reconciliation


def test_3_6_revoke_before_assign(h: Harness) -> None:
    a = h.cg("cg", "a", 0)
    everything = a.assignment
    b = h.cg("cg", "b", 0)
    assert (b.member_epoch, b.assignment) == (2, ()), "b waits: its partitions are still a's"
    assert h.member("cg", "b")["state"] == "UnreleasedPartitions"  # type: ignore[index]
    a1 = h.cg("cg", "a", 1, owned=everything)
    assert a1.member_epoch == 1 and len(parts(a1)) == 3
    ma = h.member("cg", "a")
    assert ma is not None and ma["state"] == "UnrevokedPartitions" and len(ma["pending_revocation"]) == 3
    assert h.cg("cg", "b", 2).assignment is None, "nothing released yet"
    assert h.consumer_group("cg")["state"] == "Reconciling"
    a2 = h.cg("cg", "a", 1, owned=a1.assignment)  # a revoked: epoch 2
    assert (a2.member_epoch, h.member("cg", "a")["state"]) == (2, "Stable")  # type: ignore[index]
    b2 = h.cg("cg", "b", 2)
    assert parts(b2) == {(T1, p) for p in range(6)} - parts(a1)
    assert h.consumer_group("cg")["state"] == "Stable"


def test_3_6_rebalance_timeout_fences_a_member_that_does_not_revoke(h: Harness) -> None:
    a = h.cg("cg", "a", 0, rebalance_ms=5_000)
    h.cg("cg", "b", 0)
    h.cg("cg", "a", 1, owned=a.assignment)  # a must revoke, never does
    for _ in range(4):
        h.advance(1_500)
        h.cg("cg", "b", 2)
        if h.member("cg", "a") is not None:
            h.cg("cg", "a", 1, owned=a.assignment)
    assert h.member("cg", "a") is None
    g = h.consumer_group("cg")
    assert g["members"] == {"b"} and g["group_epoch"] == 3


# ---------------------------------------------------------------------------------------------- §3.4 epochs


def test_3_4_member_epoch_validation(h: Harness) -> None:
    a = h.cg("cg", "a", 0)
    b = h.cg("cg", "b", 0)
    a1 = h.cg("cg", "a", 1, owned=a.assignment)
    a2 = h.cg("cg", "a", 1, owned=a1.assignment)
    assert a2.member_epoch == 2
    assert h.cg("cg", "a", 3, owned=a1.assignment).error == "FENCED_MEMBER_EPOCH"
    assert h.cg("cg", "a", 1, owned=a.assignment).error == "FENCED_MEMBER_EPOCH", "owned is not a subset"
    assert h.cg("cg", "a", 1, owned=None).error == "FENCED_MEMBER_EPOCH", "null owned is never a subset"
    lost = h.cg("cg", "a", 1, owned=a1.assignment)  # previous epoch, owned ⊆ assigned: a lost response
    assert (lost.error, lost.member_epoch) == ("NONE", 2)
    assert b.member_epoch == 2


# ---------------------------------------------------------------------------------------------- §3.5 leave


def test_3_5_leave_removes_with_tombstones_and_bumps(h: Harness) -> None:
    h.cg("cg", "a", 0)
    b = h.cg("cg", "b", 0)
    mark = h.mark()
    r = h.cg("cg", "b", -1)
    assert (r.error, r.member_id, r.member_epoch) == ("NONE", "b", -1)
    assert key_types(h.records_since(mark)) == [(8, True), (7, True), (5, True), (3, False)]
    g = h.consumer_group("cg")
    assert (g["group_epoch"], g["state"], g["members"]) == (3, "Assigning", {"a"})
    assert h.cg("cg", "b", -1).error == "UNKNOWN_MEMBER_ID"
    assert b.member_epoch == 2


def test_3_5_static_leave_keeps_the_member_and_a_new_process_takes_over(h: Harness) -> None:
    a = h.cg("cg", "a", 0, instance="host-1")
    epoch = h.consumer_group("cg")["group_epoch"]
    mark = h.mark()
    r = h.cg("cg", "a", -2, instance="host-1")
    assert (r.error, r.member_epoch) == ("NONE", -2)
    assert key_types(h.records_since(mark)) == [(8, False)]
    m = h.member("cg", "a")
    assert m is not None and (m["state"], m["member_epoch"]) == ("StaticLeft", -2)
    assert h.consumer_group("cg")["group_epoch"] == epoch, "a static leave does not bump"
    mark = h.mark()
    a2 = h.cg("cg", "a2", 0, instance="host-1")
    assert (a2.error, a2.member_epoch, a2.assignment) == ("NONE", 1, a.assignment)
    assert h.member("cg", "a") is None and h.consumer_group("cg")["group_epoch"] == epoch
    assert key_types(h.records_since(mark)) == [(8, True), (7, True), (5, True), (5, False), (7, False), (8, False),
                                                (8, False)]


def test_3_5_static_member_at_minus_two_times_out(h: Harness) -> None:
    h.cg("cg", "a", 0, instance="host-1")
    h.cg("cg", "a", -2, instance="host-1")
    h.advance(45_100)
    assert h.member("cg", "a") is None and h.consumer_group("cg")["state"] == "Empty"


def test_3_5_session_timeout_fences(h: Harness) -> None:
    a = h.cg("cg", "a", 0)
    epoch, owned = a.member_epoch, a.assignment
    h.cg("cg", "b", 0)
    for _ in range(10):  # a heartbeats (and revokes as asked), b never does again
        h.advance(5_000)
        r = h.cg("cg", "a", epoch, owned=owned)
        epoch, owned = r.member_epoch, r.assignment if r.assignment is not None else owned
    assert h.member("cg", "b") is None and h.consumer_group("cg")["members"] == {"a"}
    assert owned == ((T1, (0, 1, 2, 3, 4, 5)),) and epoch == 3, "a got everything back at epoch 3"


def test_3_10_delete_writes_kafkas_tombstone_order(h: Harness) -> None:
    h.cg("cg", "a", 0)
    assert h.c.delete_groups(["cg"]).result() == [("cg", "NON_EMPTY_GROUP")]
    h.cg("cg", "a", -1)
    mark = h.mark()
    assert h.c.delete_groups(["cg"]).result() == [("cg", "NONE")]
    assert key_types(h.records_since(mark)) == [(6, True), (4, True), (3, True)]
    assert h.shard("cg").get("ConsumerGroup", ("cg",)) is None


def test_3_10_an_admin_commit_to_an_expired_consumer_groups_id_makes_a_simple_classic_group(h: Harness) -> None:
    """An empty KIP-848 group without offsets goes at the next offsets.retention.check.interval.ms tick (its three
    tombstones); an admin OffsetCommit (generation -1) to its id then finds no group and, as Kafka 4.0's
    OffsetMetadataManager.validateOffsetCommit does (getOrMaybeCreateClassicGroup), makes a classic group, Empty,
    with no record of its own: the offset's record only. (Kafka did this to test_kafka_tools' group once, when its
    cleanup tick fell inside the test: c2a105c.)"""
    h.cg("cg", "a", 0)
    h.cg("cg", "a", -1)
    mark = h.mark()
    h.advance(600_000 + 100)
    assert key_types(h.records_since(mark)) == [(6, True), (4, True), (3, True)]
    assert h.shard("cg").get("ConsumerGroup", ("cg",)) is None
    mark = h.mark()
    assert h.commit("cg", {("orders", 0): 7}).topics[0][1][0][1] == "NONE"
    assert h.group("cg")["state"] == "Empty"
    assert h.shard("cg").get("ConsumerGroup", ("cg",)) is None
    assert key_types(h.records_since(mark)) == [(1, False)]
    assert h.fetched("cg", ("orders", 0)) == {("orders", 0): 7}


# ---------------------------------------------------------------------------------------------- §3.8 offsets


def test_3_8_offset_commit_and_fetch_validation(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    a = h.cg("cg", "a", 0)
    ok = h.commit("cg", {("orders", 0): 3}, member_id="a", generation=a.member_epoch)
    assert ok.topics[0][1][0][1] == "NONE"
    errors = [h.commit("cg", {("orders", 0): 3}, member_id="a", generation=9).topics[0][1][0][1],
              h.commit("cg", {("orders", 0): 3}, member_id="a", generation=1, version=8).topics[0][1][0][1],
              h.commit("cg", {("orders", 0): 3}, member_id="ghost", generation=1).topics[0][1][0][1],
              h.commit("cg", {("orders", 0): 3}).topics[0][1][0][1]]
    assert errors == ["STALE_MEMBER_EPOCH", "UNSUPPORTED_VERSION", "UNKNOWN_MEMBER_ID", "UNKNOWN_MEMBER_ID"]
    txn = TxnOffsetCommitRequest("t", 7, 0, "cg", (("orders", (OffsetCommitPartition(0, 1),)),), "a", 9)
    assert h.c.txn_offset_commit(txn).result().topics[0][1][0][1] == "ILLEGAL_GENERATION"
    assert h.fetch("cg", ("orders", 0), member_id="a", epoch=2).error == "STALE_MEMBER_EPOCH"
    assert h.fetch("cg", ("orders", 0), member_id="ghost", epoch=1).error == "UNKNOWN_MEMBER_ID"
    assert h.fetched("cg", ("orders", 0), member_id="a", epoch=1) == {("orders", 0): 3}
    assert h.fetched("cg", ("orders", 0)) == {("orders", 0): 3}, "admin fetch"
    h.cg("cg", "a", -1)
    assert h.commit("cg", {("orders", 0): 4}).topics[0][1][0][1] == "NONE", "admin commit to an empty group"


def test_3_3_4_an_epoch_0_static_join_under_a_dynamic_member_id_makes_it_that_static_member(tmp_path: Path) -> None:
    """Kafka 4.0.2's getOrMaybeSubscribeStaticConsumerGroupMember finds no member holding the instance and takes the
    request as a new static member's; group.getOrMaybeCreateMember then returns the existing member of that id: no
    epoch check (createIfNotExists skips it) and no release check. The member keeps its epoch and assignment, its
    instance id becomes the request's (a metadata record), and ConsumerGroup.updateMember maps the instance to it.
    kcoord failed the handler (IllegalStateError: the spec required a static request to reach the instance's
    holder or a new member)."""
    h = Harness(tmp_path)
    first = h.cg("cg", "a", 0)
    assert first.member_epoch == 1
    r = h.cg("cg", "a", 0, instance="host-1")
    assert (r.error, r.member_id, r.member_epoch) == ("NONE", "a", 1)
    m = h.member("cg", "a")
    assert m is not None and (m["state"], m["instance_id"], m["member_epoch"]) == ("Stable", "host-1", 1)
    assert h.consumer_group("cg")["static_instances"] == {"host-1"}
    assert h.cg("cg", "a", 1, owned=first.assignment, instance="host-1").error == "NONE", "addressed by its instance"
    assert h.cg("cg", "a2", 0, instance="host-1").error == "UNRELEASED_INSTANCE_ID"
    before = h.c.snapshot(0)
    h.c.close()
    assert Harness(tmp_path).c.snapshot(0) == before


def test_3_3_4_a_member_at_minus_two_rejoining_under_its_id_with_another_instance_keeps_its_id(tmp_path: Path) -> None:
    """Apache Kafka 4.0.2 (source, and the wire scenario static-member-takes-another-instance on the real broker):
    getOrMaybeSubscribeStaticConsumerGroupMember finds no holder of the new instance and
    getOrMaybeCreateMember returns the member at -2 itself (no replaceMember: no tombstones); its metadata record
    carries the new instance id. The target it reconciles to is group.targetAssignment(memberId, instanceId), looked
    up by the new instance id, which nobody held before the request: EMPTY. So the member, STABLE at -2, computes its
    next assignment with nothing owned and lands STABLE at the assignment epoch, previous epoch -2, with no
    partitions, while its target assignment keeps them (until a new target is computed). kcoord failed the handler
    (ConsumerGroup.InstanceAdopted's precondition: the old instance was one left with -2)."""
    h = Harness(tmp_path)
    a = h.cg("cg", "a", 0, instance="host-1")
    assert (a.member_epoch, a.assignment) == (1, ((T1, (0, 1, 2, 3, 4, 5)),))
    assert h.cg("cg", "a", -2, instance="host-1").member_epoch == -2
    mark = h.mark()
    r = h.cg("cg", "a", 0, instance="host-2")
    assert (r.error, r.member_id, r.member_epoch, r.assignment) == ("NONE", "a", 1, ())
    written = h.records_since(mark)
    assert key_types(written) == [(5, False), (8, False)], "the member's metadata, then its reconciliation"
    metadata, current = written[0][1], written[1][1]
    assert metadata.instance_id == "host-2"
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (1, -2, 0)
    assert (current.assigned_partitions, current.partitions_pending_revocation) == ((), ())
    m = h.member("cg", "a")
    assert m is not None
    assert (m["state"], m["member_epoch"], m["previous_member_epoch"], m["instance_id"], m["assigned"]) == \
        ("Stable", 1, -2, "host-2", frozenset())
    g = h.consumer_group("cg")
    assert (g["state"], g["group_epoch"], g["static_instances"], g["static_left"], g["unreconciled"]) == \
        ("Stable", 1, {"host-2"}, set(), set())
    described = h.c.consumer_group_describe(["cg"])[0].members[0]
    assert (described.assignment, described.target_assignment) == ((), ((T1, (0, 1, 2, 3, 4, 5)),)), "target kept"
    mark = h.mark()
    again = h.cg("cg", "a", 1, owned=(), instance="host-2")
    assert (again.error, again.member_epoch, again.assignment) == ("NONE", 1, None), "reconciled: nothing new"
    assert h.records_since(mark) == []
    before = h.c.snapshot(0)
    h.c.close()
    assert Harness(tmp_path).c.snapshot(0) == before


def test_3_3_4_an_unreconciled_member_adopting_an_instance_reconciles_to_no_target(tmp_path: Path) -> None:
    """The same lookup for a live member (seen on Apache Kafka 4.0.2: a dynamic member at epoch 1, a second member
    joined at epoch 2, then the first's epoch-0 heartbeat with an instance id nobody held): no new target is
    computed, group.targetAssignment(memberId, instanceId) finds nothing under the new instance id, so the member
    moves to epoch 2 with no partitions (owned [] on a join: nothing to revoke first); its target keeps its share.
    kcoord reconciled it to its target by member id (it kept 3 partitions)."""
    h = Harness(tmp_path)
    a = h.cg("cg", "a", 0)
    assert (a.member_epoch, a.assignment) == (1, ((T1, (0, 1, 2, 3, 4, 5)),))
    assert h.cg("cg", "b", 0).member_epoch == 2
    mark = h.mark()
    r = h.cg("cg", "a", 0, instance="host-1")
    assert (r.error, r.member_epoch, r.assignment) == ("NONE", 2, ())
    assert key_types(h.records_since(mark)) == [(5, False), (8, False)]
    m = h.member("cg", "a")
    assert m is not None
    assert (m["state"], m["member_epoch"], m["previous_member_epoch"], m["assigned"]) == ("Stable", 2, 1, frozenset())
    described = {d.member_id: d for d in h.c.consumer_group_describe(["cg"])[0].members}
    assert len(parts_of(described["a"].target_assignment)) == 3, "its target keeps its share"
    b = h.cg("cg", "b", 2, owned=())
    assert (b.error, b.member_epoch, len(parts(b))) == ("NONE", 2, 3), "b gets the partitions a released"
    assert h.consumer_group("cg")["state"] == "Stable"


def parts_of(assignment: tuple[tuple[object, tuple[int, ...]], ...]) -> set[tuple[object, int]]:
    return {(t, p) for t, ps in assignment for p in ps}
