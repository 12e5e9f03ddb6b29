"""One data partition on its only replica: its log, its producer state, its offsets, and what it answers.

Owns `DataPartition`:
- `produce`: a validated batch through the spec (`Append` for clients, `CoordinatorAppend` for the group
  coordinator's transactional offsets; a batch without a producer id is appended unchecked), then the append at
  the log end offset, then the decision applied. A rejection (the spec's check rows and error rows) appends
  nothing; a duplicate of a cached batch answers the original offsets with no error;
- `write_marker`: the spec's `WriteMarker`, then a COMMIT/ABORT control batch (transactional, control, the marker's
  producer epoch, one `EndTxnMarker` record carrying the coordinator epoch);
- offsets: the high watermark is the durable end offset (one replica: an offset is committed once it is fsynced);
  the last stable offset is the first unstable offset if below the high watermark, else the high watermark;
- `read` (Fetch) and `list_offset` (ListOffsets) under both isolation levels, `read_committed` bounded by the LSO and
  answered with the aborted transactions overlapping the fetched range;
- durability waits (acks=-1, markers) released as the high watermark passes them, and the periodic producer
  expiration (`producer.id.expiration.check.interval.ms`), both driven by `poll`.
Producer-state recovery: on open the whole log is scanned once (`PartitionLog.open(on_batch=...)`) and every batch
with a producer id is replayed into the producer state (Kafka also keeps `.snapshot` files to shorten that scan;
a full scan gives the same state). The aborted-transaction index is rebuilt by the same scan rather than kept in
`.txnindex` files, so it can never disagree with a log whose torn tail recovery cut off.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from .._generated.partition_producer import Event as PartitionProducerEvent
from ..errors import Errors
from ..interfaces import TopicPartition, TxnMarker
from ..runtime.clock import Clock
from ..runtime.trace import Tracer
from ..statemachine import Decision, MachineTable
from ..storage._files import DamagedFileError, SyncLater
from ..storage.batch import ControlType, RecordBatch, encode_batch
from ..storage.log import Durability, OffsetOutOfRangeError
from .data_log import DataLog, begin_leader_epoch
from .producer_state import BatchMetadata, ProducerStateManager, VerificationGuard, last_sequence_of
from .types import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AbortedTransaction,
    AppendOrigin,
    FetchResult,
    IsolationLevel,
    ListOffsetsResult,
    PartitionConfig,
    ProduceResult,
)


@dataclass(slots=True)
class Verification:
    """What the leader knows about a transactional batch's verification when it appends: the guard it created
    before asking the coordinator (None when it did not ask), and whether the coordinator confirmed. Treated as
    immutable; not `frozen` (one per transactional append: a frozen constructor costs ~4× as much)."""

    guard: VerificationGuard | None = None
    confirmed: bool = False


@dataclass(slots=True)
class Appended:
    """A produce or marker answer, and the end offset that must be durable before it may be sent (-1: none).
    Treated as immutable; not `frozen` (one per append: a frozen constructor costs ~4× as much)."""

    result: ProduceResult
    required_offset: int = -1


class DataPartition:
    """See the module docstring. Open with `DataPartition.open`."""

    def __init__(self, tp: TopicPartition, log: DataLog, states: ProducerStateManager, *, topic_id: UUID,
                 clock: Clock, config: PartitionConfig, leader_epoch: int,
                 leader_epochs: list[tuple[int, int]]) -> None:
        self.tp = tp
        self.log = log
        self.states = states
        self.topic_id = topic_id
        self.clock = clock
        self.config = config
        self.leader_epoch = leader_epoch
        self._leader_epochs = leader_epochs  # (epoch, start offset), ascending
        self._waiters: list[tuple[int, Callable[[], None]]] = []
        self._next_expiration_check_ms = clock.now_ms() + config.producer_id_expiration_check_interval_ms

    @classmethod
    def open(cls, tp: TopicPartition, directory: Path, *, topic_id: UUID, table: MachineTable, tracer: Tracer,
             clock: Clock, config: PartitionConfig, durability: Durability | None = None,
             later: SyncLater | None = None) -> DataPartition:
        """Open (creating if needed) the partition's log, rebuild its producer state, begin a new leader epoch.
        `later`: its files are made durable by `later.sync()` (see `PartitionLog.open`, `begin_leader_epoch`): the
        partition must not answer anything before that sync."""
        states = ProducerStateManager(str(tp), table=table, tracer=tracer, clock=clock, leader_epoch=-1)
        log = DataLog.open(directory, segment_bytes=config.segment_bytes, durability=durability,
                           clock_ms=clock.now_ms, on_batch=states.replay_batch, later=later)
        assert isinstance(log, DataLog)
        try:
            epochs = begin_leader_epoch(directory, log.log_end_offset, later)
        except DamagedFileError:
            log.close()
            raise
        epoch = epochs[-1][0]
        states.leader_epoch = epoch
        states.finish_load(log.durable_offset)
        partition = cls(tp, log, states, topic_id=topic_id, clock=clock, config=config, leader_epoch=epoch,
                        leader_epochs=epochs)
        partition.expire_producers()
        return partition

    # ------------------------------------------------------------------------------------------ offsets

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        """Single replica: everything durable is replicated to every in-sync replica."""
        return self.log.durable_offset

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.states.first_unstable_offset()
        hw = self.high_watermark
        return first_unstable if first_unstable is not None and first_unstable < hw else hw

    def leader_epoch_at(self, offset: int) -> int:
        """The leader epoch that wrote `offset` (the latest epoch starting at or before it)."""
        found = [epoch for epoch, start in self._leader_epochs if start <= offset]
        return found[-1] if found else self.leader_epoch

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch (KIP-320), as Kafka's `LeaderEpochFileCache.endOffsetFor`: (epoch, end offset) — the
        latest epoch at or below the requested one and where the next epoch starts (the log end offset for the
        current epoch); (-1, -1) for an undefined or a future epoch."""
        if requested_epoch < 0 or requested_epoch > self.leader_epoch:
            return -1, -1
        if requested_epoch == self.leader_epoch:
            return requested_epoch, self.log_end_offset
        higher = next(((e, start) for e, start in self._leader_epochs if e > requested_epoch), None)
        if higher is None:
            return requested_epoch, self.log_end_offset
        floor = [e for e, _ in self._leader_epochs if e <= requested_epoch]
        return (floor[-1] if floor else requested_epoch), higher[1]

    # ------------------------------------------------------------------------------------------ produce

    def produce(self, batch: RecordBatch, origin: AppendOrigin, verification: Verification) -> Appended:
        """Validate `batch` (already past the front door) against the producer's state and append it."""
        producer_id = batch.producer_id
        if producer_id < 0:
            return self._append(batch)
        verification_ok = (not self.config.transaction_partition_verification_enable
                           or (verification.confirmed
                               and self.states.verification_matches(producer_id, verification.guard)))
        if origin is AppendOrigin.CLIENT:
            return self._produce_client(batch, verification_ok)
        args: dict[str, Any] = dict(epoch=batch.producer_epoch, verification_ok=verification_ok,
                                    first_offset=self.log_end_offset, timestamp_ms=batch.max_timestamp_ms)
        decision = self.states.decide(producer_id, PartitionProducerEvent.CoordinatorAppend, args)
        return self._decided(batch, decision, args, cache=False)

    def _produce_client(self, batch: RecordBatch, verification_ok: bool) -> Appended:
        producer_id, epoch = batch.producer_id, batch.producer_epoch
        first_seq, last_seq = batch.base_sequence, last_sequence_of(batch)
        duplicate = self.states.find_duplicate(producer_id, epoch, first_seq, last_seq)
        args: dict[str, Any] = dict(
            epoch=epoch, first_seq=first_seq, last_seq=last_seq, transactional=batch.is_transactional,
            is_duplicate=duplicate is not None, verification_ok=verification_ok,
            verification_lowest_seq=self.states.verification_lowest_seq(producer_id),
            first_offset=self.log_end_offset, timestamp_ms=batch.max_timestamp_ms)
        decision = self.states.decide(producer_id, PartitionProducerEvent.Append, args)
        if not decision.accepted and decision.error == Errors.NONE:
            assert duplicate is not None, "the spec answered a duplicate the cache did not find"
            self.states.reject(producer_id, decision, args)
            # Kafka answers the original batch's offsets and puts its max timestamp in log_append_time
            return Appended(ProduceResult(Errors.NONE, duplicate.first_offset, duplicate.timestamp_ms,
                                          self.log_start_offset), duplicate.last_offset + 1)
        return self._decided(batch, decision, args, cache=True)

    def _decided(self, batch: RecordBatch, decision: Decision, args: dict[str, Any], *, cache: bool) -> Appended:
        """Append an accepted decision's batch and apply the decision; answer a rejection."""
        producer_id = batch.producer_id
        if not decision.accepted:
            # no message: Kafka 4.0 gives one only for a RecordValidationException, never for a sequence or epoch
            # refusal (the trace row says which spec row refused)
            self.states.reject(producer_id, decision, args)
            return Appended(ProduceResult(decision.error, log_start_offset=self.log_start_offset))
        try:
            info = self.log.append_batch(batch, partition_leader_epoch=self.leader_epoch)
        except OSError as e:
            return Appended(ProduceResult(Errors.KAFKA_STORAGE_ERROR, error_message=str(e)))
        assert info.base_offset == args["first_offset"], "the batch went elsewhere than the spec was told"
        meta = BatchMetadata(batch.base_sequence, last_sequence_of(batch), info.base_offset, info.last_offset,
                             batch.max_timestamp_ms) if cache else None
        self.states.apply(producer_id, decision, args, batch=meta, transactional_batch=batch.is_transactional)
        self._advance()
        return Appended(ProduceResult(Errors.NONE, info.base_offset, -1, self.log_start_offset), info.last_offset + 1)

    def _append(self, batch: RecordBatch) -> Appended:
        """A batch without a producer id: no producer state to check."""
        try:
            info = self.log.append_batch(batch, partition_leader_epoch=self.leader_epoch)
        except OSError as e:
            return Appended(ProduceResult(Errors.KAFKA_STORAGE_ERROR, error_message=str(e)))
        self._advance()
        return Appended(ProduceResult(Errors.NONE, info.base_offset, -1, self.log_start_offset), info.last_offset + 1)

    # ------------------------------------------------------------------------------------------ markers

    def write_marker(self, marker: TxnMarker) -> Appended:
        """The spec's WriteMarker for `marker`'s producer; if accepted, its control batch."""
        now_ms = self.clock.now_ms()
        producer_id = marker.producer_id
        args: dict[str, Any] = dict(result=marker.result, epoch=marker.producer_epoch,
                                    marker_coordinator_epoch=marker.coordinator_epoch, timestamp_ms=now_ms)
        decision = self.states.decide(producer_id, PartitionProducerEvent.WriteMarker, args)
        if not decision.accepted:
            self.states.reject(producer_id, decision, args)
            return Appended(ProduceResult(decision.error))
        try:
            info = self.log.append_marker(ControlType[marker.result], marker.coordinator_epoch, producer_id,
                                          marker.producer_epoch, now_ms, partition_leader_epoch=self.leader_epoch)
        except OSError as e:
            return Appended(ProduceResult(Errors.KAFKA_STORAGE_ERROR, error_message=str(e)))
        self.states.apply(producer_id, decision, args, marker_offset=info.base_offset, transactional_batch=True,
                          marker_epoch=args["epoch"])
        self._advance()
        return Appended(ProduceResult(Errors.NONE, info.base_offset, -1, self.log_start_offset), info.last_offset + 1)

    # ------------------------------------------------------------------------------------------ durability

    def _advance(self) -> None:
        """The high watermark may have moved: stabilise completed transactions, release durability waits."""
        hw = self.high_watermark
        self.states.on_high_watermark(hw)
        if self._waiters:
            ready = [w for w in self._waiters if w[0] <= hw]
            self._waiters = [w for w in self._waiters if w[0] > hw]
            for _, callback in ready:
                callback()

    def when_durable(self, required_offset: int, callback: Callable[[], None]) -> None:
        """Run `callback` once the high watermark reaches `required_offset` (now, if it already has)."""
        if required_offset <= self.high_watermark:
            callback()
        else:
            self._waiters.append((required_offset, callback))

    def poll(self, now_ms: int) -> None:
        """Group commit and producer expiration, when due."""
        self.log.flush_if_due(now_ms)
        self._advance()
        if now_ms >= self._next_expiration_check_ms:
            self.expire_producers()

    def flush(self) -> None:
        self.log.flush()
        self._advance()

    @property
    def settled(self) -> bool:
        """Nothing pending: every append durable and no one waiting for durability (`PartitionManager` stops
        polling it until it is written again)."""
        log = self.log
        return log.durable_offset == log.log_end_offset and not self._waiters

    @property
    def next_expiration_check_ms(self) -> int:
        """When `poll` next checks for producers to expire."""
        return self._next_expiration_check_ms

    def next_deadline_ms(self) -> int:
        due = self.log.next_flush_due_ms
        return min(due, self._next_expiration_check_ms) if due is not None else self._next_expiration_check_ms

    def expire_producers(self) -> list[int]:
        """`removeExpiredProducers` now; the next check is one interval later."""
        now_ms = self.clock.now_ms()
        self._next_expiration_check_ms = now_ms + self.config.producer_id_expiration_check_interval_ms
        return self.states.expire(now_ms, self.config.producer_id_expiration_ms)

    # ------------------------------------------------------------------------------------------ reads

    def read(self, offset: int, max_bytes: int, isolation: IsolationLevel) -> FetchResult:
        """Fetch: whole batches from the one holding `offset`, below the HW (read_uncommitted) or the LSO
        (read_committed, with the aborted transactions overlapping what was read); at least one batch if any."""
        hw, lso = self.high_watermark, self.last_stable_offset
        common: dict[str, Any] = dict(high_watermark=hw, last_stable_offset=lso,
                                      log_start_offset=self.log_start_offset, isolation_level=isolation,
                                      fetch_offset=offset)
        if not self.log_start_offset <= offset <= self.log_end_offset:
            return FetchResult(Errors.OFFSET_OUT_OF_RANGE, **common)
        committed = isolation is IsolationLevel.READ_COMMITTED
        max_offset = lso if committed else hw
        batches: list[RecordBatch] = []
        if offset < max_offset:
            try:
                for batch in self.log.read(offset, max_bytes=max(max_bytes, 1)):
                    if batch.base_offset >= max_offset:
                        break
                    batches.append(batch)
            except OffsetOutOfRangeError:
                return FetchResult(Errors.OFFSET_OUT_OF_RANGE, **common)
        aborted = None
        if committed:
            upper = batches[-1].next_offset if batches else offset
            aborted = tuple(AbortedTransaction(a.producer_id, a.first_offset)
                            for a in self.states.collect_aborted(offset, upper)) if batches else ()
        return FetchResult(Errors.NONE, aborted_transactions=aborted, batches=tuple(batches),
                           records=b"".join(encode_batch(b) for b in batches), **common)

    def list_offset(self, timestamp_ms: int, isolation: IsolationLevel) -> ListOffsetsResult:
        """ListOffsets: earliest, latest (the LSO under read_committed, else the HW), max timestamp, or the first
        offset whose timestamp is at least `timestamp_ms` (below the latest fetchable offset, else none)."""
        latest = self.last_stable_offset if isolation is IsolationLevel.READ_COMMITTED else self.high_watermark
        if timestamp_ms == EARLIEST_TIMESTAMP:
            start = self.log_start_offset
            return ListOffsetsResult(Errors.NONE, -1, start, self.leader_epoch_at(start))
        if timestamp_ms == LATEST_TIMESTAMP:
            return ListOffsetsResult(Errors.NONE, -1, latest, self.leader_epoch)
        if timestamp_ms < MAX_TIMESTAMP:
            return ListOffsetsResult(Errors.INVALID_REQUEST)
        best: tuple[int, int, int] | None = None  # (timestamp, offset, leader epoch)
        for batch in self.log.read(self.log_start_offset):
            if batch.base_offset >= latest:
                break
            for r in batch.records if not batch.is_control else ():
                if timestamp_ms == MAX_TIMESTAMP:
                    if best is None or r.timestamp_ms > best[0]:
                        best = (r.timestamp_ms, r.offset, batch.partition_leader_epoch)
                elif r.timestamp_ms >= timestamp_ms:
                    return ListOffsetsResult(Errors.NONE, r.timestamp_ms, r.offset, batch.partition_leader_epoch)
        if best is None:
            return ListOffsetsResult(Errors.NONE)
        return ListOffsetsResult(Errors.NONE, *best)

    def close(self) -> None:
        self.log.close()
