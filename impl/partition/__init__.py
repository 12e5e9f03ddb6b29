"""The partition side of idempotence and transactions: data partitions on a (single-replica) broker.

Owns: `PartitionManager` (topics, Produce, Fetch, ListOffsets, DescribeProducers, WriteTxnMarkers for data
partitions, producer expiration), `DataPartition` (one partition's log, producer state, HW/LSO),
`ProducerStateManager` (the `PartitionProducer` instances driven by the spec, the duplicate cache, verification
entries, open/aborted transactions), `BrokerMarkerTarget` (a broker's WriteTxnMarkers split between data
partitions and the group coordinator's `__consumer_offsets`), and `committed_records` (what a read_committed
consumer keeps of a Fetch).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from .consumer import committed_records
from .manager import PartitionManager, topic_name_problem
from .markers import BrokerMarkerTarget
from .partition import DataPartition
from .producer_state import ProducerStateManager
from .types import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AbortedTransaction,
    AbortedTxn,
    ActiveProducer,
    AppendOrigin,
    FetchResult,
    IsolationLevel,
    ListOffsetsResult,
    PartitionConfig,
    PartitionMetadata,
    PartitionProducers,
    ProduceResult,
    TopicMetadata,
)

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AbortedTransaction",
    "AbortedTxn",
    "ActiveProducer",
    "AppendOrigin",
    "BrokerMarkerTarget",
    "DataPartition",
    "FetchResult",
    "IsolationLevel",
    "ListOffsetsResult",
    "PartitionConfig",
    "PartitionManager",
    "PartitionMetadata",
    "PartitionProducers",
    "ProduceResult",
    "ProducerStateManager",
    "TopicMetadata",
    "committed_records",
    "topic_name_problem",
]
