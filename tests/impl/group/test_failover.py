"""Persistence and failover (kafka-reference.md §2.10, §3.10): everything the coordinator knows is in
`__consumer_offsets`; loading the partition on another node rebuilds the same state — spec instances, side data and
offsets — compared in full."""

from __future__ import annotations

import pprint
from pathlib import Path

from kcoord.impl.runtime.cleaner import Cleaning
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.storage import group_log_schema as schema

from .helpers import T1, Harness
from .test_offsets import FakeVerifier, marker, txn_commit


def build_busy_partition(h: Harness) -> None:
    """Every kind of state the log holds, left quiescent (no parked request: those are never persisted)."""
    # classic: a Stable group with a static member, a group that went Empty, a simple group
    a, _s = h.stable_group("stable", 1, statics=("host-1",))
    h.commit("stable", {("orders", 0): 11}, member_id=a, generation=1)
    (e,) = h.stable_group("emptied", 1)
    h.leave("emptied", (e, None))
    h.commit("simple", {("orders", 3): 5, ("payments", 1): 6}, retention_ms=86_400_000)
    # KIP-848: a reconciling group (one member revoking, one waiting), a static member at -2, a stable group
    r = h.cg("cg", "a", 0, instance="host-a")
    h.cg("cg", "b", 0)
    h.cg("cg", "a", 1, owned=r.assignment, instance="host-a")
    h.cg("cg2", "x", 0, instance="host-x")
    h.cg("cg2", "y", 0)
    h.cg("cg2", "x", -2, instance="host-x")
    h.cg("cg3", "z", 0, topics=("orders", "payments"))
    # transactions: one committed, one aborted, one still open
    txn_commit(h, "stable", {("orders", 1): 100}, pid=7, epoch=1)
    txn_commit(h, "simple", {("orders", 3): 50}, pid=8)
    marker(h, 7, "COMMIT", epoch=1, coordinator_epoch=3)
    marker(h, 8, "ABORT", coordinator_epoch=3)
    txn_commit(h, "stable", {("payments", 0): 9}, pid=9, epoch=4)


def test_failover_rebuilds_the_same_state_on_another_node(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    build_busy_partition(h)
    before = h.c.snapshot(0)
    h.c.unload(0)
    other = Harness(tmp_path, verifier=FakeVerifier(), clock=ManualClock(h.clock.now_ms()))
    after = other.c.snapshot(0)
    # A group that went Empty has no rebalance timeout (spec: CompleteJoin -> Empty resets it), like a loaded one.
    emptied = before["instances"]["ClassicGroup"][("emptied",)]
    assert (emptied["state"], emptied["rebalance_timeout_ms"]) == ("Empty", 0)
    diff = {k for k in before if before[k] != after[k]}
    assert not diff, pprint.pformat({k: (before[k], after[k]) for k in diff})
    assert other.c.runtime.shard(0).coordinator_epoch == 1
    # what it holds is usable: the groups go on where they were
    assert other.hb("stable", sorted(before["instances"]["ClassicGroup"][("stable",)]["members"])[0], 1) in (
        "NONE", "FENCED_INSTANCE_ID")
    assert other.fetched("stable", ("orders", 0), ("orders", 1), ("payments", 0), require_stable=True) == \
        {("orders", 0): 11, ("orders", 1): 100, ("payments", 0): "UNSTABLE_OFFSET_COMMIT"}


def test_loaded_groups_are_stable_with_members_else_empty(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    build_busy_partition_classic(h)
    h.c.unload(0)
    other = Harness(tmp_path)
    states = {g: other.group(g)["state"] for g in ("stable", "emptied", "simple")}
    assert states == {"stable": "Stable", "emptied": "Empty", "simple": "Empty"}
    loads = [r for r in other.rows("ClassicGroup") if r["kind"] == "load"]
    assert {(r["key"], r["from_state"], r["to_state"]) for r in loads} == {
        ("stable", "Empty", "Stable"), ("emptied", "Empty", "Empty"), ("simple", "Empty", "Empty")}


def build_busy_partition_classic(h: Harness) -> None:
    h.stable_group("stable", 2)
    (e,) = h.stable_group("emptied", 1)
    h.leave("emptied", (e, None))
    h.commit("simple", {("orders", 0): 1})


def test_loaded_members_get_session_timers(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    a, _b = h.stable_group("g", 2)
    h.cg("cg", "m", 0)
    h.c.unload(0)
    other = Harness(tmp_path, clock=ManualClock(h.clock.now_ms()))
    for _ in range(4):
        other.advance(3_000)
        other.hb("g", a, 1)
    assert other.group("g")["members"] == {a}, "b's session timer was restarted on load and expired"
    other.advance(45_000)
    assert other.shard("cg").get("ConsumerGroupMember", ("cg", "m")) is None


def test_unload_answers_parked_requests_not_coordinator(h: Harness) -> None:
    a, _b = h.stable_group("g", 2)
    ja = h.join("g", a)
    _, pending = h.join_new("g2")
    h.c.unload(0)
    assert ja.result().error == "NOT_COORDINATOR" and pending.result().error == "NOT_COORDINATOR"
    unloads = [r for r in h.rows("ClassicGroup") if r["event"] == "Unload"]
    assert {(r["key"], r["to_state"]) for r in unloads} == {("g", "Dead"), ("g2", "Dead")}


def test_unknown_member_state_byte_loads_as_unknown_and_is_fenced_until_it_owns_nothing(tmp_path: Path) -> None:
    """A record written by a newer coordinator with a MemberState this version does not know (§3.1: 127)."""
    h = Harness(tmp_path)
    r = h.cg("cg", "a", 0)
    shard = h.c.runtime.shard(0)
    everything = (schema.TopicPartitions(T1, (0, 1, 2, 3, 4, 5)),)
    value = schema.ConsumerGroupCurrentMemberAssignmentValue(1, 0, 127, everything, ())
    shard.log.append([(schema.encode_key(schema.ConsumerGroupCurrentMemberAssignmentKey("cg", "a")),
                       schema.encode_value(value))], timestamp_ms=h.clock.now_ms())
    h.c.unload(0)
    other = Harness(tmp_path)
    m = other.member("cg", "a")
    assert m is not None and m["state"] == "Unknown"
    assert other.cg("cg", "a", 1, owned=r.assignment).error == "FENCED_MEMBER_EPOCH"
    ok = other.cg("cg", "a", 1, owned=())
    assert ok.error == "NONE" and other.member("cg", "a")["state"] == "Stable"  # type: ignore[index]



def test_a_compacted_log_rebuilds_the_same_state(tmp_path: Path) -> None:
    """Kafka's log cleaner compacts `__consumer_offsets` under a running coordinator: a load of the compacted log
    (superseded values and aborted offsets gone) rebuilds exactly what was held. (Within the tombstone retention:
    once a marker whose transaction kept no record expires, so does its producer's entry — as in Kafka, where the
    retention and `producer.id.expiration.ms` are both a day.)"""
    h = Harness(tmp_path, verifier=FakeVerifier())
    build_busy_partition(h)
    for i in range(30):  # superseded offsets and group records for the cleaner to drop
        h.commit("simple", {("orders", 3): 100 + i})
    before = h.c.snapshot(0)
    shard = h.c.runtime.shard(0)
    size = shard.log.size_bytes
    report = shard.log.compact(h.clock.now_ms(), tombstone_retention_ms=Cleaning().tombstone_retention_ms)
    assert report.records_after < report.records_before and shard.log.size_bytes < size
    h.c.unload(0)
    other = Harness(tmp_path, verifier=FakeVerifier(), clock=ManualClock(h.clock.now_ms()))
    after = other.c.snapshot(0)
    diff = {k for k in before if before[k] != after[k]}
    assert not diff, pprint.pformat({k: (before[k], after[k]) for k in diff})


def test_the_runtime_cleans_the_offsets_log_as_it_grows(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    h.c.runtime.cleaning = Cleaning(min_bytes=8 * 1024)
    for i in range(400):
        h.commit("busy", {("orders", i % 4): i})
        h.c.poll()
    assert [p for p, _ in h.c.runtime.compactions] and h.c.runtime.shard(0).log.size_bytes < 3 * 8 * 1024
    h.c.unload(0)
    other = Harness(tmp_path, clock=ManualClock(h.clock.now_ms()))
    assert other.fetched("busy", *(("orders", p) for p in range(4))) == {("orders", p): 396 + p for p in range(4)}


class TickingClock(ManualClock):
    """A clock one millisecond later at every reading: the real clock's worst case between two readings."""

    def now_ms(self) -> int:
        self._now_ms += 1
        return self._now_ms


def test_transactional_writes_reload_with_the_timestamps_they_were_applied_with(tmp_path: Path) -> None:
    """A transactional offset commit's and a marker's batch carries the timestamp their PartitionProducer
    transition used, so the producer's `last_timestamp_ms` reloads as it was held (the batch was once stamped with
    a later reading of the clock: a millisecond apart when the clock ticked in between)."""
    h = Harness(tmp_path, verifier=FakeVerifier(), clock=TickingClock(1_000_000))
    h.commit("g", {("orders", 0): 1})
    txn_commit(h, "g", {("orders", 1): 100}, pid=7, epoch=1)
    marker(h, 7, "COMMIT", epoch=1, coordinator_epoch=3)
    txn_commit(h, "g", {("orders", 2): 5}, pid=8)
    before = h.c.snapshot(0)["instances"]["PartitionProducer"]
    assert set(before) == {("__consumer_offsets-0", 7), ("__consumer_offsets-0", 8)}
    h.c.unload(0)
    other = Harness(tmp_path, verifier=FakeVerifier(), clock=ManualClock(h.clock.now_ms()))
    assert other.c.snapshot(0)["instances"]["PartitionProducer"] == before


def test_a_topic_id_seen_before_its_name_names_partitions_as_a_reload_does(tmp_path: Path) -> None:
    """A KIP-848 partition is held in memory under its topic id (as Kafka keys assignments) and written by topic id;
    its name is the cluster's name of that id, however the node came to see the id first. Here `orders` reaches the
    coordinator first as an id in a heartbeat's owned partitions (a client that read the metadata), before any member
    subscribes to it; the live node used to name its partitions by the id, and the reloaded node (which learns
    `orders` from the subscription metadata record first) by the name: the same member held other partitions."""
    h = Harness(tmp_path)
    assert h.cg("cg", "a", 0, topics=("payments",)).error == "NONE"
    assert h.cg("cg", "a", 1, owned=((T1, (0,)),)).error == "NONE"  # orders, named by id only
    h.cg("cg", "b", 0, topics=("orders",))
    b = h.member("cg", "b")
    assert b is not None and b["assigned"] == {f"orders-{p}" for p in range(6)}, b
    before = h.c.snapshot(0)
    h.c.unload(0)
    other = Harness(tmp_path, clock=ManualClock(h.clock.now_ms()))
    after = other.c.snapshot(0)
    diff = {k for k in before if before[k] != after[k]}
    assert not diff, pprint.pformat({k: (before[k], after[k]) for k in diff})
