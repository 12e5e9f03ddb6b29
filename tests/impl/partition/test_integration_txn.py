"""In process, the real transaction coordinator and the real partition side: the coordinator verifies the leader's
first transactional batch (KIP-890 part 1) and sends its markers to the partition manager through a broker-level
`BrokerMarkerTarget`; read_committed sees exactly the committed transactions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.interfaces import MarkerTarget, TopicPartition, TxnOperation
from kcoord.impl.partition import BrokerMarkerTarget, IsolationLevel, PartitionManager
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from kcoord.impl.txn import TransactionCoordinator, TxnConfig

from .helpers import T0_MS, TOPIC, batch, read_all, values

TP0, TP1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


class Node:
    """One broker: a partition manager for data topics and a transaction coordinator, wired to each other."""

    def __init__(self, path: Path) -> None:
        self.clock = ManualClock(T0_MS)
        self.sink = MemorySink()
        self.partitions = PartitionManager(path / "data", clock=self.clock, tracer=Tracer(self.sink))
        assert self.partitions.create_topic(TOPIC, 2) == "NONE"
        self.broker = BrokerMarkerTarget(self.partitions)
        store = ProducerIdBlockStore(path / "producer-ids")
        ids = ProducerIdManager(store_requester(store), clock_ms=self.clock.now_ms)
        self.coordinator = TransactionCoordinator(
            data_dir=path / "coordinator", clock=self.clock, router=self, producer_ids=ids,
            config=TxnConfig(num_partitions=1), tracer=Tracer(self.sink),
            topic_exists=lambda topic: topic in self.partitions.topic_names())
        self.partitions.verifier = self.coordinator
        self.coordinator.load_all()

    def leader_of(self, partition: TopicPartition) -> MarkerTarget | None:
        return self.broker

    def run(self, done: Completion[Any]) -> Any:
        for _ in range(100):
            if done.done:
                return done.result()
            self.settle()
        raise AssertionError("the request did not complete")

    def settle(self) -> None:
        for _ in range(20):
            self.coordinator.flush()
            self.partitions.poll()
            if not self.coordinator.poll():
                return


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.coordinator.shutdown()
    n.partitions.close()


def test_a_transaction_verified_and_completed_by_the_real_coordinator(node: Node) -> None:
    init = node.run(node.coordinator.init_producer_id("tx", 60_000))
    pid, epoch = init.producer_id, init.producer_epoch
    assert init.error == "NONE"
    assert node.run(node.coordinator.add_partitions("tx", pid, epoch, [TP0])) == {TP0: "NONE"}

    def produce(tp: TopicPartition, seq: int, tag: str) -> str:
        sent = batch(pid, epoch, seq=seq, txn=True, tag=tag)
        return str(node.run(node.partitions.produce(tp.topic, tp.partition, sent, transactional_id="tx")).error)

    assert produce(TP0, 0, "committed") == "NONE"
    assert produce(TP1, 0, "not-added") == "INVALID_TXN_STATE"  # the coordinator answered TRANSACTION_ABORTABLE
    assert node.partitions.partition(TP0).states.get(pid)["state"] == "Ongoing"  # type: ignore[union-attr,index]
    assert node.run(node.coordinator.end_txn("tx", pid, epoch, "COMMIT", 3)).error == "NONE"
    node.settle()
    part = node.partitions.partition(TP0)
    assert part is not None and part.states.get(pid)["state"] == "Known"  # type: ignore[index]
    assert values(read_all(node.partitions, IsolationLevel.READ_COMMITTED, TP0)[0]) == ["committed-0"]

    # the next transaction aborts: its records never reach a read_committed consumer
    assert node.run(node.coordinator.add_partitions("tx", pid, epoch, [TP0])) == {TP0: "NONE"}
    assert produce(TP0, 1, "aborted") == "NONE"
    assert node.run(node.coordinator.end_txn("tx", pid, epoch, "ABORT", 3)).error == "NONE"
    node.settle()
    assert [(a.producer_id, a.first_offset) for a in part.states.aborted_index] == [(pid, 2)]
    assert values(read_all(node.partitions, IsolationLevel.READ_COMMITTED, TP0)[0]) == ["committed-0"]
    assert part.last_stable_offset == part.high_watermark == 4
    described = node.run(node.coordinator.describe_transactions(["tx"]))[0]
    assert (described.error, described.state) == ("NONE", "CompleteAbort")  # every marker answered NONE


def _produce_request(node: Node, pid: int, epoch: int, *, batched: bool) -> list[str]:
    """A Produce request to TP0 (in the transaction) and TP1 (not added), as `DataHandlers.produce` makes it
    (`deferred`, then `verify_deferred`) or one partition after the other."""
    deferred: list[Any] = [] if batched else None  # type: ignore[assignment]
    answers = [node.partitions.produce(tp.topic, tp.partition, batch(pid, epoch, seq=0, txn=True, tag=str(tp)),
                                       transactional_id="tx", deferred=deferred) for tp in (TP0, TP1)]
    if batched:
        node.partitions.verify_deferred(deferred, "tx")
    return [str(node.run(answer).error) for answer in answers]


def test_a_produce_request_is_verified_once_with_the_same_answers_and_rows(tmp_path: Path) -> None:
    """KIP-890 verification of a Produce request's partitions: one submit to the transaction coordinator for all of
    them (Kafka's `AddPartitionsToTxnManager`: one verify-only request per transactional id), a VerifyPartition
    decision and trace row per partition, and the answers and rows of one verification per partition."""
    outcomes = []
    for batched in (False, True):
        node = Node(tmp_path / str(batched))
        try:
            init = node.run(node.coordinator.init_producer_id("tx", 60_000))
            pid, epoch = init.producer_id, init.producer_epoch
            assert node.run(node.coordinator.add_partitions("tx", pid, epoch, [TP0])) == {TP0: "NONE"}
            submits = []
            submit = node.coordinator._submit

            def counted(*args: Any, _submit: Any = submit, _submits: list[Any] = submits) -> Any:
                _submits.append(args[1].__name__)
                return _submit(*args)

            node.coordinator._submit = counted  # type: ignore[method-assign]
            answers = _produce_request(node, pid, epoch, batched=batched)
            assert answers == ["NONE", "INVALID_TXN_STATE"]  # TP1: the coordinator answered TRANSACTION_ABORTABLE
            assert submits == (["verify_partitions"] if batched else ["verify_partition", "verify_partition"])
            outcomes.append((answers, node.sink.rows))
        finally:
            node.coordinator.shutdown()
            node.partitions.close()
    (per_partition, per_partition_rows), (per_request, per_request_rows) = outcomes
    assert per_request == per_partition
    assert per_request_rows == per_partition_rows  # per machine, in order: the same VerifyPartition rows
    verify_rows = [r for r in per_request_rows["Transaction"] if r.get("event") == "VerifyPartition"]
    assert [(r["arg_p"], r["error"]) for r in verify_rows] == [("orders-0", "NONE"),
                                                               ("orders-1", "TRANSACTION_ABORTABLE")]


def test_a_transactions_v2_produce_request_adds_its_partitions_in_one_ask(tmp_path: Path) -> None:
    """Transactions V2 (Produce v12): the leader adds a request's partitions to the transaction in one
    AddPartitionsToTxn (Kafka's `ReplicaManager`: one `addOrVerifyTransaction` per request). Asked one partition
    after the other, the second add would meet the first's pending transition and be answered
    CONCURRENT_TRANSACTIONS, then asked again 20 ms later — once in every transaction of a client writing to two
    partitions (issue 31, i31o)."""
    node = Node(tmp_path)
    try:
        init = node.run(node.coordinator.init_producer_id("tx", 60_000))
        pid, epoch = init.producer_id, init.producer_epoch
        submits: list[str] = []
        submit = node.coordinator._submit

        def counted(*args: Any) -> Any:
            submits.append(args[1].__name__)
            return submit(*args)

        node.coordinator._submit = counted  # type: ignore[method-assign]
        deferred: list[Any] = []
        answers = [node.partitions.produce(tp.topic, tp.partition, batch(pid, epoch, seq=0, txn=True, tag=str(tp)),
                                           transactional_id="tx", deferred=deferred,
                                           operation=TxnOperation.ADD_PARTITION) for tp in (TP0, TP1)]
        node.partitions.verify_deferred(deferred, "tx")
        assert [str(node.run(answer).error) for answer in answers] == ["NONE", "NONE"]
        assert submits == ["add_partitions"]
        assert node.run(node.coordinator.add_partitions("tx", pid, epoch, [TP0, TP1])) == {TP0: "NONE", TP1: "NONE"}
    finally:
        node.coordinator.shutdown()
        node.partitions.close()
