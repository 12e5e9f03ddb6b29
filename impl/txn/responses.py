"""The transaction coordinator's answers, as plain values (the wire server translates them to kio messages).

Owns one frozen dataclass per API. Errors are Kafka error names (`NONE` on success). Producer ids and epochs are -1
when the answer carries none.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..interfaces import TopicPartition

__all__ = ["EndTxnResponse", "InitProducerIdResponse", "ListTransactionsResponse", "TransactionDescription",
           "TransactionListing"]


@dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    error: str
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class EndTxnResponse:
    error: str
    producer_id: int = -1
    producer_epoch: int = -1


#: AddPartitionsToTxn's answer: one error per requested partition
AddPartitionsResponse = Mapping[TopicPartition, str]


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """One entry of DescribeTransactions."""

    transactional_id: str
    error: str
    state: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = 0
    start_timestamp_ms: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    error: str
    transactions: tuple[TransactionListing, ...] = ()
    unknown_state_filters: tuple[str, ...] = field(default=())
