"""What log compaction keeps: the rules, as pure functions over batches (the file rewriting lives in ``log.py``),
and ``CompactionReport``/``CompactionTally``: what one compaction did.

Rules (Kafka's log cleaner, restated for a single-node coordinator log):

1. **Last value per key.** A keyed record survives only if it is the latest *decided* record for its key (highest
   offset). Decided = in a non-transactional batch, or in a transactional batch whose COMMIT marker is in the log.
   Records with a null key are never removed (coordinator logs do not write them).
2. **Tombstones** (null value) that are the latest for their key are removed once ``now_ms - timestamp_ms >=
   tombstone_retention_ms`` (Kafka stamps a delete horizon on its first cleaning pass instead; with append-time
   timestamps the two agree). Older values of that key are already gone by rule 1.
3. **Transactions.** Records of aborted transactions are removed (they never took effect). Nothing at or after the
   *first unstable offset* (the first batch of a transaction with no marker yet) is touched: its outcome is
   unknown. A COMMIT/ABORT marker is kept while any record of its transaction survives, otherwise it is removed
   like a tombstone once older than the retention. Control records that are not transaction markers are kept.
4. **Offsets are preserved.** A batch keeps its base offset, last offset delta, producer id/epoch and base
   sequence (as Kafka's v2 format does); only its records shrink. A batch left empty is dropped, except the last
   batch of the log, which is kept as an empty header so the log end offset survives a reopen.

The planner reads the log once (a transaction's records wait for its marker), streamed, so the log is never held in
memory. Must not import ``kcoord.model``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .batch import NO_TIMESTAMP, ControlType, Record, RecordBatch, RecordFormatError, decode_end_txn_marker

__all__ = ["CompactionPlan", "CompactionReport", "CompactionTally", "compact_batch", "plan_compaction"]


@dataclass(slots=True)
class CompactionPlan:
    """The facts about the whole log that decide every record's fate."""

    now_ms: int
    tombstone_retention_ms: int
    first_unstable_offset: int
    latest_offset_by_key: dict[bytes, int] = field(default_factory=dict)
    outcome_by_batch: dict[int, ControlType] = field(default_factory=dict)  # transactional batch base offset
    live_markers: set[int] = field(default_factory=set)  # marker offsets whose transaction keeps a record

    def expired(self, record: Record) -> bool:
        """A tombstone or marker older than the retention."""
        return self.now_ms - record.timestamp_ms >= self.tombstone_retention_ms

    def keeps(self, record: Record) -> bool:
        """Rules 1 and 2 for a record of a decided (non-aborted) batch below the first unstable offset."""
        if record.key is None:
            return True
        if self.latest_offset_by_key.get(record.key) != record.offset:
            return False
        return record.value is not None or not self.expired(record)


def _marker_type(batch: RecordBatch) -> ControlType | None:
    if len(batch.records) != 1:
        return None
    try:
        return decode_end_txn_marker(batch.records[0]).control_type
    except RecordFormatError:
        return None  # another control record type (e.g. KRaft's): not a transaction marker


def plan_compaction(batches: Iterable[RecordBatch], *, log_end_offset: int, now_ms: int,
                    tombstone_retention_ms: int) -> CompactionPlan:
    """Build the plan from one pass over the log's batches, in offset order.

    A transactional batch's keyed records wait with its producer's open transaction until its marker says how it
    ended: a COMMIT makes them decided (each the latest of its key unless a later record of that key was already seen,
    which the marker's position allows: the marker comes after the batch, a non-transactional record between them has
    a higher offset); an ABORT drops them; a transaction with no marker yet is undecided and sets the first unstable
    offset. Held in memory: the keys' latest offsets and the keyed records of committed and open transactions (which
    the live-marker rule needs anyway)."""
    open_batches: dict[int, list[tuple[int, list[Record]]]] = {}  # producer id -> (base offset, keyed records)
    outcome: dict[int, ControlType] = {}
    batches_of_marker: dict[int, list[int]] = {}
    latest: dict[bytes, int] = {}
    txn_records: dict[int, list[Record]] = {}  # committed batch base offset -> its keyed records
    for batch in batches:
        if batch.is_control:
            marker = _marker_type(batch)
            if marker is not None:
                members = open_batches.pop(batch.producer_id, [])
                batches_of_marker[batch.base_offset] = [base for base, _ in members]
                for base, keyed in members:
                    outcome[base] = marker
                    if marker is ControlType.COMMIT:
                        txn_records[base] = keyed
                        for record in keyed:
                            key = record.key
                            if key is not None and latest.get(key, -1) < record.offset:
                                latest[key] = record.offset
        elif batch.is_transactional:
            open_batches.setdefault(batch.producer_id, []).append(
                (batch.base_offset, [r for r in batch.records if r.key is not None]))
        else:
            for record in batch.records:
                if record.key is not None:
                    latest[record.key] = record.offset
    unstable = [members[0][0] for members in open_batches.values() if members]
    plan = CompactionPlan(now_ms, tombstone_retention_ms, min(unstable, default=log_end_offset),
                          latest_offset_by_key=latest, outcome_by_batch=outcome)
    for marker_offset, bases in batches_of_marker.items():
        if any(plan.keeps(r) for base in bases for r in txn_records.get(base, ())):
            plan.live_markers.add(marker_offset)
    return plan


def compact_batch(batch: RecordBatch, plan: CompactionPlan, *, is_last_batch: bool) -> RecordBatch | None:
    """The batch to write in place of ``batch``: itself if unchanged, a smaller one, or None to drop it."""
    if batch.base_offset >= plan.first_unstable_offset:
        return batch
    if not batch.records:
        return batch if is_last_batch else None  # an empty batch kept by an earlier compaction for its offsets
    if batch.is_control:
        kept = [r for r in batch.records
                if _marker_type(batch) is None or batch.base_offset in plan.live_markers or not plan.expired(r)]
    elif batch.is_transactional and plan.outcome_by_batch.get(batch.base_offset) is ControlType.ABORT:
        kept = []
    else:
        kept = [r for r in batch.records if plan.keeps(r)]
    if len(kept) == len(batch.records):
        return batch
    if not kept and not is_last_batch:
        return None
    return RecordBatch(
        base_offset=batch.base_offset,
        records=tuple(kept),
        last_offset_delta=batch.last_offset_delta,
        # Kafka: the base timestamp follows the first remaining record (-1 when empty); the max timestamp of an
        # emptied batch keeps its previous value.
        base_timestamp_ms=kept[0].timestamp_ms if kept else NO_TIMESTAMP,
        max_timestamp_ms=max((r.timestamp_ms for r in kept), default=batch.max_timestamp_ms),
        partition_leader_epoch=batch.partition_leader_epoch,
        timestamp_type=batch.timestamp_type,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        has_delete_horizon=False,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
    )


@dataclass(frozen=True, slots=True)
class CompactionReport:
    batches_before: int
    batches_after: int
    records_before: int
    records_after: int
    bytes_before: int
    bytes_after: int
    segments_rewritten: int
    segments_deleted: int
    first_unstable_offset: int


@dataclass(slots=True)
class CompactionTally:
    batches_before: int = 0
    batches_after: int = 0
    records_before: int = 0
    records_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    segments_rewritten: int = 0
    segments_deleted: int = 0

    def add(self, before: RecordBatch, size_before: int, after: RecordBatch | None, size_after: int) -> None:
        self.batches_before += 1
        self.records_before += len(before.records)
        self.bytes_before += size_before
        if after is not None:
            self.batches_after += 1
            self.records_after += len(after.records)
            self.bytes_after += size_after

    def report(self, first_unstable_offset: int) -> CompactionReport:
        return CompactionReport(self.batches_before, self.batches_after, self.records_before, self.records_after,
                                self.bytes_before, self.bytes_after, self.segments_rewritten, self.segments_deleted,
                                first_unstable_offset)
