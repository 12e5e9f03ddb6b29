"""Offset expiration (kafka-reference.md §2.8, §8): the offsets.retention.check.interval.ms job, one group at a time.

Owns: `expire_group_offsets` (cleanupExpiredOffsets then maybeDeleteGroup). Which offsets expire and whether the
group goes with them is the specs' (ExpireOffset, then ExpireGroup for a classic group, Expire for a consumer group);
this module computes their parameters from the offset store and the members' subscriptions and writes the
tombstones.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._generated.classic_group import Event as ClassicGroupEvent
from ..._generated.consumer_group import Event as ConsumerGroupEvent
from ...runtime.shard import Plan, Shard
from .. import records
from ..classic.group import ClassicTxn
from ..consumer.group import ConsumerTxn
from ..context import Context
from ..planning import PlanBuilder
from ..shard_state import GroupShardState
from .commit import GroupMachine, is_consumer_group, subscription_facts


def expire_group_offsets(ctx: Context, shard: Shard, state: GroupShardState, group_id: str) -> Plan:
    """cleanupExpiredOffsets then maybeDeleteGroup, for one group (offsets.retention.check.interval.ms job): the spec
    decides each committed offset (ExpireOffset) and then the group (ExpireGroup / Expire)."""
    if is_consumer_group(shard, group_id):
        return _expire_consumer_group(ctx, shard, state, group_id)
    t = ClassicTxn(ctx, shard, state, group_id)
    machine, subscription = subscription_facts(ctx, shard, state, group_id)
    since = t.current.state_timestamp_ms
    state_timestamp_ms = -1 if since is None else since
    all_expired = _expire_offsets(ctx, t.b, machine, state, group_id,
                                  lambda topic: {**subscription(topic), "state_timestamp_ms": state_timestamp_ms})
    d = t.decide(ClassicGroupEvent.ExpireGroup, {"all_offsets_expired": all_expired,
                                                 "open_transactions": group_id in state.offsets.open_txns})
    if d.accepted:
        t.b.write_for_last(records.group_tombstone(group_id))
        t.forget = True
    return t.plan()


def _expire_consumer_group(ctx: Context, shard: Shard, state: GroupShardState, group_id: str) -> Plan:
    t = ConsumerTxn(ctx, shard, state, group_id)
    machine, subscription = subscription_facts(ctx, shard, state, group_id)
    all_expired = _expire_offsets(ctx, t.b, machine, state, group_id, subscription)
    d = t.decide_group(ConsumerGroupEvent.Expire, {"all_offsets_expired": all_expired,
                                                   "open_transactions": group_id in state.offsets.open_txns})
    if d.accepted:
        tombstones = records.consumer_group_tombstones(group_id, list(t.current.members))
        for rec in tombstones[:-1]:
            t.b.write(rec)
        t.b.write_for_last(tombstones[-1])
        t.forget = True
    return t.plan()


def _expire_offsets(ctx: Context, b: PlanBuilder, machine: GroupMachine, state: GroupShardState, group_id: str,
                    facts: Callable[[str], dict[str, Any]]) -> bool:
    """ExpireOffset for every committed offset of the group, a tombstone for each the spec expires; returns whether
    all of them expired (cleanupExpiredOffsets' answer; true for a group without committed offsets)."""
    store = state.offsets
    now_ms = ctx.now_ms()
    all_expired = True
    for (topic, partition), entry in sorted(store.group_offsets(group_id).items()):
        args = {"topic": topic, "partition": partition, "now_ms": now_ms,
                "retention_ms": ctx.config.offsets_retention_ms, "commit_timestamp_ms": entry.commit_timestamp_ms,
                "expire_timestamp_ms": entry.expire_timestamp_ms,
                "pending_offset": store.has_pending(group_id, topic, partition), **facts(topic)}
        d = b.decide(machine.table, (group_id,), machine.events.ExpireOffset, args)
        if d.accepted:
            b.write_for_last(records.offset_tombstone(group_id, topic, partition))
            b.then(lambda tp=(topic, partition): store.remove(group_id, *tp))  # type: ignore[misc]
        else:
            all_expired = False
    return all_expired
