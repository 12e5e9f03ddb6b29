"""Shared helpers for the partition side's tests: a manager on real files, a manual clock, recorded traces, a scriptable
transaction-coordinator verifier, batch builders and readers of what is on disk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.impl.interfaces import TopicPartition, TxnMarker
from kcoord.impl.partition import (
    FetchResult,
    IsolationLevel,
    PartitionConfig,
    PartitionManager,
    ProduceResult,
    committed_records,
)
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.storage.batch import Record, RecordBatch
from kcoord.impl.storage.log import read_partition_dir

T0_MS = 1_700_000_000_000
TOPIC = "orders"
TP = TopicPartition(TOPIC, 0)


@dataclass
class FakeVerifier:
    """The transaction coordinator's verify-only AddPartitionsToTxn: NONE for a partition the test added to the
    producer's transaction, TRANSACTION_ABORTABLE otherwise (or a forced answer). With `hold`, answers wait for
    `release`."""

    added: dict[int, set[TopicPartition]] = field(default_factory=dict)
    forced: str | None = None
    hold: bool = False
    calls: list[tuple[str, int, int, TopicPartition]] = field(default_factory=list)
    held: list[tuple[Completion[str], str]] = field(default_factory=list)
    add_answers: list[str] = field(default_factory=list)
    asks: list[tuple[str, int, int, tuple[TopicPartition, ...]]] = field(default_factory=list)  # verify_partitions
    failure: BaseException | None = None  # verify_partitions fails with it (the request to the coordinator failed)

    def add(self, producer_id: int, *tps: TopicPartition) -> None:
        self.added.setdefault(producer_id, set()).update(tps or (TP,))

    def remove(self, producer_id: int) -> None:
        self.added.pop(producer_id, None)

    def verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         partition: TopicPartition) -> Completion[str]:
        self.calls.append((transactional_id, producer_id, producer_epoch, partition))
        answer = self.forced or ("NONE" if partition in self.added.get(producer_id, ()) else "TRANSACTION_ABORTABLE")
        done: Completion[str] = Completion()
        if self.hold:
            self.held.append((done, answer))
        else:
            done.set(answer)
        return done

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[Mapping[TopicPartition, str]]:
        """One ask for several partitions (recorded in `asks`), each answered as `verify_partition` answers it (and
        recorded in `calls` as it would be)."""
        self.asks.append((transactional_id, producer_id, producer_epoch, tuple(partitions)))
        done: Completion[Mapping[TopicPartition, str]] = Completion()
        if self.failure is not None:
            done.fail(self.failure)
            return done
        each = {tp: self.verify_partition(transactional_id, producer_id, producer_epoch, tp) for tp in partitions}
        return _all_answered(each, done)

    def add_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      partition: TopicPartition) -> Completion[str]:
        """Transactions V2's add: the next of `add_answers` (then NONE, or the forced answer); NONE adds the
        partition to the producer's transaction. Recorded in `calls` with the transactional id prefixed `add:`."""
        self.calls.append((f"add:{transactional_id}", producer_id, producer_epoch, partition))
        answer = self.add_answers.pop(0) if self.add_answers else (self.forced or "NONE")
        if answer == "NONE":
            self.add(producer_id, partition)
        done: Completion[str] = Completion()
        if self.hold:
            self.held.append((done, answer))
        else:
            done.set(answer)
        return done

    def add_partitions_v2(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[Mapping[TopicPartition, str]]:
        """One ask for several adds (recorded in `asks` with the transactional id prefixed `add:`), each answered
        as `add_partition` answers it (and recorded in `calls` as it would be)."""
        self.asks.append((f"add:{transactional_id}", producer_id, producer_epoch, tuple(partitions)))
        each = {tp: self.add_partition(transactional_id, producer_id, producer_epoch, tp) for tp in partitions}
        return _all_answered(each, Completion())

    def release(self, index: int = 0) -> None:
        done, answer = self.held.pop(index)
        done.set(answer)


@dataclass
class Env:
    """A manager on `tmp_path`, with its clock, trace sink and verifier."""

    path: Path
    clock: ManualClock
    sink: MemorySink
    verifier: FakeVerifier
    config: PartitionConfig
    manager: PartitionManager
    opened: list[PartitionManager] = field(default_factory=list)

    def reopen(self, **overrides: Any) -> PartitionManager:
        """A new manager on the same directory (the old one must be closed, or be a crashed one)."""
        self.manager = PartitionManager(self.path, clock=self.clock, tracer=Tracer(self.sink), verifier=self.verifier,
                                        config=overrides.pop("config", self.config), **overrides)
        self.opened.append(self.manager)
        return self.manager

    @property
    def part(self) -> Any:
        part = self.manager.partition(TP)
        assert part is not None
        return part

    def state(self, producer_id: int) -> dict[str, Any] | None:
        return self.part.states.get(producer_id)

    def produce(self, batch: RecordBatch | bytes, *, txn_id: str | None = "txn", acks: int = -1, **kw: Any
                ) -> ProduceResult:
        done = self.manager.produce(TOPIC, 0, batch, acks=acks, transactional_id=txn_id, **kw)
        return done.result()

    def marker(self, producer_id: int, epoch: int, result: str, coordinator_epoch: int = 0,
               tps: tuple[TopicPartition, ...] = (TP,)) -> dict[TopicPartition, str]:
        answers = self.manager.write_txn_markers([TxnMarker(producer_id, epoch, result, coordinator_epoch, tps)])
        return dict(answers.result()[0])

    def on_disk(self) -> list[RecordBatch]:
        """The partition's batches as an independent reader sees the files."""
        return list(read_partition_dir(self.path / str(TP)))

    def rows(self) -> list[dict[str, Any]]:
        return self.sink.rows.get("PartitionProducer", [])


def make_env(tmp_path: Path, config: PartitionConfig | None = None, **kw: Any) -> Iterator[Env]:
    clock = ManualClock(T0_MS)
    sink = MemorySink()
    verifier = FakeVerifier()
    config = config or PartitionConfig()
    manager = PartitionManager(tmp_path, clock=clock, tracer=Tracer(sink), verifier=verifier, config=config, **kw)
    assert manager.create_topic(TOPIC, 1) == "NONE"
    e = Env(tmp_path, clock, sink, verifier, config, manager, [manager])
    try:
        yield e
    finally:
        for m in e.opened:
            m.close()


def batch(producer_id: int = -1, epoch: int = 0, seq: int = 0, n: int = 1, *, txn: bool = False,
          ts_ms: int = T0_MS, tag: str = "r", names: Sequence[str] | None = None) -> RecordBatch:
    """A client batch of `n` records (values `names`, else `tag-<seq+i>`), base offset 0 as producers send them."""
    names = names or [f"{tag}-{seq + i}" for i in range(n)]
    records = [Record(i, ts_ms + i, f"k{i}".encode(), name.encode(), (("h", b"x"),)) for i, name in enumerate(names)]
    return RecordBatch.of(records, producer_id=producer_id, producer_epoch=epoch if producer_id >= 0 else -1,
                          base_sequence=seq if producer_id >= 0 else -1, is_transactional=txn)


def values(records: list[Record]) -> list[str]:
    return [r.value.decode() for r in records if r.value is not None]


def read_all(manager: PartitionManager, isolation: IsolationLevel, tp: TopicPartition = TP,
             max_bytes: int = 200) -> tuple[list[Record], list[FetchResult]]:
    """Fetch from the log start until the isolation level's bound, like a consumer; small fetches on purpose."""
    offset = manager.list_offsets(tp.topic, tp.partition, -2).offset
    records: list[Record] = []
    fetches: list[FetchResult] = []
    for _ in range(10_000):
        result = manager.fetch(tp.topic, tp.partition, offset, max_bytes, isolation)
        assert result.error == "NONE", result
        fetches.append(result)
        if result.next_offset is None:
            return records, fetches
        records += committed_records(result)
        offset = result.next_offset
    raise AssertionError("a read did not end")


def _all_answered(each: Mapping[TopicPartition, Completion[str]],
                  done: Completion[Mapping[TopicPartition, str]]) -> Completion[Mapping[TopicPartition, str]]:
    """`done`, set to every partition's answer once the last of `each` is answered."""
    left = [len(each)]

    def one(_: Completion[str]) -> None:
        left[0] -= 1
        if left[0] == 0:
            done.set({tp: answer.result() for tp, answer in each.items()})

    for answer in each.values():
        answer.then(one)
    return done
