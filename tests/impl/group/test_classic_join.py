"""JoinGroup on the coordinator, one test per row of kafka-reference.md §2.2 (front door), §2.3 (JoinGroup) and
§2.4 (rebalance mechanics): the answer, the ClassicGroup state and the records written."""

from __future__ import annotations

from kcoord.impl.storage import group_log_schema as schema

from .conftest import make_dead
from .helpers import PROTOCOLS, Harness, subscription

# ---------------------------------------------------------------------------------------------- §2.2 front door


def test_2_2_empty_group_id_is_invalid_group_id(h: Harness) -> None:
    assert h.join("").result().error == "INVALID_GROUP_ID"
    assert h.sync("", "m", 0).result().error == "INVALID_GROUP_ID"
    assert h.hb("", "m", 0) == "INVALID_GROUP_ID"
    assert h.leave("", ("m", None)).error == "INVALID_GROUP_ID"


def test_2_2_session_timeout_outside_the_limits(h: Harness) -> None:
    assert h.join("g", session_ms=5_999).result().error == "INVALID_SESSION_TIMEOUT"
    assert h.join("g", session_ms=1_800_001).result().error == "INVALID_SESSION_TIMEOUT"
    assert h.records() == []
    assert h.join("g", session_ms=6_000).result().error == "MEMBER_ID_REQUIRED"


def test_2_2_loading_and_not_owned_partitions(h: Harness, tmp_path: object) -> None:
    h.c.unload(0)
    assert h.join("g").result().error == "NOT_COORDINATOR"
    h.c.load(0, wait=False)
    assert h.join("g").result().error == "COORDINATOR_LOAD_IN_PROGRESS"
    h.c.poll()
    assert h.join("g").result().error == "MEMBER_ID_REQUIRED"


def test_2_11_find_coordinator_partition_is_kafkas_hash(tmp_path: object) -> None:
    from pathlib import Path

    from kcoord.impl.group import GroupConfig

    h = Harness(Path(str(tmp_path)), config=GroupConfig())
    assert [h.c.partition_for(g) for g in ("my-group", "group-id", "polygenelubricants", "known")] == [12, 13, 0, 27]


# ---------------------------------------------------------------------------------------------- §2.3 JoinGroup


def test_2_3_1_member_id_for_unknown_group_is_unknown_member_and_creates_nothing(h: Harness) -> None:
    r = h.join("g", "someone").result()
    assert (r.error, r.member_id) == ("UNKNOWN_MEMBER_ID", "someone")
    assert h.shard("g").get("ClassicGroup", ("g",)) is None and h.records() == []


def test_2_3_3_member_id_required_v4_and_the_empty_group_record(h: Harness) -> None:
    r = h.join("g", client="app").result()
    assert r.error == "MEMBER_ID_REQUIRED" and r.member_id == "app-u0"
    g = h.group("g")
    assert (g["state"], g["exists"], g["pending_members"], g["members"]) == ("Empty", True, {"app-u0"}, frozenset())
    ((key, value),) = h.records()  # §2.3.5: a new group writes an empty GroupMetadata record
    assert key == schema.GroupMetadataKey("g")
    assert (value.protocol_type, value.generation, value.protocol, value.leader, value.members) == \
        ("", 0, None, None, ())
    assert value.current_state_timestamp == h.clock.now_ms()


def test_2_3_3_pending_member_expires_after_the_session_timeout(h: Harness) -> None:
    member_id = h.join("g").result().member_id
    h.advance(9_900)
    assert h.group("g")["pending_members"] == {member_id}
    h.advance(200)
    assert h.group("g")["pending_members"] == frozenset()
    assert h.join("g", member_id).result().error == "UNKNOWN_MEMBER_ID"


def test_2_3_3_join_v3_adds_the_member_directly(h: Harness) -> None:
    parked = h.join("g", version=3)
    assert not parked.done
    g = h.group("g")
    assert g["state"] == "PreparingRebalance" and g["initial_rebalance"] and g["leader"] == "client-u0"
    h.advance(3_000)
    r = parked.result()
    assert (r.error, r.generation_id, r.leader, r.protocol_name) == ("NONE", 1, "client-u0", "range")


def test_2_3_3_inconsistent_protocol_for_a_new_group_still_writes_its_record(h: Harness) -> None:
    r = h.join("g", protocol_type="").result()
    assert r.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert h.group("g")["exists"] and len(h.records()) == 1
    assert h.join("g", protocols=()).result().error == "INCONSISTENT_GROUP_PROTOCOL"


def test_2_3_3_inconsistent_protocol_type_or_no_common_protocol(h: Harness) -> None:
    h.stable_group("g", 1)
    assert h.join("g", protocol_type="connect").result().error == "INCONSISTENT_GROUP_PROTOCOL"
    other = (("roundrobin", subscription("orders")),)
    assert h.join("g", protocols=other).result().error == "INCONSISTENT_GROUP_PROTOCOL"
    assert h.group("g")["state"] == "Stable"


def test_2_3_3_new_member_of_a_dead_group_is_coordinator_not_available(h: Harness) -> None:
    leader = h.stable_group("g", 1)[0]
    make_dead(h, "g")
    assert h.join("g").result().error == "COORDINATOR_NOT_AVAILABLE"
    assert h.join("g", leader).result().error == "COORDINATOR_NOT_AVAILABLE"
    assert h.join("g", instance="i9").result().error == "COORDINATOR_NOT_AVAILABLE"


def test_2_3_2_group_max_size(tmp_path: object) -> None:
    from pathlib import Path

    from kcoord.impl.group import GroupConfig

    h = Harness(Path(str(tmp_path)), config=GroupConfig(num_partitions=1, max_size=2))
    a, b = h.stable_group("g", 2)
    r = h.join("g").result()  # Stable and full: a newcomer is refused
    assert (r.error, r.member_id) == ("GROUP_MAX_SIZE_REACHED", "")
    rejoin = h.join("g", a)  # a member is always admitted (the leader's JoinGroup rebalances)
    assert h.group("g")["state"] == "PreparingRebalance" and not rejoin.done
    # PreparingRebalance: two members awaiting join are the limit; b, not yet rejoined, is kicked out when a new
    # pending id makes room impossible
    h.join("g", version=3)  # a newcomer: awaiting_join = {a} < 2, admitted
    assert h.group("g")["awaiting_join"] == {a, pending_id := _awaiting_other(h, a)}
    r = h.join("g", b).result()
    assert r.error == "GROUP_MAX_SIZE_REACHED"
    assert b not in h.group("g")["members"] and pending_id in h.group("g")["members"]


def _awaiting_other(h: Harness, known: str) -> str:
    (other,) = h.group("g")["awaiting_join"] - {known}
    return str(other)


# ---------------------------------------------------------------------------------------------- known member ids


def test_2_3_4_pending_id_joins_and_starts_the_initial_rebalance(h: Harness) -> None:
    member_id, parked = h.join_new("g")
    g = h.group("g")
    assert (g["state"], g["members"], g["awaiting_join"], g["new_members"], g["pending_members"]) == \
        ("PreparingRebalance", {member_id}, {member_id}, {member_id}, frozenset())
    assert not parked.done


def test_2_3_4_unknown_member_and_fenced_instance(h: Harness) -> None:
    leader, = h.stable_group("g", 1, statics=("i1",))[:1]
    static = next(iter(h.group("g")["static_members"]))
    assert h.join("g", "ghost").result().error == "UNKNOWN_MEMBER_ID"
    assert h.join("g", leader, instance="unknown-instance").result().error == "UNKNOWN_MEMBER_ID"
    assert h.join("g", leader, instance="i1").result().error == "FENCED_INSTANCE_ID"
    assert h.group("g")["state"] == "Stable" and static in h.group("g")["members"]


def test_2_3_4_rejoin_during_preparing_rebalance_is_parked_then_completes(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    ja = h.join("g", a)  # the leader rejoins: rebalance, generation 1 -> 2 once b rejoins
    assert not ja.done and h.group("g")["state"] == "PreparingRebalance"
    jb = h.join("g", b)
    ra, rb = ja.result(), jb.result()
    assert (ra.generation_id, rb.generation_id, ra.leader) == (2, 2, a)
    assert {m.member_id for m in ra.members} == {a, b} and rb.members == ()
    assert h.group("g")["state"] == "CompletingRebalance" and h.group("g")["pending_sync"] == {a, b}


def test_2_3_4_completing_rebalance_same_metadata_answers_the_current_generation(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    ja, jb = h.join("g", a), h.join("g", b)
    assert ja.result().generation_id == 2 and jb.result().generation_id == 2
    again = h.join("g", a).result()  # the leader retries (lost response): member list again
    assert (again.error, again.generation_id, {m.member_id for m in again.members}) == ("NONE", 2, {a, b})
    follower = h.join("g", b).result()
    assert follower.members == () and h.group("g")["state"] == "CompletingRebalance"


def test_2_3_4_completing_rebalance_changed_metadata_rebalances(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    h.join("g", a), h.join("g", b)
    parked_sync = h.sync("g", b, 2)
    changed = (("range", subscription("orders", "payments")),)
    rejoin = h.join("g", b, protocols=changed)
    assert h.group("g")["state"] == "PreparingRebalance" and not rejoin.done
    assert parked_sync.result().error == "REBALANCE_IN_PROGRESS"


def test_2_3_4_stable_leader_rejoin_rebalances_follower_same_metadata_does_not(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    r = h.join("g", b).result()  # follower, unchanged: current generation, no members
    assert (r.error, r.generation_id, r.members, r.leader) == ("NONE", 1, (), a)
    assert h.group("g")["state"] == "Stable"
    changed = (("range", subscription("payments")),)
    assert not h.join("g", b, protocols=changed).done
    assert h.group("g")["state"] == "PreparingRebalance"


def test_2_3_4_stable_leader_join_always_rebalances(h: Harness) -> None:
    a, _ = h.stable_group("g", 2)
    assert not h.join("g", a).done
    assert h.group("g")["state"] == "PreparingRebalance"


def test_2_3_4_empty_group_known_member_is_unknown(h: Harness) -> None:
    (a,) = h.stable_group("g", 1)
    h.leave("g", (a, None))
    assert h.group("g")["state"] == "Empty"
    assert h.join("g", a).result().error == "UNKNOWN_MEMBER_ID"


# ---------------------------------------------------------------------------------------------- §2.4


def test_2_4_initial_delay_then_generation_one(h: Harness) -> None:
    a, ja = h.join_new("g")
    h.advance(2_900)
    assert not ja.done
    h.advance(200)
    r = ja.result()
    assert (r.error, r.generation_id, r.leader, r.protocol_type, r.protocol_name) == ("NONE", 1, a, "consumer", "range")
    assert [m.member_id for m in r.members] == [a]
    g = h.group("g")
    assert (g["state"], g["generation"], g["rebalance_timeout_ms"]) == ("CompletingRebalance", 1, 30_000)


def test_2_4_initial_delay_is_extended_by_late_joiners_up_to_the_rebalance_timeout(h: Harness) -> None:
    """§9.14: the first wait is the full delay; each later joiner extends by at most another delay, the total
    bounded by max(delay, rebalance timeout). Rebalance timeout 7000: delays 3000 + 3000 + 1000."""
    start = h.clock.now_ms()
    _, ja = h.join_new("g", rebalance_ms=7_000)
    h.advance(2_000)
    _, jb = h.join_new("g", rebalance_ms=7_000)  # a newcomer during the first delay: extend
    h.advance(1_100)
    assert not ja.done  # extended at 3000
    _, jc = h.join_new("g", rebalance_ms=7_000)  # joins during the second delay: extend again (remaining 1000)
    h.advance(2_900)
    assert not ja.done
    h.advance(1_100)
    assert ja.done and jb.done and jc.done
    assert 7_000 <= h.clock.now_ms() - start <= 7_200
    assert ja.result().generation_id == 1 and len(ja.result().members) == 3


def test_2_4_lone_joiner_waits_the_full_delay_even_with_a_short_rebalance_timeout(h: Harness) -> None:
    _, j = h.join_new("g", rebalance_ms=500)
    h.advance(2_900)
    assert not j.done
    h.advance(200)
    assert j.result().error == "NONE"


def test_2_4_join_timeout_removes_dynamic_members_that_did_not_rejoin(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    ja = h.join("g", a)
    for _ in range(9):  # b stays alive (heartbeats answer REBALANCE_IN_PROGRESS) but never rejoins
        h.advance(3_000)
        assert h.hb("g", b, 1) == "REBALANCE_IN_PROGRESS"
    h.advance(2_900)
    assert not ja.done
    h.advance(200)  # rebalance timeout (30 s): b is dropped
    r = ja.result()
    assert (r.generation_id, [m.member_id for m in r.members]) == (2, [a])
    assert h.group("g")["members"] == {a}


def test_2_4_static_members_survive_a_join_phase_they_miss(h: Harness) -> None:
    a, s = h.stable_group("g", 1, statics=("i1",))
    ja = h.join("g", a)
    for _ in range(10):
        h.advance(3_000)
        h.hb("g", s, 1, instance="i1")
    h.advance(100)
    assert ja.result().generation_id == 2
    assert h.group("g")["members"] == {a, s} and h.group("g")["pending_sync"] == {a, s}


def test_2_4_leader_that_does_not_rejoin_is_replaced_by_a_joined_member(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    jb = h.join("g", b, protocols=(("range", subscription("orders", "payments")),))
    for _ in range(10):  # the leader keeps heartbeating but does not rejoin
        h.advance(3_000)
        h.hb("g", a, 1)
    h.advance(100)
    r = jb.result()
    assert r.leader == b and [m.member_id for m in r.members] == [b]


def test_2_4_protocol_is_chosen_by_vote(h: Harness) -> None:
    both = (("roundrobin", subscription()), ("range", subscription()))
    range_first = (("range", subscription()), ("roundrobin", subscription()))
    _, ja = h.join_new("g", protocols=both)
    _, jb = h.join_new("g", protocols=range_first)
    _, jc = h.join_new("g", protocols=range_first)
    h.advance(10_000)
    assert {j.result().protocol_name for j in (ja, jb, jc)} == {"range"}


def test_2_4_new_member_join_timeout_is_five_minutes(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    ja = h.join("g", a)
    newcomer = h.join("g", version=3)  # parked: its heartbeat expiry is 5 minutes, not the 10 s session
    h.advance(12_000)
    g = h.group("g")
    assert b not in g["members"] and len(g["members"]) == 2, "b's session expired, the parked newcomer stays"
    assert newcomer.result().error == "NONE" and ja.result().generation_id == 2  # everyone left had joined


def test_2_4_completing_into_empty_writes_the_group_record(h: Harness) -> None:
    (a,) = h.stable_group("g", 1)
    mark = h.mark()
    assert h.leave("g", (a, None)).members[0][1] == "NONE"
    g = h.group("g")
    assert (g["state"], g["generation"], g["protocol"], g["leader"]) == ("Empty", 2, "", "")
    ((key, value),) = h.records_since(mark)
    assert key == schema.GroupMetadataKey("g")
    assert (value.generation, value.protocol, value.leader, value.members, value.protocol_type) == \
        (2, None, None, (), "consumer")


def test_2_4_heartbeat_expiry_removes_the_member_and_rebalances(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    for _ in range(3):
        h.advance(3_000)
        assert h.hb("g", a, 1) == "NONE"
    h.advance(1_100)
    assert b not in h.group("g")["members"]  # b's 10 s session expired
    assert h.group("g")["state"] == "PreparingRebalance"
    assert h.hb("g", a, 1) == "REBALANCE_IN_PROGRESS"


def test_2_4_pending_sync_expiry_removes_members_that_did_not_sync(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    ja, jb = h.join("g", a), h.join("g", b)
    assert ja.result().generation_id == 2 and jb.done
    h.sync("g", a, 2, [(a, b"x"), (b, b"y")])
    assert h.group("g")["state"] == "Stable" and h.group("g")["pending_sync"] == {b}
    for _ in range(11):  # both stay alive; b never syncs
        h.advance(2_900)
        h.hb("g", a, 2), h.hb("g", b, 2)
    assert h.group("g")["members"] == {a} and h.group("g")["state"] == "PreparingRebalance"


def test_2_4_join_responses_park_until_the_phase_completes(h: Harness) -> None:
    _, ja = h.join_new("g")
    assert not ja.done and h.group("g")["awaiting_join"]
    h.advance(3_100)
    assert ja.done and not h.group("g")["awaiting_join"]


def test_2_4_records_only_where_kafka_writes_them(h: Harness) -> None:
    """Join phase and heartbeats write nothing; the leader's SyncGroup writes the assignment (§2.3.5, §2.5)."""
    h.stable_group("g", 2)
    kinds = [type(k).__name__ for k, _ in h.records()]
    assert kinds == ["GroupMetadataKey", "GroupMetadataKey"]  # the new group, then the leader's assignment
    _, value = h.records()[-1]
    assert value.generation == 1 and {m.member_id: m.assignment for m in value.members} == \
        {m: f"a-{m}".encode() for m in h.group("g")["members"]}
    assert PROTOCOLS[0][1] in {m.subscription for m in value.members}
