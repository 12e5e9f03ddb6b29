"""The transaction coordinator's handlers: one function per spec event, returning the runtime's `Plan`.

Owns the step from a request (already past the front door) to the spec's decision and its output: the `Change`s to
apply, the records that describe them, the answer, the in-memory fallback when the append fails, and the side
effect once applied (markers). Every state-dependent answer comes from `MachineTable.decide`; the code here only
computes the event's inputs (the time, a lazily allocated producer id, the server's transaction version) and turns
the decision into records and responses. Handlers run on the shard at submit time (`when_pending="answer"`), so
`pending` is Kafka's "a transition is in flight".

The two coordinator-initiated fences (InitProducerId on an open transaction, the timeout abort) are one plan each:
the spec's InitProducerId/TimeoutExpired (→ PrepareEpochFence, a pending-only state) and FenceAbort (→ PrepareAbort)
are applied together when the single PrepareAbort record is durable; if the append fails, FenceFailed is applied
instead (with transaction.version < 2 the bumped epoch stays in memory, never handed out, and the next fence reuses
it; with 2 nothing stays, as in Kafka 4.0.2).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .._generated.transaction import Event as TxnEvent
from .._generated.transaction import State as TxnState
from ..errors import Errors, IllegalStateError
from ..interfaces import TopicPartition
from ..runtime.clock import Clock
from ..runtime.shard import Change, Plan, RecordBytes, Shard
from ..statemachine import Decision, Instance, MachineTable
from .errors import append_error_name, translate_append_error
from .records import RecordCodec
from .responses import EndTxnResponse, InitProducerIdResponse, TransactionDescription
from .shard_spec import MACHINE

__all__ = ["LazyProducerId", "TxnContext", "is_expirable", "is_timed_out"]

Key = tuple[str]

# The events of every transaction, read once here: reading an enum member costs ~0.1 us on CPython 3.11 (its
# EnumType.__getattr__ slows every attribute of the class), ~0.2 % of a transaction each.
_ADD_PARTITIONS: Final = TxnEvent.AddPartitions
#: EndTxnV2 for a TV2 request, EndTxnV1 otherwise
_END_TXN: Final[dict[bool, str]] = {True: TxnEvent.EndTxnV2, False: TxnEvent.EndTxnV1}
#: a pending-only state a decision may lead to → the internal event the coordinator fires at once to leave it
_FOLLOW_UP: dict[str, str] = {TxnState.PrepareEpochFence: TxnEvent.FenceAbort}


class LazyProducerId:
    """A `new_producer_id` argument: a fresh id is taken from the ProducerIdManager only if the chosen row reads it."""

    __slots__ = ("_allocate", "value")

    def __init__(self, allocate: Callable[[], int]) -> None:
        self._allocate = allocate
        self.value: int | None = None

    def __call__(self) -> int:
        if self.value is None:
            self.value = self._allocate()
        return self.value


def _recorded(args: dict[str, Any]) -> dict[str, Any]:
    """The arguments as the trace records them: a lazy id that was taken becomes its value, one that was not stays
    lazy (the tracer writes null). `decide` copied the arguments, so they can be updated in place."""
    lazy = args.get("new_producer_id")
    if type(lazy) is LazyProducerId and lazy.value is not None:
        args["new_producer_id"] = lazy.value
    return args


@dataclass(slots=True)
class TxnContext:
    """What the handlers need from the coordinator (passed explicitly; no globals)."""

    table: MachineTable
    clock: Clock
    codec: RecordCodec
    server_txn_version: int
    max_timeout_ms: int
    new_producer_id: Callable[[], int]
    send_markers: Callable[[Shard, str], None]  # after a Prepare* is applied: queue its markers
    complete_when_written: bool = True  # TxnConfig.complete_when_written

    def record(self, post: Mapping[str, Any]) -> RecordBytes:
        return self.codec.key(post["transactional_id"]), self.codec.encode(post)

    def decide(self, shard: Shard, key: Key, event: str, args: dict[str, Any], *, instance: Instance | None = None,
               pending: bool | None = None, record: int | None = 0) -> tuple[Decision, Change]:
        """The spec's decision on the instance (current unless given) and the `Change` applying it; an accepted
        change is described by the plan's record number `record` (None: it is not written)."""
        table = self.table
        if instance is None:
            instance = shard.instances[MACHINE].get(key) or shard.instance_or_fresh(table, key)
        if pending is None:
            pending = shard.pending(MACHINE, key)
        # the only callable argument the handlers pass is a lazy producer id (saves decide a look at every value)
        decision = table.decide(instance, event, args, pending=pending,
                                lazy=type(args.get("new_producer_id")) is LazyProducerId)
        return decision, Change(table, key, decision, _recorded(args), pending,
                                record if decision.post is not None else None)


@functools.lru_cache(maxsize=64)
def _failure_answer(respond: Callable[[str], Any]) -> Callable[[BaseException], Plan]:
    """The answer to a failed append: `appendTransactionToLog`'s error translation, nothing applied (one per
    `respond`, shared by every plan that answers with it)."""
    return lambda error: Plan(response=respond(translate_append_error(append_error_name(error))))


def _same(error: str) -> str:
    return error


def _single_write(ctx: TxnContext, shard: Shard, change: Change, response: Any, respond_error: Callable[[str], Any],
                  *, markers: bool = False) -> Plan:
    decision = change.decision
    assert decision.post is not None
    key = change.key
    after = functools.partial(ctx.send_markers, shard, key[0]) if markers else None
    assert change.record == 0
    return Plan([change], [ctx.record(decision.post)], response=response,
                on_failure=_failure_answer(respond_error), after_apply=after)


# ---------------------------------------------------------------------------------------------- the fence


def _fence_plan(ctx: TxnContext, shard: Shard, fence: Change, pre: Instance, respond: Callable[[str], Any]) -> Plan:
    """PrepareEpochFence (decided) → FenceAbort → one PrepareAbort record; FenceFailed if the append fails."""
    decision = fence.decision
    assert decision.post is not None and decision.to_state in _FOLLOW_UP
    fence = Change(fence.table, fence.key, decision, fence.args, fence.pending, None)  # never written itself
    abort_args = {"server_txn_version": ctx.server_txn_version, "now_ms": ctx.clock.now_ms()}
    _, abort = ctx.decide(shard, fence.key, _FOLLOW_UP[decision.to_state], abort_args, instance=decision.post,
                          pending=True, record=0)
    if abort.decision.post is None:
        raise IllegalStateError(f"transaction {fence.key[0]!r}: {abort.decision.event} did not leave "
                                f"{decision.to_state} (row {abort.decision.row.index})")

    def failed(error: BaseException) -> Plan:
        _, undo = ctx.decide(shard, fence.key, TxnEvent.FenceFailed, {"server_txn_version": ctx.server_txn_version},
                             instance=pre, pending=False, record=None)
        return Plan([undo], response=respond(translate_append_error(append_error_name(error))))

    return Plan([fence, abort], [ctx.record(abort.decision.post)], response=respond(decision.error),
                on_failure=failed, after_apply=lambda: ctx.send_markers(shard, fence.key[0]))


# ---------------------------------------------------------------------------------------------- client events


def init_producer_id(ctx: TxnContext, shard: Shard, transactional_id: str, timeout_ms: int, expected_producer_id: int,
                     expected_epoch: int) -> Plan:
    key = (transactional_id,)
    pre = shard.instance_or_fresh(ctx.table, key)
    args = {"expected_producer_id": expected_producer_id, "expected_epoch": expected_epoch,
            "timeout_ms": timeout_ms, "max_timeout_ms": ctx.max_timeout_ms,
            "new_producer_id": LazyProducerId(ctx.new_producer_id), "now_ms": ctx.clock.now_ms()}
    decision, change = ctx.decide(shard, key, TxnEvent.InitProducerId, args, instance=pre)
    if not decision.accepted:
        return Plan([change], response=InitProducerIdResponse(decision.error))
    if decision.to_state in _FOLLOW_UP:
        return _fence_plan(ctx, shard, change, pre, InitProducerIdResponse)
    post = decision.post
    assert post is not None
    answer = InitProducerIdResponse(decision.error, post["producer_id"], post["producer_epoch"])
    return _single_write(ctx, shard, change, answer, InitProducerIdResponse)


def add_partitions(ctx: TxnContext, shard: Shard, transactional_id: str, producer_id: int, producer_epoch: int,
                   partitions: frozenset[str], txn_version: int) -> Plan:
    key = (transactional_id,)
    args = {"pid": producer_id, "epoch": producer_epoch, "parts": partitions, "txn_version": txn_version,
            "now_ms": ctx.clock.now_ms()}
    decision, change = ctx.decide(shard, key, _ADD_PARTITIONS, args)
    if not decision.accepted:
        return Plan([change], response=decision.error)
    return _single_write(ctx, shard, change, decision.error, _same)


def verify_partition(ctx: TxnContext, shard: Shard, transactional_id: str, producer_id: int, producer_epoch: int,
                     partition: str) -> Plan:
    args = {"pid": producer_id, "epoch": producer_epoch, "p": partition}
    decision, change = ctx.decide(shard, (transactional_id,), TxnEvent.VerifyPartition, args)
    if decision.accepted:
        raise IllegalStateError(f"VerifyPartition changed transaction {transactional_id!r} (row {decision.row.index})")
    return Plan([change], response=decision.error)


def verify_partitions(ctx: TxnContext, shard: Shard, transactional_id: str, producer_id: int, producer_epoch: int,
                      partitions: tuple[str, ...]) -> Plan:
    """The spec's VerifyPartition for each of `partitions` (one decision and trace row each, in order), in one plan
    on one look-up of the instance: a leader's verify-only AddPartitionsToTxn for all the partitions of a Produce
    request (Kafka's `AddPartitionsToTxnManager`: one request per transactional id). The answer is the errors in
    the order of `partitions`. Nothing changes, so every decision sees the same instance."""
    key = (transactional_id,)
    instance = shard.instances[MACHINE].get(key) or shard.instance_or_fresh(ctx.table, key)
    pending = shard.pending(MACHINE, key)
    changes, errors = [], []
    for partition in partitions:
        args = {"pid": producer_id, "epoch": producer_epoch, "p": partition}
        decision, change = ctx.decide(shard, key, TxnEvent.VerifyPartition, args, instance=instance, pending=pending)
        if decision.accepted:
            raise IllegalStateError(f"VerifyPartition changed transaction {transactional_id!r} "
                                    f"(row {decision.row.index})")
        changes.append(change)
        errors.append(decision.error)
    return Plan(changes, response=errors)


def end_txn(ctx: TxnContext, shard: Shard, transactional_id: str, producer_id: int, producer_epoch: int, result: str,
            v2: bool) -> Plan:
    """EndTxnV2 for client TV2 (request version > 4), EndTxnV1 otherwise. The answer is released once the Prepare
    record is durable; markers and Complete follow (the marker channel)."""
    key = (transactional_id,)
    args: dict[str, Any] = {"pid": producer_id, "epoch": producer_epoch, "result": result,
                            "now_ms": ctx.clock.now_ms()}
    if v2:
        args["new_producer_id"] = LazyProducerId(ctx.new_producer_id)
    pre = shard.instance_or_fresh(ctx.table, key)
    decision, change = ctx.decide(shard, key, _END_TXN[v2], args, instance=pre)
    if not decision.accepted:
        if decision.error == Errors.NONE:  # a retry of an EndTxn that completed: the producer id and epoch to use now
            return Plan([change], response=EndTxnResponse(Errors.NONE, pre["producer_id"], pre["producer_epoch"]))
        return Plan([change], response=EndTxnResponse(decision.error))
    post = decision.post
    assert post is not None
    if post["next_producer_id"] != -1:  # TV2 epoch overflow: the client continues with the next id at epoch 0
        answer = EndTxnResponse(decision.error, post["next_producer_id"], 0)
    else:
        answer = EndTxnResponse(decision.error, post["producer_id"], post["producer_epoch"])
    return _single_write(ctx, shard, change, answer, EndTxnResponse, markers=True)


def describe(ctx: TxnContext, shard: Shard, transactional_id: str) -> Plan:
    key = (transactional_id,)
    instance = shard.instance_or_fresh(ctx.table, key)
    decision, change = ctx.decide(shard, key, TxnEvent.Describe, {}, instance=instance)
    if decision.error != Errors.NONE:
        return Plan([change], response=TransactionDescription(transactional_id, decision.error))
    partitions = tuple(sorted(TopicPartition.parse(p) for p in instance["partitions"]))
    return Plan([change], response=TransactionDescription(
        transactional_id, Errors.NONE, state=instance["state"], producer_id=instance["producer_id"],
        producer_epoch=instance["producer_epoch"], timeout_ms=instance["txn_timeout_ms"],
        start_timestamp_ms=instance["txn_start_timestamp_ms"], partitions=partitions))


# ---------------------------------------------------------------------------------------------- coordinator events


def is_timed_out(instance: Mapping[str, Any], pending: bool, now_ms: int) -> bool:
    """Kafka's `timedOutTransactions` filter: the scan that proposes candidates to the spec's TimeoutExpired (whose
    guard checks the same again)."""
    return (instance["state"] == TxnState.Ongoing and not pending
            and instance["txn_start_timestamp_ms"] + instance["txn_timeout_ms"] < now_ms)


def is_expirable(table: MachineTable, instance: Mapping[str, Any], pending: bool, now_ms: int,
                 expiration_ms: int) -> bool:
    """The expiration task's filter (proposes candidates to the spec's Expire, whose guard checks the same again)."""
    return (instance["state"] in table.expirable_states and not pending
            and instance["txn_last_update_timestamp_ms"] <= now_ms - expiration_ms)


def timeout_abort(ctx: TxnContext, shard: Shard, transactional_id: str, producer_id: int, producer_epoch: int) -> Plan:
    """Abort a transaction found timed out by a scan that saw (`producer_id`, `producer_epoch`). If the producer
    moved on since (another producer id, or an epoch bumped by a failed fence), nothing is written: the abort
    would carry a stale epoch (Kafka answers it PRODUCER_FENCED)."""
    key = (transactional_id,)
    pre = shard.get(MACHINE, key)
    if pre is None or pre["producer_id"] != producer_id:
        return Plan(response=Errors.INVALID_PRODUCER_ID_MAPPING)
    if pre["producer_epoch"] != producer_epoch:
        return Plan(response=Errors.PRODUCER_FENCED)
    now_ms = ctx.clock.now_ms()
    if not is_timed_out(pre, shard.pending(MACHINE, key), now_ms):
        return Plan(response=Errors.CONCURRENT_TRANSACTIONS)  # something happened to it since the scan
    _, change = ctx.decide(shard, key, TxnEvent.TimeoutExpired, {"now_ms": now_ms}, instance=pre)
    return _fence_plan(ctx, shard, change, pre, lambda error: error)


def complete(ctx: TxnContext, shard: Shard, txns: list[tuple[str, int, int]]) -> Plan:
    """Every marker of these transactions (transactional id, producer id, epoch the markers carried) was
    acknowledged: write their CompleteCommit/CompleteAbort records, as one batch."""
    now_ms = ctx.clock.now_ms()
    event = TxnEvent.CompleteTxn  # read once for the batch (an enum member's read is slow on CPython 3.11)
    changes: list[Change] = []
    records: list[RecordBytes] = []
    for transactional_id, producer_id, producer_epoch in txns:
        key = (transactional_id,)
        pre = shard.get(MACHINE, key)
        if pre is None or (pre["producer_id"], pre["producer_epoch"]) != (producer_id, producer_epoch):
            raise IllegalStateError(f"transaction {transactional_id!r}: markers were sent for ({producer_id}, "
                                    f"{producer_epoch}) but the instance is {pre}")
        decision, change = ctx.decide(shard, key, event, {"now_ms": now_ms}, instance=pre, record=len(records))
        assert decision.post is not None
        changes.append(change)
        records.append(ctx.record(decision.post))
    # Visible once written, not once fsynced: the markers are durable already (the channel writes this only after
    # every marker was acknowledged, which the partitions do once the marker is durable), so losing this record in a
    # power failure loses nothing a load does not repair (the Prepare* before it re-sends the markers, which are
    # idempotent, and writes it again); and the transactional id's next acknowledged write (Ongoing, Empty, a
    # tombstone) is appended after it to this log, so the fsync that write waits for covers it.
    return Plan(changes, records, response=Errors.NONE, on_failure=_failure_answer(_same),
                visible_when_written=ctx.complete_when_written)


def expire(ctx: TxnContext, shard: Shard, transactional_ids: list[str], expiration_ms: int) -> Plan:
    """Tombstones for idle transactional ids, as one batch; each id is removed once the batch is durable."""
    now_ms = ctx.clock.now_ms()
    changes: list[Change] = []
    records: list[RecordBytes] = []
    for transactional_id in transactional_ids:
        key = (transactional_id,)
        _, change = ctx.decide(shard, key, TxnEvent.Expire, {"now_ms": now_ms, "expiration_ms": expiration_ms},
                               record=len(records))
        changes.append(change)
        records.append((ctx.codec.key(transactional_id), None))
    return Plan(changes, records, response=Errors.NONE, on_failure=_failure_answer(_same))
