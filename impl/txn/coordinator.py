"""`TransactionCoordinator`: one node's transaction coordinator (Kafka's `TransactionCoordinator` with its state
manager, restated on kcoord's runtime).

Owns: the front door of every transaction API (reference §1.4: loading, not coordinator, empty ids, the old-client
error downgrade, AddPartitionsToTxn's all-or-nothing topic check), the `CoordinatorRuntime` of `__transaction_state`,
the ProducerIdManager wiring (a fresh id is taken only when the spec's chosen row reads it), the marker channel, and
the two periodic tasks per loaded partition (timeout-driven abort, transactional-id expiration). Every answer is a
`Completion` of a plain response value (`responses.py`); protocol errors are Kafka error names, never exceptions.

Front-door answers that are not in the spec, on purpose (the spec models one transactional id; these concern the
request or the node): INVALID_REQUEST for an empty transactional id or a half-given expected producer id/epoch on
the idempotent path; UNKNOWN_TOPIC_OR_PARTITION/OPERATION_NOT_ATTEMPTED for AddPartitionsToTxn naming an unknown
topic; COORDINATOR_NOT_AVAILABLE for Describe/List while the coordinator is shut down, and for a client EndTxn while
more than `marker_backlog_max` transactions wait for markers (kcoord's bound; Kafka's queues are unbounded);
UNSUPPORTED_VERSION for a Transactions V2 request (EndTxn v5+, an AddPartitions of transaction version 2) when the
server's transaction.version is 0: its TransactionLogValue v0 cannot hold the client's transaction version. Kafka
4.0.2 answers the same (its log encoder throws UnsupportedVersionException) but leaves the transaction's pending state
set, so it answers CONCURRENT_TRANSACTIONS until the partition is reloaded; here nothing changes.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from ..errors import Errors, KafkaError
from ..interfaces import PartitionRouter, TopicPartition, TxnResult
from ..runtime.cleaner import DEFAULT_CLEANING, Cleaning
from ..runtime.clock import Clock
from ..runtime.completion import Completion
from ..runtime.runtime import CoordinatorRuntime
from ..runtime.shard import Plan, Shard
from ..runtime.trace import Tracer
from ..seeded import NO_BUGS, SeededBug
from ..statemachine import MachineTable
from ..storage.log import Durability
from ..storage.partitioning import partition_for
from ..storage.producer_ids import ProducerIdManager
from . import plans, seeded
from .config import TxnConfig
from .errors import downgrade_fenced
from .markers import RESULT_OF_STATE, MarkerChannel, PendingTxn
from .records import RecordCodec, value_version_for
from .responses import (
    AddPartitionsResponse,
    EndTxnResponse,
    InitProducerIdResponse,
    ListTransactionsResponse,
    TransactionDescription,
    TransactionListing,
)
from .shard_spec import MACHINE, TransactionShardSpec

__all__ = ["TRANSACTION_STATE_TOPIC", "TransactionCoordinator"]

TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
OFFSETS_TOPIC: Final = "__consumer_offsets"
_ABORT_TIMER: Final = ("txn", "abort-timed-out")
_EXPIRE_TIMER: Final = ("txn", "expire-ids")
_NAMES_MAX: Final = 4_096  # partition sets `_names` remembers (cleared when full)
R = TypeVar("R")
#: `verify_partitions`' view of a partition tuple: the distinct partitions' names, the answer to one error for all,
#: and the answer to the plan's errors (one per name)
_VerifyShape = tuple[tuple[str, ...], Callable[[str], AddPartitionsResponse],
                     Callable[[list[str]], AddPartitionsResponse]]


class TransactionCoordinator:
    def __init__(self, *, data_dir: Path, clock: Clock, router: PartitionRouter, producer_ids: ProducerIdManager,
                 config: TxnConfig | None = None, topic_exists: Callable[[str], bool] | None = None,
                 tracer: Tracer | None = None, durability: Durability | None = None, node_id: int = 0,
                 segment_bytes: int = 100 * 1024 * 1024, cleaning: Cleaning | None = DEFAULT_CLEANING,
                 seeded_bugs: frozenset[SeededBug] = NO_BUGS, check_records: bool = True) -> None:
        self.config = config or TxnConfig()
        self.clock = clock
        self.node_id = node_id
        self.table = MachineTable.load("transaction")
        self.producer_ids = producer_ids
        self.topic_exists = topic_exists or (lambda topic: True)
        self.active = True
        self.value_version = value_version_for(self.config.server_txn_version)
        self._names: dict[tuple[TopicPartition, ...], frozenset[str]] = {}  # AddPartitionsToTxn's sets, as names
        self._verify_shapes: dict[tuple[TopicPartition, ...], _VerifyShape] = {}  # verify_partitions' partitions
        self.codec = RecordCodec(self.value_version)
        self.runtime = CoordinatorRuntime(
            topic=TRANSACTION_STATE_TOPIC, data_dir=data_dir, spec_factory=self._spec_for, clock=clock,
            tracer=tracer, num_partitions=self.config.num_partitions, durability=durability, node_id=node_id,
            segment_bytes=segment_bytes, cleaning=cleaning, check_records=check_records)
        self.channel = MarkerChannel(router=router, clock=clock, config=self.config,
                                     write_completions=self._write_completions, owns=self._owns)
        self.ctx = seeded.context(plans.TxnContext(
            table=self.table, clock=clock, codec=self.codec,
            server_txn_version=self.config.server_txn_version, max_timeout_ms=self.config.max_timeout_ms,
            new_producer_id=producer_ids.generate_producer_id, send_markers=self._send_markers,
            complete_when_written=self.config.complete_when_written), seeded_bugs)

    # ------------------------------------------------------------ lifecycle

    def _spec_for(self, partition: int) -> TransactionShardSpec:
        return TransactionShardSpec(self.table, self.codec, self._on_loaded)

    def load(self, partition: int, *, wait: bool = True) -> Shard:
        """Become the coordinator of `__transaction_state-<partition>` (Kafka's `onElection`)."""
        self.channel.drop_partition(partition)
        return self.runtime.load(partition, wait=wait)

    def load_all(self) -> None:
        for partition in range(self.config.num_partitions):
            self.load(partition)

    def unload(self, partition: int) -> None:
        """Stop being its coordinator (Kafka's `onResignation`): its markers stop, requests in flight fail."""
        self.channel.drop_partition(partition)
        self.runtime.unload(partition)

    def shutdown(self) -> None:
        self.active = False
        for partition in list(self.runtime.shards):
            self.unload(partition)
        self.runtime.close()

    def poll(self) -> int:
        """One turn of the loop: loads, group commits, durable writes, timers, then the marker channel."""
        work = self.runtime.poll()
        return work + self.channel.poll()

    def flush(self) -> int:
        """Force group commits to disk, then let the channel send what became ready. Markers the send has answered
        already (a partition on this node appends a marker in the call and, with os durability, it is durable at
        once) queue their transactions' Complete* records: these are appended in this call too (not fsynced: a
        Complete* record is visible once written, `plans.complete`), not at the next poll, so a lone EndTxn leaves its
        transaction completed and the producer's next AddPartitionsToTxn meets no commit in progress."""
        done = self.runtime.flush()
        sent = self.channel.poll()
        if sent:
            done += self.runtime.write_open()
        return done + sent

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for d in (self.runtime.next_deadline_ms(), self.channel.next_deadline_ms()) if d is not None]
        return min(deadlines) if deadlines else None

    def _owns(self, partition: int, coordinator_epoch: int) -> bool:
        shard = self.runtime.shards.get(partition)
        return shard is not None and self.runtime.owns(partition) and shard.failed is None \
            and shard.coordinator_epoch == coordinator_epoch

    def _on_loaded(self, shard: Shard) -> None:
        """Kafka's load completion: re-send the markers of every Prepare* transaction; start the periodic tasks."""
        for instance in list(shard.instances[MACHINE].values()):
            if instance["state"] in RESULT_OF_STATE:  # Prepare*: its markers are sent again
                self.channel.add(shard.partition, shard.coordinator_epoch, instance)
        now = self.clock.now_ms()
        shard.schedule(_ABORT_TIMER, now + self.config.abort_interval_ms, lambda: self._abort_tick(shard))
        shard.schedule(_EXPIRE_TIMER, now + self.config.expiration_interval_ms, lambda: self._expire_tick(shard))

    def _send_markers(self, shard: Shard, transactional_id: str) -> None:
        instance = shard.get(MACHINE, (transactional_id,))
        assert instance is not None, f"transaction {transactional_id!r} vanished right after its Prepare record"
        self.channel.add(shard.partition, shard.coordinator_epoch, instance)

    def _write_completions(self, partition: int, coordinator_epoch: int, txns: list[PendingTxn]) -> Completion[str]:
        if not self._owns(partition, coordinator_epoch):
            return Completion.of(Errors.NOT_COORDINATOR)
        shard = self.runtime.shards[partition]
        return shard.submit([(MACHINE, (t.transactional_id,)) for t in txns], lambda: plans.complete(
            self.ctx, shard, [(t.transactional_id, t.producer_id, t.producer_epoch) for t in txns]),
            completion=_Answer(_same))

    # ------------------------------------------------------------ the front door

    def _submit(self, transactional_id: str, handler: Callable[..., Plan], args: tuple[Any, ...],
                respond: Callable[[str], R], finish: Callable[[Any], R] | None = None) -> Completion[R]:
        """Route to the owning shard (or answer its routing error) and run `handler(ctx, shard, transactional_id,
        *args)` there; `finish` post-processes the plan's answer (e.g. the old-client downgrade). No closures: the
        front door runs for every request."""
        partition = self.runtime.partition_for(transactional_id)
        try:
            shard = self.runtime.shard(partition)
        except KafkaError as e:
            return Completion.of(respond(e.name))
        out: _Answer[R] = _Answer(respond, finish)
        shard.submit(((MACHINE, (transactional_id,)),), functools.partial(handler, self.ctx, shard, transactional_id,
                                                                           *args),
                     when_pending="answer", completion=out)
        return out

    def init_producer_id(self, transactional_id: str | None, timeout_ms: int, expected_producer_id: int = -1,
                         expected_epoch: int = -1, *, request_version: int | None = None
                         ) -> Completion[InitProducerIdResponse]:
        respond = _responder(InitProducerIdResponse, "InitProducerId", request_version)
        if transactional_id is None:
            return Completion.of(self._idempotent_producer_id(expected_producer_id, expected_epoch))
        if not transactional_id:
            return Completion.of(respond(Errors.INVALID_REQUEST))
        return self._submit(transactional_id, plans.init_producer_id,
                            (timeout_ms, expected_producer_id, expected_epoch), respond, _fenced_finisher(respond))

    def _idempotent_producer_id(self, expected_producer_id: int, expected_epoch: int) -> InitProducerIdResponse:
        """A producer without a transactional id: a fresh producer id at epoch 0, or the manager's error."""
        if (expected_producer_id == -1) != (expected_epoch == -1):
            return InitProducerIdResponse(Errors.INVALID_REQUEST)
        try:
            return InitProducerIdResponse(Errors.NONE, self.producer_ids.generate_producer_id(), 0)
        except KafkaError as e:
            return InitProducerIdResponse(e.name)

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TopicPartition], txn_version: int = 0, *,
                       request_version: int | None = None) -> Completion[AddPartitionsResponse]:
        """AddPartitionsToTxn (v<4 semantics: one transaction per request; an unknown topic fails the request)."""
        requested = tuple(dict.fromkeys(partitions))
        respond = functools.partial(_add_partitions_answer, requested, request_version)
        unknown = self._unknown_topics(requested)
        if unknown is not None:  # KafkaApis: the coordinator is not called at all
            return Completion.of(unknown)
        if not transactional_id:
            return Completion.of(respond(Errors.INVALID_REQUEST))
        if txn_version >= 2 and not self._writes_client_version:
            return Completion.of(respond(Errors.UNSUPPORTED_VERSION))
        names = self._names.get(requested)
        if names is None:
            names = frozenset(str(tp) for tp in requested)
            if len(self._names) >= _NAMES_MAX:
                self._names.clear()
            self._names[requested] = names
        return self._submit(transactional_id, plans.add_partitions,
                            (producer_id, producer_epoch, names, txn_version), respond, respond)

    def _unknown_topics(self, requested: tuple[TopicPartition, ...]) -> AddPartitionsResponse | None:
        """The answer when a requested topic does not exist (None when all do)."""
        unknown = {tp for tp in requested if not self.topic_exists(tp.topic)}
        if not unknown:
            return None
        return {tp: Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else Errors.OPERATION_NOT_ATTEMPTED
                for tp in requested}

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str,
                    txn_version: int = 0, *, request_version: int | None = None) -> Completion[str]:
        """AddOffsetsToTxn: add the group's `__consumer_offsets` partition."""
        offsets = str(self.offsets_partition(group_id))

        respond = functools.partial(downgrade_fenced, api="AddOffsetsToTxn", request_version=request_version)
        if not transactional_id:
            return Completion.of(respond(Errors.INVALID_REQUEST))
        return self._submit(transactional_id, plans.add_partitions,
                            (producer_id, producer_epoch, frozenset({offsets}), txn_version), respond, respond)

    @property
    def _writes_client_version(self) -> bool:
        """The value version written can carry a client transaction version (TV2 requests need it)."""
        return self.value_version >= 1

    def offsets_partition(self, group_id: str) -> TopicPartition:
        return TopicPartition(OFFSETS_TOPIC, partition_for(group_id, self.config.offsets_num_partitions))

    def verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         partition: TopicPartition) -> Completion[str]:
        """`TxnVerifier`: verify-only AddPartitionsToTxn for one partition (the spec's VerifyPartition)."""
        if not transactional_id:
            return Completion.of(Errors.INVALID_REQUEST)
        return self._submit(transactional_id, plans.verify_partition,
                            (producer_id, producer_epoch, str(partition)), _same)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[AddPartitionsResponse]:
        """Verify-only AddPartitionsToTxn (v4+ with `verify_only`, and a partition leader's KIP-890 verification of
        a Produce request's partitions) for several partitions, each answered on its own (Kafka's
        handleVerifyPartitionsInTransaction): one submit to the shard, one VerifyPartition decision per partition."""
        shape = self._verify_shapes.get(partitions if type(partitions) is tuple else tuple(partitions))
        if shape is None:
            shape = self._verify_shape(tuple(partitions))
        names, respond, finish = shape
        if not transactional_id:
            return Completion.of(respond(Errors.INVALID_REQUEST))
        return self._submit(transactional_id, plans.verify_partitions, (producer_id, producer_epoch, names), respond,
                            finish)

    def _verify_shape(self, partitions: tuple[TopicPartition, ...]) -> _VerifyShape:
        """What `verify_partitions` needs of a partition tuple (remembered: a Produce request's partitions repeat):
        the distinct partitions' names, and the answer per partition for one error and for the plan's errors."""
        requested = tuple(dict.fromkeys(partitions))
        shape = (tuple(str(tp) for tp in requested), functools.partial(_each, requested),
                 functools.partial(_paired, requested))
        if len(self._verify_shapes) >= _NAMES_MAX:
            self._verify_shapes.clear()
        self._verify_shapes[partitions] = shape
        return shape

    def add_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      partition: TopicPartition) -> Completion[str]:
        """`TxnVerifier`: a partition leader's AddPartitionsToTxn for a Transactions V2 write (v5, not verify-only;
        Kafka's `TransactionVersion.transactionVersionForAddPartitionsToTxn` makes it client version 2)."""
        out: Completion[str] = Completion()
        added = self.add_partitions(transactional_id, producer_id, producer_epoch, [partition], 2,
                                    request_version=5)

        def forward(done: Completion[AddPartitionsResponse]) -> None:
            try:
                out.set(done.result()[partition])
            except BaseException as e:
                out.fail(e)

        added.then(forward)
        return out

    def add_partitions_v2(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[Mapping[TopicPartition, str]]:
        """`TxnVerifier`: `add_partition` for a Produce request's partitions in one AddPartitionsToTxn v5 (one
        transition: two separate adds of one transaction would meet each other's pending write and one be
        answered CONCURRENT_TRANSACTIONS)."""
        out: Completion[Mapping[TopicPartition, str]] = Completion()
        added = self.add_partitions(transactional_id, producer_id, producer_epoch, partitions, 2, request_version=5)

        def forward(done: Completion[AddPartitionsResponse]) -> None:
            try:
                r = done.result()
                out.set({tp: r[tp] for tp in partitions})
            except BaseException as e:
                out.fail(e)

        added.then(forward)
        return out

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, result: TxnResult,
                request_version: int) -> Completion[EndTxnResponse]:
        """EndTxn; request version > 4 means a Transactions V2 client (an epoch bump on every EndTxn)."""
        respond = _responder(EndTxnResponse, "EndTxn", request_version)
        if not transactional_id:
            return Completion.of(respond(Errors.INVALID_REQUEST))
        if request_version > 4 and not self._writes_client_version:
            return Completion.of(respond(Errors.UNSUPPORTED_VERSION))
        if self.channel.pending_transactions >= self.config.marker_backlog_max:
            return Completion.of(respond(Errors.COORDINATOR_NOT_AVAILABLE))
        return self._submit(transactional_id, plans.end_txn,
                            (producer_id, producer_epoch, result, request_version > 4), respond,
                            _fenced_finisher(respond))

    def when_settled(self, transactional_id: str) -> Completion[None] | None:
        """Done once the markers and the Complete* record of the transaction are written (or no longer this node's to
        write); None when none are being written."""
        return self.channel.when_settled(transactional_id)

    def describe_transactions(self, transactional_ids: Sequence[str]) -> Completion[list[TransactionDescription]]:
        answers: list[Completion[TransactionDescription]] = []
        for transactional_id in transactional_ids:
            if not self.active:
                answers.append(Completion.of(TransactionDescription(transactional_id,
                                                                    Errors.COORDINATOR_NOT_AVAILABLE)))
            elif not transactional_id:
                answers.append(Completion.of(TransactionDescription(transactional_id, Errors.INVALID_REQUEST)))
            else:
                answers.append(self._describe_one(transactional_id))
        return _gather(answers)

    def _describe_one(self, transactional_id: str) -> Completion[TransactionDescription]:
        return self._submit(transactional_id, plans.describe, (),
                            lambda error: TransactionDescription(transactional_id, error))

    def list_transactions(self, state_filters: Sequence[str] = (), producer_id_filters: Sequence[int] = (),
                          duration_filter_ms: int = -1) -> Completion[ListTransactionsResponse]:
        """ListTransactions over the partitions this node owns (Kafka's `listTransactionStates`)."""
        if not self.active:
            return Completion.of(ListTransactionsResponse(Errors.COORDINATOR_NOT_AVAILABLE))
        if self.runtime.loading:
            return Completion.of(ListTransactionsResponse(Errors.COORDINATOR_LOAD_IN_PROGRESS))
        known = set(self.table.states)  # Kafka's TxnState.fromName knows the pending-only states too
        unknown = tuple(s for s in state_filters if s not in known)
        states, pids = set(state_filters), set(producer_id_filters)
        now = self.clock.now_ms()
        listed = []
        for partition in sorted(self.runtime.shards):
            for instance in self.runtime.shards[partition].instances[MACHINE].values():
                if (states and instance["state"] not in states) or (pids and instance["producer_id"] not in pids):
                    continue
                if duration_filter_ms >= 0 and now - instance["txn_start_timestamp_ms"] <= duration_filter_ms:
                    continue
                listed.append(TransactionListing(instance["transactional_id"], instance["producer_id"],
                                                 instance["state"]))
        return Completion.of(ListTransactionsResponse(
            Errors.NONE, tuple(sorted(listed, key=lambda t: t.transactional_id)), unknown))

    # ------------------------------------------------------------ periodic tasks

    def _abort_tick(self, shard: Shard) -> None:
        self.abort_timed_out(shard)
        shard.schedule(_ABORT_TIMER, self.clock.now_ms() + self.config.abort_interval_ms,
                       lambda: self._abort_tick(shard))

    def timed_out(self, shard: Shard) -> list[tuple[str, int, int]]:
        """Kafka's `timedOutTransactions` for one partition: (transactional id, producer id, epoch)."""
        now = self.clock.now_ms()
        return [(key[0], inst["producer_id"], inst["producer_epoch"])
                for key, inst in shard.instances[MACHINE].items()
                if plans.is_timed_out(inst, shard.pending(MACHINE, key), now)]

    def abort_timed_out(self, shard: Shard, candidates: list[tuple[str, int, int]] | None = None
                        ) -> list[Completion[str]]:
        """Fence and abort every timed-out transaction (§1.11); each answer is NONE or why it was skipped/failed."""
        found = self.timed_out(shard) if candidates is None else candidates
        return [shard.submit([(MACHINE, (txn_id,))], functools.partial(
            plans.timeout_abort, self.ctx, shard, txn_id, pid, epoch), completion=_Answer(_same))
            for txn_id, pid, epoch in found]

    def _expire_tick(self, shard: Shard) -> None:
        self.expire_ids(shard)
        shard.schedule(_EXPIRE_TIMER, self.clock.now_ms() + self.config.expiration_interval_ms,
                       lambda: self._expire_tick(shard))

    def expire_ids(self, shard: Shard) -> list[Completion[str]]:
        """Tombstone every expirable idle transactional id (§1.12), in batches of `expiration_batch_records`."""
        now, expiration_ms = self.clock.now_ms(), self.config.id_expiration_ms
        ids = sorted(key[0] for key, inst in shard.instances[MACHINE].items()
                     if plans.is_expirable(self.table, inst, shard.pending(MACHINE, key), now, expiration_ms))
        step = self.config.expiration_batch_records
        done = []
        for i in range(0, len(ids), step):
            chunk = ids[i:i + step]
            done.append(shard.submit([(MACHINE, (t,)) for t in chunk], functools.partial(
                plans.expire, self.ctx, shard, chunk, expiration_ms), completion=_Answer(_same)))
        return done


# ---------------------------------------------------------------------------------------------- completions


def _same(error: str) -> str:
    return error


@functools.lru_cache(maxsize=64)
def _responder(response: Callable[[str], R], api: str, request_version: int | None) -> Callable[[str], R]:
    """`error name -> response(downgraded error)` for one API and request version (shared by every request)."""
    return lambda error: response(downgrade_fenced(error, api, request_version))


@functools.lru_cache(maxsize=64)
def _fenced_finisher(respond: Callable[[str], R]) -> Callable[[Any], R]:
    """A plan's answer as is, unless PRODUCER_FENCED, which old clients get downgraded (`respond`)."""
    fenced = Errors.PRODUCER_FENCED  # read once: an enum member's read costs ~0.1 µs on CPython 3.11
    return lambda r: r if r.error != fenced else respond(r.error)


def _add_partitions_answer(requested: tuple[TopicPartition, ...], request_version: int | None,
                           error: str) -> AddPartitionsResponse:
    """The same (downgraded) error for every requested partition."""
    error = downgrade_fenced(error, "AddPartitionsToTxn", request_version)
    return {tp: error for tp in requested}


class _Answer(Completion[R]):
    """The completion a shard answers a request into: the plan's answer (through `finish`, e.g. the old-client
    downgrade); a request that failed with a Kafka error (the partition was unloaded, no producer-id block yet) is
    answered with `respond(error name)`. Anything else is our bug and stays an exception."""

    __slots__ = ("_finish_with", "_respond")

    def __init__(self, respond: Callable[[str], R], finish: Callable[[Any], R] | None = None) -> None:
        super().__init__()
        self._respond = respond
        self._finish_with = finish

    def set(self, value: Any) -> None:
        self._finish(value if self._finish_with is None else self._finish_with(value), None)  # Completion.set

    def fail(self, error: BaseException) -> None:
        if isinstance(error, KafkaError):
            super().set(self._respond(error.name))
        else:
            super().fail(error)


def _each(requested: tuple[TopicPartition, ...], error: str) -> AddPartitionsResponse:
    return dict.fromkeys(requested, error)


def _paired(requested: tuple[TopicPartition, ...], errors: list[str]) -> AddPartitionsResponse:
    return dict(zip(requested, errors, strict=True))


def _gather(parts: list[Completion[R]]) -> Completion[list[R]]:
    out: Completion[list[R]] = Completion()
    left = [len(parts)]

    def one(_: Completion[R]) -> None:
        left[0] -= 1
        if left[0] == 0:
            try:
                out.set([p.result() for p in parts])
            except BaseException as e:
                out.fail(e)

    if not parts:
        out.set([])
    for p in parts:
        p.then(one)
    return out
