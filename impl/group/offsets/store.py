"""Committed and pending offsets of one `__consumer_offsets` partition (Kafka's `OffsetMetadataManager` state).

Owns: `OffsetEntry` (an OffsetCommitValue plus the offset of the record that wrote it), `OffsetStore` — the
committed view, the pending transactional offsets per producer id and the open transactions per group — and the
operations replay and the live path share: `put`, `remove` (a tombstone also drops pending offsets of the
partition), `put_pending`, `complete` (a marker: COMMIT moves a producer's pending offsets to the committed view,
each only if its record offset is above the committed one's; ABORT drops them). Which offsets expire is the group
specs' (ExpireOffset, §2.8); the store only answers what they are asked about (`has_pending`, `group_offsets`).
`delete_all_offsets` is deleteAllOffsets, the offsets' part of DeleteGroups (the tombstones, and their removal from
the store once durable).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...storage.group_log_schema import OffsetCommitValue
from .. import records
from ..planning import PlanBuilder

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int  # -1: none (the broker's retention applies)
    record_offset: int

    @staticmethod
    def of(value: OffsetCommitValue, record_offset: int) -> OffsetEntry:
        return OffsetEntry(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp,
                           value.expire_timestamp, record_offset)

    def value(self) -> OffsetCommitValue:
        return OffsetCommitValue(offset=self.offset, metadata=self.metadata, commit_timestamp=self.commit_timestamp_ms,
                                 leader_epoch=self.leader_epoch, expire_timestamp=self.expire_timestamp_ms)


GroupOffsets = dict[TopicPartitionKey, OffsetEntry]


class OffsetStore:
    def __init__(self) -> None:
        self.committed: dict[str, GroupOffsets] = {}
        self.pending: dict[int, dict[str, GroupOffsets]] = {}  # producer id -> group -> partition -> entry
        self.open_txns: dict[str, set[int]] = {}  # group -> producer ids with pending offsets in it

    # ------------------------------------------------------------ reading

    def get(self, group: str, topic: str, partition: int) -> OffsetEntry | None:
        offsets = self.committed.get(group)
        return offsets.get((topic, partition)) if offsets is not None else None

    def group_offsets(self, group: str) -> GroupOffsets:
        return self.committed.get(group, {})

    def has_pending(self, group: str, topic: str, partition: int) -> bool:
        for pid in self.open_txns.get(group, ()):
            if (topic, partition) in self.pending.get(pid, {}).get(group, {}):
                return True
        return False

    def pending_partitions(self, group: str) -> set[TopicPartitionKey]:
        out: set[TopicPartitionKey] = set()
        for pid in self.open_txns.get(group, ()):
            out.update(self.pending.get(pid, {}).get(group, {}))
        return out

    def groups(self) -> Iterator[str]:
        yield from sorted(set(self.committed) | set(self.open_txns))

    # ------------------------------------------------------------ changing (replay and live path alike)

    def put(self, group: str, topic: str, partition: int, entry: OffsetEntry) -> None:
        self.committed.setdefault(group, {})[(topic, partition)] = entry

    def remove(self, group: str, topic: str, partition: int) -> None:
        """A tombstone: the committed offset goes, and so does every pending one of an open transaction."""
        offsets = self.committed.get(group)
        if offsets is not None:
            offsets.pop((topic, partition), None)
            if not offsets:
                del self.committed[group]
        for pid in self.open_txns.get(group, ()):
            self.pending.get(pid, {}).get(group, {}).pop((topic, partition), None)

    def put_pending(self, producer_id: int, group: str, topic: str, partition: int, entry: OffsetEntry) -> None:
        self.pending.setdefault(producer_id, {}).setdefault(group, {})[(topic, partition)] = entry
        self.open_txns.setdefault(group, set()).add(producer_id)

    def complete(self, producer_id: int, commit: bool, *, before_offset: int | None = None) -> list[str]:
        """End the producer's transaction here (replayEndTransactionMarker); returns the groups touched.

        `before_offset` limits it to the offsets written before the marker (the fixed ordering: a later transaction's
        offsets are never touched by this one's completion); None takes every pending offset (the old behaviour).
        """
        by_group = self.pending.get(producer_id)
        if by_group is None:
            return []
        touched: list[str] = []
        for group in sorted(by_group):
            offsets = by_group[group]
            done = [tp for tp, e in offsets.items() if before_offset is None or e.record_offset < before_offset]
            for tp in done:
                entry = offsets.pop(tp)
                current = self.get(group, *tp)
                if commit and (current is None or entry.record_offset > current.record_offset):
                    self.put(group, tp[0], tp[1], entry)
            if done:
                touched.append(group)
            if not offsets:
                del by_group[group]
                pids = self.open_txns.get(group)
                if pids is not None:
                    pids.discard(producer_id)
                    if not pids:
                        del self.open_txns[group]
        if not by_group:
            del self.pending[producer_id]
        return touched

    def drop_group(self, group: str) -> None:
        """The group's tombstone was replayed: nothing of it remains (pending offsets included)."""
        self.committed.pop(group, None)
        for pid in self.open_txns.pop(group, set()):
            by_group = self.pending.get(pid)
            if by_group is not None:
                by_group.pop(group, None)
                if not by_group:
                    del self.pending[pid]

    def snapshot(self) -> tuple[object, ...]:
        """Everything, as comparable values (failover tests)."""
        committed = {g: dict(sorted(o.items())) for g, o in sorted(self.committed.items()) if o}
        pending = {pid: {g: dict(sorted(o.items())) for g, o in sorted(by.items()) if o}
                   for pid, by in sorted(self.pending.items())}
        return committed, pending, {g: sorted(p) for g, p in sorted(self.open_txns.items())}


def delete_all_offsets(store: OffsetStore, b: PlanBuilder, group_id: str) -> None:
    """deleteAllOffsets: a tombstone per committed offset, and per pending one with no committed offset."""
    committed = sorted(store.group_offsets(group_id))
    pending = sorted(store.pending_partitions(group_id) - set(committed))
    for topic, partition in committed + pending:
        b.write(records.offset_tombstone(group_id, topic, partition))
        b.then(lambda tp=(topic, partition): store.remove(group_id, *tp))  # type: ignore[misc]
