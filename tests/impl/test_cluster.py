"""The in-process cluster: the three components wired through routing and verification, end to end, and failover.

Everything here is real: logs on disk (fsync per batch), the spec-driven coordinators, the marker channel, the
partition side's read_committed. Only the clock is manual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.cluster import Cluster, ClusterConfig
from kcoord.impl.group.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition import IsolationLevel, committed_records
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.trace import MemorySink
from kcoord.impl.storage.batch import Record, RecordBatch
from kcoord.impl.storage.log import Durability
from kcoord.impl.txn.config import TxnConfig

TOPIC = "out"
GROUP = "app"


def run(cluster: Cluster, done: Completion[Any]) -> Any:
    cluster.run_until(lambda: done.done)
    return done.result()


def records(pid: int, epoch: int, seq: int, *values: str) -> RecordBatch:
    return RecordBatch.of([Record(i, 1_000 + i, b"k", v.encode()) for i, v in enumerate(values)],
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def make(tmp_path: Path, nodes: int, sink: MemorySink | None = None) -> Cluster:
    cluster = Cluster(tmp_path, ManualClock(1_000), config=ClusterConfig(nodes=nodes, txn=TxnConfig(num_partitions=5)),
                      sink=sink)
    cluster.start()
    cluster.create_topics([(TOPIC, 2)])
    return cluster


def init(cluster: Cluster, txn_id: str) -> tuple[int, int]:
    response = run(cluster, cluster.node_for_coordinator("transaction", txn_id).txn.init_producer_id(txn_id, 60_000))
    assert response.error == "NONE"
    return response.producer_id, response.producer_epoch


def retried(cluster: Cluster, call: Any) -> Any:
    """What a client does with a retriable CONCURRENT_TRANSACTIONS: wait a little and send it again."""
    for _ in range(50):
        answer = run(cluster, call())
        errors = set(answer.values()) if isinstance(answer, dict) else {answer}
        if errors != {"CONCURRENT_TRANSACTIONS"}:
            return answer
        cluster.poll()
        cluster.flush()
    raise AssertionError("still CONCURRENT_TRANSACTIONS")


def transaction(cluster: Cluster, txn_id: str, ids: tuple[int, int], seq: int, values: tuple[str, ...], offset: int,
                *, commit: bool) -> None:
    """Produce to TOPIC-0, send offsets for GROUP, then EndTxn (TV1: the epoch stays)."""
    coordinator = cluster.node_for_coordinator("transaction", txn_id).txn
    pid, epoch = ids
    added = retried(cluster, lambda: coordinator.add_partitions(txn_id, pid, epoch, [TopicPartition(TOPIC, 0)]))
    assert set(added.values()) == {"NONE"}
    produced = run(cluster, cluster.partitions.produce(TOPIC, 0, records(pid, epoch, seq, *values),
                                                       transactional_id=txn_id))
    assert produced.error == "NONE"
    assert run(cluster, coordinator.add_offsets(txn_id, pid, epoch, GROUP)) == "NONE"
    groups = cluster.node_for_coordinator("group", GROUP).groups
    committed = run(cluster, groups.txn_offset_commit(TxnOffsetCommitRequest(
        txn_id, pid, epoch, GROUP, ((TOPIC, (OffsetCommitPartition(0, offset),)),))))
    assert {e for _, parts in committed.topics for _, e in parts} == {"NONE"}
    ended = run(cluster, coordinator.end_txn(txn_id, pid, epoch, "COMMIT" if commit else "ABORT", 3))
    assert ended.error == "NONE"


def committed_offset(cluster: Cluster) -> int:
    groups = cluster.node_for_coordinator("group", GROUP).groups
    fetched = run(cluster, groups.offset_fetch(OffsetFetchRequest(GROUP, ((TOPIC, (0,)),), require_stable=True)))
    ((_, (entry,)),) = fetched.topics
    return entry.offset


def read_committed(cluster: Cluster) -> list[str]:
    fetched = cluster.partitions.fetch(TOPIC, 0, 0, isolation_level=IsolationLevel.READ_COMMITTED)
    return [r.value.decode() for r in committed_records(fetched) if r.value is not None]


def test_consume_transform_produce_on_one_node(tmp_path: Path) -> None:
    sink = MemorySink()
    cluster = make(tmp_path, 1, sink)
    ids = init(cluster, "t1")
    transaction(cluster, "t1", ids, 0, ("a", "b"), 10, commit=True)
    transaction(cluster, "t1", ids, 2, ("c",), 20, commit=False)
    cluster.run_until(lambda: committed_offset(cluster) == 10)
    assert read_committed(cluster) == ["a", "b"]
    states = [r["to_state"] for r in sink.rows["Transaction"] if r["key"] == "t1" and r["kind"] != "reject"]
    assert states[-2:] == ["PrepareAbort", "CompleteAbort"] and "CompleteCommit" in states
    # the offsets partition's marker (materialised) was written before the Complete record (KAFKA-17507)
    rows = [(r["machine"], r["event"], r.get("to_state")) for r in sink.all_rows()]
    first_complete = rows.index(("Transaction", "CompleteTxn", "CompleteCommit"))
    markers = [i for i, r in enumerate(rows) if r[:2] == ("PartitionProducer", "WriteMarker")]
    assert len(markers) >= 2 and all(i < first_complete for i in markers[:2])


def test_failover_of_the_transaction_partition_completes_the_commit_elsewhere(tmp_path: Path) -> None:
    cluster = make(tmp_path, 3)
    txn_id = "moving"
    p = cluster.coordinator_partition("transaction", txn_id)
    first = cluster.owner[("transaction", p)]
    coordinator = cluster.nodes[first].txn
    pid, epoch = run(cluster, coordinator.init_producer_id(txn_id, 60_000)).producer_id, 0
    run(cluster, coordinator.add_partitions(txn_id, pid, epoch, [TopicPartition(TOPIC, 0)]))
    run(cluster, cluster.partitions.produce(TOPIC, 0, records(pid, epoch, 0, "x"), transactional_id=txn_id))
    ended = coordinator.end_txn(txn_id, pid, epoch, "COMMIT", 3)
    cluster.nodes[first].txn.flush()  # the PrepareCommit is durable; markers not delivered yet
    assert ended.done and ended.result().error == "NONE"
    cluster.stop_node(first)
    now_owner = cluster.owner[("transaction", p)]
    assert now_owner != first
    cluster.run_until(lambda: read_committed(cluster) == ["x"])
    described = run(cluster, cluster.nodes[now_owner].txn.describe_transactions([txn_id]))
    assert described[0].state == "CompleteCommit"


def test_find_coordinator_follows_ownership(tmp_path: Path) -> None:
    cluster = make(tmp_path, 2)
    p = cluster.coordinator_partition("group", GROUP)
    before = cluster.node_for_coordinator("group", GROUP).node_id
    cluster.move("group", p, 1 - before)
    assert cluster.node_for_coordinator("group", GROUP).node_id == 1 - before
    assert cluster.nodes[before].groups.runtime.owns(p) is False
    assert cluster.nodes[1 - before].groups.runtime.owns(p) is True


@pytest.mark.parametrize("durability", [Durability.os(), None], ids=["os", "per-batch"])
def test_one_flush_takes_a_lone_commit_to_complete_commit(tmp_path: Path, durability: Durability | None) -> None:
    """The flush that makes a lone EndTxn's PrepareCommit durable also sends its markers (the data partition's and
    the `__consumer_offsets` partition's, both on this node and answered within the send) and writes the
    CompleteCommit record they allow: the producer's next AddPartitionsToTxn finds no commit in progress (before,
    the record waited in the open batch for the next poll, and that AddPartitionsToTxn got CONCURRENT_TRANSACTIONS).
    With durabilities where an append is durable once made: os (coalesced: the record was left in the open batch),
    per batch (no open batch: this held before too); with fsync group commit the markers wait for the next flush
    (the server's fsync rounds, `test_end_txn_waits.py`)."""
    cluster = Cluster(tmp_path, ManualClock(1_000), config=ClusterConfig(
        nodes=1, txn=TxnConfig(num_partitions=5), durability=durability))
    cluster.start()
    cluster.create_topics([(TOPIC, 2)])
    pid, epoch = init(cluster, "lone")
    coordinator = cluster.nodes[0].txn
    assert set(run(cluster, coordinator.add_partitions("lone", pid, epoch, [TopicPartition(TOPIC, 0)])).values()) \
        == {"NONE"}
    assert run(cluster, cluster.partitions.produce(TOPIC, 0, records(pid, epoch, 0, "a"),
                                                   transactional_id="lone")).error == "NONE"
    assert run(cluster, coordinator.add_offsets("lone", pid, epoch, GROUP)) == "NONE"
    committed = run(cluster, cluster.nodes[0].groups.txn_offset_commit(TxnOffsetCommitRequest(
        "lone", pid, epoch, GROUP, ((TOPIC, (OffsetCommitPartition(0, 1),)),))))
    assert {e for _, parts in committed.topics for _, e in parts} == {"NONE"}
    ended = coordinator.end_txn("lone", pid, epoch, "COMMIT", 3)
    cluster.flush()
    assert ended.done and ended.result().error == "NONE"
    described = run(cluster, coordinator.describe_transactions(["lone"]))
    next_add = coordinator.add_partitions("lone", pid, epoch, [TopicPartition(TOPIC, 1)])
    assert (described[0].state, coordinator.channel.pending_transactions) == ("CompleteCommit", 0)
    cluster.flush()
    assert next_add.done and set(next_add.result().values()) == {"NONE"}
    assert read_committed(cluster) == ["a"]


def test_a_round_of_fsyncs_on_threads_answers_only_once_it_ended(tmp_path: Path) -> None:
    """`--durability fsync`'s rounds (`begin_flush`, the tickets' fsyncs elsewhere, `end_flush`): the writes the round
    covered, of the transaction coordinator, the group coordinator and a data partition, are answered by the first
    poll after its end (`end_flush` tells both runtimes and the partitions which of their logs it covered), not
    before; a write made during the round waits for the next."""
    cluster = Cluster(tmp_path, ManualClock(1_000), config=ClusterConfig(
        nodes=1, txn=TxnConfig(num_partitions=5), durability=Durability.fsync()))
    cluster.start()
    cluster.create_topics([(TOPIC, 1)])
    node = cluster.nodes[0]
    while cluster.poll():
        pass
    inited = node.txn.init_producer_id("t", 60_000)
    committed = node.groups.offset_commit(OffsetCommitRequest(GROUP, ((TOPIC, (OffsetCommitPartition(0, 5),)),)))
    produced = cluster.partitions.produce(TOPIC, 0, RecordBatch.of([Record(0, 1_000, b"k", b"v")]), acks=-1)
    cluster.poll()
    tickets = cluster.begin_flush()
    assert len(tickets) == 3 and not inited.done and not committed.done and not produced.done
    late = node.txn.init_producer_id("u", 60_000)
    for ticket in tickets:
        ticket.fsync()
    cluster.poll()
    assert not inited.done and not committed.done and not late.done
    cluster.end_flush(tickets)
    cluster.poll()
    assert inited.done and inited.result().error == "NONE" and committed.done
    assert produced.done and produced.result().error == "NONE"
    assert {e for _, parts in committed.result().topics for _, e in parts} == {"NONE"}
    assert not late.done
    (ticket,) = cluster.begin_flush()
    ticket.fsync()
    cluster.end_flush([ticket])
    cluster.poll()
    assert late.done and late.result().error == "NONE"
