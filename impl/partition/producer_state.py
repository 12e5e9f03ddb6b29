"""One data partition's producer state: the `PartitionProducer` instances and what Kafka keeps beside them.

Owns, per partition (Kafka's `ProducerStateManager`):
- the `PartitionProducer` instances, one per producer id (plain dicts, see `kcoord.impl.statemachine`): every change
  is a `Decision` of the spec, applied here after the caller appended the batch the decision describes; every
  decision (accepted or rejected) emits one trace row through the `Tracer`, with a dense `seq` per instance
  (`leader_epoch << 32 | n`; -1 for a rejection about a producer the partition does not know, as the runtime does);
- the five cached batches per producer (`NUM_BATCHES_TO_RETAIN`) that duplicate detection looks up — the spec takes
  the lookup's answer as `is_duplicate`; a new epoch clears them, as `ProducerStateEntry.maybeUpdateProducerEpoch`;
- the verification entries of KIP-890 (`VerificationStateEntry`: a unique guard, the lowest sequence waiting for
  verification, the epoch), created before the leader asks the transaction coordinator and removed by the next
  transactional append of the producer (data or marker) or after `producer.id.expiration.ms`;
- the open transactions by first offset, the completed ones whose marker is not yet below the high watermark, and
  the aborted-transaction index. These follow the spec's `current_txn_first_offset`: a transition that sets it opens
  a transaction at that offset, one that clears it completes the transaction at the marker's offset;
- `replay_batch`: rebuilding all of the above from the log on open (Kafka's REPLICATION origin: no checks, the log
  is what the leader accepted), then one `load` trace row per rebuilt instance.
No I/O: the caller owns the log. Must not import: `kcoord.model`.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._generated.partition_producer import Event as PartitionProducerEvent
from .._generated.partition_producer import State as PartitionProducerState
from ..errors import IllegalStateError
from ..runtime.clock import Clock
from ..runtime.trace import Tracer
from ..statemachine import Decision, Instance, MachineTable
from ..storage.batch import RecordBatch, decode_end_txn_marker
from .types import AbortedTxn, ActiveProducer

NUM_BATCHES_TO_RETAIN: Final = 5
MAX_SEQUENCE: Final = 2**31 - 1
NO_OFFSET: Final = -1


def last_sequence_of(batch: RecordBatch) -> int:
    """`DefaultRecordBatch.lastSequence`: the base sequence plus the last offset delta, wrapping after 2^31 - 1."""
    if batch.base_sequence < 0:
        return -1
    return increment_sequence(batch.base_sequence, batch.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    """`DefaultRecordBatch.incrementSequence`."""
    if sequence > MAX_SEQUENCE - increment:
        return increment - (MAX_SEQUENCE - sequence) - 1
    return sequence + increment


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """A cached batch (Kafka's `BatchMetadata`): its sequence range, where it went and its max timestamp."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp_ms: int


class VerificationGuard:
    """A unique token: an append verified by the coordinator must present the guard its verification created."""

    __slots__ = ()


@dataclass(slots=True)
class VerificationEntry:
    """Kafka's `VerificationStateEntry`."""

    guard: VerificationGuard
    lowest_sequence: int
    epoch: int
    timestamp_ms: int
    supports_epoch_bump: bool = False  # made for a Transactions V2 add (its marker may come at this epoch)

    def update(self, sequence: int, epoch: int) -> None:
        """`maybeUpdateLowestSequenceAndEpoch`: a higher epoch restarts the entry, the same epoch keeps the lowest."""
        if epoch > self.epoch:
            self.epoch, self.lowest_sequence = epoch, sequence
        elif epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


class ProducerStateManager:
    """See the module docstring. `partition` is the instance key's partition field (`"topic-3"`)."""

    def __init__(self, partition: str, *, table: MachineTable, tracer: Tracer, clock: Clock,
                 leader_epoch: int) -> None:
        self.partition = partition
        self.table = table
        self.tracer = tracer
        self.clock = clock
        self.leader_epoch = leader_epoch
        self._instances: dict[int, Instance] = {}
        self._batches: dict[int, deque[BatchMetadata]] = {}
        self._verifications: dict[int, VerificationEntry] = {}
        self._seq: dict[int, int] = {}
        self._ongoing: dict[int, int] = {}  # first offset -> producer id
        self._unreplicated: dict[int, tuple[int, int]] = {}  # first offset -> (producer id, marker offset)
        self._aborted: list[AbortedTxn] = []  # in marker order, so ascending last_offset
        self._aborted_last_offsets: list[int] = []

    # ------------------------------------------------------------------------------------------ reading state

    def get(self, producer_id: int) -> Instance | None:
        return self._instances.get(producer_id)

    def instance(self, producer_id: int) -> Instance:
        """The instance, or a fresh one (Unknown) that exists only once a transition creates it."""
        found = self._instances.get(producer_id)
        if found is not None:
            return found
        return self.table.fresh({"partition": self.partition, "producer_id": producer_id})

    def instances(self) -> Mapping[int, Instance]:
        return self._instances

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer this partition keeps state for (Known or Ongoing), by producer id: DescribeProducers."""
        return [ActiveProducer(producer_id, i["producer_epoch"], i["last_sequence"], i["last_timestamp_ms"],
                               i["txn_coordinator_epoch"], i["current_txn_first_offset"])
                for producer_id, i in sorted(self._instances.items())]

    def has_open_txn(self, producer_id: int, epoch: int) -> bool:
        """Kafka 4.x's `hasOngoingTransaction(producerId, producerEpoch)`: the spec's `current_txn_first_offset` is
        set and at this epoch (an input: it says whether the leader must ask the coordinator before the append, never
        what the append answers). The epoch matters for Transactions V2: the next transaction's first batch (epoch
        E+1) can arrive while the previous one (epoch E) still waits for its marker here, and must be verified —
        the coordinator then answers CONCURRENT_TRANSACTIONS until the marker is written."""
        found = self._instances.get(producer_id)
        return (found is not None and found["current_txn_first_offset"] != NO_OFFSET
                and found["producer_epoch"] == epoch)

    def cached_batches(self, producer_id: int) -> tuple[BatchMetadata, ...]:
        return tuple(self._batches.get(producer_id, ()))

    def find_duplicate(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """`ProducerStateEntry.findDuplicateBatch`: same epoch, exactly the same sequence range, still cached."""
        found = self._instances.get(producer_id)
        if found is None or found["producer_epoch"] != epoch:
            return None
        for cached in self._batches.get(producer_id, ()):
            if cached.first_seq == first_seq and cached.last_seq == last_seq:
                return cached
        return None

    # ------------------------------------------------------------------------------------------ verification

    def start_verification(self, producer_id: int, sequence: int, epoch: int, *,
                           supports_epoch_bump: bool = False) -> VerificationGuard:
        """`maybeCreateVerificationStateEntry`: the producer's entry (created now, or updated) and its guard."""
        entry = self._verifications.get(producer_id)
        if entry is None:
            entry = self._verifications[producer_id] = VerificationEntry(VerificationGuard(), sequence, epoch,
                                                                         self.clock.now_ms(), supports_epoch_bump)
        entry.update(sequence, epoch)
        return entry.guard

    def verification_matches(self, producer_id: int, guard: VerificationGuard | None) -> bool:
        """`VerificationGuard.verify`: the entry still exists and carries exactly this request's guard."""
        entry = self._verifications.get(producer_id)
        return guard is not None and entry is not None and entry.guard is guard

    def verification_lowest_seq(self, producer_id: int) -> int:
        """The lowest sequence of the producer's verification entry, -1 when there is none."""
        entry = self._verifications.get(producer_id)
        return entry.lowest_sequence if entry is not None else -1

    def verification_entry(self, producer_id: int) -> VerificationEntry | None:
        return self._verifications.get(producer_id)

    # ------------------------------------------------------------------------------------------ decisions

    def decide(self, producer_id: int, event: str, args: Mapping[str, Any]) -> Decision:
        return self.table.decide(self.instance(producer_id), event, args)

    def reject(self, producer_id: int, decision: Decision, args: Mapping[str, Any]) -> None:
        """A rejection changes nothing; it is only traced."""
        if decision.accepted:
            raise IllegalStateError(f"{self.partition}/{producer_id}: row {decision.row.index} is not a rejection")
        self._trace(producer_id, decision, args)

    def apply(self, producer_id: int, decision: Decision, args: Mapping[str, Any], *,
              batch: BatchMetadata | None = None, marker_offset: int = NO_OFFSET,
              transactional_batch: bool = False, marker_epoch: int | None = None) -> CompletedTxn | None:
        """Install an accepted decision whose batch is now in the log (`batch`: the data batch's metadata for the
        cache; `marker_offset`: where a marker went). Returns the transaction it completed, if any."""
        pre, post = decision.pre, decision.post
        current = self.instance(producer_id)
        if post is None or current["state"] != decision.from_state:
            raise IllegalStateError(f"{self.partition}/{producer_id}: cannot apply row {decision.row.index} "
                                    f"decided in {decision.from_state} to an instance in {current['state']}")
        self._check_properties(producer_id, pre, post)
        if decision.to_state in self.table.final_states:
            self._instances.pop(producer_id, None)
            self._batches.pop(producer_id, None)
        else:
            self._instances[producer_id] = post
            if post["producer_epoch"] != pre["producer_epoch"]:
                self._batches.pop(producer_id, None)
            if batch is not None:
                cache = self._batches.setdefault(producer_id, deque(maxlen=NUM_BATCHES_TO_RETAIN))
                cache.append(batch)
        if transactional_batch and not self._next_v2_txn_started(producer_id, marker_epoch):
            self._verifications.pop(producer_id, None)
        completed = self._follow_txn(producer_id, pre, post, args, marker_offset)
        self._trace(producer_id, decision, args)
        return completed

    def _next_v2_txn_started(self, producer_id: int, marker_epoch: int | None) -> bool:
        """UnifiedLog's `isV2NextTransactionStarted`: a marker at the epoch of a Transactions V2 add's verification
        entry ends the previous transaction (TV2 markers carry the bumped epoch); the entry belongs to the next one."""
        entry = self._verifications.get(producer_id)
        return entry is not None and entry.supports_epoch_bump and marker_epoch == entry.epoch

    def _follow_txn(self, producer_id: int, pre: Mapping[str, Any], post: Mapping[str, Any],
                    args: Mapping[str, Any], marker_offset: int) -> CompletedTxn | None:
        """Open or complete a transaction where the spec's `current_txn_first_offset` was set or cleared."""
        before, after = pre["current_txn_first_offset"], post["current_txn_first_offset"]
        if before == NO_OFFSET and after != NO_OFFSET:
            self._ongoing[after] = producer_id
            return None
        if before != NO_OFFSET and after == NO_OFFSET:
            if marker_offset < 0:
                raise IllegalStateError(f"{self.partition}/{producer_id}: a transaction completed without a marker")
            return self._complete(CompletedTxn(producer_id, before, marker_offset, args.get("result") == "ABORT"))
        return None

    def _check_properties(self, producer_id: int, pre: Mapping[str, Any], post: Mapping[str, Any]) -> None:
        """The spec's invariants and step properties, asserted on every applied change (ours to keep)."""
        if self.table.properties_hold(pre, post):
            return
        broken = self.table.violated_invariants(post) + self.table.violated_steps(pre, post)
        if broken:
            raise IllegalStateError(f"{self.partition}/{producer_id}: {pre['state']} -> {post['state']} breaks "
                                    f"{broken}")

    def _trace(self, producer_id: int, decision: Decision, args: Mapping[str, Any]) -> None:
        if not self.tracer.wants_decision(self.table.name, decision):
            return
        exists = decision.accepted or producer_id in self._instances
        self.tracer.decision(self.table, decision, key=self.key_text(producer_id),
                             seq=self._next_seq(producer_id) if exists else -1, ts_ms=self.clock.now_ms(),
                             coordinator_epoch=self.leader_epoch, args=dict(args), pending=False)

    def _next_seq(self, producer_id: int) -> int:
        n = self._seq.get(producer_id, 0)
        self._seq[producer_id] = n + 1
        return (self.leader_epoch << 32) | n

    def key_text(self, producer_id: int) -> str:
        return f"{self.partition}/{producer_id}"

    # ------------------------------------------------------------------------------------------ transactions

    def _complete(self, txn: CompletedTxn) -> CompletedTxn:
        """`lastStableOffset(completedTxn)` + `completeTxn`: index an ABORT, keep the txn unstable until the high
        watermark passes its marker."""
        if self._ongoing.pop(txn.first_offset, None) != txn.producer_id:
            raise IllegalStateError(f"{self.partition}: completing {txn} which was not open")
        others = [first for first, pid in self._ongoing.items() if pid != txn.producer_id]
        lso = min(others) if others else txn.last_offset + 1
        if txn.is_aborted:
            self._aborted.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
            self._aborted_last_offsets.append(txn.last_offset)
        self._unreplicated[txn.first_offset] = (txn.producer_id, txn.last_offset)
        return txn

    def on_high_watermark(self, high_watermark: int) -> None:
        """`onHighWatermarkUpdated`: completed transactions whose marker is below the high watermark are stable."""
        if not self._unreplicated:  # (every append and poll of the partition asks)
            return
        done = [first for first, (_, marker) in self._unreplicated.items() if marker < high_watermark]
        for first in done:
            del self._unreplicated[first]

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open transaction, or of a completed one whose marker is not yet stable."""
        firsts = [*self._ongoing, *self._unreplicated]
        return min(firsts) if firsts else None

    def open_transactions(self) -> dict[int, int]:
        """First offset -> producer id of every open transaction."""
        return dict(sorted(self._ongoing.items()))

    @property
    def aborted_index(self) -> tuple[AbortedTxn, ...]:
        return tuple(self._aborted)

    def collect_aborted(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """`TransactionIndex.collectAbortedTxns`: aborted transactions overlapping [fetch_offset, upper_bound)."""
        start = bisect.bisect_left(self._aborted_last_offsets, fetch_offset)
        return [a for a in self._aborted[start:] if a.first_offset < upper_bound_offset]

    # ------------------------------------------------------------------------------------------ expiration

    def expire(self, now_ms: int, expiration_ms: int) -> list[int]:
        """`removeExpiredProducers`: the spec's Expire on every instance (Known and idle long enough expires; the spec
        answers NONE without a change for the others — an open transaction never expires), and lingering
        verification entries. Returns the expired producer ids. The no-change answers are not traced: the check runs
        for every producer every interval."""
        args = {"now_ms": now_ms, "expiration_ms": expiration_ms}
        expired = []
        for producer_id, instance in sorted(self._instances.items()):
            decision = self.table.decide(instance, PartitionProducerEvent.Expire, args)
            if decision.accepted:
                self.apply(producer_id, decision, args)
                expired.append(producer_id)
        for producer_id, entry in list(self._verifications.items()):
            if now_ms - entry.timestamp_ms >= expiration_ms:
                del self._verifications[producer_id]
        return expired

    # ------------------------------------------------------------------------------------------ loading

    def replay_batch(self, batch: RecordBatch) -> None:
        """Rebuild from one batch of the log, without checks (Kafka's REPLICATION origin, as in log recovery)."""
        producer_id = batch.producer_id
        if producer_id < 0 or (batch.is_control and not batch.records):
            return
        current = self.instance(producer_id)
        if batch.producer_epoch != current["producer_epoch"]:
            self._batches.pop(producer_id, None)
        after = self._replayed(current, batch)
        self._instances[producer_id] = after
        if not batch.is_control and batch.base_sequence >= 0:
            cache = self._batches.setdefault(producer_id, deque(maxlen=NUM_BATCHES_TO_RETAIN))
            cache.append(BatchMetadata(batch.base_sequence, last_sequence_of(batch), batch.base_offset,
                                       batch.last_offset, batch.max_timestamp_ms))
        marker = decode_end_txn_marker(batch.records[0]) if batch.is_control else None
        args = {"result": marker.control_type.name} if marker is not None else {}
        self._follow_txn(producer_id, current, after, args, batch.base_offset)

    def _replayed(self, current: Mapping[str, Any], batch: RecordBatch) -> Instance:
        """The instance after `batch`: the effects of the spec's Append/CoordinatorAppend/WriteMarker rows."""
        after = dict(current)
        same_epoch = batch.producer_epoch == current["producer_epoch"]
        after["producer_epoch"] = batch.producer_epoch
        if batch.is_control:
            marker = decode_end_txn_marker(batch.records[0])
            after.update(txn_coordinator_epoch=marker.coordinator_epoch, current_txn_first_offset=NO_OFFSET,
                         last_sequence=current["last_sequence"] if same_epoch else -1,
                         last_timestamp_ms=batch.records[0].timestamp_ms, state=PartitionProducerState.Known)
            return after
        open_txn = current["current_txn_first_offset"]
        if open_txn != NO_OFFSET and not batch.is_transactional:
            raise IllegalStateError(f"{self.partition}: non-transactional batch at {batch.base_offset} of producer "
                                    f"{batch.producer_id} inside its transaction opened at {open_txn}")
        if batch.is_transactional and open_txn == NO_OFFSET:
            open_txn = batch.base_offset
        after.update(last_sequence=last_sequence_of(batch), last_timestamp_ms=batch.max_timestamp_ms,
                     current_txn_first_offset=open_txn,
                     state=PartitionProducerState.Ongoing if open_txn != NO_OFFSET else PartitionProducerState.Known)
        return after

    def finish_load(self, log_end_offset: int) -> None:
        """After the last batch: the loaded state is stable (the log is durable), checked, and traced."""
        self.on_high_watermark(log_end_offset)
        for producer_id, instance in sorted(self._instances.items()):
            broken = self.table.violated_invariants(instance)
            if broken:
                raise IllegalStateError(f"{self.partition}/{producer_id}: the log rebuilds {instance}, which breaks "
                                        f"{broken}")
            if self.tracer.enabled:
                self.tracer.load(self.table, instance, instance, key=self.key_text(producer_id),
                                 seq=self._next_seq(producer_id), ts_ms=self.clock.now_ms(),
                                 coordinator_epoch=self.leader_epoch)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._instances))
