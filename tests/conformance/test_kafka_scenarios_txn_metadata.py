"""Kafka's TransactionMetadataTest, restated as table-driven scenarios against kcoord's transaction coordinator
(apache/kafka core/src/test/scala/unit/kafka/coordinator/transaction/TransactionMetadataTest.scala, at the reference
snapshot of kafka-reference.md §1).

Kafka's test builds a `TransactionMetadata` in some state and calls one `prepare*` method, then
`completeTransitionTo`. Here the same transition is reached through the coordinator's public API, with the
Transaction conformance driver (`kcoord.conformance.drivers.transaction`, as test_kafka_scenarios.py does), in
lockstep with the spec's reference machine, so every step is also checked against spec/transaction.sm, the answers
and the `__transaction_state` records included. How the Kafka test's starting states are reached:
- an epoch such as 735 or Short.MaxValue - 1: the driver's `FastForward(epoch)` (the log gets the latest record again
  with only the epoch changed, then the partition is reloaded — Kafka's test sets the field the same way);
- `prepareIncrementProducerEpoch` / `prepareProducerIdRotation`: InitProducerId, with the expected producer id and
  epoch when Kafka's test passes an expected epoch (`recordLastEpoch = true` is the rotation with an expected epoch);
- `prepareAbortOrCommit` / `prepareComplete`: EndTxn v4 (TV_0) or v5 (TV_2), then the markers (CompleteTxn);
- `prepareFenceProducerEpoch`: InitProducerId while a transaction is open;
- a clock that moves backwards ("time shift"): `Jump(ms)`, a step of this file that moves the driver's clock by a
  negative amount between two requests.
An `IllegalStateException` of Kafka's test is what the coordinator answers when its request reaches that call:
UNKNOWN_SERVER_ERROR with nothing written (KafkaApis answers an unexpected exception so), or, where the coordinator
never makes that call, the answer it gives instead (both are said per row).
The driver's server runs Transactions V2 (`TxnConfig.server_txn_version = 2`); the abort that follows a fence keeps the
fence's epoch there as under Kafka's TV_0 test (Kafka 4.0.2, KAFKA-19367; see test_kafka_scenarios.py).

A scenario whose Kafka assertion our implementation does not meet keeps that assertion in `differs` (checked after
every other one, failing with `KafkaDifference`) and is marked xfail(strict) with the exact difference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kcoord.conformance.drivers import driver_spec
from kcoord.conformance.drivers.base import START_MS, Action
from kcoord.conformance.drivers.transaction import STATE_OF_STATUS
from kcoord.conformance.drivers.transaction import _error_of as txn_error
from kcoord.conformance.lockstep import Lockstep
from kcoord.conformance.runner import Session
from kcoord.impl.storage.txn_log_schema import TransactionStatus

KAFKA_PATH = "core/src/test/scala/unit/kafka/coordinator/transaction/TransactionMetadataTest.scala"
TXN = ("s1",)
MAX = 32767  # Short.MaxValue
EXHAUSTED = MAX - 1
NEW_PID = 1  # the driver's ProducerIdManager hands out 0 first, then 1


class KafkaDifference(AssertionError):
    """Our implementation does not do what the Kafka test asserts (a known, reported difference)."""


@dataclass(frozen=True)
class Step:
    """A request or driver step and what must follow it, a clock jump, or a check of the instance in between."""

    action: Action | None = None
    answer: str | None = None  # the error of the answer (None: not checked)
    producer: tuple[int, int] | None = None  # InitProducerId / EndTxn v5: the (producer id, epoch) answered
    records: int | None = None  # records appended to __transaction_state by this step
    jump_ms: int = 0  # move the clock by this much (negative: backwards) before anything else
    values: Mapping[str, Any] = field(default_factory=dict)  # the instance afterwards (includes "state")


@dataclass(frozen=True)
class Scenario:
    kafka_test: str
    steps: tuple[Step, ...]
    #: what Kafka's test asserts and we do not meet: instance values, and "answer"/"records" of the last step
    differs: Mapping[str, Any] = field(default_factory=dict)
    xfail: str | None = None
    kafka_path: str = KAFKA_PATH


def a(name: str, **args: Any) -> Action:
    return Action(name, args)


def init(pid: int = -1, epoch: int = -1) -> Action:
    return a("InitProducerId", timeout_ms=60_000, expected_producer_id=pid, expected_epoch=epoch)


def add(*parts: str, pid: int = 0, epoch: int = 0, tv: int = 0) -> Action:
    return a("AddPartitions", pid=pid, epoch=epoch, parts=list(parts or ("t-0",)), txn_version=tv)


def end(result: str, pid: int = 0, epoch: int = 0, tv: int = 0) -> Action:
    return a("EndTxnV1" if tv < 2 else "EndTxnV2", pid=pid, epoch=epoch, result=result)


def step(action: Action, answer: str | None = None, *, producer: tuple[int, int] | None = None,
         records: int | None = None, **values: Any) -> Step:
    return Step(action, answer, producer, records, 0, values)


def go(action: Action) -> Step:
    return Step(action)


def jump(ms: int) -> Step:
    return Step(jump_ms=ms)


def scenario(test: str, *steps: Step, differs: Mapping[str, Any] | None = None, xfail: str | None = None
             ) -> Scenario:
    return Scenario(test, tuple(steps), differs or {}, xfail)


def ff(epoch: int) -> Step:
    return go(a("FastForward", epoch=epoch))


COMPLETE = a("CompleteTxn")
T0 = START_MS  # the driver's clock when the scenario starts (it only moves where a scenario moves it)

SCENARIOS = [
    scenario("testInitializeEpoch",
             step(init(), "NONE", producer=(0, 0), records=1, state="Empty", producer_id=0, producer_epoch=0,
                  last_producer_epoch=-1)),
    scenario("testNormalEpochBump",
             go(init()), ff(735),
             step(init(), "NONE", producer=(0, 736), records=1, state="Empty", producer_id=0, producer_epoch=736,
                  last_producer_epoch=-1)),
    # prepareIncrementProducerEpoch throws on an exhausted epoch; the coordinator reaches it only for an InitProducerId
    # whose expected epoch is not the current one (with the current one, or none, it rotates the producer id)
    scenario("testBumpEpochNotAllowedIfEpochsExhausted",
             go(init()), ff(EXHAUSTED),
             step(init(0, EXHAUSTED - 1), "UNKNOWN_SERVER_ERROR", records=0, state="Empty", producer_id=0,
                  producer_epoch=EXHAUSTED)),
    scenario("testTolerateUpdateTimeShiftDuringEpochBump",
             go(init()), go(add()), go(end("COMMIT")), go(COMPLETE), jump(-500),
             step(init(0, 0), "NONE", producer=(0, 1), records=1, state="Empty", producer_id=0, producer_epoch=1,
                  last_producer_epoch=0, txn_last_update_timestamp_ms=T0 - 500),
             differs={"txn_start_timestamp_ms": T0},
             xfail="Kafka's epoch bump (completeTransitionTo(Empty)) never copies txnStartTimestamp, so the Empty "
                   "metadata in memory keeps the previous transaction's start (the test asserts the old value; the "
                   "record written says -1); kcoord's spec sets txn_start_timestamp_ms' == -1 on InitProducerId "
                   "(invariant empty_not_started), so DescribeTransactions shows -1 where Kafka shows the old start"),
    scenario("testTolerateUpdateTimeResetDuringProducerIdRotation",
             go(init()), ff(EXHAUSTED), jump(-1),
             step(init(0, EXHAUSTED), "NONE", producer=(NEW_PID, 0), records=1, state="Empty", producer_id=NEW_PID,
                  previous_producer_id=0, producer_epoch=0, last_producer_epoch=EXHAUSTED,
                  txn_start_timestamp_ms=-1, txn_last_update_timestamp_ms=T0 - 1)),
    scenario("testTolerateTimeShiftDuringAddPartitions",
             go(init()), jump(-1),
             # from Empty the start time becomes the (earlier) update time
             step(add("t-0"), "NONE", records=1, state="Ongoing", partitions=frozenset({"t-0"}),
                  producer_id=0, producer_epoch=0, last_producer_epoch=-1, txn_start_timestamp_ms=T0 - 1,
                  txn_last_update_timestamp_ms=T0 - 1),
             jump(-1),
             # in Ongoing the start time stays
             step(add("t-1"), "NONE", records=1, state="Ongoing", partitions=frozenset({"t-0", "t-1"}),
                  producer_id=0, producer_epoch=0, last_producer_epoch=-1, txn_start_timestamp_ms=T0 - 1,
                  txn_last_update_timestamp_ms=T0 - 2)),
    scenario("testTolerateTimeShiftDuringPrepareCommit",
             go(init()), go(add()), jump(-1),
             step(end("COMMIT"), "NONE", records=1, state="PrepareCommit", producer_id=0, producer_epoch=0,
                  last_producer_epoch=-1, txn_start_timestamp_ms=T0, txn_last_update_timestamp_ms=T0 - 1)),
    scenario("testTolerateTimeShiftDuringPrepareAbort",
             go(init()), go(add()), jump(-1),
             step(end("ABORT"), "NONE", records=1, state="PrepareAbort", producer_id=0, producer_epoch=0,
                  last_producer_epoch=-1, txn_start_timestamp_ms=T0, txn_last_update_timestamp_ms=T0 - 1)),
    scenario("testTolerateTimeShiftDuringCompleteCommit[TV_0]",
             go(init()), go(add()), go(end("COMMIT")), jump(-1),
             step(COMPLETE, records=1, state="CompleteCommit", producer_id=0, producer_epoch=0,
                  last_producer_epoch=-1, client_txn_version=0, txn_start_timestamp_ms=T0,
                  txn_last_update_timestamp_ms=T0 - 1)),
    scenario("testTolerateTimeShiftDuringCompleteCommit[TV_2]",
             go(init()), go(add(tv=2)),
             step(end("COMMIT", tv=2), "NONE", producer=(0, 1), state="PrepareCommit", producer_epoch=1,
                  last_producer_epoch=0),
             jump(-1),
             step(COMPLETE, records=1, state="CompleteCommit", producer_id=0, producer_epoch=1, client_txn_version=2,
                  txn_start_timestamp_ms=T0, txn_last_update_timestamp_ms=T0 - 1),
             differs={"last_producer_epoch": 1},
             xfail="Kafka's prepareComplete writes lastProducerEpoch = producerEpoch and, under TV2, "
                   "completeTransitionTo takes it: CompleteCommit at epoch 1 has lastProducerEpoch 1; kcoord's "
                   "CompleteTxn row keeps last_producer_epoch (0, the epoch before the EndTxn bump), so a later "
                   "InitProducerId(producer 0, expected epoch 0) is taken as a retry and answered NONE with epoch 1 "
                   "(the live producer's epoch, not bumped) where Kafka answers PRODUCER_FENCED. This is the "
                   "pre-4.0 snapshot's code; kafka-reference.md §1.2 (Kafka 4.0) has the Complete* transit keep "
                   "the current lastProducerEpoch, which is what the spec does"),
    scenario("testTolerateTimeShiftDuringCompleteAbort[TV_0]",
             go(init()), go(add()), go(end("ABORT")), jump(-1),
             step(COMPLETE, records=1, state="CompleteAbort", producer_id=0, producer_epoch=0,
                  last_producer_epoch=-1, client_txn_version=0, txn_start_timestamp_ms=T0,
                  txn_last_update_timestamp_ms=T0 - 1)),
    scenario("testTolerateTimeShiftDuringCompleteAbort[TV_2]",
             go(init()), go(add(tv=2)), go(end("ABORT", tv=2)), jump(-1),
             step(COMPLETE, records=1, state="CompleteAbort", producer_id=0, producer_epoch=1, client_txn_version=2,
                  txn_start_timestamp_ms=T0, txn_last_update_timestamp_ms=T0 - 1),
             differs={"last_producer_epoch": 1},
             xfail="as testTolerateTimeShiftDuringCompleteCommit[TV_2]: Kafka's CompleteAbort under TV2 has "
                   "lastProducerEpoch = producerEpoch (1); kcoord keeps the epoch before the bump (0)"),
    # the fence takes the last epoch (Short.MaxValue) and the abort keeps the producer id (at TV_2 the abort cannot
    # bump past Short.MaxValue either)
    scenario("testFenceProducerAfterEpochsExhausted",
             go(init()), go(add()), ff(EXHAUSTED),
             step(init(), "CONCURRENT_TRANSACTIONS", records=1, state="PrepareAbort", producer_id=0,
                  producer_epoch=MAX, next_producer_id=-1)),
    # an open transaction at Short.MaxValue: reachable through the API after a fence used the last epoch (the
    # CompleteAbort keeps epoch 32767 and an AddPartitions at that epoch opens a transaction); Kafka's
    # prepareFenceProducerEpoch throws there, so InitProducerId answers UNKNOWN_SERVER_ERROR and nothing changes
    scenario("testFenceProducerNotAllowedIfItWouldOverflow",
             go(init()), go(add()), ff(EXHAUSTED), go(init()), go(COMPLETE),
             step(add(epoch=MAX), "NONE", state="Ongoing", producer_id=0, producer_epoch=MAX),
             step(init(), producer_id=0, producer_epoch=MAX),
             differs={"answer": "UNKNOWN_SERVER_ERROR", "records": 0, "state": "Ongoing"},
             xfail="Kafka's prepareFenceProducerEpoch throws IllegalStateException at epoch Short.MaxValue, so "
                   "InitProducerId on an open transaction at 32767 answers UNKNOWN_SERVER_ERROR and leaves it "
                   "Ongoing; kcoord's spec fences without a bump (fenced_epoch keeps MAX_EPOCH): it answers "
                   "CONCURRENT_TRANSACTIONS, writes PrepareAbort at 32767 and aborts the transaction"),
    scenario("testRotateProducerId",
             go(init()), ff(EXHAUSTED),
             step(init(0, EXHAUSTED), "NONE", producer=(NEW_PID, 0), records=1, state="Empty", producer_id=NEW_PID,
                  previous_producer_id=0, producer_epoch=0, last_producer_epoch=EXHAUSTED)),
    scenario("testEpochBumpOnEndTxn",
             go(init()), go(add(tv=2)), ff(10),
             step(end("COMMIT", epoch=10, tv=2), "NONE", producer=(0, 11), records=1, state="PrepareCommit",
                  producer_id=0, producer_epoch=11, client_txn_version=2),
             step(COMPLETE, records=1, state="CompleteCommit", producer_id=0, producer_epoch=11,
                  client_txn_version=2)),
    scenario("testEpochBumpOnEndTxnOverflow",
             go(init()), go(add(tv=2)), ff(EXHAUSTED),
             # EndTxn v5 answers the producer id and epoch the client continues with: the next id at epoch 0
             step(end("COMMIT", epoch=EXHAUSTED, tv=2), "NONE", producer=(NEW_PID, 0), records=1,
                  state="PrepareCommit", producer_id=0, producer_epoch=MAX, next_producer_id=NEW_PID,
                  client_txn_version=2),
             step(COMPLETE, records=1, state="CompleteCommit", producer_id=NEW_PID, producer_epoch=0,
                  previous_producer_id=0, next_producer_id=-1, client_txn_version=2)),
    # prepareProducerIdRotation throws while a transaction is pending; the coordinator never rotates there: it fences
    # an open transaction and answers CONCURRENT_TRANSACTIONS in Prepare*, keeping the producer id
    scenario("testRotateProducerIdInOngoingState",
             go(init()), go(add()), ff(EXHAUSTED),
             step(init(0, EXHAUSTED), "CONCURRENT_TRANSACTIONS", records=1, state="PrepareAbort", producer_id=0,
                  producer_epoch=MAX)),
    scenario("testRotateProducerIdInPrepareAbortState[TV_0]",
             go(init()), go(add()), ff(EXHAUSTED), go(end("ABORT", epoch=EXHAUSTED)),
             step(init(0, EXHAUSTED), "CONCURRENT_TRANSACTIONS", records=0, state="PrepareAbort", producer_id=0,
                  producer_epoch=EXHAUSTED, next_producer_id=-1)),
    scenario("testRotateProducerIdInPrepareAbortState[TV_2]",
             go(init()), go(add(tv=2)), ff(EXHAUSTED), go(end("ABORT", epoch=EXHAUSTED, tv=2)),
             step(init(0, EXHAUSTED), "CONCURRENT_TRANSACTIONS", records=0, state="PrepareAbort", producer_id=0,
                  producer_epoch=MAX, next_producer_id=NEW_PID)),
    scenario("testRotateProducerIdInPrepareCommitState[TV_0]",
             go(init()), go(add()), ff(EXHAUSTED), go(end("COMMIT", epoch=EXHAUSTED)),
             step(init(0, EXHAUSTED), "CONCURRENT_TRANSACTIONS", records=0, state="PrepareCommit", producer_id=0,
                  producer_epoch=EXHAUSTED, next_producer_id=-1)),
    scenario("testRotateProducerIdInPrepareCommitState[TV_2]",
             go(init()), go(add(tv=2)), ff(EXHAUSTED), go(end("COMMIT", epoch=EXHAUSTED, tv=2)),
             step(init(0, EXHAUSTED), "CONCURRENT_TRANSACTIONS", records=0, state="PrepareCommit", producer_id=0,
                  producer_epoch=MAX, next_producer_id=NEW_PID)),
    # a new transactional id: the metadata is created at epoch -1, so any expected epoch is accepted
    scenario("testAttemptedEpochBumpWithNewlyCreatedMetadata",
             step(init(23423, 735), "NONE", producer=(0, 0), records=1, state="Empty", producer_id=0,
                  producer_epoch=0, last_producer_epoch=-1)),
    scenario("testEpochBumpWithCurrentEpochProvided",
             go(init()), ff(735),
             step(init(0, 735), "NONE", producer=(0, 736), records=1, state="Empty", producer_id=0,
                  producer_epoch=736, last_producer_epoch=735)),
    scenario("testAttemptedEpochBumpWithLastEpoch",
             go(init()), ff(734), step(init(0, 734), "NONE", producer=(0, 735), last_producer_epoch=734),
             # the retry of that call (expected epoch = the last epoch): the epoch is not bumped again
             step(init(0, 734), "NONE", producer=(0, 735), records=1, state="Empty", producer_id=0,
                  producer_epoch=735, last_producer_epoch=734)),
    scenario("testAttemptedEpochBumpWithFencedEpoch",
             go(init()), ff(734), go(init(0, 734)),
             step(init(0, 733), "PRODUCER_FENCED", records=0, state="Empty", producer_id=0, producer_epoch=735,
                  last_producer_epoch=734)),
]


def _log_end(driver: Any) -> int:
    return int(driver.shard.log.log_end_offset)


def run(s: Scenario, session: Session) -> None:
    driver = driver_spec("Transaction").factory()()
    try:
        lock = Lockstep(driver, session.refs(driver.machines))
        inst: dict[str, Any] | None = None
        last: dict[str, Any] = {}
        for i, st in enumerate(s.steps, 1):
            where = f"{s.kafka_test} step {i}" + (f" {st.action.render()}" if st.action else "")
            if st.jump_ms:
                driver.clock.jump(st.jump_ms)
            if st.action is None:
                continue
            before = _log_end(driver)
            report = lock.step(st.action)
            responses = report.outcome.responses
            last = {"answer": (txn_error(responses[-1]) or "NONE") if responses else None,
                    "records": _log_end(driver) - before}
            if st.answer is not None:
                assert responses, f"{where}: no answer"
                got = txn_error(responses[-1]) or "NONE"
                assert got == st.answer, f"{where}: answered {got}, Kafka: {st.answer}"
            if st.producer is not None:
                answered = (responses[-1].producer_id, responses[-1].producer_epoch)
                assert answered == st.producer, f"{where}: answered producer {answered}, expected {st.producer}"
            if st.records is not None:
                written = _log_end(driver) - before
                assert written == st.records, f"{where}: {written} records appended, expected {st.records}"
            inst = driver.instance()
            assert inst is not None or not st.values, f"{where}: the coordinator holds no {TXN[0]}"
            for name, want in st.values.items():
                assert inst is not None and inst[name] == want, \
                    f"{where}: {name} = {None if inst is None else inst[name]!r}, expected {want!r}"
        for name, want in s.differs.items():
            got = last[name] if name in last else None if inst is None else inst.get(name)
            if got != want:
                raise KafkaDifference(f"{s.kafka_test}: {name} = {got!r}, Kafka's test asserts {want!r}")
    finally:
        driver.close()


def _param(s: Scenario) -> Any:
    marks = [pytest.mark.xfail(raises=KafkaDifference, strict=True, reason=s.xfail)] if s.xfail else []
    return pytest.param(s, id=s.kafka_test, marks=marks)


def test_at_least_ten_scenarios_each_citing_a_kafka_test() -> None:
    assert len(SCENARIOS) >= 10
    assert len({s.kafka_test for s in SCENARIOS}) == len(SCENARIOS), "one scenario per Kafka test (and parameter)"
    assert all(bool(s.differs) == bool(s.xfail) for s in SCENARIOS), "a known difference needs its reason"


@pytest.mark.parametrize("s", [_param(s) for s in SCENARIOS])
def test_transaction_metadata_scenario(s: Scenario, conformance_session: Session) -> None:
    run(s, conformance_session)


# ---------------------------------------------------------------------------------------------- the state table

#: Kafka's TransactionState objects: name and id (TransactionMetadata.scala, `TransactionState.AllStates`)
KAFKA_STATES = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
                "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}


def test_all_transaction_states_are_mapped(conformance_session: Session) -> None:
    """TransactionMetadataTest.testAllTransactionStatesAreMapped: the spec's Transaction machine has exactly
    Kafka's eight states, no more and no fewer."""
    declared = {s.name for s in conformance_session.machines["Transaction"].states}
    assert declared == set(KAFKA_STATES), f"spec states {sorted(declared)}, Kafka's {sorted(KAFKA_STATES)}"


@pytest.mark.parametrize("name", list(KAFKA_STATES))  # in id order
def test_transaction_state_id_and_name_mapping(name: str) -> None:
    """TransactionMetadataTest.testTransactionStateIdAndNameMapping: each state's id in a `__transaction_state`
    record is Kafka's, and the ids the coordinator writes read back as the same state name."""
    status = TransactionStatus(KAFKA_STATES[name])
    assert status.name.replace("_", "").lower() == name.lower(), f"id {int(status)} is {status.name}, Kafka: {name}"
    if name not in ("Dead", "PrepareEpochFence"):  # never written as a value: a tombstone, and a pending-only state
        assert STATE_OF_STATUS[status] == name
