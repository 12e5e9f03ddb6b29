"""The transaction coordinator (reference §1), on kcoord's coordinator runtime.

Owns: `TransactionCoordinator` (the APIs InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, verify-only
AddPartitionsToTxn as `TxnVerifier`, EndTxn, DescribeTransactions, ListTransactions; loading/unloading
`__transaction_state` partitions; the periodic timeout abort and transactional-id expiration), the marker channel
(`markers`), the record mapping (`records`) and the runtime's `ShardSpec` for `__transaction_state` (`shard_spec`).
Every state-dependent answer comes from the spec's table (`spec/transaction.sm`) through `MachineTable.decide`.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from .config import TxnConfig
from .coordinator import TRANSACTION_STATE_TOPIC, TransactionCoordinator
from .errors import LogAppendError
from .markers import MarkerChannel, MarkerStats
from .responses import (
    EndTxnResponse,
    InitProducerIdResponse,
    ListTransactionsResponse,
    TransactionDescription,
    TransactionListing,
)
from .shard_spec import TransactionShardSpec

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "EndTxnResponse",
    "InitProducerIdResponse",
    "ListTransactionsResponse",
    "LogAppendError",
    "MarkerChannel",
    "MarkerStats",
    "TransactionCoordinator",
    "TransactionDescription",
    "TransactionListing",
    "TransactionShardSpec",
    "TxnConfig",
]
