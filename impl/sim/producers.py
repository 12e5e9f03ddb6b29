"""Simulated transactional producers: plain ones (TV1 and TV2 clients), Streams-like consume-transform-produce tasks
(TV2, offsets committed in the transaction) and the zombies a crash can leave behind.

Owns: `TxnProducer` (InitProducerId → AddPartitionsToTxn → Produce → [AddOffsetsToTxn → TxnOffsetCommit] → EndTxn,
with the client's reactions to retriable, abortable and fatal answers, and the request_duplicate fault: an EndTxn
whose answer is lost is retried, and the first request arrives once more later) and `Zombie` (a dead incarnation
that keeps sending at its old epoch). Clients keep their own sequence numbers per partition, reset when the epoch
moves, as Kafka's TransactionManager does.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from typing import Any

from ..errors import Errors
from ..group.messages import OffsetCommitPartition, TxnOffsetCommitRequest, TxnOffsetCommitResponse
from ..interfaces import TopicPartition
from ..partition import IsolationLevel, committed_records
from ..partition.types import ProduceResult
from ..storage.batch import Record, RecordBatch
from ..txn.responses import EndTxnResponse, InitProducerIdResponse
from .world import FATAL, RETRIABLE, Client, World

OUT_TOPIC = "events"
IN_TOPIC = "input"


class TxnProducer(Client):
    kind = "producer"

    def __init__(self, world: World, transactional_id: str, *, tv2: bool, group_id: str | None = None) -> None:
        super().__init__(world, transactional_id)
        self.transactional_id = transactional_id
        self.tv2 = tv2
        self.group_id = group_id  # a Streams-like task commits its input offsets to this group in each transaction
        self.producer_id = -1
        self.epoch = -1
        self.sequences: dict[TopicPartition, int] = {}
        self.partitions: list[TopicPartition] = []
        self.input_partition = 0  # a task consumes one partition of OUT_TOPIC (set by the simulation)
        self.position = 0  # the task's consumer position there
        self.attempts = 0
        self.in_txn = False  # partitions were added and the transaction has not ended
        self.crashed_in_txn = False

    # ------------------------------------------------------------ lifecycle

    def on_start(self) -> None:
        self.producer_id, self.epoch = -1, -1
        self.sequences = {}
        self.later(self.world.rng.randint(0, 50), self.init)

    def on_crash(self) -> None:
        world = self.world
        self.crashed_in_txn = self.in_txn
        if world.fault_on("zombie_producer") and self.producer_id >= 0 and world.chance(world.config.zombie_share):
            world.stats.faults["zombie_producer"] += 1
            Zombie(self).haunt()

    @property
    def coordinator(self) -> Any:
        return self.world.cluster.node_for_coordinator("transaction", self.transactional_id).txn

    def retry(self, step: Any) -> None:
        self.attempts += 1
        self.later(self.backoff_ms() * min(self.attempts, 10), step)

    def restart_producer(self) -> None:
        """A fatal answer: the application closes this producer and starts a new one (InitProducerId again)."""
        self.world.stats.clients["producer_fatal"] += 1
        self.in_txn = False
        self.producer_id, self.epoch = -1, -1
        self.later(self.world.rng.randint(50, 500), self.init)

    def set_epoch(self, producer_id: int, epoch: int) -> None:
        if (producer_id, epoch) != (self.producer_id, self.epoch):
            self.sequences = {}
        self.producer_id, self.epoch = producer_id, epoch

    # ------------------------------------------------------------ InitProducerId

    def init(self) -> None:
        world = self.world
        if (self.crashed_in_txn and world.fault_on("disk_append_error")
                and world.chance(world.config.fence_disk_error_share)):
            world.stats.faults["disk_append_error"] += int(self._fail_next_txn_append())
        self.crashed_in_txn = False
        self.call(lambda: self.coordinator.init_producer_id(self.transactional_id, world.config.txn_timeout_ms),
                  self.on_init)

    def _fail_next_txn_append(self) -> bool:
        """The disk fault at the worst moment: the next append to this id's `__transaction_state` partition (a
        fence, when a transaction of the previous incarnation is still open) fails."""
        cluster = self.world.cluster
        partition = cluster.coordinator_partition("transaction", self.transactional_id)
        shard = cluster.node_for_coordinator("transaction", self.transactional_id).txn.runtime.shards.get(partition)
        if shard is None or shard.log is None:
            return False
        shard.log.fail_next_append()
        return True

    def on_init(self, answer: InitProducerIdResponse | str) -> None:
        error = answer if isinstance(answer, str) else answer.error
        if error == Errors.NONE and isinstance(answer, InitProducerIdResponse):
            self.attempts = 0
            self.set_epoch(answer.producer_id, answer.producer_epoch)
            self.sequences = {}
            self.later(self.world.rng.randint(1, 30), self.begin)
        else:
            self.world.stats.clients[f"init_{error}"] += 1
            self.retry(self.init)

    # ------------------------------------------------------------ one transaction

    def begin(self) -> None:
        rng = self.world.rng
        if self.group_id is not None and (self.consume() == 0 or rng.random() < 0.3):
            # nothing new, or every record filtered out: the transaction holds only the input offsets
            self.partitions = []
            self.in_txn = True
            self.after_produce()
            return
        n = self.world.topics[OUT_TOPIC]
        self.partitions = sorted({TopicPartition(OUT_TOPIC, rng.randrange(n)) for _ in range(rng.randint(1, 2))})
        pid, epoch = self.producer_id, self.epoch
        version = 2 if self.tv2 else 0
        self.call(lambda: self.coordinator.add_partitions(self.transactional_id, pid, epoch, self.partitions,
                                                          version), self.on_added)

    def on_added(self, answer: dict[TopicPartition, str] | str) -> None:
        errors = {answer} if isinstance(answer, str) else set(answer.values())
        if errors == {Errors.NONE}:
            self.attempts = 0
            self.in_txn = True
            self.produce(list(self.partitions))
        else:
            self.react(errors, self.begin)

    def produce(self, left: list[TopicPartition]) -> None:
        if not left:
            self.after_produce()
            return
        tp = left[0]
        count = self.world.rng.randint(1, 3)
        sequence = self.sequences.get(tp, 0)
        batch = RecordBatch.of([Record(i, self.world.clock.now_ms(), b"k", f"{self.name}-{sequence + i}".encode())
                                for i in range(count)], producer_id=self.producer_id,
                               producer_epoch=self.epoch, base_sequence=sequence, is_transactional=True)

        def on_produced(answer: ProduceResult | str) -> None:
            error = answer if isinstance(answer, str) else answer.error
            if error == Errors.NONE:
                self.sequences[tp] = sequence + count
                self.produce(left[1:])
            else:
                self.react({error}, lambda: self.produce(left))

        self.call(lambda: self.world.cluster.partitions.produce(tp.topic, tp.partition, batch,
                                                                transactional_id=self.transactional_id), on_produced)

    def consume(self) -> int:
        """Consume-transform-produce: read what is committed past the position in the input partition
        (read_committed, answered at once); returns how many records the transaction transforms."""
        fetched = self.world.cluster.partitions.fetch(OUT_TOPIC, self.input_partition, self.position, 16_384,
                                                      IsolationLevel.READ_COMMITTED)
        if fetched.error != Errors.NONE or not fetched.batches:
            return 0
        self.position = fetched.batches[-1].last_offset + 1
        return len(committed_records(fetched))

    def after_produce(self) -> None:
        if self.group_id is None:
            self.end()
            return
        pid, epoch, group = self.producer_id, self.epoch, self.group_id
        self.call(lambda: self.coordinator.add_offsets(self.transactional_id, pid, epoch, group, 2 if self.tv2 else 0),
                  self.on_offsets_added)

    def on_offsets_added(self, error: str) -> None:
        if error != Errors.NONE:
            self.react({error}, self.after_produce)
            return
        assert self.group_id is not None
        partition, offset = self.input_partition, self.position
        request = TxnOffsetCommitRequest(self.transactional_id, self.producer_id, self.epoch, self.group_id,
                                         ((OUT_TOPIC, (OffsetCommitPartition(partition, offset),)),))
        groups = self.world.cluster.node_for_coordinator("group", self.group_id).groups
        self.call(lambda: groups.txn_offset_commit(request), self.on_offsets_committed)

    def on_offsets_committed(self, answer: TxnOffsetCommitResponse | str) -> None:
        errors = {answer} if isinstance(answer, str) else {e for _, parts in answer.topics for _, e in parts}
        if errors == {Errors.NONE}:
            self.end()
        else:
            self.react(errors, self.on_offsets_added_again)

    def on_offsets_added_again(self) -> None:
        self.on_offsets_added(Errors.NONE)

    def end(self, result: str | None = None) -> None:
        world = self.world
        if result is None:
            result = "COMMIT" if world.chance(0.85) else "ABORT"
        pid, epoch, version = self.producer_id, self.epoch, 5 if self.tv2 else 3

        def send() -> Any:
            return self.coordinator.end_txn(self.transactional_id, pid, epoch, result, version)

        if world.fault_on("request_duplicate") and world.chance(world.config.duplicate_share):
            # the answer is lost: the request reaches the coordinator; the client times out and retries, and the
            # network delivers the first request once more, late
            world.stats.faults["request_duplicate"] += 1
            retry_ms = world.rng.randint(40, 120)
            world.scheduler.after(world.latency_ms(), send)
            world.scheduler.after(retry_ms + world.rng.randint(10, 200), send)
            self.later(retry_ms, lambda: self.call(send, lambda a: self.on_ended(a, result)))
            return
        self.call(send, lambda answer: self.on_ended(answer, result))

    def on_ended(self, answer: EndTxnResponse | str, result: str) -> None:
        error = answer if isinstance(answer, str) else answer.error
        if error == Errors.NONE and isinstance(answer, EndTxnResponse):
            self.attempts = 0
            self.in_txn = False
            self.world.stats.clients["txn_" + result.lower()] += 1
            if self.tv2 and answer.producer_id >= 0:
                self.set_epoch(answer.producer_id, answer.producer_epoch)
            self.later(self.world.rng.randint(1, 40), self.begin)
        elif error in RETRIABLE:
            self.retry(lambda: self.end(result))
        else:
            self.react({error}, lambda: self.end(result))

    # ------------------------------------------------------------ errors

    def react(self, errors: set[str], again: Any) -> None:
        """Kafka's TransactionManager, simplified: fatal → a new producer; retriable → the same step later;
        anything else (TRANSACTION_ABORTABLE, OUT_OF_ORDER_SEQUENCE_NUMBER, ...) → abort the transaction."""
        if errors & FATAL:
            self.restart_producer()
        elif errors <= RETRIABLE:
            self.retry(again)
        else:
            self.world.stats.clients["producer_abortable"] += 1
            self.retry(lambda: self.end("ABORT"))


class Zombie:
    """A producer incarnation that died but whose process lingers: it keeps sending its old transaction at its old
    epoch (a produce, an AddPartitionsToTxn, an EndTxn COMMIT) for a while, ignoring every answer."""

    def __init__(self, producer: TxnProducer) -> None:
        self.world = producer.world
        self.transactional_id = producer.transactional_id
        self.producer_id = producer.producer_id
        self.epoch = producer.epoch
        self.tv2 = producer.tv2
        self.sequences = dict(producer.sequences)
        self.partitions = list(producer.partitions) or [TopicPartition(OUT_TOPIC, 0)]

    def haunt(self) -> None:
        delay = 0
        for _ in range(self.world.rng.randint(2, 5)):
            delay += self.world.rng.randint(50, 700)
            self.world.scheduler.after(delay, self.send_one)

    def send_one(self) -> None:
        world = self.world
        world.stats.clients["zombie_requests"] += 1
        choice = world.rng.randrange(3)
        coordinator = world.cluster.node_for_coordinator("transaction", self.transactional_id).txn
        if choice == 0:
            tp = self.partitions[world.rng.randrange(len(self.partitions))]
            sequence = self.sequences.get(tp, 0)
            batch = RecordBatch.of([Record(0, world.clock.now_ms(), b"z", b"zombie")], producer_id=self.producer_id,
                                   producer_epoch=self.epoch, base_sequence=sequence, is_transactional=True)
            done: Any = world.cluster.partitions.produce(tp.topic, tp.partition, batch,
                                                         transactional_id=self.transactional_id)
            done.then(lambda d: self._produced(tp, sequence, d))
        elif choice == 1:
            coordinator.add_partitions(self.transactional_id, self.producer_id, self.epoch, self.partitions,
                                       2 if self.tv2 else 0)
        else:
            coordinator.end_txn(self.transactional_id, self.producer_id, self.epoch, "COMMIT", 5 if self.tv2 else 3)

    def _produced(self, tp: TopicPartition, sequence: int, done: Any) -> None:
        answer = done.result()
        if answer.error == Errors.NONE:
            self.sequences[tp] = sequence + 1
            self.world.stats.clients["zombie_writes_accepted"] += 1
