"""The transaction coordinator's configuration, with Kafka's defaults (reference §1.15).

Owns: `TxnConfig`, one frozen value passed to the coordinator (no module-level settings, nothing read from the
environment here). Units are last in every name.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TxnConfig:
    #: `transaction.max.timeout.ms`: InitProducerId with a larger timeout gets INVALID_TRANSACTION_TIMEOUT
    max_timeout_ms: int = 900_000
    #: `transactional.id.expiration.ms`: an idle transactional id is forgotten (tombstoned) after this long
    id_expiration_ms: int = 604_800_000
    #: `transaction.abort.timed.out.transaction.cleanup.interval.ms`
    abort_interval_ms: int = 10_000
    #: `transaction.remove.expired.transaction.cleanup.interval.ms`
    expiration_interval_ms: int = 3_600_000
    #: the finalized `transaction.version` feature: the value version written (>= 1: v1) and the version of
    #: coordinator-initiated aborts (>= 2: they bump the epoch once more)
    server_txn_version: int = 2
    #: `transaction.state.log.num.partitions`
    num_partitions: int = 50
    #: `offsets.topic.num.partitions`: AddOffsetsToTxn adds `__consumer_offsets-partitionFor(group)`
    offsets_num_partitions: int = 50
    #: tombstones per batch when expiring transactional ids (Kafka batches up to the log's max message size)
    expiration_batch_records: int = 500
    # ---- the marker channel (Kafka's TransactionMarkerChannelManager; these bounds are kcoord's)
    #: first back-off after a retriable marker error or a lost request; doubles per attempt up to the max
    marker_retry_backoff_ms: int = 100
    marker_retry_backoff_max_ms: int = 5_000
    #: markers (one per transaction) per WriteTxnMarkers request
    marker_batch_max: int = 1_000
    #: requests in flight per destination
    marker_in_flight_max: int = 4
    #: partitions waiting for a marker, over all transactions of this node; above it, new client EndTxn requests
    #: are answered COORDINATOR_NOT_AVAILABLE (retriable) until the channel drains
    marker_backlog_max: int = 1_000_000
    #: the Complete* record (written once every marker is durable) is applied once written, before its fsync: losing
    #: it in a power failure is repaired by a load (the Prepare* re-sends the markers), and the transactional id's
    #: next acknowledged write follows it in the same log (its fsync covers it). False: applied once durable
    complete_when_written: bool = True
    #: `kcoord serve` with writes answered once fsynced (not `--durability os`): a client's EndTxn answered NONE is
    #: sent once the transaction's markers and Complete* record are written, or after this long, whichever comes
    #: first (Kafka answers once the Prepare* record is durable; a client's next transaction then meets
    #: CONCURRENT_TRANSACTIONS and waits 20 ms). 0: answered as Kafka does
    end_txn_waits_for_markers_ms: int = 100
    def __post_init__(self) -> None:
        if self.max_timeout_ms <= 0:
            raise ValueError(f"max_timeout_ms must be positive, got {self.max_timeout_ms}")
        if not 0 <= self.server_txn_version <= 2:
            raise ValueError(f"server_txn_version must be 0, 1 or 2, got {self.server_txn_version}")
        for name in ("abort_interval_ms", "expiration_interval_ms", "num_partitions", "offsets_num_partitions",
                     "expiration_batch_records", "marker_retry_backoff_ms", "marker_batch_max",
                     "marker_in_flight_max", "marker_backlog_max"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.end_txn_waits_for_markers_ms < 0:
            raise ValueError(f"end_txn_waits_for_markers_ms must be >= 0, got {self.end_txn_waits_for_markers_ms}")
        if self.marker_retry_backoff_max_ms < self.marker_retry_backoff_ms:
            raise ValueError("marker_retry_backoff_max_ms must be >= marker_retry_backoff_ms")

