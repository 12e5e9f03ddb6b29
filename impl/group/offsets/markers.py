"""The `__consumer_offsets` side of WriteTxnMarkers (kafka-reference.md §2.8, §1.9): a producer's marker on this
partition, then its pending offsets materialised (COMMIT) or dropped (ABORT).

Owns: `complete_transaction`. The producer epoch check of a marker is PartitionProducer's (WriteMarker).
KAFKA-17507: a marker's answer is given only after the producer's pending offsets are materialised (COMMIT) or
dropped (ABORT); `Context.bug_kafka_17507` restores the old order (answer first, materialise later, every pending
offset of the producer) so that trace checkers can be shown to catch it.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from ..._generated.partition_producer import Event as PartitionProducerEvent
from ...errors import Errors
from ...interfaces import TxnMarker
from ...runtime.completion import Completion
from ...runtime.shard import Change, Plan, Shard
from ...storage.batch import ControlType, end_txn_marker_entry
from ..context import Context
from ..planning import PlanBuilder
from ..shard_state import GroupShardState


def complete_transaction(ctx: Context, shard: Shard, state: GroupShardState, marker: TxnMarker) -> Plan:
    """One WriteTxnMarkers entry for this partition: check the producer epoch (PartitionProducer.WriteMarker),
    append the marker, and — only then — settle the producer's pending offsets; the plan's answer is a Completion
    of the partition's error, set once the offsets are settled (KAFKA-17507)."""
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
    marker_offset = shard.log.log_end_offset
    answer: Completion[str] = Completion()

    def materialise() -> None:
        """replayEndTransactionMarker: the marker's PartitionProducer transition and the offsets, together."""
        decision = table.decide(shard.instance_or_fresh(table, key), PartitionProducerEvent.WriteMarker, args)
        shard.apply(Change(table, key, decision, args))
        before = None if ctx.bug_kafka_17507 else marker_offset
        state.offsets.complete(marker.producer_id, marker.result == "COMMIT", before_offset=before)
        if state.materializing.get(marker.producer_id) is answer:
            del state.materializing[marker.producer_id]
        if not answer.done:
            answer.set(Errors.NONE)

    def after_apply() -> None:
        hook = ctx.materialize_hook
        if ctx.bug_kafka_17507:
            answer.set(Errors.NONE)  # the old bug: the marker is answered before its offsets are materialised
            if hook is not None:
                hook(materialise)
            else:
                shard.schedule(("materialize", marker.producer_id, marker_offset), ctx.now_ms(), materialise)
            return
        state.materializing[marker.producer_id] = answer
        if hook is not None:
            hook(materialise)
        else:
            materialise()

    b.then(after_apply)
    return b.plan(answer)
