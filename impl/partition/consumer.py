"""What a consumer does with a Fetch answer: the client side of read_committed, for tests and simulated clients.

Owns `committed_records`, a restatement of the Java consumer's `CompletedFetch.nextFetchedRecord` under
`isolation.level=read_committed`: walking the batches in offset order, every aborted transaction whose first offset
is at or below the batch's last offset marks its producer as aborted; a transactional batch of an aborted producer is
skipped; the producer's ABORT marker clears the mark; control batches are never returned. Under read_uncommitted
only control batches are dropped. Records before the fetch offset (the first batch may start earlier) are dropped.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import heapq

from ..errors import Errors
from ..storage.batch import ControlType, Record, RecordBatch, decode_end_txn_marker
from .types import FetchResult, IsolationLevel


def committed_records(result: FetchResult) -> list[Record]:
    """The records a consumer with `result.isolation_level` hands to the application, in offset order."""
    if result.error != Errors.NONE:
        return []
    committed = result.isolation_level is IsolationLevel.READ_COMMITTED
    pending: list[tuple[int, int]] = [(a.first_offset, a.producer_id)
                                      for a in (result.aborted_transactions or ())] if committed else []
    heapq.heapify(pending)
    aborted_producers: set[int] = set()
    out: list[Record] = []
    for batch in result.batches:
        if committed and batch.producer_id >= 0:
            while pending and pending[0][0] <= batch.last_offset:
                aborted_producers.add(heapq.heappop(pending)[1])
            if _is_abort_marker(batch):
                aborted_producers.discard(batch.producer_id)
            elif batch.is_transactional and batch.producer_id in aborted_producers:
                continue
        if batch.is_control:
            continue
        out.extend(r for r in batch.records if r.offset >= result.fetch_offset)
    return out


def _is_abort_marker(batch: RecordBatch) -> bool:
    return (batch.is_control and bool(batch.records)
            and decode_end_txn_marker(batch.records[0]).control_type is ControlType.ABORT)

