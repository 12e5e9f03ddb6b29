"""A leader's KIP-890 verification: transactional batches waiting for the transaction coordinator before the append.

Owns `Verifications` (for the `PartitionManager` of one node): whether a batch must be verified, asking the
`TxnVerifier`, the Transactions V2 add retries, and the translation of the coordinator's answer; and `PendingWrite`,
one batch waiting for it.

Before a transactional batch of a producer with no open transaction here, the leader creates a verification guard
and asks the `TxnVerifier`; the batch is then appended with the guard, and the spec decides with `verification_ok`.
A Produce request's batches are asked about together (`verify_then_append_all`: one
`TxnVerifier.verify_partitions`, or `add_partitions_v2` for Transactions V2, per producer id and epoch, as Kafka's
`ReplicaManager` sends one AddPartitionsToTxn per request), then each is answered and appended as on its own.
Transactions V2 (Produce v12+, `TxnOperation.ADD_PARTITION`): instead of verifying, the leader asks the coordinator
to add the partition (AddPartitionsToTxn v5), even with verification switched off, and while the coordinator answers
CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being written) asks again every
`add_partitions_retry_backoff_ms` until `add_partitions_retry_max_ms` have passed, as Kafka's `handleProduceAppend`.
A verification entry made for an add survives a marker of the same epoch (the previous transaction's TV2 marker carries
the bumped epoch the next transaction already writes with).

The translation of the coordinator's answer, as Kafka 4.0's `ReplicaManager`/`AddPartitionsToTxnManager` do it
(none of the refusals appends):

| situation                                                                      | answer                          |
|--------------------------------------------------------------------------------|---------------------------------|
| a transactional batch without the request's transactional id                   | INVALID_REQUEST                 |
| inconclusive: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,                      | NOT_ENOUGH_REPLICAS (retriable) |
|   COORDINATOR_LOAD_IN_PROGRESS, NETWORK_EXCEPTION, REQUEST_TIMED_OUT, no       |                                 |
|   verifier, and CONCURRENT_TRANSACTIONS except for an add                      |                                 |
| CONCURRENT_TRANSACTIONS for an add, after the retries                          | CONCURRENT_TRANSACTIONS         |
| PRODUCER_FENCED                                                                | INVALID_PRODUCER_EPOCH          |
| TRANSACTION_ABORTABLE to Produce up to v10                                     | the spec, verification_ok=false |
|                                                                                |   (INVALID_TXN_STATE)           |
| anything else (TRANSACTION_ABORTABLE from v11, INVALID_PRODUCER_ID_MAPPING,    | that error                      |
|   UNSUPPORTED_VERSION, ...)                                                    |                                 |
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable, Mapping
from typing import Final, TypeVar

from ..errors import Errors, KafkaError
from ..interfaces import TopicPartition, TxnOperation, TxnVerifier
from ..runtime.clock import Clock
from ..runtime.completion import Completion
from ..storage.batch import RecordBatch
from .partition import Appended, DataPartition, Verification
from .producer_state import VerificationGuard
from .types import AppendOrigin, PartitionConfig, ProduceResult

_NOT_ADDED: Final = "Partition was not added to the transaction"  # Kafka's InvalidTxnStateException message
_RETRIABLE_VERIFICATION: Final = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                                            Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NETWORK_EXCEPTION,
                                            Errors.REQUEST_TIMED_OUT})

R = TypeVar("R")

#: the partition a manager leads for a topic partition now (None: not here, or offline)
Leader = Callable[[TopicPartition], DataPartition | None]
#: answers a produce once its append is made (`PartitionManager._answer`: at once, or when durable for acks=-1)
Answer = Callable[[DataPartition, Appended, int, Completion[ProduceResult]], None]


class PendingWrite:
    """A transactional batch waiting for the transaction coordinator before it is appended."""

    __slots__ = ("acks", "batch", "guard", "operation", "origin", "out", "part")

    def __init__(self, part: DataPartition, batch: RecordBatch, origin: AppendOrigin, acks: int,
                 operation: TxnOperation, out: Completion[ProduceResult]) -> None:
        self.part, self.batch, self.origin, self.acks = part, batch, origin, acks
        self.operation, self.out = operation, out
        self.guard: VerificationGuard | None = None

    @property
    def adds(self) -> bool:
        return self.operation is TxnOperation.ADD_PARTITION


class Verifications:
    """See the module docstring. `verifier` may be set after construction (the transaction coordinator is often
    built later); `leader` and `answer` are the manager's."""

    def __init__(self, *, clock: Clock, config: PartitionConfig, verifier: TxnVerifier | None, leader: Leader,
                 answer: Answer) -> None:
        self.clock = clock
        self.config = config
        self.verifier = verifier
        self._leader = leader
        self._answer = answer
        self._retries: list[tuple[int, int, Callable[[], None]]] = []  # (due ms, tie-break, ask again): a heap
        self._retry_order = itertools.count()

    def needed(self, part: DataPartition, batch: RecordBatch, operation: TxnOperation) -> bool:
        """KIP-890: a transactional batch of a producer with no transaction open on this partition at its epoch
        (verified when verification is on; added to the transaction for Transactions V2 in any case)."""
        return (batch.is_transactional and (self.config.transaction_partition_verification_enable
                                             or operation is TxnOperation.ADD_PARTITION)
                and not part.states.has_open_txn(batch.producer_id, batch.producer_epoch))

    def verify_then_append(self, write: PendingWrite, transactional_id: str | None) -> None:
        if transactional_id is None:
            write.out.set(ProduceResult(Errors.INVALID_REQUEST, error_message="a transactional batch needs the "
                                                                              "request's transactional id"))
            return
        _start_verification(write)
        if self.verifier is None:
            write.out.set(ProduceResult(Errors.NOT_ENOUGH_REPLICAS,
                                        error_message="no transaction coordinator to verify with"))
            return
        self._ask(write, transactional_id, self.clock.now_ms())

    def verify_then_append_all(self, writes: list[PendingWrite], transactional_id: str | None) -> None:
        """`verify_then_append` for the writes of one Produce request (distinct partitions), asking the
        coordinator once per producer id and epoch for all their partitions, as Kafka's `ReplicaManager` asks
        `AddPartitionsToTxnManager` once per request; each write is then answered and appended as on its own."""
        if len(writes) == 1 or transactional_id is None or self.verifier is None:
            for write in writes:
                self.verify_then_append(write, transactional_id)
            return
        groups: dict[tuple[int, int], list[PendingWrite]] = {}  # (a client sends one producer's batches only)
        for write in writes:
            _start_verification(write)
            groups.setdefault((write.batch.producer_id, write.batch.producer_epoch), []).append(write)
        for (producer_id, producer_epoch), group in groups.items():
            if len(group) == 1:
                self._ask(group[0], transactional_id, self.clock.now_ms())
                continue
            if group[0].adds:
                self._ask_adds(group, transactional_id, self.clock.now_ms())
                continue
            asked = self.verifier.verify_partitions(transactional_id, producer_id, producer_epoch,
                                                    tuple(write.part.tp for write in group))
            asked.then(functools.partial(self._all_verified, group))

    def _all_verified(self, group: list[PendingWrite], done: Completion[Mapping[TopicPartition, str]]) -> None:
        errors = _answer(done, lambda error: dict.fromkeys((write.part.tp for write in group), error))
        for write in group:
            self._verified(write, errors[write.part.tp])

    def _ask(self, write: PendingWrite, transactional_id: str, started_ms: int) -> None:
        """Ask the coordinator to verify (or, for Transactions V2, add) the partition; a V2 add answered
        CONCURRENT_TRANSACTIONS is asked again after a back-off until the retry time is up."""
        assert self.verifier is not None
        batch, tp = write.batch, write.part.tp
        ask = self.verifier.add_partition if write.adds else self.verifier.verify_partition
        asked = ask(transactional_id, batch.producer_id, batch.producer_epoch, tp)

        def answered(done: Completion[str]) -> None:
            error = _answer(done, lambda error: error)
            now_ms = self.clock.now_ms()
            if write.adds and error == Errors.CONCURRENT_TRANSACTIONS and \
                    now_ms - started_ms < self.config.add_partitions_retry_max_ms:
                heapq.heappush(self._retries, (now_ms + self.config.add_partitions_retry_backoff_ms,
                                               next(self._retry_order),
                                               lambda: self._ask(write, transactional_id, started_ms)))
                return
            self._verified(write, error)

        asked.then(answered)

    def _ask_adds(self, group: list[PendingWrite], transactional_id: str, started_ms: int) -> None:
        """`_ask` for the Transactions V2 adds of one request and producer, in one ask; the partitions answered
        CONCURRENT_TRANSACTIONS are asked again together after the back-off until the retry time is up."""
        assert self.verifier is not None
        batch = group[0].batch
        asked = self.verifier.add_partitions_v2(transactional_id, batch.producer_id, batch.producer_epoch,
                                                tuple(w.part.tp for w in group))

        def answered(done: Completion[Mapping[TopicPartition, str]]) -> None:
            errors = _answer(done, lambda error: dict.fromkeys((w.part.tp for w in group), error))
            now_ms = self.clock.now_ms()
            again = [w for w in group if errors[w.part.tp] == Errors.CONCURRENT_TRANSACTIONS]
            if again and now_ms - started_ms < self.config.add_partitions_retry_max_ms:
                heapq.heappush(self._retries, (now_ms + self.config.add_partitions_retry_backoff_ms,
                                               next(self._retry_order),
                                               lambda: self._ask_adds(again, transactional_id, started_ms)))
                group_done = [w for w in group if w not in again]
            else:
                group_done = group
            for w in group_done:
                self._verified(w, errors[w.part.tp])

        asked.then(answered)

    def _verified(self, write: PendingWrite, error: str) -> None:
        part, out = write.part, write.out
        if self._leader(part.tp) is not part:
            out.set(ProduceResult(Errors.NOT_LEADER_OR_FOLLOWER))
            return
        refused = _refusal(error, write.operation)
        if refused == Errors.NOT_ENOUGH_REPLICAS:
            message = f"unable to verify the partition has been added to the transaction: {error}"
            out.set(ProduceResult(refused, error_message=message))
        elif refused is not None:
            out.set(ProduceResult(refused))  # Kafka 4.0.2 gives no message
        else:
            verification = Verification(write.guard, confirmed=error == Errors.NONE)
            appended = part.produce(write.batch, write.origin, verification)
            if not verification.confirmed and appended.result.error == Errors.INVALID_TXN_STATE:
                # refused before the log, as Kafka's ReplicaManager answers a failed verification
                appended = Appended(ProduceResult(Errors.INVALID_TXN_STATE, error_message=_NOT_ADDED),
                                    appended.required_offset)
            self._answer(part, appended, write.acks, out)

    def retry_due(self, now_ms: int) -> None:
        """Ask the coordinator again for every Transactions V2 add whose back-off has passed."""
        while self._retries and self._retries[0][0] <= now_ms:
            heapq.heappop(self._retries)[2]()

    def next_retry_ms(self) -> int | None:
        return self._retries[0][0] if self._retries else None


def _start_verification(write: PendingWrite) -> None:
    """The write's verification guard, started before the coordinator is asked (a V2 add may bump the epoch)."""
    batch = write.batch
    sequence = batch.base_sequence if write.origin is AppendOrigin.CLIENT else -1
    write.guard = write.part.states.start_verification(batch.producer_id, sequence, batch.producer_epoch,
                                                       supports_epoch_bump=write.adds)


def _answer(done: Completion[R], failed: Callable[[str], R]) -> R:
    """The coordinator's answer, or `failed(error)` for an error raised instead: a Kafka error's name, or
    NETWORK_EXCEPTION when the coordinator could not be reached."""
    try:
        return done.result()
    except KafkaError as e:
        return failed(e.name)
    except OSError:
        return failed(Errors.NETWORK_EXCEPTION)


def _refusal(error: str, operation: TxnOperation) -> str | None:
    """What the leader answers, without appending, for the coordinator's `error` (the module docstring's table);
    None: append and let the spec decide (NONE, or TRANSACTION_ABORTABLE to a client that does not know it)."""
    if error == Errors.NONE or (error == Errors.TRANSACTION_ABORTABLE and operation is TxnOperation.DEFAULT_ERROR):
        return None
    if error in _RETRIABLE_VERIFICATION or (error == Errors.CONCURRENT_TRANSACTIONS
                                            and operation is not TxnOperation.ADD_PARTITION):
        return Errors.NOT_ENOUGH_REPLICAS
    if error == Errors.PRODUCER_FENCED:
        return Errors.INVALID_PRODUCER_EPOCH
    return error
