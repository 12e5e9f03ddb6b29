"""The transaction coordinator's seeded bugs (`kcoord.impl.seeded.SeededBug`), applied where its handlers decide.

Owns: `context`, the one hook: the handlers' `TxnContext` as given when none of this coordinator's bugs is on, else
a `SeededTxnContext` whose `decide` deviates from the spec's decision as the bug does. The handlers (`plans.py`) hold
no trace of the bugs; the trace shows the deviation for the checkers to find.

- KAFKA-9666: FenceFailed keeps the bumped epoch but not `has_failed_epoch_fence` (the next fence bumps again), at
  every transaction version (under 2 the spec keeps nothing: the checker sees the epoch move).
- fence-without-bump: a fence (InitProducerId or TimeoutExpired into PrepareEpochFence) keeps the producer epoch.
- endtxn-retry-commits-later: an EndTxnV2 one epoch behind an Ongoing transaction of the same producer id (a late
  retry of the previous EndTxn) is decided as if it carried the current epoch; the trace keeps the epoch it carried.
- epoch-overflow-no-rotation: InitProducerId bumps an exhausted epoch on the same producer id instead of rotating to
  a new one; EndTxnV2 names no next producer id.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from .._generated.transaction import Event as TxnEvent
from .._generated.transaction import State as TxnState
from ..runtime.shard import Change, Shard
from ..seeded import SeededBug
from ..statemachine import Decision, Instance
from .plans import Key, TxnContext

TXN_BUGS = frozenset({SeededBug.KAFKA_9666, SeededBug.FENCE_WITHOUT_BUMP, SeededBug.ENDTXN_RETRY_COMMITS_LATER,
                      SeededBug.EPOCH_OVERFLOW_NO_ROTATION})
_MAX_EPOCH = 32_767
_FENCES = frozenset({TxnEvent.InitProducerId, TxnEvent.TimeoutExpired})


def context(ctx: TxnContext, bugs: frozenset[SeededBug]) -> TxnContext:
    """`ctx`, deviating as this coordinator's bugs among `bugs` do (the others are the group coordinator's)."""
    on = bugs & TXN_BUGS
    if not on:
        return ctx
    return SeededTxnContext(**{f.name: getattr(ctx, f.name) for f in fields(ctx)}, bugs=on)


@dataclass(slots=True)
class SeededTxnContext(TxnContext):
    bugs: frozenset[SeededBug] = frozenset()

    def decide(self, shard: Shard, key: Key, event: str, args: dict[str, Any], *, instance: Instance | None = None,
               pending: bool | None = None, record: int | None = 0) -> tuple[Decision, Change]:
        decision, change = TxnContext.decide(self, shard, key, event, args, instance=instance, pending=pending,
                                             record=record)
        pre = dict(decision.pre)
        bugs = self.bugs
        if (SeededBug.ENDTXN_RETRY_COMMITS_LATER in bugs and event == TxnEvent.EndTxnV2
                and _retry_of_previous(pre, args)):
            decision, change = TxnContext.decide(self, shard, key, event, {**args, "epoch": pre["producer_epoch"]},
                                                 instance=pre, pending=pending, record=record)
            change = replace(change, args={**change.args, "epoch": args["epoch"]})
        if decision.post is None:
            return decision, change
        if SeededBug.EPOCH_OVERFLOW_NO_ROTATION in bugs:
            if event == TxnEvent.InitProducerId and _rotates(pre, decision.post):
                change = _deviate(change, producer_id=pre["producer_id"], previous_producer_id=pre["producer_id"],
                                  producer_epoch=min(pre["producer_epoch"] + 1, _MAX_EPOCH))
            elif event == TxnEvent.EndTxnV2 and decision.post["next_producer_id"] != -1:
                change = _deviate(change, next_producer_id=-1)
        if (SeededBug.FENCE_WITHOUT_BUMP in bugs and event in _FENCES
                and change.decision.to_state == TxnState.PrepareEpochFence):
            change = _deviate(change, producer_epoch=pre["producer_epoch"])
        if SeededBug.KAFKA_9666 in bugs and event == TxnEvent.FenceFailed:
            kept = pre["has_failed_epoch_fence"] or pre["producer_epoch"] == _MAX_EPOCH
            change = _deviate(change, producer_epoch=pre["producer_epoch"] + (0 if kept else 1),
                              last_producer_epoch=-1, has_failed_epoch_fence=False)
        return change.decision, change


def _retry_of_previous(pre: Instance, args: dict[str, Any]) -> bool:
    """A TV2 EndTxn of the producer id of an Ongoing transaction, one epoch behind (the previous EndTxn, again)."""
    return bool(pre["state"] == TxnState.Ongoing and pre["producer_id"] == args["pid"]
                and args["epoch"] + 1 == pre["producer_epoch"])


def _rotates(pre: Instance, post: Instance) -> bool:
    """The decision moves a known transactional id to a new producer id (epoch exhaustion)."""
    return bool(pre["producer_id"] != -1 and post["producer_id"] != pre["producer_id"])


def _deviate(change: Change, **post: Any) -> Change:
    """The change with its decision's post-state altered as the bug does."""
    d = change.decision
    assert d.post is not None
    return replace(change, decision=replace(d, post={**d.post, **post}))
