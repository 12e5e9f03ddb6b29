"""The marker channel: Kafka's `TransactionMarkerChannelManager` and `TransactionMarkerRequestCompletionHandler`.

Owns, for every transaction of this node in PrepareCommit/PrepareAbort: the set of partitions still waiting for
their marker, the per-destination queues (`PartitionRouter.leader_of`, resolved when a marker is queued and again on
every retry), sending (`MarkerTarget.write_txn_markers`, one marker per transaction, many transactions per request),
the per-partition error table of reference §1.10, retries with exponential back-off on the injectable clock, and —
once no partition is left — writing Complete* through the coordinator (retried on COORDINATOR_NOT_AVAILABLE, dropped
when this node no longer owns the transaction's `__transaction_state` partition at the same coordinator epoch).

Bounded: a transaction is queued at most once per destination (its partitions merge), at most `marker_batch_max`
markers go in one request and at most `marker_in_flight_max` requests are in flight per destination; the number of
transactions waiting for markers is exposed (`pending_transactions`) so the coordinator can push back on new EndTxn
requests. Counters (`stats`, `queue_sizes`) are for metrics.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Final

from .._generated.transaction import State as TxnState
from ..errors import Errors, IllegalStateError, KafkaError
from ..interfaces import MarkerResult, MarkerTarget, PartitionRouter, TopicPartition, TxnMarker, TxnResult
from ..runtime.clock import Clock
from ..runtime.completion import Completion
from .config import TxnConfig

__all__ = ["DONE_ERRORS", "GIVE_UP_ERRORS", "RETRY_ERRORS", "MarkerChannel", "MarkerStats", "PendingTxn"]

#: §1.10: the leader could not write the marker now; send it again (perhaps to a new leader)
RETRY_ERRORS: Final = frozenset({Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_LEADER_OR_FOLLOWER,
                                 Errors.NOT_ENOUGH_REPLICAS, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                 Errors.REQUEST_TIMED_OUT, Errors.KAFKA_STORAGE_ERROR})
#: §1.10: this coordinator (or this producer epoch) is stale; stop sending this transaction's markers
GIVE_UP_ERRORS: Final = frozenset({Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED})
#: §1.10: the partition cannot hold a marker; count it as written
DONE_ERRORS: Final = frozenset({Errors.NONE, Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Errors.UNSUPPORTED_VERSION})
#: the Complete* append's success (a set: read per transaction, where an enum member's read is slow on CPython 3.11)
_COMPLETED: Final = frozenset({Errors.NONE})
#: errors of the Complete* append after which the coordinator tries again
_COMPLETE_RETRY: Final = frozenset({Errors.COORDINATOR_NOT_AVAILABLE})
#: errors of the Complete* append meaning another node may own the transaction now
_COMPLETE_MOVED: Final = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS})

RESULT_OF_STATE: Final[Mapping[str, TxnResult]] = {TxnState.PrepareCommit: "COMMIT", TxnState.PrepareAbort: "ABORT"}

#: TopicPartition's order (topic, then partition) as a sort key compared in C
_ORDER: Final = attrgetter("topic", "partition")
#: most partition sets `_parsed` remembers (cleared when full)
_PARSED_MAX: Final = 4_096


def _ordered(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(partitions, key=_ORDER)


@dataclass(slots=True, eq=False)
class PendingTxn:
    """A transaction whose markers are being written."""

    transactional_id: str
    txn_partition: int  # the __transaction_state partition that owns it
    coordinator_epoch: int
    producer_id: int  # after the Prepare transition (TV2: the bumped epoch; on overflow the old id at 32767)
    producer_epoch: int
    result: TxnResult
    remaining: set[TopicPartition]
    completing: bool = False  # the Complete* append is in flight
    attempts: int = 0  # retries so far (drives the back-off)
    settled: Completion[None] | None = None  # `MarkerChannel.when_settled`'s, set once this leaves the channel

    def marker(self, partitions: Iterable[TopicPartition]) -> TxnMarker:
        return TxnMarker(self.producer_id, self.producer_epoch, self.result, self.coordinator_epoch,
                         tuple(_ordered(partitions)))


@dataclass(slots=True)
class _Destination:
    target: MarkerTarget
    label: str
    queue: dict[str, tuple[PendingTxn, list[TopicPartition]]] = field(default_factory=dict)  # txn id -> partitions
    in_flight: int = 0


@dataclass(slots=True)
class MarkerStats:
    requests: int = 0
    markers_sent: int = 0
    disconnects: int = 0
    partition_retries: int = 0
    gave_up: int = 0
    completed: int = 0
    complete_retries: int = 0
    dropped: int = 0
    leaderless_partitions: int = 0


class MarkerChannel:
    def __init__(self, *, router: PartitionRouter, clock: Clock, config: TxnConfig,
                 write_completions: Callable[[int, int, list[PendingTxn]], Completion[str]],
                 owns: Callable[[int, int], bool]) -> None:
        """`write_completions(partition, coordinator_epoch, txns)` appends the Complete* records of transactions of
        one partition as one batch and answers the translated error name; `owns(partition, epoch)` says whether this
        node still owns a `__transaction_state` partition at that coordinator epoch."""
        self._router = router
        self._clock = clock
        self._config = config
        self._write_completions = write_completions
        self._owns = owns
        self._txns: dict[str, PendingTxn] = {}
        self._destinations: dict[int, _Destination] = {}
        self._delayed: list[tuple[int, int, PendingTxn, frozenset[TopicPartition]]] = []  # marker retries
        self._delayed_complete: list[tuple[int, int, PendingTxn]] = []  # Complete* retries
        self._ready: list[PendingTxn] = []  # every marker acknowledged: Complete* to write on this poll
        self._seq = itertools.count()
        self._parsed: dict[frozenset[str], tuple[TopicPartition, ...]] = {}  # partition names -> parsed, sorted
        self.stats = MarkerStats()

    # ------------------------------------------------------------ observing

    @property
    def pending_transactions(self) -> int:
        return len(self._txns)

    def pending(self, transactional_id: str) -> PendingTxn | None:
        return self._txns.get(transactional_id)

    def when_settled(self, transactional_id: str) -> Completion[None] | None:
        """Done once the transaction's markers and Complete* record are written (or the channel stops writing them:
        the partition moved, a newer epoch exists); None if none are being written."""
        txn = self._txns.get(transactional_id)
        if txn is None:
            return None
        if txn.settled is None:
            txn.settled = Completion()
        return txn.settled

    def _settle(self, txn: PendingTxn) -> None:
        if txn.settled is not None and not txn.settled.done:
            txn.settled.set(None)

    def queue_sizes(self) -> dict[str, int]:
        """Partitions queued per destination, plus those waiting for a retry back-off (`"delayed"`)."""
        sizes = {d.label: sum(len(parts) for _, parts in d.queue.values()) for d in self._destinations.values()}
        sizes["delayed"] = sum(len(parts) for _, _, _, parts in self._delayed)
        return sizes

    def next_deadline_ms(self) -> int | None:
        due = [heap[0][0] for heap in (self._delayed, self._delayed_complete) if heap]
        if self._ready or any(d.queue and d.in_flight < self._config.marker_in_flight_max
                              for d in self._destinations.values()):
            due.append(self._clock.now_ms())
        return min(due) if due else None

    # ------------------------------------------------------------ adding and dropping transactions

    def add(self, txn_partition: int, coordinator_epoch: int, instance: Mapping[str, Any]) -> PendingTxn:
        """Start writing the markers of a transaction that is now durably in PrepareCommit/PrepareAbort."""
        transactional_id = instance["transactional_id"]
        result = RESULT_OF_STATE.get(instance["state"])
        if result is None:
            raise IllegalStateError(f"markers for transaction {transactional_id!r} in state {instance['state']}")
        old = self._txns.get(transactional_id)
        if old is not None:
            if old.coordinator_epoch == coordinator_epoch and old.txn_partition == txn_partition:
                raise IllegalStateError(f"transaction {transactional_id!r} already has markers in flight: {old}")
            self._forget(old)
        parsed = self._parse(instance["partitions"])
        txn = PendingTxn(transactional_id, txn_partition, coordinator_epoch, instance["producer_id"],
                         instance["producer_epoch"], result, set(parsed))
        self._txns[transactional_id] = txn
        self._route(txn, parsed)
        self._maybe_complete(txn)  # nothing to mark (a TV2 abort with no partitions): written on the next poll
        return txn

    def _parse(self, names: Collection[str]) -> tuple[TopicPartition, ...]:
        """The partitions named `names` (`topic-N`), sorted; remembered per set (transactions reuse a few sets)."""
        key = names if isinstance(names, frozenset) else frozenset(names)
        parsed = self._parsed.get(key)
        if parsed is None:
            parsed = tuple(_ordered({TopicPartition.parse(name) for name in key}))
            if len(self._parsed) >= _PARSED_MAX:
                self._parsed.clear()
            self._parsed[key] = parsed
        return parsed

    def drop_partition(self, txn_partition: int) -> int:
        """This node stopped owning `txn_partition`: forget its transactions (the new owner re-sends)."""
        gone = [t for t in self._txns.values() if t.txn_partition == txn_partition]
        for txn in gone:
            self._forget(txn)
        self.stats.dropped += len(gone)
        return len(gone)

    def _forget(self, txn: PendingTxn) -> None:
        if self._txns.get(txn.transactional_id) is txn:
            del self._txns[txn.transactional_id]
        self._settle(txn)
        for dest in self._destinations.values():
            queued = dest.queue.get(txn.transactional_id)
            if queued is not None and queued[0] is txn:
                del dest.queue[txn.transactional_id]

    def _live(self, txn: PendingTxn) -> bool:
        """Still ours to finish; if the partition moved away, drop it here."""
        if self._txns.get(txn.transactional_id) is not txn:
            return False
        if not self._owns(txn.txn_partition, txn.coordinator_epoch):
            self._forget(txn)
            self.stats.dropped += 1
            return False
        return True

    # ------------------------------------------------------------ routing and sending

    def _route(self, txn: PendingTxn, ordered: Iterable[TopicPartition]) -> None:
        """Queue `ordered` (sorted: the send order must not depend on string hashing, for the simulation)."""
        for tp in ordered:
            target = self._router.leader_of(tp)
            if target is None:  # no leader: the partition was deleted, nothing to mark (Kafka removes it)
                txn.remaining.discard(tp)
                self.stats.leaderless_partitions += 1
                continue
            dest = self._destinations.get(id(target))
            if dest is None:
                label = str(getattr(target, "node_id", f"target-{len(self._destinations)}"))
                dest = self._destinations[id(target)] = _Destination(target, label)
            queued = dest.queue.get(txn.transactional_id)
            if queued is None:
                dest.queue[txn.transactional_id] = (txn, [tp])
            elif tp not in queued[1]:
                queued[1].append(tp)

    def _retry_later(self, txn: PendingTxn, partitions: Iterable[TopicPartition]) -> None:
        txn.attempts += 1
        heapq.heappush(self._delayed, (self._clock.now_ms() + self._backoff_ms(txn), next(self._seq), txn,
                                       frozenset(partitions)))

    def _backoff_ms(self, txn: PendingTxn) -> int:
        exponent = min(txn.attempts - 1, 30)
        config = self._config
        return int(min(config.marker_retry_backoff_ms * (1 << exponent), config.marker_retry_backoff_max_ms))

    def poll(self) -> int:
        """Re-queue retries that are due, retry due Complete* appends, send what is queued. Returns work done."""
        now = self._clock.now_ms()
        work = 0
        while self._delayed and self._delayed[0][0] <= now:
            _, _, txn, partitions = heapq.heappop(self._delayed)
            if self._live(txn):
                self._route(txn, _ordered(set(partitions) & txn.remaining))
                self._maybe_complete(txn)
            work += 1
        while self._delayed_complete and self._delayed_complete[0][0] <= now:
            _, _, txn = heapq.heappop(self._delayed_complete)
            if self._live(txn):
                self._maybe_complete(txn)
            work += 1
        for dest in list(self._destinations.values()):
            while dest.queue and dest.in_flight < self._config.marker_in_flight_max:
                self._send(dest)
                work += 1
        return work + self._write_ready()

    def _send(self, dest: _Destination) -> None:
        batch: list[tuple[PendingTxn, tuple[TopicPartition, ...]]] = []
        markers: list[TxnMarker] = []
        while dest.queue and len(batch) < self._config.marker_batch_max:
            transactional_id = next(iter(dest.queue))
            txn, partitions = dest.queue.pop(transactional_id)
            if self._live(txn):
                marker = txn.marker(partitions)
                markers.append(marker)
                batch.append((txn, marker.partitions))
        if not batch:
            return
        dest.in_flight += 1
        self.stats.requests += 1
        self.stats.markers_sent += len(batch)
        sent = dest.target.write_txn_markers(markers)
        sent.then(lambda done: self._on_response(dest, batch, done))

    # ------------------------------------------------------------ responses

    def _on_response(self, dest: _Destination, batch: list[tuple[PendingTxn, tuple[TopicPartition, ...]]],
                     done: Completion[list[MarkerResult]]) -> None:
        dest.in_flight -= 1
        try:
            results = done.result()
        except (KafkaError, OSError):  # the request got no answer (timed out, disconnected): send it again
            self.stats.disconnects += 1
            for txn, partitions in batch:
                if self._live(txn):
                    self._retry_later(txn, partitions)
            return
        if len(results) != len(batch):
            raise IllegalStateError(f"WriteTxnMarkers to {dest.label}: {len(results)} results for {len(batch)} "
                                    "markers")
        for (txn, partitions), result in zip(batch, results, strict=True):
            if self._live(txn):
                self._on_marker_result(dest, txn, partitions, result)

    def _on_marker_result(self, dest: _Destination, txn: PendingTxn, partitions: tuple[TopicPartition, ...],
                          result: MarkerResult) -> None:
        """`partitions`: the marker's, sorted."""
        retry: set[TopicPartition] = set()
        for tp in partitions:
            error = result.get(tp)
            if error is None:
                raise IllegalStateError(f"WriteTxnMarkers to {dest.label}: no result for {tp} of "
                                        f"{txn.transactional_id!r}")
            if error in DONE_ERRORS:
                txn.remaining.discard(tp)
            elif error in RETRY_ERRORS:
                retry.add(tp)
            elif error in GIVE_UP_ERRORS:
                # Kafka's abortSending: a newer coordinator or producer epoch exists; this node stops here (the
                # transaction stays in Prepare* until the partition is reloaded).
                self._forget(txn)
                self.stats.gave_up += 1
                return
            else:
                raise IllegalStateError(f"WriteTxnMarkers to {dest.label}: unexpected error {error} for {tp} of "
                                        f"transaction {txn.transactional_id!r}")
        if retry:
            self.stats.partition_retries += len(retry)
            self._retry_later(txn, retry)
        self._maybe_complete(txn)

    # ------------------------------------------------------------ completion

    def _maybe_complete(self, txn: PendingTxn) -> None:
        if txn.remaining or txn.completing:
            return
        txn.completing = True
        self._ready.append(txn)

    def _write_ready(self) -> int:
        """Append the Complete* records of every transaction whose markers are all acknowledged: one batch per
        `__transaction_state` partition (up to `marker_batch_max` records), not one per transaction."""
        if not self._ready:
            return 0
        ready, self._ready = self._ready, []
        groups: dict[tuple[int, int], list[PendingTxn]] = {}
        for txn in ready:
            if self._txns.get(txn.transactional_id) is txn:
                groups.setdefault((txn.txn_partition, txn.coordinator_epoch), []).append(txn)
            else:
                txn.completing = False
        step = self._config.marker_batch_max
        for (partition, epoch), txns in groups.items():
            for i in range(0, len(txns), step):
                chunk = txns[i:i + step]
                self._write_completions(partition, epoch, chunk).then(functools.partial(self._on_completed, chunk))
        return len(ready)

    def _on_completed(self, txns: list[PendingTxn], done: Completion[str]) -> None:
        error = done.result()
        for txn in txns:
            self._on_one_completed(txn, error)

    def _on_one_completed(self, txn: PendingTxn, error: str) -> None:
        txn.completing = False
        if error in _COMPLETED:
            if self._txns.get(txn.transactional_id) is txn:
                del self._txns[txn.transactional_id]
            self.stats.completed += 1
            if txn.settled is not None:
                self._settle(txn)
            return
        if error in _COMPLETE_RETRY or (error in _COMPLETE_MOVED and self._live(txn)):
            # A local storage failure is NOT_COORDINATOR too; while this node still owns the partition nobody
            # else will finish the transaction, so it retries instead of dropping it (Kafka's leader would move).
            self.stats.complete_retries += 1
            txn.attempts += 1
            heapq.heappush(self._delayed_complete, (self._clock.now_ms() + self._backoff_ms(txn), next(self._seq),
                                                    txn))
            return
        if error in _COMPLETE_MOVED:
            return  # the new owner loads the Prepare* record and finishes the transaction
        raise IllegalStateError(f"writing the completion of transaction {txn.transactional_id!r} failed with "
                                f"{error}")
