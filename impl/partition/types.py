"""The partition side's value types: configuration, request enums and the results its operations answer with.

Owns: `PartitionConfig` (the broker and topic settings the partition side reads, Kafka's names and defaults),
`AppendOrigin`, `IsolationLevel`, `ProduceResult`, `FetchResult`, `AbortedTransaction`, `ListOffsetsResult`,
`ActiveProducer`/`PartitionProducers`, `TopicMetadata`/`PartitionMetadata`. Plain frozen data, no behaviour
beyond trivial properties.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Final
from uuid import UUID

from ..storage.batch import RecordBatch

#: ListOffsets' special timestamps (`ListOffsetsRequest.EARLIEST_TIMESTAMP`, `LATEST_TIMESTAMP`, `MAX_TIMESTAMP`)
EARLIEST_TIMESTAMP: Final = -2
LATEST_TIMESTAMP: Final = -1
MAX_TIMESTAMP: Final = -3

#: topics the coordinators own; the partition manager never creates, hosts or answers for them
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})


class AppendOrigin(StrEnum):
    """Kafka's `AppendOrigin`, the two a partition leader validates (REPLICATION is log recovery here)."""

    CLIENT = "CLIENT"  # a Produce request: duplicates, sequences, epochs, verification
    COORDINATOR = "COORDINATOR"  # the group coordinator's transactional offsets: epoch and verification only


class IsolationLevel(IntEnum):
    """The Fetch/ListOffsets `isolation_level` field (Kafka's wire values)."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


@dataclass(frozen=True, slots=True)
class PartitionConfig:
    """What the partition side reads from the broker and topic configuration (Kafka's names, Kafka's defaults)."""

    producer_id_expiration_ms: int = 86_400_000  # producer.id.expiration.ms (1 day)
    producer_id_expiration_check_interval_ms: int = 600_000  # producer.id.expiration.check.interval.ms (10 min)
    transaction_partition_verification_enable: bool = True  # transaction.partition.verification.enable (KIP-890)
    auto_create_topics_enable: bool = True  # auto.create.topics.enable
    num_partitions: int = 1  # num.partitions: partitions of an auto-created topic
    segment_bytes: int = 1 << 30  # log.segment.bytes
    max_message_bytes: int = 1_048_588  # message.max.bytes: the largest batch a produce may append
    #: add.partitions.to.txn.retry.backoff.ms / .max.ms: a Transactions V2 write whose partition the coordinator
    #: cannot add yet (CONCURRENT_TRANSACTIONS) is asked again after this back-off, until the max has passed
    add_partitions_retry_backoff_ms: int = 20
    add_partitions_retry_max_ms: int = 100

    def __post_init__(self) -> None:
        if self.producer_id_expiration_ms <= 0 or self.producer_id_expiration_check_interval_ms <= 0:
            raise ValueError("producer id expiration and its check interval must be positive, got "
                             f"{self.producer_id_expiration_ms} and {self.producer_id_expiration_check_interval_ms}")
        if self.num_partitions <= 0:
            raise ValueError(f"num_partitions must be positive, got {self.num_partitions}")


@dataclass(slots=True)
class ProduceResult:
    """One partition's Produce answer (`PartitionProduceResponse`): the offsets are -1 unless the append succeeded
    (or was a duplicate, which answers the original batch's offsets with no error). Treated as immutable; not
    `frozen` (one per partition of every Produce and marker: a frozen constructor costs ~4× as much)."""

    error: str
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


@dataclass(frozen=True, slots=True, order=True)
class AbortedTransaction:
    """An entry of a read_committed Fetch answer: the producer's records from `first_offset` up to its ABORT
    marker are aborted."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """An aborted-transaction index entry (Kafka's `AbortedTxn` in a segment's `.txnindex`)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int  # the LSO right after the marker (the next other producer's open txn, else marker+1)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One partition's Fetch answer. `batches` are the decoded batches of `records` (the wire bytes, whole batches
    in offset order); `aborted_transactions` is None for read_uncommitted, as in Kafka's response."""

    error: str
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    fetch_offset: int = -1  # the offset asked for (the first batch may start before it)
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None
    batches: tuple[RecordBatch, ...] = ()
    records: bytes = b""

    @property
    def next_offset(self) -> int | None:
        """The offset after the last returned batch (where the next fetch starts), or None if nothing came back."""
        return self.batches[-1].next_offset if self.batches else None


@dataclass(frozen=True, slots=True)
class ListOffsetsResult:
    error: str
    timestamp_ms: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """One producer a partition keeps state for, as DescribeProducers shows it (KIP-664; Kafka's
    `UnifiedLog.activeProducers`): -1 for a sequence, coordinator epoch or start offset the partition has not got."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp_ms: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionProducers:
    """One partition's DescribeProducers answer."""

    error: str
    producers: tuple[ActiveProducer, ...] = ()
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    error: str
    partition: int
    leader_id: int
    leader_epoch: int
    replica_ids: tuple[int, ...]
    isr_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A Metadata answer's topic entry (single node: every partition is led by this node, its only replica)."""

    error: str
    name: str
    topic_id: UUID | None = None
    is_internal: bool = False
    partitions: tuple[PartitionMetadata, ...] = ()
