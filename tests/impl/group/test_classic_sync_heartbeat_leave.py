"""SyncGroup (§2.5), Heartbeat (§2.6), LeaveGroup (§2.7), static membership (§2.9) and DeleteGroups on the classic
coordinator: one test per row of the reference's tables, asserting answers, states and records."""

from __future__ import annotations

from pathlib import Path

from kcoord.impl.storage import group_log_schema as schema

from .conftest import make_dead
from .helpers import Harness, subscription

# ---------------------------------------------------------------------------------------------- §2.5 SyncGroup


def test_2_5_unknown_group_and_empty_group_are_unknown_member(h: Harness) -> None:
    assert h.sync("nope", "m", 0).result().error == "UNKNOWN_MEMBER_ID"
    (a,) = h.stable_group("g", 1)
    h.leave("g", (a, None))
    assert h.group("g")["state"] == "Empty"
    assert h.sync("g", a, 2).result().error == "UNKNOWN_MEMBER_ID"


def test_2_5_dead_group_is_coordinator_not_available(h: Harness) -> None:
    (a,) = h.stable_group("g", 1)
    make_dead(h, "g")
    assert h.sync("g", a, 1).result().error == "COORDINATOR_NOT_AVAILABLE"


def test_2_5_validate_member_generation_and_protocol(h: Harness) -> None:
    a, s = h.stable_group("g", 1, statics=("i1",))
    assert h.sync("g", "ghost", 1).result().error == "UNKNOWN_MEMBER_ID"
    assert h.sync("g", s, 1, instance="i2").result().error == "UNKNOWN_MEMBER_ID"
    assert h.sync("g", a, 1, instance="i1").result().error == "FENCED_INSTANCE_ID"
    assert h.sync("g", a, 0).result().error == "ILLEGAL_GENERATION"
    assert h.sync("g", a, 1, protocol_type="connect").result().error == "INCONSISTENT_GROUP_PROTOCOL"
    assert h.sync("g", a, 1, protocol_name="roundrobin").result().error == "INCONSISTENT_GROUP_PROTOCOL"
    ok = h.sync("g", a, 1, protocol_type="consumer", protocol_name="range").result()
    assert (ok.error, ok.protocol_type, ok.protocol_name, ok.assignment) == ("NONE", "consumer", "range",
                                                                             f"a-{a}".encode())


def test_2_5_preparing_rebalance_is_rebalance_in_progress(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    h.join("g", a)
    assert h.sync("g", b, 1).result().error == "REBALANCE_IN_PROGRESS"


def test_2_5_followers_wait_for_the_leader_whose_assignment_is_written_first(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    h.join("g", a), h.join("g", b)
    follower = h.sync("g", b, 2)
    assert not follower.done and h.group("g")["awaiting_sync"] == {b}
    mark = h.mark()
    leader = h.sync("g", a, 2, [(a, b"A2")])  # b left out: it gets an empty assignment
    (key, value), = h.records_since(mark)
    assert key == schema.GroupMetadataKey("g")
    assert (value.generation, value.leader, {m.member_id: m.assignment for m in value.members}) == \
        (2, a, {a: b"A2", b: b""})
    assert (leader.result().assignment, follower.result().assignment) == (b"A2", b"")
    assert h.group("g")["state"] == "Stable" and h.group("g")["awaiting_sync"] == frozenset()


def test_2_5_members_get_the_assignment_only_after_it_is_durable(tmp_path: Path) -> None:
    from kcoord.impl.storage.log import Durability

    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=50, max_bytes=1 << 20))
    first = h.join("g")
    assert not first.done  # the new group's record is not durable yet
    h.advance(100)
    j = h.join("g", first.result().member_id)
    h.advance(3_100)
    a = j.result().member_id
    sync = h.sync("g", a, 1, [(a, b"A")])
    assert not sync.done and h.group("g")["state"] == "CompletingRebalance"
    assert h.c.runtime.shard(0).in_flight == 1  # the assignment's write: not durable yet
    h.advance(100)
    assert sync.result().assignment == b"A" and h.group("g")["state"] == "Stable"


def test_2_5_failed_assignment_write_answers_everyone_and_rebalances(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    h.join("g", a), h.join("g", b)
    follower = h.sync("g", b, 2)
    h.c.runtime.shard(0).log.fail_next_append()
    leader = h.sync("g", a, 2, [(a, b"A"), (b, b"B")])
    assert leader.result().error == "NOT_COORDINATOR" and follower.result().error == "NOT_COORDINATOR"
    g = h.group("g")
    assert (g["state"], g["generation"], g["awaiting_sync"]) == ("PreparingRebalance", 2, frozenset())


def test_2_5_stable_sync_returns_the_stored_assignment(h: Harness) -> None:
    _a, b = h.stable_group("g", 2)
    r = h.sync("g", b, 1).result()
    assert (r.error, r.assignment) == ("NONE", f"a-{b}".encode())


# ---------------------------------------------------------------------------------------------- §2.6 Heartbeat


def test_2_6_heartbeat_rows(h: Harness) -> None:
    assert h.hb("nope", "m", 0) == "UNKNOWN_MEMBER_ID"
    a, s = h.stable_group("g", 1, statics=("i1",))
    assert h.hb("g", "ghost", 1) == "UNKNOWN_MEMBER_ID"
    assert h.hb("g", s, 1, instance="i9") == "UNKNOWN_MEMBER_ID"
    assert h.hb("g", a, 1, instance="i1") == "FENCED_INSTANCE_ID"
    assert h.hb("g", a, 2) == "ILLEGAL_GENERATION"
    assert h.hb("g", a, 1) == "NONE"
    h.join("g", a)
    assert h.hb("g", s, 1, instance="i1") == "REBALANCE_IN_PROGRESS"
    make_dead(h, "g")
    assert h.hb("g", a, 1) == "COORDINATOR_NOT_AVAILABLE"


def test_2_6_heartbeat_while_completing_is_fine_and_extends_the_session(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    h.join("g", a), h.join("g", b)
    assert h.group("g")["state"] == "CompletingRebalance"
    for _ in range(5):
        h.advance(3_000)
        assert h.hb("g", a, 2) == "NONE" and h.hb("g", b, 2) == "NONE"
    assert h.group("g")["members"] == {a, b}


def test_2_6_rebalance_in_progress_heartbeat_still_resets_the_session(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    ja = h.join("g", a)
    for _ in range(5):
        h.advance(3_000)
        assert h.hb("g", b, 1) == "REBALANCE_IN_PROGRESS"
    assert b in h.group("g")["members"] and not ja.done


# ---------------------------------------------------------------------------------------------- §2.7 LeaveGroup


def test_2_7_unknown_group_is_every_member_s_error_and_dead_a_top_level_one(h: Harness) -> None:
    """An unknown group: Kafka 4.0's GroupCoordinatorService.leaveGroup turns the manager's UNKNOWN_MEMBER_ID into
    no top-level error and UNKNOWN_MEMBER_ID for each member of the batch (as the reference broker answered the
    differential fuzzer); v0-2 then carry the member's error."""
    r = h.leave("nope", ("m", None), ("", "i-1"))
    assert (r.error, [(m.member_id, m.group_instance_id, e) for m, e in r.members]) == (
        "NONE", [("m", None, "UNKNOWN_MEMBER_ID"), ("", "i-1", "UNKNOWN_MEMBER_ID")])
    (a,) = h.stable_group("g", 1)
    make_dead(h, "g")
    assert h.leave("g", (a, None)).error == "COORDINATOR_NOT_AVAILABLE"


def test_2_7_batched_leave_with_per_member_errors(h: Harness) -> None:
    a, b, _s = h.stable_group("g", 2, statics=("i1",))
    r = h.leave("g", ("", "i1"), ("", "i9"), ("ghost", None), (a, "i1"), (b, None))
    assert r.error == "NONE"
    assert [e for _, e in r.members] == ["NONE", "UNKNOWN_MEMBER_ID", "UNKNOWN_MEMBER_ID", "UNKNOWN_MEMBER_ID", "NONE"]
    g = h.group("g")
    assert g["members"] == {a} and g["state"] == "PreparingRebalance"


def test_2_7_fenced_instance_on_leave(h: Harness) -> None:
    a, _s = h.stable_group("g", 1, statics=("i1",))
    r = h.leave("g", (a, "i1"))
    assert r.members[0][1] == "FENCED_INSTANCE_ID" and h.group("g")["state"] == "Stable"


def test_2_7_pending_member_leaves(h: Harness) -> None:
    (_a,) = h.stable_group("g", 1)
    pending = h.join("g").result().member_id
    r = h.leave("g", (pending, None))
    assert r.members[0][1] == "NONE" and h.group("g")["pending_members"] == frozenset()
    assert h.group("g")["state"] == "PreparingRebalance", "Kafka counts a pending id's leave as a valid leave"


def test_2_7_leaving_member_parked_join_is_answered_unknown_member(h: Harness) -> None:
    _a, b = h.stable_group("g", 2)
    jb = h.join("g", b, protocols=(("range", subscription("orders", "payments")),))  # changed: parked
    assert not jb.done
    h.leave("g", (b, None))
    assert jb.result().error == "UNKNOWN_MEMBER_ID"


def test_2_7_last_member_leaving_goes_to_empty_with_a_record(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    mark = h.mark()
    h.leave("g", (a, None), (b, None))
    g = h.group("g")
    assert (g["state"], g["generation"], g["members"]) == ("Empty", 2, frozenset())
    (_, value), = h.records_since(mark)
    assert value.generation == 2 and value.members == ()


def test_2_7_leave_in_preparing_rebalance_may_complete_the_join(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    ja = h.join("g", a)
    h.leave("g", (b, None))
    r = ja.result()
    assert (r.generation_id, [m.member_id for m in r.members]) == (2, [a])


# ---------------------------------------------------------------------------------------------- §2.9 static


def test_2_9_static_rejoin_in_stable_without_protocol_change_writes_and_does_not_rebalance(h: Harness) -> None:
    a, s = h.stable_group("g", 1, statics=("i1",))
    mark = h.mark()
    r = h.join("g", instance="i1").result()
    assert r.error == "NONE" and r.generation_id == 1 and r.member_id != s and r.members == ()
    g = h.group("g")
    assert g["state"] == "Stable" and g["members"] == {a, r.member_id} and g["generation"] == 1
    (_, value), = h.records_since(mark)
    assert {m.member_id for m in value.members} == {a, r.member_id}
    assert {m.member_id: m.assignment for m in value.members}[r.member_id] == f"a-{s}".encode()
    assert h.hb("g", s, 1, instance="i1") == "FENCED_INSTANCE_ID"
    assert h.hb("g", r.member_id, 1, instance="i1") == "NONE"


def test_2_9_static_leader_replaced_gets_members_and_skip_assignment(h: Harness) -> None:
    (_s,) = h.stable_group("g", 0, statics=("i1",))
    r = h.join("g", instance="i1").result()
    assert r.leader == r.member_id and r.skip_assignment and [m.member_id for m in r.members] == [r.member_id]


def test_2_9_static_replacement_write_failure_reverts(h: Harness) -> None:
    a, s = h.stable_group("g", 1, statics=("i1",))
    h.c.runtime.shard(0).log.fail_next_append()
    r = h.join("g", instance="i1").result()
    assert (r.error, r.member_id) == ("NOT_COORDINATOR", "")
    assert h.group("g")["members"] == {a, s}
    assert h.hb("g", s, 1, instance="i1") == "NONE"


def test_2_9_static_rejoin_with_a_protocol_change_rebalances(h: Harness) -> None:
    (s,) = h.stable_group("g", 0, statics=("i1",))
    other = (("roundrobin", subscription()), ("range", subscription()))
    parked = h.join("g", instance="i1", protocols=other)  # the vote now selects roundrobin
    # a rebalance, which completes at once (the only member has rejoined): generation 2, roundrobin
    g = h.group("g")
    assert (g["state"], g["generation"], g["protocol"]) == ("CompletingRebalance", 2, "roundrobin")
    assert s not in g["members"] and parked.result().protocol_name == "roundrobin"
    states = [r["to_state"] for r in h.rows("ClassicGroup", "g")[-2:]]
    assert states == ["PreparingRebalance", "CompletingRebalance"]


def test_2_9_static_rejoin_while_completing_always_rebalances_and_fences_the_old_id(h: Harness) -> None:
    a, s = h.stable_group("g", 1, statics=("i1",))
    h.join("g", a), h.join("g", s, instance="i1")
    old_sync = h.sync("g", s, 2, instance="i1")
    new = h.join("g", instance="i1")
    assert old_sync.result().error == "FENCED_INSTANCE_ID"
    assert h.group("g")["state"] == "PreparingRebalance" and not new.done


def test_2_9_unknown_static_member_joins_and_rebalances(h: Harness) -> None:
    (_a,) = h.stable_group("g", 1)
    parked = h.join("g", instance="i7")
    g = h.group("g")
    assert g["state"] == "PreparingRebalance" and len(g["static_members"]) == 1 and not parked.done


# ---------------------------------------------------------------------------------------------- DeleteGroups


def test_delete_groups(h: Harness) -> None:
    (a,) = h.stable_group("g", 1)
    h.commit("g", {("orders", 0): 5}, member_id=a, generation=1)
    h.commit("simple", {("orders", 1): 7})
    result = h.c.delete_groups(["g", "simple", "nope"]).result()
    assert result == [("g", "NON_EMPTY_GROUP"), ("simple", "NONE"), ("nope", "GROUP_ID_NOT_FOUND")]
    mark = h.mark()
    h.leave("g", (a, None))
    assert h.c.delete_groups(["g"]).result() == [("g", "NONE")]
    recs = h.records_since(mark)
    assert [(type(k).__name__, v is None) for k, v in recs] == [
        ("GroupMetadataKey", False), ("OffsetCommitKey", True), ("GroupMetadataKey", True)]
    assert h.shard("g").get("ClassicGroup", ("g",)) is None
    assert h.fetched("g", ("orders", 0)) == {("orders", 0): -1}
    assert h.join("g").result().error == "MEMBER_ID_REQUIRED", "a deleted group id starts over"


def test_describe_and_list_groups(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    (d,) = h.c.describe_groups(["g"])
    assert (d.error, d.state, d.protocol_type, d.protocol) == ("NONE", "Stable", "consumer", "range")
    assert {m.member_id: m.assignment for m in d.members} == {a: f"a-{a}".encode(), b: f"a-{b}".encode()}
    (unknown,) = h.c.describe_groups(["nope"])
    assert (unknown.error, unknown.state, unknown.message) == ("GROUP_ID_NOT_FOUND", "Dead", "Group nope not found.")
    h.join("g", a)
    (d,) = h.c.describe_groups(["g"])
    # outside Stable Kafka 4.0 describes members without metadata but with the assignment they still have
    # (ClassicGroupMember.describeNoMetadata), as the reference broker answered the differential fuzzer
    assert d.state == "PreparingRebalance" and d.protocol == ""
    assert {m.member_id: (m.metadata, m.assignment) for m in d.members} == {
        a: (b"", f"a-{a}".encode()), b: (b"", f"a-{b}".encode())}
    listed = h.c.list_groups()
    assert [(g.group_id, g.state, g.group_type) for g in listed] == [("g", "PreparingRebalance", "classic")]
    assert h.c.list_groups(states=["stable"]) == []
    h.cg("cg", "m", 0)
    (not_classic,) = h.c.describe_groups(["cg"])
    assert (not_classic.error, not_classic.message) == ("GROUP_ID_NOT_FOUND", "Group cg is not a classic group.")
    (classic, unknown_848) = h.c.consumer_group_describe(["g", "nope"])
    # Kafka 4.0 leaves the state of a group it does not describe empty (DescribeGroups says Dead, this API "")
    assert (classic.error, classic.message, classic.state) == ("GROUP_ID_NOT_FOUND", "Group g is not a consumer group.",
                                                               "")
    assert (unknown_848.error, unknown_848.message, unknown_848.state) == ("GROUP_ID_NOT_FOUND",
                                                                           "Group nope not found.", "")
