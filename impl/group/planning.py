"""Building one handler's `Plan`: a chain of spec decisions, the records that describe them, and the side effects to
run once they are durable.

Owns: `PlanBuilder` (decisions are made on the instance as the earlier decisions of the same plan left it, so one
request can fire several events in Kafka's order — JoinKnownMember then CompleteJoin, SyncGroup then
AssignmentWritten), `enabled` (an internal event is fired only when a row of the spec enables it),
`is_check_row`, and how a handler's outcome reaches its caller: `settle` (answer a request once) and `raise_bugs`
(work without a caller: our own bugs surface, protocol errors do not).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..errors import IllegalStateError, KafkaError
from ..runtime.completion import Completion
from ..runtime.shard import BatchAttributes, Change, Key, Plan, RecordBytes, Shard
from ..statemachine import Decision, Instance, MachineTable, Row

Checkpoint = tuple[int, int, int, dict[tuple[str, Key], Instance]]
"""A PlanBuilder's place: how many changes, records and effects, and the instances as they were."""


class PlanBuilder:
    """Accumulates decisions, records and effects for one plan. Nothing in the shard changes until the plan is
    applied (`effects` run in `after_apply`, in order, after every decision is installed)."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.changes: list[Change] = []
        self.records: list[RecordBytes] = []
        self.effects: list[Callable[[], object]] = []
        self._views: dict[tuple[str, Key], Instance] = {}
        # (producer id, epoch, control, timestamp) for a transactional batch; the timestamp is the one its
        # PartitionProducer transition used, so the batch reloads to the same state
        self.producer: tuple[int, int, bool, int] | None = None

    # ------------------------------------------------------------ instances as this plan leaves them

    def instance(self, table: MachineTable, key: Key) -> Instance:
        view = self._views.get((table.name, key))
        return view if view is not None else self.shard.instance_or_fresh(table, key)

    def decide(self, table: MachineTable, key: Key, event: str, args: Mapping[str, Any], *,
               record: int | None = None) -> Decision:
        """The spec's decision on the instance as this plan leaves it; it becomes a Change of the plan."""
        d = table.decide(self.instance(table, key), event, args)
        self.changes.append(Change(table, key, d, args, False, record if d.accepted else None))
        if d.post is not None:
            target = d.post["state"]
            self._views[(table.name, key)] = (table.fresh(_key_fields(table, key)) if target in table.final_states
                                              else d.post)
        return d

    def enabled(self, table: MachineTable, key: Key, event: str, args: Mapping[str, Any]) -> bool:
        """Whether some row of the spec answers `event` now (internal events fire only then)."""
        return first_row(table, self.instance(table, key), event, args) is not None

    def try_decide(self, table: MachineTable, key: Key, event: str, args: Mapping[str, Any], *,
                   record: int | None = None) -> Decision | None:
        if not self.enabled(table, key, event, args):
            return None
        return self.decide(table, key, event, args, record=record)

    def checkpoint(self) -> Checkpoint:
        return len(self.changes), len(self.records), len(self.effects), dict(self._views)

    def rollback(self, checkpoint: Checkpoint) -> None:
        """Forget everything decided, written and scheduled since `checkpoint` (a later decision refused the
        request: Kafka's handler throws and writes nothing)."""
        changes, records, effects, views = checkpoint
        del self.changes[changes:], self.records[records:], self.effects[effects:]
        self._views = views

    # ------------------------------------------------------------ records and effects

    def write(self, rec: RecordBytes) -> int:
        self.records.append(rec)
        return len(self.records) - 1

    def attach(self, change: int, record: int) -> None:
        """Make record `record` the one that describes change `change` (cross-checked when durable)."""
        target = self.changes[change]
        if target.decision.post is None:
            raise IllegalStateError(f"{target.table.name}.{target.decision.event}: a rejection is described by no "
                                    f"record")
        self.changes[change] = replace(target, record=record)

    def write_for_last(self, rec: RecordBytes) -> int:
        """Write a record that describes the last decision (it is cross-checked against that decision's post-state
        when durable)."""
        index = self.write(rec)
        last = self.changes[-1]
        if last.decision.post is None:
            raise IllegalStateError(f"{last.table.name}.{last.decision.event}: a rejection is described by no record")
        self.changes[-1] = replace(last, record=index)
        return index

    def then(self, effect: Callable[[], object]) -> None:
        self.effects.append(effect)

    def plan(self, response: Any = None, on_failure: Callable[[BaseException], Plan] | None = None) -> Plan:
        """The plan of everything decided, written and scheduled. Its effects move to the plan (the builder keeps
        none): a handler's transaction object registers effects on its builder and holds the builder, so a builder
        that kept them would make every request's objects a reference cycle, freed only by the cycle collector
        (~30 objects per heartbeat, several µs each)."""
        effects, self.effects = self.effects, []

        def after_apply() -> None:
            for effect in effects:
                effect()

        batch = None
        if self.producer is not None and self.records:
            pid, epoch, control, timestamp_ms = self.producer
            batch = BatchAttributes(pid, epoch, transactional=True, control=control, timestamp_ms=timestamp_ms)
        return Plan(changes=list(self.changes), records=list(self.records), response=response, on_failure=on_failure,
                    after_apply=after_apply if effects else None, batch=batch)


def first_row(table: MachineTable, instance: Instance, event: str, args: Mapping[str, Any]) -> Row | None:
    """The row `decide` would choose, or None when no row answers (never raises for that)."""
    env = dict(args)
    env["pending"] = False
    for row in table.index.get((instance["state"], event), ()):
        if row.guard(instance, env):
            return row
    return None


def is_check_row(row: Row) -> bool:
    """A row that came from a `check ... else ERROR` line (batched APIs such as LeaveGroup answer it at the top
    level)."""
    return row.origin == "check"


def _key_fields(table: MachineTable, key: Key) -> dict[str, Any]:
    return dict(zip((name for name, _ in table.keys), key, strict=True))


def settle(out: Completion[Any], value: Any) -> None:
    """Answer `out` with `value` unless it was answered already (a parked request may be answered by another)."""
    if not out.done:
        out.set(value)


def raise_bugs(done: Completion[Any]) -> None:
    """A timer's work has no caller to answer: our own bugs surface (in `poll`), protocol errors do not."""
    with contextlib.suppress(KafkaError):
        done.result()
