"""One coordinator-log partition: its instances, its log, its timers and the write path.

Owns:
- the instances of every machine whose key hashes to this partition (plain dicts; see `kcoord.impl.statemachine`),
- `submit`: run a handler now (`when_pending="answer"`: the handler sees `pending`, Kafka's transaction coordinator
  answers CONCURRENT_TRANSACTIONS) or once no write for its keys is in flight (`"wait"`: the group coordinator),
- the write path: a handler's `Plan` appends its records; when they are durable its changes are applied in order
  (the live `replay`: post-states installed, one trace row each, records cross-checked unless `check_records` is
  off) and the response is released. A failed append applies nothing; the plan's `on_failure` decides the answer.
  With per-batch durability each plan is its own batch, written and fsynced at once. With group commit the plain
  plans of one turn of the loop share one batch (Kafka's runtime lingers the same way,
  `group.coordinator.append.linger.ms`): they wait in the open batch, in flight, until `write_open` (called by the
  runtime's `poll` and `flush`) appends it; if that append fails, every plan in it gets its failure answer, in order,
- `apply`: the one place an instance changes — it checks the change against the generated table (the decision's
  pre-state must be the instance's current state; a pending-only state is never stored; a final state removes the
  instance) and emits the trace row,
- `load`: replay a log through the coordinator's `ShardSpec.replay` (records → instances), with `seq` restarting
  per coordinator epoch.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..errors import Errors, IllegalStateError, KafkaError
from ..statemachine import Decision, Instance, MachineTable
from ..storage.batch import LastValues, RecordBatch
from ..storage.log import AppendInfo, PartitionLog
from .clock import Clock
from .completion import Completion
from .timers import Timers
from .trace import Tracer

Key = tuple[Any, ...]  # the machine's key fields, in spec order
RecordBytes = tuple[bytes | None, bytes | None]
WhenPending = Literal["answer", "wait"]


@dataclass(slots=True)
class Change:
    """One decision of the spec to apply when the plan's records are durable (or at once if it has none).

    Treated as immutable (a deviation is a new Change, `dataclasses.replace`); not `frozen` because every request
    builds one and a frozen dataclass's constructor costs four times as much."""

    table: MachineTable
    key: Key
    decision: Decision
    args: Mapping[str, Any]
    pending: bool = False
    record: int | None = None  # index in the plan's records of the record that describes this change


@dataclass(frozen=True, slots=True)
class BatchAttributes:
    """Producer fields of the batch a plan appends: a transactional batch (TxnOffsetCommit) or a control batch (a
    transaction marker). Plain coordinator writes have none."""

    producer_id: int
    producer_epoch: int
    transactional: bool = True
    control: bool = False
    timestamp_ms: int | None = None  # the batch's timestamp: the one its producer-state transition used (reloaded
    # from the batch, it must be the same); None: the clock at the append


@dataclass(slots=True)
class Plan:
    """What a handler decided: changes, the records describing them, and the answer.

    `response` is a value or a zero-argument callable evaluated after the changes are applied. `on_failure` gets the
    append error and returns the plan to run instead (in-memory changes only, e.g. a fence whose write failed).
    """

    changes: list[Change] = field(default_factory=list)
    records: list[RecordBytes] = field(default_factory=list)
    response: Any = None
    on_failure: Callable[[BaseException], Plan] | None = None
    after_apply: Callable[[], None] | None = None  # side effects once applied (schedule timers, send markers)
    batch: BatchAttributes | None = None  # producer fields of the appended batch (default: a plain batch)
    appended: AppendInfo | None = None  # set by the shard once the records are appended (their offsets)
    #: applied and answered once written (in the page cache), before they are durable, in log order with the plans
    #: before it; their log is not flushed for them (the next durable write to it covers them). Only for records
    #: whose loss a load repairs (a Complete* record: the Prepare* before it makes the load re-send the markers and
    #: write it again), and whose key's next acknowledged write goes to the same log after them
    visible_when_written: bool = False

    def answer(self) -> Any:
        return self.response() if callable(self.response) else self.response


class ShardSpec(Protocol):
    """What a coordinator (transactions, groups) tells the runtime about its log."""

    tables: Mapping[str, MachineTable]

    def replay(self, shard: Shard, batch: RecordBatch, key: bytes | None, value: bytes | None, offset: int) -> None:
        """Take in one record of the log (on load). Replay runs while recovery still reads the log, before the shard
        has its log and coordinator epoch: gather here, `install` in `on_loaded`."""

    def check_record(self, change: Change, record: RecordBytes) -> None:
        """Assert that a record written on the live path describes `change`'s post-state."""

    def on_loaded(self, shard: Shard) -> None:
        """After a load: `install` what the log left, restart what it implies (re-send markers, schedule timers)."""


class ControlReplay(Protocol):
    """Optional part of a `ShardSpec`: transaction markers in the log, replayed in order (e.g. the group coordinator
    materialises or drops a producer's pending transactional offsets at its marker)."""

    def replay_control(self, shard: Shard, batch: RecordBatch) -> None: ...


class BatchReplay(Protocol):
    """Optional part of a `ShardSpec`: take in a whole data batch in one call (the same as `replay` per record,
    minus a call per record on the load path)."""

    def replay_records(self, shard: Shard, batch: RecordBatch) -> None: ...


class LastValueReplay(Protocol):
    """Optional part of a `ShardSpec` whose replay of a record is only "the last value per key wins" (a compacted
    topic's view, as the transaction coordinator reads its log): the runtime loads with `PartitionLog.open(...,
    last_values=spec.last_values)`, which puts the records of plain batches straight into `last_values.latest`
    without building batch objects, and gives `replay`/`replay_records` only the other batches, in log order —
    which must therefore update the same `latest`. The spec consumes (and resets) it in `on_loaded`."""

    last_values: LastValues


@dataclass(slots=True)
class _InFlight:
    plan: Plan
    completion: Completion[Any]
    keys: tuple[tuple[str, Key], ...]
    last_offset: int  # in the open batch (not appended yet): the index of the plan's first record there


#: Most records one coalesced batch holds (more plans wait for the next batch of the same turn).
MAX_OPEN_RECORDS = 4_096


def key_text(key: Key) -> str:
    return "/".join(str(k) for k in key)


class Shard:
    def __init__(self, partition: int, spec: ShardSpec, *, clock: Clock, tracer: Tracer,
                 check_records: bool = True) -> None:
        """A shard replays its log before it has it (recovery feeds the replay); `attach` then gives it the log
        and the coordinator epoch it writes with. `check_records`: decode every record written on the live path
        and compare it with its change's post-state (`ShardSpec.check_record`) before applying it."""
        self.partition = partition
        self.check_records = check_records
        self.log: PartitionLog
        self.spec = spec
        self.clock = clock
        self.tracer = tracer
        self.coordinator_epoch = -1
        self.timers = Timers()
        self.instances: dict[str, dict[Key, Instance]] = {name: {} for name in spec.tables}
        self._seq: dict[tuple[str, Key], int] = {}
        self._in_flight: deque[_InFlight] = deque()  # appended, waiting to be durable
        self._open: list[_InFlight] = []  # group commit: plans whose records wait in the open batch
        self._open_records: list[RecordBytes] = []
        self._open_since_ms = 0
        self._coalesce = False
        self._pending: dict[tuple[str, Key], int] = {}
        self._waiting: dict[tuple[str, Key], deque[Callable[[], None]]] = {}
        self.failed: BaseException | None = None
        #: told when this shard has records to write (its owner's `poll` then looks at it until they are durable)
        self.on_write: Callable[[Shard], None] = _no_owner

    def attach(self, log: PartitionLog, coordinator_epoch: int) -> None:
        self.log = log
        self.coordinator_epoch = coordinator_epoch
        self._coalesce = log.durability.coalesces

    # ------------------------------------------------------------ reading state

    def get(self, machine: str, key: Key) -> Instance | None:
        return self.instances[machine].get(key)

    def instance_or_fresh(self, table: MachineTable, key: Key) -> Instance:
        """The instance, or a fresh one (initial state, defaults) that exists only once a transition creates it."""
        found = self.instances[table.name].get(key)
        if found is not None:
            return found
        return table.fresh(dict(zip((name for name, _ in table.keys), key, strict=True)))

    def pending(self, machine: str, key: Key) -> bool:
        """A write for this instance is appended but not yet durable (and applied)."""
        return self._pending.get((machine, key), 0) > 0

    # ------------------------------------------------------------ submitting work

    def submit(self, keys: Sequence[tuple[str, Key]], handler: Callable[[], Plan], *,
               when_pending: WhenPending = "answer", completion: Completion[Any] | None = None) -> Completion[Any]:
        """Run `handler` (now, or when no write for `keys` is in flight) and execute the plan it returns. The
        answer goes to `completion` (a new one unless given), which is returned."""
        out: Completion[Any] = completion if completion is not None else Completion()
        if self.failed is not None:
            out.fail(KafkaError(Errors.NOT_COORDINATOR, f"partition {self.partition} failed: {self.failed}"))
            return out
        key_tuple = tuple(keys)
        if when_pending == "answer":  # the common path: run now, no closure
            try:
                plan = handler()
            except BaseException as e:
                out.fail(e)
                return out
            self._execute(plan, key_tuple, out)
            return out
        self._submit_waiting(key_tuple, handler, out)
        return out

    def _submit_waiting(self, key_tuple: tuple[tuple[str, Key], ...], handler: Callable[[], Plan],
                        out: Completion[Any]) -> None:
        """`submit` with `when_pending="wait"`: at once when no write for the keys is in flight (no closure), else
        queued behind that write."""
        pending = self._pending
        if not pending or not any(pending.get(k, 0) > 0 for k in key_tuple):
            self._run(key_tuple, handler, out)
            return
        self._wait_for(key_tuple, handler, out)

    def _run(self, key_tuple: tuple[tuple[str, Key], ...], handler: Callable[[], Plan],
             out: Completion[Any]) -> None:
        """Plan (a handler that raises fails `out`) and execute."""
        try:
            plan = handler()
        except BaseException as e:
            out.fail(e)
            return
        self._execute(plan, key_tuple, out)

    def _wait_for(self, key_tuple: tuple[tuple[str, Key], ...], handler: Callable[[], Plan],
                  out: Completion[Any]) -> None:
        def run() -> None:
            self._run(key_tuple, handler, out)

        blocked = [k for k in key_tuple if self._pending.get(k, 0) > 0]
        self._waiting.setdefault(blocked[0], deque()).append(lambda: self._resubmit(key_tuple, run))

    def _resubmit(self, keys: tuple[tuple[str, Key], ...], run: Callable[[], None]) -> None:
        blocked = [k for k in keys if self._pending.get(k, 0) > 0]
        if blocked:
            self._waiting.setdefault(blocked[0], deque()).append(lambda: self._resubmit(keys, run))
        else:
            run()

    def _execute(self, plan: Plan, keys: tuple[tuple[str, Key], ...], completion: Completion[Any]) -> None:
        if not plan.records:
            self._apply_plan(plan)
            completion.set(plan.answer())
            return
        touched = _touched(keys, plan.changes)
        self.on_write(self)
        if self._coalesce and plan.batch is None:
            if len(self._open_records) + len(plan.records) > MAX_OPEN_RECORDS:
                self.write_open()
            self._hold(touched)
            if not self._open:
                self._open_since_ms = self.clock.now_ms()
            self._open.append(_InFlight(plan, completion, touched, len(self._open_records)))
            self._open_records.extend(plan.records)
            return
        self.write_open()  # a batch with producer fields of its own: after the plans before it
        attributes: dict[str, Any] = {}
        if plan.batch is not None:
            attributes = {"producer_id": plan.batch.producer_id, "producer_epoch": plan.batch.producer_epoch,
                          "transactional": plan.batch.transactional, "control": plan.batch.control}
        stamped = plan.batch.timestamp_ms if plan.batch is not None else None
        timestamp_ms = self.clock.now_ms() if stamped is None else stamped
        try:
            info = self.log.append(plan.records, timestamp_ms=timestamp_ms,
                                   partition_leader_epoch=self.coordinator_epoch, **attributes)
        except OSError as e:
            self._failed_append(plan, completion, e)
            return
        plan.appended = info
        self._hold(touched)
        self._in_flight.append(_InFlight(plan, completion, touched, info.last_offset))
        self.complete_durable()

    def write_open(self) -> int:
        """Append the open batch (group commit: the plain plans submitted since the last call) as one batch; its
        plans are then in flight until durable. Returns the number of plans written (or failed)."""
        items = self._open
        if not items:
            return 0
        records = self._open_records
        self._open, self._open_records = [], []
        try:
            info = self.log.append(records, timestamp_ms=self.clock.now_ms(),
                                   partition_leader_epoch=self.coordinator_epoch, waiting_since_ms=self._open_since_ms)
        except OSError as e:  # the whole batch failed: every plan in it gets its failure answer, in order
            for item in items:
                self._unhold(item.keys)
                self._failed_append(item.plan, item.completion, e)
                for k in item.keys:
                    self._release(k)
            return len(items)
        base = info.base_offset
        for item in items:
            first = base + item.last_offset
            item.last_offset = first + len(item.plan.records) - 1
            item.plan.appended = AppendInfo(first, item.last_offset, info.size_bytes)
            self._in_flight.append(item)
        return len(items)

    def _hold(self, keys: tuple[tuple[str, Key], ...]) -> None:
        pending = self._pending
        for k in keys:
            pending[k] = pending.get(k, 0) + 1

    def _unhold(self, keys: tuple[tuple[str, Key], ...]) -> None:
        pending = self._pending
        for k in keys:
            left = pending[k] - 1
            if left:
                pending[k] = left
            else:
                del pending[k]

    def _failed_append(self, plan: Plan, completion: Completion[Any], error: OSError) -> None:
        if getattr(self.log, "failed", False):
            self.failed = error
        if plan.on_failure is None:
            completion.fail(KafkaError(Errors.NOT_COORDINATOR, f"append to partition {self.partition} failed: {error}"))
            return
        fallback = plan.on_failure(error)
        if fallback.records:
            raise IllegalStateError("a failure plan writes nothing; it only applies in-memory changes")
        self._apply_plan(fallback)
        completion.set(fallback.answer())

    def complete_durable(self) -> int:
        """Apply and answer every in-flight plan whose records are now durable (or, `visible_when_written`, written),
        in append order."""
        done = 0
        durable = self.log.durable_offset
        in_flight = self._in_flight
        check_record = self.spec.check_record if self.check_records else None
        apply = self.apply
        while in_flight and (in_flight[0].last_offset < durable or in_flight[0].plan.visible_when_written):
            item = in_flight.popleft()
            plan = item.plan
            changes = plan.changes
            if check_record is not None:
                for change in changes:
                    if change.record is not None:
                        check_record(change, plan.records[change.record])
            for change in changes:  # `_apply_plan`, inlined
                apply(change)
            if plan.after_apply is not None:
                plan.after_apply()
            self._unhold(item.keys)
            item.completion.set(plan.answer())
            if self._waiting:
                for k in item.keys:
                    self._release(k)
            done += 1
        return done

    def _release(self, key: tuple[str, Key]) -> None:
        queue = self._waiting.get(key)
        while queue and self._pending.get(key, 0) == 0:
            queue.popleft()()
        if queue is not None and not queue:
            del self._waiting[key]

    @property
    def in_flight(self) -> int:
        """Plans whose records are not durable yet (in the open batch or appended)."""
        return len(self._in_flight) + len(self._open)

    @property
    def has_open(self) -> bool:
        """Plans wait in the open batch (the next `poll` appends it)."""
        return bool(self._open)

    # ------------------------------------------------------------ applying changes

    def _apply_plan(self, plan: Plan) -> None:
        for change in plan.changes:
            self.apply(change)
        if plan.after_apply is not None:
            plan.after_apply()

    def apply(self, change: Change) -> None:
        """The one place an instance changes: check the decision against the table and the current state, install
        the post-state (a final state removes the instance), emit the trace row."""
        table, key, d = change.table, change.key, change.decision
        instances = self.instances[table.name]
        current = instances.get(key)
        exists = current is not None
        state = current["state"] if current is not None else table.initial
        from_state = d.from_state
        if from_state != state:
            raise IllegalStateError(f"{table.name} {key_text(key)}: decided in {from_state} but the instance is in "
                                    f"{state} (a change applied out of order)")
        post = d.post
        if post is not None:
            target = post["state"]
            if d.row.kind == "transition" and from_state not in table.valid_previous[target]:
                raise IllegalStateError(f"{table.name}: {from_state} -> {target} is not an edge of the table")
            if target in table.final_states:
                instances.pop(key, None)
            else:
                instances[key] = post
            exists = True
        if self.tracer.wants_decision(table.name, d):
            self._trace(change, exists)

    def _trace(self, change: Change, exists: bool) -> None:
        seq = self.next_seq(change.table.name, change.key) if exists else -1
        self.tracer.decision(change.table, change.decision, key=key_text(change.key), seq=seq,
                             ts_ms=self.clock.now_ms(), coordinator_epoch=self.coordinator_epoch, args=change.args,
                             pending=change.pending)

    def next_seq(self, machine: str, key: Key) -> int:
        """Strictly increasing per instance; dense within this coordinator epoch (`epoch << 32 | n`)."""
        n = self._seq.get((machine, key), 0)
        self._seq[(machine, key)] = n + 1
        return (self.coordinator_epoch << 32) | n

    # ------------------------------------------------------------ loading

    def install(self, table: MachineTable, key: Key, instance: Instance | None) -> None:
        """Replay on load: the log says this is the instance now (None: a tombstone removed it).

        A load installs a snapshot, not a transition: consecutive values of a key may skip states (a compacted log
        keeps only the last value; Kafka rebuilds a group with members as Stable), so no edge is required. The value
        must still be one of the machine's states; the trace row (kind `load`) lets the trace checker test it
        against the invariants."""
        if self.coordinator_epoch < 0:
            raise RuntimeError("install is for on_loaded: while replaying, the shard has no coordinator epoch yet")
        instances = self.instances[table.name]
        before = instances.get(key)
        if instance is None:
            instances.pop(key, None)
            after = before if before is not None else table.fresh(_key_fields(table, key))
            after = {**after, "state": _removed_state(table)}
        else:
            if instance["state"] not in table.states:
                raise IllegalStateError(f"{table.name} {key_text(key)}: the log holds the unknown state "
                                        f"{instance['state']!r}")
            instances[key] = instance
            after = instance
        if self.tracer.enabled:
            prior = before if before is not None else table.fresh(_key_fields(table, key))
            self.tracer.load(table, prior, after, key=key_text(key), seq=self.next_seq(table.name, key),
                             ts_ms=self.clock.now_ms(), coordinator_epoch=self.coordinator_epoch)

    def replay_batch(self, batch: RecordBatch) -> None:
        whole = getattr(self.spec, "replay_records", None)  # optional (BatchReplay): one call for the whole batch
        if whole is not None:
            whole(self, batch)
            return
        for record in batch.records:
            self.spec.replay(self, batch, record.key, record.value, record.offset)

    # ------------------------------------------------------------ timers

    def schedule(self, key: Hashable, deadline_ms: int, callback: Callable[[], None]) -> None:
        self.timers.schedule(key, deadline_ms, callback)

    def close(self) -> None:
        self.timers.clear()
        for item in (*self._in_flight, *self._open):
            item.completion.fail(KafkaError(Errors.NOT_COORDINATOR, f"partition {self.partition} was unloaded"))
        self._in_flight.clear()
        self._open.clear()
        self._open_records.clear()
        self._pending.clear()
        self._waiting.clear()
        self.log.close()


def _no_owner(shard: Shard) -> None:
    pass


def _touched(keys: tuple[tuple[str, Key], ...], changes: list[Change]) -> tuple[tuple[str, Key], ...]:
    """The instances a plan holds pending: the keys it was submitted for and those its changes touch."""
    if len(keys) == 1:
        machine, key = keys[0]
        for c in changes:
            if c.key != key or c.table.name != machine:
                break
        else:
            return keys  # the common case: one request, one instance (however many of its changes)
    touched = dict.fromkeys(keys)
    for c in changes:
        touched[(c.table.name, c.key)] = None
    return tuple(touched)


def _key_fields(table: MachineTable, key: Key) -> dict[str, Any]:
    return dict(zip((name for name, _ in table.keys), key, strict=True))


def _removed_state(table: MachineTable) -> str:
    """The state a tombstone leads to: the machine's final state (e.g. Transaction's Dead)."""
    finals = sorted(table.final_states)
    return finals[0] if finals else table.initial
