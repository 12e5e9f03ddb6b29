"""The group coordinator wired to the real transaction coordinator, in process: TxnOffsetCommit is verified by the
transaction coordinator, its WriteTxnMarkers for `__consumer_offsets` reach this coordinator through the router, and
the Complete* record is written only after the offsets are materialised — visible in one shared, ordered trace.
With the KAFKA-17507 switch (and the materialisation held) the same trace shows CompleteCommit before the marker's
WriteMarker row: what a trace checker must catch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kcoord.impl.group import GroupConfig, GroupCoordinator
from kcoord.impl.group.messages import OffsetCommitPartition, OffsetFetchRequest, TxnOffsetCommitRequest
from kcoord.impl.interfaces import MarkerResult, TopicPartition, TxnMarker
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.trace import Tracer
from kcoord.impl.seeded import SeededBug
from kcoord.impl.storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from kcoord.impl.txn import TransactionCoordinator

from .helpers import TOPICS


class OrderedSink:
    """Trace rows of every machine in the order they were emitted (one timeline for both coordinators)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def write(self, machine: str, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def index(self, predicate: Callable[[dict[str, Any]], bool]) -> int:
        return next(i for i, r in enumerate(self.rows) if predicate(r))


class DataPartitions:
    """The leaders of data partitions: every marker is written at once."""

    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[list[MarkerResult]]:
        return Completion.of([dict.fromkeys(m.partitions, "NONE") for m in markers])


class Cluster:
    def __init__(self, tmp_path: Path, *, bug: bool = False, hold: bool = False) -> None:
        self.clock = ManualClock(1_000_000)
        self.sink = OrderedSink()
        self.held: list[Callable[[], None]] = []
        store = ProducerIdBlockStore(tmp_path / "producer-ids")
        data = DataPartitions()
        self.groups: GroupCoordinator | None = None

        class Router:
            def leader_of(inner, tp: TopicPartition) -> Any:
                return self.groups if tp.topic == "__consumer_offsets" else data

        self.txn = TransactionCoordinator(data_dir=tmp_path / "txn", clock=self.clock, router=Router(),
                                          producer_ids=ProducerIdManager(store_requester(store),
                                                                         clock_ms=self.clock.now_ms),
                                          tracer=Tracer(self.sink))  # type: ignore[arg-type]
        self.groups = GroupCoordinator(data_dir=tmp_path / "groups", clock=self.clock, topics=TOPICS,
                                       config=GroupConfig(), tracer=Tracer(self.sink), verifier=self.txn,
                                       seeded_bugs=frozenset({SeededBug.KAFKA_17507}) if bug else frozenset(),
                                       materialize_hook=self.held.append if hold else None)
        self.groups.load_all()
        self.txn.load_all()

    def run(self, done: Completion[Any]) -> Any:
        for _ in range(200):
            if done.done:
                return done.result()
            self.drive()
        raise AssertionError("not done")

    def drive(self) -> None:
        self.txn.poll()
        self.txn.flush()
        self.groups.poll()  # type: ignore[union-attr]

    def state(self, txn_id: str) -> str:
        shard = self.txn.runtime.shard_for(txn_id)
        return str(shard.get("Transaction", (txn_id,))["state"])  # type: ignore[index]

    def commit_offsets(self, pid: int, epoch: int, offset: int) -> str:
        assert self.run(self.txn.add_offsets("tx", pid, epoch, "g")) == "NONE"
        req = TxnOffsetCommitRequest("tx", pid, epoch, "g", (("orders", (OffsetCommitPartition(0, offset),)),))
        response = self.run(self.groups.txn_offset_commit(req))  # type: ignore[union-attr]
        return str(response.topics[0][1][0][1])

    def committed(self) -> Any:
        fetch = self.groups.offset_fetch(OffsetFetchRequest("g", (("orders", (0,)),), require_stable=True))  # type: ignore[union-attr]
        (fetched,) = self.run(fetch).topics[0][1]
        return fetched.offset if fetched.error == "NONE" else fetched.error


def test_end_to_end_the_marker_answer_follows_materialisation(tmp_path: Path) -> None:
    c = Cluster(tmp_path)
    init = c.run(c.txn.init_producer_id("tx", 60_000))
    pid, epoch = init.producer_id, init.producer_epoch
    assert c.commit_offsets(pid, epoch, 42) == "NONE"
    assert c.committed() == "UNSTABLE_OFFSET_COMMIT"
    assert c.run(c.txn.end_txn("tx", pid, epoch, "COMMIT", 3)).error == "NONE"
    for _ in range(10):
        c.drive()
    assert c.state("tx") == "CompleteCommit" and c.committed() == 42
    marker = c.sink.index(lambda r: r["machine"] == "PartitionProducer" and r["event"] == "WriteMarker")
    complete = c.sink.index(lambda r: r["machine"] == "Transaction" and r["to_state"] == "CompleteCommit")
    assert marker < complete


def test_verification_refuses_offsets_outside_the_transaction(tmp_path: Path) -> None:
    c = Cluster(tmp_path)
    init = c.run(c.txn.init_producer_id("tx", 60_000))
    req = TxnOffsetCommitRequest("tx", init.producer_id, init.producer_epoch, "g",
                                 (("orders", (OffsetCommitPartition(0, 1),)),))
    response = c.run(c.groups.txn_offset_commit(req))  # type: ignore[union-attr]
    assert response.topics[0][1][0][1] not in ("NONE",), "AddOffsetsToTxn was never called"


def test_with_the_bug_switch_complete_commit_precedes_materialisation(tmp_path: Path) -> None:
    c = Cluster(tmp_path, bug=True, hold=True)
    init = c.run(c.txn.init_producer_id("tx", 60_000))
    pid, epoch = init.producer_id, init.producer_epoch
    c.commit_offsets(pid, epoch, 42)
    c.run(c.txn.end_txn("tx", pid, epoch, "COMMIT", 3))
    for _ in range(10):
        c.drive()
    assert c.state("tx") == "CompleteCommit" and c.held, "the marker was answered, its offsets not yet settled"
    assert c.committed() == "UNSTABLE_OFFSET_COMMIT"
    # the next transaction of the same producer commits offsets before the old completion runs
    assert c.commit_offsets(pid, epoch, 99) == "NONE"
    c.held.pop()()
    complete = c.sink.index(lambda r: r["machine"] == "Transaction" and r["to_state"] == "CompleteCommit")
    marker = c.sink.index(lambda r: r["machine"] == "PartitionProducer" and r["event"] == "WriteMarker")
    assert complete < marker, "the trace shows the KAFKA-17507 ordering violation"
    assert c.committed() == 99, "the old completion materialised the next transaction's offset"
