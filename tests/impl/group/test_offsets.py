"""Offsets (kafka-reference.md §2.8, §3.8): OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete and offset
expiration, one test per row, asserting the answers, the records (and their batches) and the committed view."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kcoord.impl.group import GroupConfig
from kcoord.impl.group.messages import (
    OffsetCommitPartition,
    OffsetDeleteRequest,
    TxnOffsetCommitRequest,
)
from kcoord.impl.interfaces import TopicPartition, TxnMarker
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.storage import group_log_schema as schema

from .conftest import make_dead
from .helpers import Harness

DAY_MS = 24 * 60 * 60 * 1000


@dataclass
class FakeVerifier:
    """The transaction coordinator's verify-only AddPartitionsToTxn (and Transactions V2's add), answering from a
    table (default NONE); `calls` records (transactional id, producer id, epoch, partition) and `adds` the adds."""

    answers: dict[int, str] = field(default_factory=dict)
    calls: list[tuple[str, int, int, TopicPartition]] = field(default_factory=list)
    adds: list[tuple[str, int, int, TopicPartition]] = field(default_factory=list)

    def verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         partition: TopicPartition) -> Completion[str]:
        self.calls.append((transactional_id, producer_id, producer_epoch, partition))
        return Completion.of(self.answers.get(producer_id, "NONE"))

    def add_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      partition: TopicPartition) -> Completion[str]:
        self.adds.append((transactional_id, producer_id, producer_epoch, partition))
        return Completion.of(self.answers.get(producer_id, "NONE"))


def txn_commit(h: Harness, group_id: str, offsets: dict[tuple[str, int], int], *, pid: int = 7, epoch: int = 0,
               member_id: str = "", generation: int = -1, metadata: str = "", version: int = 3
               ) -> dict[tuple[str, int], str]:
    topics: dict[str, list[OffsetCommitPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(OffsetCommitPartition(partition, offset, metadata=metadata))
    req = TxnOffsetCommitRequest(f"txn-{pid}", pid, epoch, group_id, tuple((t, tuple(p)) for t, p in topics.items()),
                                 member_id, generation, api_version=version)
    response = h.c.txn_offset_commit(req).result()
    return {(t, p): e for t, ps in response.topics for p, e in ps}


def marker(h: Harness, pid: int, result: str, *, epoch: int = 0, coordinator_epoch: int = 0) -> str:
    tp = TopicPartition("__consumer_offsets", 0)
    (answer,) = h.c.write_txn_markers([TxnMarker(pid, epoch, result, coordinator_epoch, (tp,))]).result()  # type: ignore[arg-type]
    return answer[tp]


def decisions(h: Harness, machine: str, group_id: str, event: str) -> list[tuple[str, str, str]]:
    """The traced decisions of `event` on the group: (row kind, answer, state after)."""
    return [(r["kind"], r["error"], r["to_state"]) for r in h.rows(machine, group_id) if r["event"] == event]


# ---------------------------------------------------------------------------------------------- OffsetCommit


def test_2_8_unknown_group_generation_minus_one_creates_a_simple_group(h: Harness) -> None:
    r = h.commit("simple", {("orders", 0): 10})
    assert r.topics == (("orders", ((0, "NONE"),)),)
    g = h.group("simple")
    assert (g["state"], g["exists"], g["protocol_type"]) == ("Empty", True, "")
    (key, value), = h.records()
    assert key == schema.OffsetCommitKey("simple", "orders", 0)
    assert (value.offset, value.metadata, value.commit_timestamp, value.expire_timestamp) == \
        (10, "", h.clock.now_ms(), -1)
    assert h.fetched("simple", ("orders", 0)) == {("orders", 0): 10}


def test_2_8_unknown_group_with_a_generation(h: Harness) -> None:
    r = h.commit("nope", {("orders", 0): 1}, member_id="m", generation=3, version=9)
    assert r.topics == (("orders", ((0, "GROUP_ID_NOT_FOUND"),)),)
    r = h.commit("nope", {("orders", 0): 1}, member_id="m", generation=3, version=8)
    assert r.topics == (("orders", ((0, "ILLEGAL_GENERATION"),)),)
    assert h.records() == []


def test_2_8_member_validation(h: Harness) -> None:
    a, s = h.stable_group("g", 1, statics=("i1",))
    errors = {
        "ghost": h.commit("g", {("orders", 0): 1}, member_id="ghost", generation=1),
        "fenced": h.commit("g", {("orders", 0): 1}, member_id=a, generation=1, instance="i1"),
        "unknown-instance": h.commit("g", {("orders", 0): 1}, member_id=s, generation=1, instance="i9"),
        "generation": h.commit("g", {("orders", 0): 1}, member_id=a, generation=7),
        "no-member-info": h.commit("g", {("orders", 0): 1}),
        "ok": h.commit("g", {("orders", 0): 1}, member_id=a, generation=1),
    }
    assert {k: r.topics[0][1][0][1] for k, r in errors.items()} == {
        "ghost": "UNKNOWN_MEMBER_ID", "fenced": "FENCED_INSTANCE_ID", "unknown-instance": "UNKNOWN_MEMBER_ID",
        "generation": "ILLEGAL_GENERATION", "no-member-info": "UNKNOWN_MEMBER_ID", "ok": "NONE"}


def test_2_8_dead_group_is_coordinator_not_available(h: Harness) -> None:
    (a,) = h.stable_group("g", 1)
    make_dead(h, "g")
    assert h.commit("g", {("orders", 0): 1}, member_id=a, generation=1).topics[0][1][0][1] == \
        "COORDINATOR_NOT_AVAILABLE"


def test_2_8_completing_rebalance_rejects_plain_commits_but_not_transactional_ones(h: Harness) -> None:
    h.verifier = FakeVerifier()
    h.coordinator.ctx.verifier = h.verifier
    a, b = h.stable_group("g", 2)
    h.join("g", a), h.join("g", b)
    assert h.group("g")["state"] == "CompletingRebalance"
    assert h.commit("g", {("orders", 0): 1}, member_id=a, generation=2).topics[0][1][0][1] == "REBALANCE_IN_PROGRESS"
    assert txn_commit(h, "g", {("orders", 0): 1}, member_id=a, generation=2) == {("orders", 0): "NONE"}


def test_2_8_current_generation_commits_during_preparing_rebalance_and_extends_its_session(h: Harness) -> None:
    a, b = h.stable_group("g", 2)
    h.join("g", a)
    for _ in range(5):
        h.advance(3_000)
        assert h.commit("g", {("orders", 0): 1}, member_id=b, generation=1).topics[0][1][0][1] == "NONE"
    assert b in h.group("g")["members"]


def test_2_8_empty_group_accepts_admin_commits(h: Harness) -> None:
    (a,) = h.stable_group("g", 1)
    h.leave("g", (a, None))
    assert h.commit("g", {("orders", 0): 3}).topics[0][1][0][1] == "NONE"


def test_2_8_metadata_too_large_counts_utf16_units_per_partition(h: Harness) -> None:
    ok = "é" * 4096  # 4096 UTF-16 units, 8192 UTF-8 bytes
    too_large = "😀" * 2049  # 2049 characters, 4098 UTF-16 units
    r = h.c.offset_commit(_commit_req("simple", [OffsetCommitPartition(0, 1, metadata=ok),
                                                 OffsetCommitPartition(1, 2, metadata=too_large)])).result()
    assert r.topics == (("orders", ((0, "NONE"), (1, "OFFSET_METADATA_TOO_LARGE"))),)
    assert [k.partition for k, _ in h.records()] == [0]


def _commit_req(group_id: str, partitions: list[OffsetCommitPartition]) -> object:
    from kcoord.impl.group.messages import OffsetCommitRequest

    return OffsetCommitRequest(group_id, (("orders", tuple(partitions)),))


def test_2_8_retention_writes_value_version_1_with_an_expire_timestamp(h: Harness) -> None:
    h.commit("simple", {("orders", 0): 1}, retention_ms=60_000)
    batch = next(iter(h.c.runtime.shard(0).log.read()))
    raw = batch.records[0].value
    assert raw[:2] == b"\x00\x01"
    (_, value), = h.records()
    assert value.expire_timestamp == h.clock.now_ms() + 60_000
    h.commit("simple", {("orders", 1): 1})
    raw = list(h.c.runtime.shard(0).log.read())[-1].records[0].value
    assert raw[:2] == b"\x00\x03"


# ---------------------------------------------------------------------------------------------- TxnOffsetCommit


def test_2_8_txn_commit_is_verified_then_written_transactionally_and_stays_pending(tmp_path: Path) -> None:
    verifier = FakeVerifier()
    h = Harness(tmp_path, verifier=verifier)
    h.commit("g", {("orders", 0): 5})
    assert txn_commit(h, "g", {("orders", 0): 9, ("orders", 1): 4}, pid=7, epoch=2) == \
        {("orders", 0): "NONE", ("orders", 1): "NONE"}
    assert verifier.calls == [("txn-7", 7, 2, TopicPartition("__consumer_offsets", 0))]
    batch = list(h.c.runtime.shard(0).log.read())[-1]
    assert (batch.is_transactional, batch.producer_id, batch.producer_epoch, len(batch.records)) == (True, 7, 2, 2)
    assert h.fetched("g", ("orders", 0), ("orders", 1)) == {("orders", 0): 5, ("orders", 1): -1}
    assert h.fetched("g", ("orders", 0), ("orders", 1), require_stable=True) == \
        {("orders", 0): "UNSTABLE_OFFSET_COMMIT", ("orders", 1): "UNSTABLE_OFFSET_COMMIT"}
    producer = h.shard("g").get("PartitionProducer", ("__consumer_offsets-0", 7))
    assert (producer["state"], producer["producer_epoch"]) == ("Ongoing", 2)


def test_2_8_txn_commit_v5_adds_the_offsets_partition_instead_of_verifying(tmp_path: Path) -> None:
    """Transactions V2 (TxnOffsetCommit v5, KIP-890): the client sends no AddOffsetsToTxn; the group coordinator has
    the transaction coordinator add `__consumer_offsets-N` (AddPartitionsToTxn v5, not verify-only)."""
    verifier = FakeVerifier()
    h = Harness(tmp_path, verifier=verifier)
    assert txn_commit(h, "g", {("orders", 0): 9}, pid=7, epoch=2, version=5) == {("orders", 0): "NONE"}
    assert (verifier.adds, verifier.calls) == ([("txn-7", 7, 2, TopicPartition("__consumer_offsets", 0))], [])
    assert txn_commit(h, "g", {("orders", 0): 10}, pid=7, epoch=2, version=4) == {("orders", 0): "NONE"}
    assert len(verifier.calls) == 1 and len(verifier.adds) == 1  # v4 verifies


@pytest.mark.parametrize(("answer", "version", "expected"), [
    ("PRODUCER_FENCED", 3, "INVALID_PRODUCER_EPOCH"),  # AddPartitionsToTxnManager's translation
    ("PRODUCER_FENCED", 5, "INVALID_PRODUCER_EPOCH"),
    ("TRANSACTION_ABORTABLE", 3, "INVALID_TXN_STATE"),  # a client before v4 does not know TRANSACTION_ABORTABLE
    ("TRANSACTION_ABORTABLE", 4, "TRANSACTION_ABORTABLE"),
    ("NETWORK_EXCEPTION", 5, "COORDINATOR_LOAD_IN_PROGRESS"),  # handleOperationException's
    ("REQUEST_TIMED_OUT", 5, "COORDINATOR_NOT_AVAILABLE"),
    ("CONCURRENT_TRANSACTIONS", 5, "CONCURRENT_TRANSACTIONS"),
    ("INVALID_PRODUCER_ID_MAPPING", 5, "INVALID_PRODUCER_ID_MAPPING"),
])
def test_2_8_txn_commit_answers_the_coordinators_error_as_kafka(tmp_path: Path, answer: str, version: int,
                                                                expected: str) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier(answers={7: answer}))
    assert txn_commit(h, "g", {("orders", 0): 9}, pid=7, version=version) == {("orders", 0): expected}
    assert [r for r in h.records() if r[0] != "MARKER"] == []


def test_2_8_txn_commit_marker_commit_materialises_and_abort_drops(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    txn_commit(h, "g", {("orders", 0): 9}, pid=7)
    txn_commit(h, "g", {("orders", 1): 3}, pid=8)
    assert marker(h, 7, "COMMIT") == "NONE"
    assert marker(h, 8, "ABORT") == "NONE"
    assert h.fetched("g", ("orders", 0), ("orders", 1), require_stable=True) == {("orders", 0): 9, ("orders", 1): -1}
    assert [r for r in h.records() if r[0] == "MARKER"] == [("MARKER", (7, "COMMIT")), ("MARKER", (8, "ABORT"))]


def test_2_8_committed_transactional_offset_wins_only_if_its_record_is_newer(tmp_path: Path) -> None:
    """§9.20: a plain commit written after the transactional one keeps its value when the transaction commits."""
    h = Harness(tmp_path, verifier=FakeVerifier())
    txn_commit(h, "g", {("orders", 0): 9}, pid=7)
    h.commit("g", {("orders", 0): 20})
    marker(h, 7, "COMMIT")
    assert h.fetched("g", ("orders", 0)) == {("orders", 0): 20}


def test_2_8_txn_commit_rows(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier(answers={9: "INVALID_PRODUCER_ID_MAPPING", 10: "NETWORK_EXCEPTION",
                                                          11: "PRODUCER_FENCED", 12: "TRANSACTION_ABORTABLE"}))
    assert txn_commit(h, "nope", {("orders", 0): 1}, member_id="m", generation=2) == \
        {("orders", 0): "ILLEGAL_GENERATION"}
    assert txn_commit(h, "new-simple", {("orders", 0): 1}) == {("orders", 0): "NONE"}
    assert h.group("new-simple")["exists"]
    assert txn_commit(h, "g", {("orders", 0): 1}, pid=9) == {("orders", 0): "INVALID_PRODUCER_ID_MAPPING"}
    assert txn_commit(h, "g", {("orders", 0): 1}, pid=10) == {("orders", 0): "COORDINATOR_LOAD_IN_PROGRESS"}
    # Kafka 4.0's AddPartitionsToTxnManager hands verification errors on as a client of these versions knows them
    assert txn_commit(h, "g", {("orders", 0): 1}, pid=11) == {("orders", 0): "INVALID_PRODUCER_EPOCH"}
    assert txn_commit(h, "g", {("orders", 0): 1}, pid=12) == {("orders", 0): "INVALID_TXN_STATE"}
    (a,) = h.stable_group("s", 1)
    assert txn_commit(h, "s", {("orders", 0): 1}) == {("orders", 0): "NONE"}, "no member information: accepted"
    assert txn_commit(h, "s", {("orders", 0): 1}, member_id=a, generation=5) == {("orders", 0): "ILLEGAL_GENERATION"}


def test_2_8_txn_commit_from_an_older_producer_epoch_is_rejected(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    txn_commit(h, "g", {("orders", 0): 1}, pid=7, epoch=3)
    assert txn_commit(h, "g", {("orders", 0): 2}, pid=7, epoch=2) == {("orders", 0): "INVALID_PRODUCER_EPOCH"}
    assert marker(h, 7, "COMMIT", epoch=1) == "INVALID_PRODUCER_EPOCH"
    assert marker(h, 7, "COMMIT", epoch=3) == "NONE"
    assert h.fetched("g", ("orders", 0)) == {("orders", 0): 1}


def test_1_10_markers_for_partitions_not_owned_or_other_topics(h: Harness) -> None:
    foreign = TopicPartition("orders", 0)
    other = TopicPartition("__consumer_offsets", 3)  # not a partition of this one-partition coordinator
    (answers,) = h.c.write_txn_markers([TxnMarker(7, 0, "COMMIT", 0, (foreign, other))]).result()
    assert answers == {foreign: "UNKNOWN_TOPIC_OR_PARTITION", other: "NOT_LEADER_OR_FOLLOWER"}


# ---------------------------------------------------------------------------------------------- OffsetFetch


def test_2_8_fetch_unknown_or_dead_group_reads_nothing(h: Harness) -> None:
    """ClassicGroup.OffsetFetch answers GROUP_ID_NOT_FOUND; fetchOffsets turns it into -1 offsets, no error."""
    mark = h.mark()
    assert h.fetched("nope", ("orders", 0)) == {("orders", 0): -1}
    assert h.fetched("nope") == {}, "fetchAllOffsets of a group that is not found: no partitions"
    assert decisions(h, "ClassicGroup", "nope", "OffsetFetch") == [("reject", "GROUP_ID_NOT_FOUND", "Empty")] * 2
    assert decisions(h, "ClassicGroup", "nope", "OffsetFetchPartition") == [("reject", "NONE", "Empty")]
    assert h.mark() == mark and h.shard("nope").get("ClassicGroup", ("nope",)) is None, "a read writes nothing"
    (a,) = h.stable_group("g", 1)
    h.commit("g", {("orders", 0): 4}, member_id=a, generation=1)
    assert h.fetched("g", ("orders", 0)) == {("orders", 0): 4}
    assert decisions(h, "ClassicGroup", "g", "OffsetFetch") == [("reject", "NONE", "Stable")]
    make_dead(h, "g")
    assert h.fetched("g", ("orders", 0)) == {("orders", 0): -1}
    assert decisions(h, "ClassicGroup", "g", "OffsetFetch")[-1] == ("reject", "GROUP_ID_NOT_FOUND", "Dead")


def test_2_8_fetch_all_and_unstable_without_a_committed_offset(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    h.commit("g", {("orders", 0): 4, ("payments", 2): 8})
    txn_commit(h, "g", {("orders", 5): 1})
    assert h.fetched("g") == {("orders", 0): 4, ("payments", 2): 8}
    assert h.fetched("g", ("orders", 5), require_stable=True) == {("orders", 5): "UNSTABLE_OFFSET_COMMIT"}
    assert h.fetched("g", ("orders", 5)) == {("orders", 5): -1}
    assert decisions(h, "ClassicGroup", "g", "OffsetFetchPartition")[-2:] == [
        ("reject", "UNSTABLE_OFFSET_COMMIT", "Empty"), ("reject", "NONE", "Empty")]
    assert h.fetched("nope", ("orders", 5), require_stable=True) == {("orders", 5): -1}


def test_2_8_unstable_fetch_of_a_consumer_group(tmp_path: Path) -> None:
    """A consumer group's member validates the fetch (ConsumerGroupMember.OffsetFetch), the group answers each
    partition (ConsumerGroup.OffsetFetchPartition)."""
    h = Harness(tmp_path, verifier=FakeVerifier())
    r = h.cg("cg", "a", 0)
    txn_commit(h, "cg", {("orders", 1): 5}, member_id="a", generation=r.member_epoch)
    assert h.fetched("cg", ("orders", 1), require_stable=True, member_id="a", epoch=r.member_epoch) == \
        {("orders", 1): "UNSTABLE_OFFSET_COMMIT"}
    assert h.fetch("cg", ("orders", 1), member_id="a", epoch=r.member_epoch + 1).error == "STALE_MEMBER_EPOCH"
    assert decisions(h, "ConsumerGroup", "cg", "OffsetFetchPartition") == [
        ("reject", "UNSTABLE_OFFSET_COMMIT", "Stable")]
    marker(h, 7, "COMMIT")
    assert h.fetched("cg", ("orders", 1), require_stable=True) == {("orders", 1): 5}


# ---------------------------------------------------------------------------------------------- OffsetDelete


def delete(h: Harness, group_id: str, *topics: tuple[str, tuple[int, ...]]) -> tuple[str, object]:
    r = h.c.offset_delete(OffsetDeleteRequest(group_id, topics)).result()
    return r.error, r.topics


def test_offset_delete(h: Harness) -> None:
    """A tombstone for each partition with an offset (an accepted OffsetDeletePartition `stay`), none for a partition
    without one; both answered NONE."""
    h.commit("simple", {("orders", 0): 1, ("payments", 0): 2})
    mark = h.mark()
    assert delete(h, "simple", ("orders", (0, 1))) == ("NONE", (("orders", ((0, "NONE"), (1, "NONE"))),))
    assert h.fetched("simple") == {("payments", 0): 2}
    assert h.records_since(mark) == [(schema.OffsetCommitKey("simple", "orders", 0), None)]
    assert decisions(h, "ClassicGroup", "simple", "OffsetDelete") == [("reject", "NONE", "Empty")]
    assert decisions(h, "ClassicGroup", "simple", "OffsetDeletePartition") == [("stay", "NONE", "Empty"),
                                                                              ("reject", "NONE", "Empty")]
    mark = h.mark()
    assert delete(h, "nope") == ("GROUP_ID_NOT_FOUND", ())
    assert delete(h, "nope", ("orders", (0,))) == ("GROUP_ID_NOT_FOUND", ())
    assert decisions(h, "ClassicGroup", "nope", "OffsetDeletePartition") == [], "the group's answer comes first"
    (a,) = h.stable_group("g", 1)  # consumer protocol, subscribed to "orders"
    h.commit("g", {("orders", 0): 1, ("payments", 0): 2}, member_id=a, generation=1)
    mark = h.mark()
    assert delete(h, "g", ("orders", (0,)), ("payments", (0,))) == \
        ("NONE", (("orders", ((0, "GROUP_SUBSCRIBED_TO_TOPIC"),)), ("payments", ((0, "NONE"),))))
    assert h.records_since(mark) == [(schema.OffsetCommitKey("g", "payments", 0), None)]
    assert h.fetched("g") == {("orders", 0): 1}
    assert decisions(h, "ClassicGroup", "g", "OffsetDeletePartition") == [
        ("reject", "GROUP_SUBSCRIBED_TO_TOPIC", "Stable"), ("stay", "NONE", "Stable")]
    assert h.group("g")["state"] == "Stable"


def test_offset_delete_of_a_pending_offset_writes_a_tombstone(tmp_path: Path) -> None:
    h = Harness(tmp_path, verifier=FakeVerifier())
    h.commit("simple", {("orders", 0): 1})
    txn_commit(h, "simple", {("orders", 1): 9})
    mark = h.mark()
    assert delete(h, "simple", ("orders", (1,))) == ("NONE", (("orders", ((1, "NONE"),)),))
    assert h.records_since(mark) == [(schema.OffsetCommitKey("simple", "orders", 1), None)]
    assert h.fetched("simple", ("orders", 1), require_stable=True) == {("orders", 1): -1}, "no longer pending"


def test_offset_delete_non_consumer_protocol_group_must_be_empty(h: Harness) -> None:
    _, j = h.join_new("c", protocol_type="connect")
    h.advance(3_100)
    assert j.result().error == "NONE"
    mark = h.mark()
    assert delete(h, "c", ("orders", (0,))) == ("NON_EMPTY_GROUP", ())
    assert h.mark() == mark
    assert decisions(h, "ClassicGroup", "c", "OffsetDelete") == [("reject", "NON_EMPTY_GROUP", "CompletingRebalance")]
    make_dead(h, "c")
    assert delete(h, "c", ("orders", (0,))) == ("GROUP_ID_NOT_FOUND", ())


def test_offset_delete_of_a_consumer_group(h: Harness) -> None:
    """ConsumerGroup.OffsetDelete accepts in every state; a topic some member subscribes to is protected."""
    r = h.cg("cg", "a", 0, topics=("orders",))
    assert h.commit("cg", {("orders", 0): 1, ("payments", 0): 2}, member_id="a", generation=r.member_epoch).topics == \
        (("orders", ((0, "NONE"),)), ("payments", ((0, "NONE"),)))
    mark = h.mark()
    assert delete(h, "cg", ("orders", (0,)), ("payments", (0, 3))) == \
        ("NONE", (("orders", ((0, "GROUP_SUBSCRIBED_TO_TOPIC"),)), ("payments", ((0, "NONE"), (3, "NONE")))))
    assert h.records_since(mark) == [(schema.OffsetCommitKey("cg", "payments", 0), None)]
    assert decisions(h, "ConsumerGroup", "cg", "OffsetDeletePartition") == [
        ("reject", "GROUP_SUBSCRIBED_TO_TOPIC", "Stable"), ("stay", "NONE", "Stable"), ("reject", "NONE", "Stable")]
    assert h.fetched("cg") == {("orders", 0): 1}


# ---------------------------------------------------------------------------------------------- expiration


def expiring_harness(tmp_path: Path, **kw: object) -> Harness:
    config = GroupConfig(num_partitions=1, offsets_retention_ms=DAY_MS, offsets_retention_check_interval_ms=60_000)
    return Harness(tmp_path, config=config, **kw)  # type: ignore[arg-type]


def test_2_8_simple_group_offsets_expire_by_commit_time_then_the_group_goes(tmp_path: Path) -> None:
    h = expiring_harness(tmp_path)
    h.commit("simple", {("orders", 0): 1})
    h.clock.advance(DAY_MS // 2)
    h.commit("simple", {("orders", 1): 1})
    h.clock.advance(DAY_MS // 2 + 60_000)
    h.c.poll()
    assert h.fetched("simple") == {("orders", 1): 1}
    assert h.records()[-1] == (schema.OffsetCommitKey("simple", "orders", 0), None)
    h.clock.advance(DAY_MS // 2)
    h.c.poll()
    assert h.fetched("simple") == {}
    assert h.shard("simple").get("ClassicGroup", ("simple",)) is None
    assert h.records()[-1] == (schema.GroupMetadataKey("simple"), None)


def test_2_8_empty_classic_group_offsets_expire_from_when_it_became_empty(tmp_path: Path) -> None:
    """§9.21: an offset committed long ago lives on while the group has members, then a full retention period from
    the moment the group became Empty."""
    h = expiring_harness(tmp_path)
    (a,) = h.stable_group("g", 1)
    h.commit("g", {("orders", 0): 1, ("payments", 0): 1}, member_id=a, generation=1)
    for _ in range(40):  # 2 days with the member alive
        h.clock.advance(DAY_MS // 20)
        h.hb("g", a, 1)
        h.c.poll()
    # Stable consumer-protocol group: the subscribed topic is kept, the other expired by commit time
    assert h.fetched("g") == {("orders", 0): 1}
    h.leave("g", (a, None))
    h.clock.advance(DAY_MS - 120_000)
    h.c.poll()
    assert h.fetched("g") == {("orders", 0): 1}, "not yet a day since the group became Empty"
    h.clock.advance(240_000)
    h.c.poll()
    assert h.fetched("g") == {}


def test_2_8_pending_transactional_offsets_never_expire(tmp_path: Path) -> None:
    h = expiring_harness(tmp_path, verifier=FakeVerifier())
    h.commit("simple", {("orders", 0): 1})
    txn_commit(h, "simple", {("orders", 0): 2})
    h.clock.advance(2 * DAY_MS)
    h.c.poll()
    assert h.fetched("simple") == {("orders", 0): 1}
    assert h.shard("simple").get("ClassicGroup", ("simple",)) is not None
    marker(h, 7, "COMMIT")
    h.clock.advance(2 * DAY_MS)
    h.c.poll()
    assert h.fetched("simple") == {}


def test_2_8_expiration_decisions_are_the_specs(tmp_path: Path) -> None:
    """Each committed offset is an ExpireOffset decision (a `stay` that writes its tombstone, or a rejection that
    keeps it), then ExpireGroup decides the group: a group in CompletingRebalance keeps everything, however old."""
    config = GroupConfig(num_partitions=1, offsets_retention_ms=1_000, offsets_retention_check_interval_ms=1_000)
    h = Harness(tmp_path, config=config)
    (a,) = h.stable_group("g", 1)
    h.commit("g", {("payments", 0): 1}, member_id=a, generation=1)
    h.join("g", a)  # the leader rejoins: a new generation, waiting for its SyncGroup
    mark = h.mark()
    h.advance(2_500)
    assert h.group("g")["state"] == "CompletingRebalance" and h.records_since(mark) == []
    assert set(decisions(h, "ClassicGroup", "g", "ExpireOffset")) == {("reject", "NONE", "CompletingRebalance")}
    assert decisions(h, "ClassicGroup", "g", "ExpireGroup")[-1] == ("reject", "NONE", "CompletingRebalance")
    assert h.fetched("g") == {("payments", 0): 1}


def test_2_8_simple_group_expiration_trace(tmp_path: Path) -> None:
    h = expiring_harness(tmp_path)
    h.commit("simple", {("orders", 0): 1, ("orders", 1): 2})
    h.clock.advance(DAY_MS + 60_000)
    mark = h.mark()
    h.c.poll()
    assert h.records_since(mark) == [(schema.OffsetCommitKey("simple", "orders", 0), None),
                                     (schema.OffsetCommitKey("simple", "orders", 1), None),
                                     (schema.GroupMetadataKey("simple"), None)]
    assert decisions(h, "ClassicGroup", "simple", "ExpireOffset") == [("stay", "NONE", "Empty")] * 2
    assert decisions(h, "ClassicGroup", "simple", "ExpireGroup") == [("transition", "NONE", "Dead")]


def test_2_8_consumer_group_offsets_expire_by_commit_time_for_unsubscribed_topics(tmp_path: Path) -> None:
    h = expiring_harness(tmp_path)
    r = h.cg("cg", "a", 0, topics=("orders",))
    assert h.commit("cg", {("orders", 0): 1, ("payments", 0): 2}, member_id="a", generation=r.member_epoch).topics == \
        (("orders", ((0, "NONE"),)), ("payments", ((0, "NONE"),)))
    for _ in range(25):  # a day and a bit, the member heartbeating
        h.clock.advance(DAY_MS // 24)
        r = h.cg("cg", "a", r.member_epoch, owned=r.assignment or ())
        h.c.poll()
    assert h.fetched("cg") == {("orders", 0): 1}
    assert ("stay", "NONE", "Stable") in decisions(h, "ConsumerGroup", "cg", "ExpireOffset")
    assert decisions(h, "ConsumerGroup", "cg", "Expire")[-1] == ("reject", "NONE", "Stable")
    assert h.cg("cg", "a", -1).error == "NONE"
    assert h.consumer_group("cg")["state"] == "Empty"
    h.clock.advance(60_000)
    h.c.poll()
    assert h.fetched("cg") == {}
    assert h.shard("cg").get("ConsumerGroup", ("cg",)) is None, "the empty group went with its last offset"
    assert decisions(h, "ConsumerGroup", "cg", "Expire")[-1] == ("transition", "NONE", "Dead")
    assert h.records()[-1] == (schema.ConsumerGroupMetadataKey("cg"), None)
