"""The contracts between kcoord's parts, so each side can be built and tested on its own.

Owns the protocols (and their small value types) that cross component boundaries:
- `MarkerTarget`: a broker that writes transaction markers to the partitions it leads (Kafka's WriteTxnMarkers).
  Data partitions append a COMMIT/ABORT control batch; `__consumer_offsets` partitions are handed to the group
  coordinator, which materialises (COMMIT) or drops (ABORT) the producer's pending transactional offsets and only then
  answers — the KAFKA-17507 ordering. The transaction coordinator writes Complete* only after every partition of the
  transaction answered NONE (or an error the marker error table says to treat as done).
- `TxnVerifier`: the transaction coordinator's verify-only AddPartitionsToTxn (KIP-890 part 1), asked by partition
  leaders before a transactional Produce and by the group coordinator before a TxnOffsetCommit; and, for Transactions
  V2 clients (KIP-890 part 2: Produce v12+, TxnOffsetCommit v5+), the AddPartitionsToTxn that adds the partition.
- `TxnOperation`: what a transactional write's request version lets the leader do (Kafka's
  `TransactionSupportedOperation`).
- `PartitionRouter`: which node leads a partition, for the marker channel (in-process clusters route by node id).
Every call answers through a `Completion`, so an implementation may answer at once (in process) or later (delayed
or lost responses in the simulator, a real network in the server).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Literal, Protocol

from .runtime.completion import Completion

TxnResult = Literal["COMMIT", "ABORT"]


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @staticmethod
    def parse(text: str) -> TopicPartition:
        """`topic-3` → TopicPartition("topic", 3) (the partition is after the last dash)."""
        topic, _, number = text.rpartition("-")
        if not topic or not number.isdigit():
            raise ValueError(f"not a topic-partition: {text!r}")
        return TopicPartition(topic, int(number))


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """One entry of a WriteTxnMarkers request."""

    producer_id: int
    producer_epoch: int
    result: TxnResult
    coordinator_epoch: int
    partitions: tuple[TopicPartition, ...]


#: per partition, the Kafka error name the leader answered (NONE when the marker is durable and, for
#: `__consumer_offsets`, the offsets are materialised)
MarkerResult = Mapping[TopicPartition, str]


class MarkerTarget(Protocol):
    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[list[MarkerResult]]:
        """Write each marker to its partitions; one result mapping per marker, in order."""


class TxnOperation(Enum):
    """Kafka's `TransactionSupportedOperation`: what a transactional Produce or TxnOffsetCommit of a given version
    lets the partition leader do before it appends."""

    DEFAULT_ERROR = "defaultError"  # verify only; the coordinator's TRANSACTION_ABORTABLE is answered INVALID_TXN_STATE
    GENERIC_ERROR_SUPPORTED = "genericErrorSupported"  # verify only; the client understands TRANSACTION_ABORTABLE
    ADD_PARTITION = "addPartition"  # Transactions V2: add the partition to the transaction (and retry while
    #                                 the coordinator answers CONCURRENT_TRANSACTIONS)

    @staticmethod
    def for_produce(version: int) -> TxnOperation:
        """`produceRequestVersionToTransactionSupportedOperation`: v12+ adds, v11 knows TRANSACTION_ABORTABLE."""
        return TxnOperation.ADD_PARTITION if version > 11 else \
            TxnOperation.GENERIC_ERROR_SUPPORTED if version > 10 else TxnOperation.DEFAULT_ERROR

    @staticmethod
    def for_txn_offset_commit(version: int) -> TxnOperation:
        """`txnOffsetCommitRequestVersionToTransactionSupportedOperation`: v5+ adds, v4 knows TRANSACTION_ABORTABLE."""
        return TxnOperation.ADD_PARTITION if version > 4 else \
            TxnOperation.GENERIC_ERROR_SUPPORTED if version > 3 else TxnOperation.DEFAULT_ERROR


class TxnVerifier(Protocol):
    def verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         partition: TopicPartition) -> Completion[str]:
        """NONE if `partition` is part of the open transaction, else the error (TRANSACTION_ABORTABLE,
        PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, ...)."""

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[Mapping[TopicPartition, str]]:
        """`verify_partition` for several partitions in one request to the coordinator (a Produce request's
        partitions, as Kafka's `AddPartitionsToTxnManager` sends them): each partition's answer."""

    def add_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      partition: TopicPartition) -> Completion[str]:
        """Transactions V2: add `partition` to the producer's transaction (opening one if none is open), as
        AddPartitionsToTxn v5 without verifyOnly; NONE or the coordinator's error."""

    def add_partitions_v2(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[Mapping[TopicPartition, str]]:
        """`add_partition` for several partitions in one request to the coordinator (a Produce request's
        partitions, as Kafka's `ReplicaManager` asks `AddPartitionsToTxnManager` once per request): each
        partition's answer."""


class PartitionRouter(Protocol):
    def leader_of(self, partition: TopicPartition) -> MarkerTarget | None:
        """The broker leading `partition` now, or None when it has no leader (e.g. the topic was deleted)."""
