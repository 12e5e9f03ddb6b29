"""A conformance driver for the partition side (`PartitionProducer`), for the restated ProducerStateManagerTest
scenarios: one data partition of a real `PartitionManager` on real files, driven through its public API, its trace
rows replayed on the spec's reference machine by `Lockstep`.

Owns `PartitionDriver` and its actions, each in the words of Kafka's test helpers:
- `Produce(pid, epoch, seq, n, txn)`: a client batch of `n` records (Produce, acks=1, so the answer comes as soon as
  the batch is appended);
- `CoordinatorProduce(pid, epoch)`: a transactional batch without a sequence, as the group coordinator appends
  transactional offsets (origin COORDINATOR);
- `Marker(pid, epoch, result, coordinator_epoch)`: a WriteTxnMarkers entry on the partition (`DataPartition.
  write_marker`, answered as soon as the control batch is appended, before it is durable);
- `Filler(n)`: a batch of `n` records without a producer id (other writers' data: it only moves offsets);
- `Flush`: make everything durable, so the high watermark reaches the log end (Kafka's `onHighWatermarkUpdated`);
- `Advance(ms)`: move the clock; `Expire`: run the producer-expiration check now (`removeExpiredProducers`);
- `StartVerification(pid, seq, epoch)`: the leader's KIP-890 verification entry (`maybeCreateVerificationStateEntry`);
- `Reload`: flush, close and open the partition again (Kafka's reload: here a full scan of the log).
Writes become durable only on `Flush` or `Reload`, so a test decides where the high watermark is. The transaction
coordinator's verify-only AddPartitionsToTxn is answered by `ConfirmingVerifier` (NONE: the coordinator confirms
the partition is in the transaction; the scenarios here are about what the partition does after that).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kcoord.conformance.drivers.base import (
    HELD_DURABILITY,
    START_MS,
    Action,
    Key,
    Outcome,
    Values,
    scratch_dir,
)
from kcoord.impl.interfaces import TopicPartition, TxnMarker
from kcoord.impl.partition import AppendOrigin, DataPartition, PartitionConfig, PartitionManager, ProduceResult
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.storage.batch import Record, RecordBatch

TOPIC = "test"
TP = TopicPartition(TOPIC, 0)
TXN_ID = "txn"


@dataclass
class ConfirmingVerifier:
    """The transaction coordinator's answer to a leader's verify-only AddPartitionsToTxn: always NONE (the partition
    is in the producer's transaction). Records every call."""

    calls: list[tuple[str, int, int, TopicPartition]] = field(default_factory=list)

    def verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         partition: TopicPartition) -> Completion[str]:
        self.calls.append((transactional_id, producer_id, producer_epoch, partition))
        done: Completion[str] = Completion()
        done.set("NONE")
        return done


def client_batch(pid: int, epoch: int, seq: int, n: int, txn: bool, ts_ms: int) -> RecordBatch:
    records = [Record(i, ts_ms, f"k{seq + i}".encode(), f"v{seq + i}".encode()) for i in range(n)]
    return RecordBatch.of(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn)


def produce(pid: int, epoch: int, seq: int, *, n: int = 1, txn: bool = False) -> Action:
    return Action("Produce", {"pid": pid, "epoch": epoch, "seq": seq, "n": n, "txn": txn})


def marker(pid: int, epoch: int, result: Literal["COMMIT", "ABORT"], coordinator_epoch: int = 0) -> Action:
    return Action("Marker", {"pid": pid, "epoch": epoch, "result": result, "coordinator_epoch": coordinator_epoch})


class PartitionDriver:
    """See the module docstring. `verification` is `transaction.partition.verification.enable`."""

    machines = ("PartitionProducer",)
    main = "PartitionProducer"

    def __init__(self, *, verification: bool = True) -> None:
        self.workdir = scratch_dir("kcoord-partition-scenarios-")
        self.clock = ManualClock(START_MS)
        self.sink = MemorySink()
        self.verifier = ConfirmingVerifier()
        self.config = PartitionConfig(transaction_partition_verification_enable=verification)
        self.manager = self._open()
        if self.manager.create_topic(TOPIC, 1) != "NONE":
            raise AssertionError(f"could not create {TOPIC}")
        self._row_mark = 0

    def _open(self) -> PartitionManager:
        return PartitionManager(self.workdir, clock=self.clock, tracer=Tracer(self.sink), verifier=self.verifier,
                                config=self.config, durability=HELD_DURABILITY)

    @property
    def part(self) -> DataPartition:
        part = self.manager.partition(TP)
        assert part is not None, f"{TP} is not open"
        return part

    # ------------------------------------------------------------ Driver

    def perform(self, action: Action) -> Outcome:
        responses = self._perform(action.name, action.args)
        rows = self.sink.all_rows()
        new, self._row_mark = rows[self._row_mark:], len(rows)
        return Outcome(responses, new)

    def _perform(self, name: str, a: Mapping[str, Any]) -> list[Any]:
        if name == "Produce":
            batch = client_batch(int(a["pid"]), int(a["epoch"]), int(a["seq"]), int(a.get("n", 1)),
                                 bool(a.get("txn", False)), self.clock.now_ms())
            done = self.manager.produce(TOPIC, 0, batch, acks=1, transactional_id=TXN_ID)
            assert done.done, "an acks=1 produce is answered at once"
            result: ProduceResult = done.result()
            return [result]
        if name == "CoordinatorProduce":
            records = [Record(0, self.clock.now_ms(), b"offset-key", b"offset-value")]
            batch = RecordBatch.of(records, producer_id=int(a["pid"]), producer_epoch=int(a["epoch"]),
                                   is_transactional=True)
            return [self.manager.produce(TOPIC, 0, batch, acks=1, transactional_id=TXN_ID,
                                         origin=AppendOrigin.COORDINATOR).result()]
        if name == "Marker":
            m = TxnMarker(int(a["pid"]), int(a["epoch"]), a["result"], int(a.get("coordinator_epoch", 0)), (TP,))
            appended = self.part.write_marker(m)
            self.manager.touch(self.part)  # as PartitionManager.write_markers does: its flush and poll look at it
            return [appended.result]
        if name == "Filler":
            records = [Record(i, self.clock.now_ms(), None, b"other") for i in range(int(a["n"]))]
            done = self.manager.produce(TOPIC, 0, RecordBatch.of(records), acks=1)
            return [done.result()]
        if name == "Flush":
            self.manager.flush()
            return []
        if name == "Advance":
            self.clock.advance(int(a["ms"]))
            return []
        if name == "Expire":
            return [self.part.expire_producers()]
        if name == "StartVerification":
            self.part.states.start_verification(int(a["pid"]), int(a["seq"]), int(a["epoch"]))
            return []
        if name == "Reload":
            self.manager.flush()
            self.manager.close()
            self.manager = self._open()
            return []
        raise ValueError(f"the partition driver has no action {name!r}")

    def instances(self, machine: str) -> Mapping[Key, Values]:
        if machine != self.main:
            return {}
        return {(inst["partition"], pid): dict(inst) for pid, inst in self.part.states.instances().items()}

    def check(self, action: Action, fired: Sequence[Any], outcome: Outcome) -> list[str]:
        """Every decision row names the partition this driver writes to, and a rejected produce appended nothing."""
        problems = [f"a row for {row['partition']}" for row in outcome.rows
                    if row.get("machine") == self.main and row.get("partition") != str(TP)]
        for response in outcome.responses:
            if isinstance(response, ProduceResult) and response.error not in ("NONE",) and response.base_offset != -1:
                problems.append(f"a refused produce ({response.error}) answered offset {response.base_offset}")
        return problems

    def close(self) -> None:
        try:
            self.manager.close()
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # ------------------------------------------------------------ what the scenarios look at

    def partition_view(self) -> dict[str, Any]:
        """The partition-level facts Kafka's tests assert: offsets, open transactions, the aborted index, the cached
        batches, and the verification entries (lowest sequence, epoch) of producer ids 0-7 (the scenarios use 1-3)."""
        part, states = self.part, self.part.states
        return {
            "log_end": part.log_end_offset,
            "high_watermark": part.high_watermark,
            "lso": part.last_stable_offset,
            "first_unstable": states.first_unstable_offset(),
            "open_txns": states.open_transactions(),
            "aborted": tuple((a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset)
                             for a in states.aborted_index),
            "producers": tuple(sorted(states.instances())),
            "verification": {pid: (entry.lowest_sequence, entry.epoch) for pid in range(8)
                             if (entry := states.verification_entry(pid)) is not None},
            "cached": {pid: tuple((b.first_seq, b.last_seq, b.first_offset, b.last_offset)
                                  for b in states.cached_batches(pid)) for pid in states.instances()},
        }
