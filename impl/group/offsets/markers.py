"""The `__consumer_offsets` side of WriteTxnMarkers (kafka-reference.md §2.8, §1.9): a producer's marker on this
partition, then its pending offsets materialised (COMMIT) or dropped (ABORT).

Owns: `complete_transaction`, `Settlement` (what a durable marker still has to do) and `settle_then_answer`, Kafka's
order since KAFKA-17507: the marker's answer is given only after the producer's pending offsets are materialised or
dropped, and until then a TxnOffsetCommit or marker of that producer waits (`GroupShardState.materializing`). The
producer epoch check of a marker is PartitionProducer's (WriteMarker). The coordinator passes the order; the seeded
KAFKA-17507 passes the old one (`kcoord.impl.group.seeded`).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..._generated.partition_producer import Event as PartitionProducerEvent
from ...errors import Errors
from ...interfaces import TxnMarker
from ...runtime.completion import Completion
from ...runtime.shard import Change, Plan, Shard
from ...storage.batch import ControlType, end_txn_marker_entry
from ..context import Context
from ..planning import PlanBuilder, settle
from ..shard_state import GroupShardState


@dataclass(slots=True)
class Settlement:
    """A marker written to this partition whose offsets are still to be settled, and the answer waiting for it."""

    ctx: Context
    shard: Shard
    state: GroupShardState
    marker: TxnMarker
    args: dict[str, Any]  # the WriteMarker decision's
    marker_offset: int
    answer: Completion[str] = field(default_factory=Completion)

    def materialise(self, before_offset: int | None) -> None:
        """replayEndTransactionMarker: the marker's PartitionProducer transition and the producer's pending offsets
        (those written before `before_offset`; None: every one), together; then the answer, unless it was given."""
        table = self.ctx.tables.producer
        producer_id = self.marker.producer_id
        key = (self.state.topic_partition, producer_id)
        decision = table.decide(self.shard.instance_or_fresh(table, key), PartitionProducerEvent.WriteMarker, self.args)
        self.shard.apply(Change(table, key, decision, self.args))
        self.state.offsets.complete(producer_id, self.marker.result == "COMMIT", before_offset=before_offset)
        if self.state.materializing.get(producer_id) is self.answer:
            del self.state.materializing[producer_id]
        settle(self.answer, Errors.NONE)


MarkerOrder = Callable[[Settlement], None]
"""What a group coordinator does once a marker is durable: when it materialises the offsets, when it answers."""


def settle_then_answer(s: Settlement) -> None:
    """Kafka's order: the offsets written before the marker are materialised (now, or when the coordinator's
    `materialize_hook` runs the step), then the marker is answered; the producer's next writes wait until then."""
    s.state.materializing[s.marker.producer_id] = s.answer
    step = functools.partial(s.materialise, s.marker_offset)
    hook = s.ctx.materialize_hook
    if hook is not None:
        hook(step)
    else:
        step()


def complete_transaction(ctx: Context, shard: Shard, state: GroupShardState, marker: TxnMarker,
                         order: MarkerOrder = settle_then_answer) -> Plan:
    """One WriteTxnMarkers entry for this partition: check the producer epoch (PartitionProducer.WriteMarker),
    append the marker, and — only once it is durable — settle the producer's pending offsets in `order`; the plan's
    answer is a Completion of the partition's error."""
    b = PlanBuilder(shard)
    table = ctx.tables.producer
    key = (state.topic_partition, marker.producer_id)
    now_ms = ctx.now_ms()
    args = {"result": marker.result, "epoch": marker.producer_epoch,
            "marker_coordinator_epoch": marker.coordinator_epoch, "timestamp_ms": now_ms}
    d = table.decide(b.instance(table, key), PartitionProducerEvent.WriteMarker, args)
    if not d.accepted:
        b.changes.append(Change(table, key, d, args))  # a rejection is traced like any answer
        return b.plan(Completion.of(d.error))
    control = ControlType.COMMIT if marker.result == "COMMIT" else ControlType.ABORT
    b.write(end_txn_marker_entry(control, marker.coordinator_epoch))
    b.producer = (marker.producer_id, marker.producer_epoch, True, now_ms)
    settlement = Settlement(ctx, shard, state, marker, args, shard.log.log_end_offset)
    b.then(lambda: order(settlement))
    return b.plan(settlement.answer)
