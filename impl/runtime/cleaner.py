"""`Cleaning`: when the runtime compacts a coordinator log (Kafka's log cleaner, for these compacted topics).

`__transaction_state` and `__consumer_offsets` are `cleanup.policy=compact` topics: Kafka's log cleaner rewrites
them in the background, keeping the last value per key and dropping tombstones after `delete.retention.ms`, so a
coordinator log stays about the size of the live state and a load (after a restart or failover) reads that much,
not the whole history. The runtime does the same between requests (`CoordinatorRuntime.poll`): a shard's log is
compacted (`PartitionLog.compact`, offsets preserved) once its dirty part — the bytes appended since the last
compaction — is at least `min_dirty_ratio` of the whole (Kafka's `min.cleanable.dirty.ratio`, 0.5) and the log is
at least `min_bytes`, and only while the shard has no write open or in flight. The log's size after its last
compaction is kept next to it (`cleaner-checkpoint`, as Kafka's cleaner-offset-checkpoint), so a new owner knows how
much of the log is dirty and a failover does not start with a compaction. Compaction never changes a shard's
in-memory state: it removes only records a load would skip anyway (a superseded value, an expired tombstone, an
aborted transaction's records).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class Cleaning:
    min_dirty_ratio: float = 0.5  # Kafka's min.cleanable.dirty.ratio
    min_bytes: int = 1 << 20  # smaller logs are left alone
    tombstone_retention_ms: int = DAY_MS  # Kafka's delete.retention.ms

    def __post_init__(self) -> None:
        if not 0 < self.min_dirty_ratio <= 1:
            raise ValueError(f"min_dirty_ratio must be in (0, 1], got {self.min_dirty_ratio}")
        if self.min_bytes < 0 or self.tombstone_retention_ms < 0:
            raise ValueError("min_bytes and tombstone_retention_ms must not be negative")

    def due(self, size_bytes: int, clean_bytes: int) -> bool:
        """Whether a log of `size_bytes`, `clean_bytes` of them as the last compaction left them, is to be cleaned."""
        return size_bytes >= self.min_bytes and size_bytes - clean_bytes >= self.min_dirty_ratio * size_bytes


DEFAULT_CLEANING = Cleaning()  # what the coordinators run with unless told otherwise (Kafka's defaults)
