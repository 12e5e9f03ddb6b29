"""Kafka's ProducerStateManagerTest, restated as table-driven scenarios against kcoord's partition side (apache/kafka
storage/src/test/java/org/apache/kafka/storage/internals/log/ProducerStateManagerTest.java, at the reference snapshot
of kafka-reference.md §4).

Kafka's test calls `ProducerStateManager`/`ProducerAppendInfo` directly; each scenario here does the same things
through the partition's public API instead (`PartitionManager.produce`, `DataPartition.write_marker`, the expiration
check, a reload), with the driver of `partition_driver.py`, in lockstep with the spec's `PartitionProducer` reference
machine (so every decision is also checked row by row against spec/partition_producer.sm). Each step may assert the
answer (the Kafka error, and the offset the batch went to), the producer's instance (state and variables; None: the
partition holds no state for it) and the partition's view (log end, high watermark, LSO, first unstable offset, open
transactions, the aborted-transaction index, cached batches, verification entries).

Two things differ from the Kafka test by construction, on purpose:
- offsets are where our log puts the batches (Kafka's test picks arbitrary ones, e.g. 99 or 992342); where an offset
  matters (LSO, the index) `Filler` batches without a producer id move the log end to the offsets Kafka's test uses
  or to a small equivalent;
- Kafka's REPLICATION-origin appends (followers, log recovery) are log recovery here: the batch is appended as a client
  batch the spec accepts, then the partition is reloaded, which replays it without checks.
A scenario whose Kafka assertion our implementation does not meet keeps that assertion in `differs` (checked after
every other one, failing with `KafkaDifference`) and is marked xfail(strict) with the exact difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kcoord.conformance.drivers.base import Action
from kcoord.conformance.lockstep import Lockstep
from kcoord.conformance.runner import Session
from kcoord.impl.partition import PartitionConfig, ProduceResult

from .partition_driver import TP, PartitionDriver, marker, produce

KAFKA_PATH = "storage/src/test/java/org/apache/kafka/storage/internals/log/ProducerStateManagerTest.java"
PARTITION = str(TP)
MAX_SEQ = 2**31 - 1
EXPIRATION_MS = PartitionConfig().producer_id_expiration_ms  # producer.id.expiration.ms, Kafka's default (1 day)


class KafkaDifference(AssertionError):
    """Our implementation does not do what the Kafka test asserts (a known, reported difference)."""


@dataclass(frozen=True)
class Step:
    """An action and what its answer must be, or a check of the state in between (action None)."""

    action: Action | None = None
    error: str | None = None  # the answer's error (None: not checked)
    offset: int | None = None  # the answer's base offset (None: not checked)
    pid: int | None = None  # whose instance `values` describes
    values: Mapping[str, Any] | None = None  # expected instance values (checked when `pid` is set; None: no instance)
    view: Mapping[str, Any] = field(default_factory=dict)  # expected partition facts (PartitionDriver.partition_view)


@dataclass(frozen=True)
class Scenario:
    kafka_test: str  # the Kafka test method (the pytest id)
    steps: tuple[Step, ...]
    verification: bool = True  # transaction.partition.verification.enable
    differs: Mapping[str, Any] = field(default_factory=dict)  # Kafka's asserted view values we do not meet
    xfail: str | None = None  # why `differs` fails: the exact difference
    kafka_path: str = KAFKA_PATH


def ok(action: Action, offset: int | None = None) -> Step:
    return Step(action, "NONE", offset)


def fails(action: Action, error: str) -> Step:
    return Step(action, error, -1)


def do(name: str, **args: Any) -> Step:
    return Step(Action(name, args))


def inst(pid: int, **values: Any) -> Step:
    return Step(pid=pid, values={"partition": PARTITION, "producer_id": pid, **values})


def gone(pid: int) -> Step:
    return Step(pid=pid, values=None)


def see(**view: Any) -> Step:
    return Step(view=view)


def txn(pid: int, epoch: int, seq: int, n: int = 1) -> Action:
    return produce(pid, epoch, seq, n=n, txn=True)


def filler(n: int) -> Step:
    return ok(Action("Filler", {"n": n}))


def scenario(test: str, *steps: Step, verification: bool = True, differs: Mapping[str, Any] | None = None,
             xfail: str | None = None) -> Scenario:
    return Scenario(test, tuple(steps), verification, differs or {}, xfail)


P = 1  # Kafka's producerId
EXPIRE = do("Expire")
FLUSH = do("Flush")
RELOAD = do("Reload")

SCENARIOS = [
    scenario("testBasicIdMapping",
             ok(produce(P, 0, 0), 0), ok(produce(P, 0, 1), 1),
             # a retry of a cached batch: Kafka's broker finds the duplicate before the state manager (UnifiedLog), so
             # the answer is the original batch's offset and nothing is appended (the unit test only checks that the
             # state manager itself would refuse it)
             ok(produce(P, 0, 1), 1), see(log_end=2),
             fails(produce(P, 0, 5), "OUT_OF_ORDER_SEQUENCE_NUMBER"),
             ok(produce(P, 1, 0), 2),
             fails(produce(P, 0, 0), "INVALID_PRODUCER_EPOCH"),
             inst(P, state="Known", producer_epoch=1, last_sequence=0), see(log_end=3)),
    scenario("testAppendTxnMarkerWithNoProducerState",
             ok(marker(P, 2, "COMMIT"), 0),
             inst(P, state="Known", producer_epoch=2, last_sequence=-1, current_txn_first_offset=-1),
             fails(produce(P, 0, 0), "INVALID_PRODUCER_EPOCH"),
             fails(produce(P, 2, 17), "OUT_OF_ORDER_SEQUENCE_NUMBER"),
             ok(produce(P, 2, 0), 1),
             inst(P, state="Known", producer_epoch=2, last_sequence=0)),
    scenario("testProducerSequenceWrapAround",
             ok(produce(P, 15, MAX_SEQ), 0), RELOAD,  # the REPLICATION entry: replayed from the log without checks
             ok(produce(P, 15, 0), 1),
             inst(P, state="Known", producer_epoch=15, last_sequence=0),
             see(cached={P: ((MAX_SEQ, MAX_SEQ, 0, 0), (0, 0, 1, 1))})),
    scenario("testProducerSequenceWithWrapAroundBatchRecord",
             ok(produce(P, 15, MAX_SEQ - 10, n=21), 0), RELOAD,
             inst(P, state="Known", producer_epoch=15, last_sequence=9),
             see(cached={P: ((MAX_SEQ - 10, 9, 0, 20),)})),
    scenario("testProducerSequenceInvalidWrapAround",
             ok(produce(P, 15, MAX_SEQ), 0), RELOAD,
             fails(produce(P, 15, 1), "OUT_OF_ORDER_SEQUENCE_NUMBER"),
             inst(P, state="Known", producer_epoch=15, last_sequence=MAX_SEQ)),
    scenario("testNoValidationOnFirstEntryWhenLoadingLog",
             ok(produce(P, 5, 16), 0), RELOAD,
             inst(P, state="Known", producer_epoch=5, last_sequence=16), see(cached={P: ((16, 16, 0, 0),)})),
    scenario("testControlRecordBumpsProducerEpoch",
             ok(produce(P, 0, 0), 0), ok(marker(P, 1, "ABORT"), 1),
             inst(P, state="Known", producer_epoch=1, last_sequence=-1, current_txn_first_offset=-1),
             see(cached={P: ()}, aborted=()),
             ok(produce(P, 1, 0), 2), see(cached={P: ((0, 0, 2, 2),)})),
    scenario("testTxnFirstOffsetMetadataCached",
             filler(5), ok(txn(P, 0, 0), 5), FLUSH,
             inst(P, state="Ongoing", current_txn_first_offset=5),
             see(first_unstable=5, open_txns={5: P}, high_watermark=6, lso=5)),
    scenario("updateProducerTransactionState",
             ok(produce(P, 0, 0), 0), ok(txn(P, 0, 1, n=5), 1), ok(txn(P, 0, 6, n=5), 6),
             inst(P, state="Ongoing", current_txn_first_offset=1, last_sequence=10),
             ok(marker(P, 0, "COMMIT", 15), 11),
             # the marker leaves the cached batches alone (same epoch) and completes the transaction [1, 11]
             inst(P, state="Known", current_txn_first_offset=-1, last_sequence=10, txn_coordinator_epoch=15),
             see(cached={P: ((0, 0, 0, 0), (1, 5, 1, 5), (6, 10, 6, 10))}, open_txns={}, first_unstable=1,
                 aborted=()),
             FLUSH, see(first_unstable=None, lso=12)),
    scenario("testOutOfSequenceAfterControlRecordEpochBump",
             ok(txn(P, 0, 0), 0), ok(txn(P, 0, 1), 1), ok(marker(P, 1, "ABORT"), 2),
             fails(txn(P, 1, 2), "OUT_OF_ORDER_SEQUENCE_NUMBER"),
             fails(txn(P, 2, 2), "OUT_OF_ORDER_SEQUENCE_NUMBER"),
             ok(txn(P, 1, 0), 3),
             inst(P, state="Ongoing", producer_epoch=1, last_sequence=0, current_txn_first_offset=3)),
    scenario("testNonTransactionalAppendWithOngoingTransaction",
             ok(txn(P, 0, 0), 0), fails(produce(P, 0, 1), "INVALID_TXN_STATE"),
             inst(P, state="Ongoing", last_sequence=0), see(log_end=1)),
    scenario("testRecoverFromSnapshotUnfinishedTransaction",
             ok(txn(P, 0, 0), 0), ok(txn(P, 0, 1), 1), RELOAD,
             inst(P, state="Ongoing", producer_epoch=0, last_sequence=1, current_txn_first_offset=0),
             see(open_txns={0: P}, lso=0),
             ok(txn(P, 0, 2), 2),  # the entry added after recovery
             differs={"cached": {P: ((1, 1, 1, 1), (2, 2, 2, 2))}},
             xfail="Kafka reloads from the producer snapshot, which keeps only the last batch of each producer "
                   "(firstSeq = lastSeq = 1 after the reload); kcoord rebuilds the state by scanning the whole log "
                   "and keeps the last 5 batches, so after a clean restart (Kafka's snapshot at the log end) it "
                   "answers a retry of batch 0 as a duplicate (NONE, offset 0, nothing appended) where Kafka "
                   "answers OUT_OF_ORDER_SEQUENCE_NUMBER"),
    scenario("testRecoverFromSnapshotFinishedTransaction",
             ok(txn(P, 0, 0), 0), ok(txn(P, 0, 1), 1), ok(marker(P, 0, "ABORT"), 2), RELOAD,
             inst(P, state="Known", producer_epoch=0, last_sequence=1, current_txn_first_offset=-1),
             see(open_txns={}, first_unstable=None, aborted=((P, 0, 2, 3),), lso=3)),
    scenario("testRecoverFromSnapshotEmptyTransaction",
             ok(marker(P, 0, "ABORT"), 0), do("Advance", ms=5_000), RELOAD,
             inst(P, state="Known", producer_epoch=0, current_txn_first_offset=-1, last_timestamp_ms=1_000),
             see(aborted=(), open_txns={}, lso=1)),
    scenario("testProducerStateAfterFencingAbortMarker",
             ok(txn(P, 0, 0), 0), ok(marker(P, 1, "ABORT"), 1),
             inst(P, state="Known", producer_epoch=1, current_txn_first_offset=-1), see(cached={P: ()}),
             EXPIRE,  # not idle for producer.id.expiration.ms: the fencing epoch is kept
             inst(P, state="Known", producer_epoch=1), see(producers=(P,))),
    scenario("testAcceptAppendWithSequenceGapsOnReplica",  # the client half (a replica is log recovery here)
             ok(produce(P, 0, 0), 0), fails(produce(P, 0, 3), "OUT_OF_ORDER_SEQUENCE_NUMBER"),
             inst(P, state="Known", last_sequence=0), see(log_end=1)),
    scenario("testLoadFromSnapshotRetainsNonExpiredProducers",
             ok(produce(1, 0, 0), 0), ok(produce(2, 0, 0), 1), RELOAD,
             inst(1, state="Known", last_sequence=0), inst(2, state="Known", last_sequence=0),
             see(producers=(1, 2), cached={1: ((0, 0, 0, 0),), 2: ((0, 0, 1, 1),)})),
    scenario("testPidExpirationTimeout",
             ok(produce(P, 5, 0), 0), do("Advance", ms=EXPIRATION_MS + 1), EXPIRE, gone(P),
             ok(produce(P, 5, 1), 1),  # no state left, so any sequence is accepted
             inst(P, state="Known", producer_epoch=5, last_sequence=1), see(producers=(P,), log_end=2)),
    scenario("testFirstUnstableOffset",
             see(first_unstable=None), filler(99),
             ok(txn(P, 5, 0), 99), see(first_unstable=99, open_txns={99: P}),
             filler(5), ok(txn(2, 5, 0), 105), see(first_unstable=99, open_txns={99: P, 105: 2}),
             filler(3), FLUSH,  # the high watermark stays at the COMMIT marker: its transaction is not stable yet
             ok(marker(P, 5, "COMMIT"), 109), see(open_txns={105: 2}, first_unstable=99, high_watermark=109, lso=99),
             FLUSH, see(first_unstable=105, lso=105),
             filler(2), ok(marker(2, 5, "ABORT"), 112), see(open_txns={}, first_unstable=105),
             FLUSH, see(first_unstable=None, lso=113, aborted=((2, 105, 112, 113),))),
    scenario("testProducersWithOngoingTransactionsDontExpire",
             filler(99), ok(txn(P, 5, 0), 99), do("Advance", ms=EXPIRATION_MS + 1), EXPIRE,
             inst(P, state="Ongoing", current_txn_first_offset=99), see(first_unstable=99),
             EXPIRE, inst(P, state="Ongoing")),
    scenario("testSequenceNotValidatedForGroupMetadataTopic",  # the group coordinator's origin, no sequence
             ok(Action("CoordinatorProduce", {"pid": P, "epoch": 0}), 0),
             ok(Action("CoordinatorProduce", {"pid": P, "epoch": 0}), 1),
             inst(P, state="Ongoing", last_sequence=-1, current_txn_first_offset=0)),
    scenario("testOldEpochForControlRecord",
             ok(txn(P, 5, 0), 0), fails(marker(P, 3, "COMMIT"), "INVALID_PRODUCER_EPOCH"),
             inst(P, state="Ongoing", producer_epoch=5), see(log_end=1)),
    scenario("testCoordinatorFencing",
             ok(txn(P, 5, 0), 0), ok(marker(P, 5, "COMMIT", 1), 1), inst(P, state="Known", txn_coordinator_epoch=1),
             ok(marker(P, 5, "COMMIT", 1), 2),  # the same coordinator epoch again
             ok(marker(P, 5, "COMMIT", 2), 3),  # a newer coordinator
             fails(marker(P, 5, "COMMIT", 1), "TRANSACTION_COORDINATOR_FENCED"),
             inst(P, state="Known", txn_coordinator_epoch=2), see(log_end=4)),
    scenario("testCoordinatorFencedAfterReload",
             ok(txn(P, 0, 0), 0), ok(marker(P, 0, "COMMIT", 1), 1), RELOAD,
             inst(P, state="Known", txn_coordinator_epoch=1),
             fails(marker(P, 0, "COMMIT", 0), "TRANSACTION_COORDINATOR_FENCED")),
    scenario("testEntryForVerification",
             do("StartVerification", pid=P, seq=0, epoch=0), do("StartVerification", pid=P, seq=0, epoch=0),
             see(verification={P: (0, 0)}), gone(P),
             ok(txn(P, 0, 0), 0),  # the transactional append clears the entry
             see(verification={})),
    scenario("testSequenceAndEpochInVerificationEntry",
             do("StartVerification", pid=P, seq=1, epoch=0), see(verification={P: (1, 0)}),
             do("StartVerification", pid=P, seq=0, epoch=0), see(verification={P: (0, 0)}),  # a lower sequence
             do("StartVerification", pid=P, seq=2, epoch=1), see(verification={P: (2, 1)}),  # a higher epoch
             do("StartVerification", pid=P, seq=0, epoch=0), see(verification={P: (2, 1)})),  # an older epoch
    scenario("testThrowOutOfOrderSequenceWithVerificationSequenceCheck[dynamicallyDisable=false]",
             do("StartVerification", pid=P, seq=0, epoch=0),
             fails(txn(P, 0, 4), "OUT_OF_ORDER_SEQUENCE_NUMBER"), see(verification={P: (0, 0)}, log_end=0), gone(P)),
    scenario("testThrowOutOfOrderSequenceWithVerificationSequenceCheck[dynamicallyDisable=true]",
             do("StartVerification", pid=P, seq=0, epoch=0),
             fails(txn(P, 0, 4), "OUT_OF_ORDER_SEQUENCE_NUMBER"), see(verification={P: (0, 0)}, log_end=0), gone(P),
             verification=False),
    scenario("testVerificationStateEntryExpiration",
             do("StartVerification", pid=P, seq=0, epoch=0),
             do("Advance", ms=EXPIRATION_MS // 2), EXPIRE, see(verification={P: (0, 0)}),
             do("Advance", ms=EXPIRATION_MS // 2 + 1), EXPIRE, see(verification={})),
    scenario("testLastStableOffsetCompletedTxn",  # Kafka's offsets less 992342: starts 0, 25, 57
             ok(txn(1, 0, 0), 0), filler(24), ok(txn(2, 0, 0), 25), filler(31), ok(txn(3, 0, 0), 57),
             filler(14), ok(marker(1, 0, "COMMIT"), 72), FLUSH,
             see(first_unstable=25, lso=25, open_txns={25: 2, 57: 3}),
             filler(19), ok(marker(3, 0, "COMMIT"), 92), FLUSH, see(first_unstable=25, lso=25),
             filler(77), ok(marker(2, 0, "COMMIT"), 170), FLUSH,
             see(first_unstable=None, lso=171, open_txns={}, aborted=())),
    scenario("testSkipEmptyTransactions",
             ok(txn(P, 0, 0, n=5), 0), FLUSH, see(first_unstable=0, open_txns={0: P}),
             ok(marker(P, 0, "COMMIT"), 5),  # completes [0, 5]
             ok(marker(P, 0, "COMMIT"), 6), ok(marker(P, 0, "ABORT"), 7),  # empty transactions: nothing completes
             ok(txn(P, 0, 5, n=4), 8), ok(marker(P, 0, "ABORT"), 12),  # completes [8, 12], aborted
             ok(marker(P, 0, "ABORT"), 13),  # empty again
             ok(txn(P, 0, 9, n=2), 14),  # and one left open
             FLUSH, see(first_unstable=14, open_txns={14: P}, aborted=((P, 8, 12, 13),), lso=14),
             inst(P, state="Ongoing", last_sequence=10, current_txn_first_offset=14)),
]


def _check_instance(driver: PartitionDriver, step: Step, where: str) -> None:
    assert step.pid is not None
    found = driver.part.states.get(step.pid)
    if step.values is None:
        assert found is None, f"{where}: producer {step.pid} has state {dict(found or {})}, Kafka's has none"
        return
    assert found is not None, f"{where}: producer {step.pid} has no state"
    for name, want in step.values.items():
        assert found[name] == want, f"{where}: producer {step.pid} {name} = {found[name]!r}, expected {want!r}"


def _check_view(driver: PartitionDriver, view: Mapping[str, Any], where: str,
                error: type[AssertionError] = AssertionError) -> None:
    seen = driver.partition_view()
    for name, want in view.items():
        if seen[name] != want:
            raise error(f"{where}: {name} = {seen[name]!r}, expected {want!r}")


def run(s: Scenario, session: Session) -> None:
    driver = PartitionDriver(verification=s.verification)
    try:
        lock = Lockstep(driver, session.refs(driver.machines))
        for i, step in enumerate(s.steps, 1):
            where = f"{s.kafka_test} step {i}" + (f" {step.action.render()}" if step.action else "")
            if step.action is not None:
                report = lock.step(step.action)
                if step.error is not None:
                    (answer,) = report.outcome.responses
                    assert isinstance(answer, ProduceResult), f"{where}: answered {answer!r}"
                    assert answer.error == step.error, f"{where}: answered {answer.error}, Kafka: {step.error}"
                    if step.offset is not None:
                        assert answer.base_offset == step.offset, \
                            f"{where}: at offset {answer.base_offset}, expected {step.offset}"
            if step.pid is not None:
                _check_instance(driver, step, where)
            _check_view(driver, step.view, where)
        _check_view(driver, s.differs, f"{s.kafka_test} (a known difference from Kafka)", KafkaDifference)
    finally:
        driver.close()


def _param(s: Scenario) -> Any:
    marks = [pytest.mark.xfail(raises=KafkaDifference, strict=True, reason=s.xfail)] if s.xfail else []
    return pytest.param(s, id=s.kafka_test, marks=marks)


def test_at_least_fifteen_scenarios_each_citing_a_kafka_test() -> None:
    assert len(SCENARIOS) >= 15
    assert len({s.kafka_test for s in SCENARIOS}) == len(SCENARIOS), "one scenario per Kafka test (and parameter)"
    assert all(bool(s.differs) == bool(s.xfail) for s in SCENARIOS), "a known difference needs its reason"


@pytest.mark.parametrize("s", [_param(s) for s in SCENARIOS])
def test_producer_state_manager_scenario(s: Scenario, conformance_session: Session) -> None:
    run(s, conformance_session)
