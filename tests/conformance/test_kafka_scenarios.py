"""Kafka's own coordinator tests, restated as table-driven scenarios against kcoord (apache/kafka):
TransactionCoordinatorTest (core/src/test/scala/unit/kafka/coordinator/transaction/), the classic-group and KIP-848
tests of GroupMetadataManagerTest (group-coordinator/src/test/java/org/apache/kafka/coordinator/group/).

Each scenario names the Kafka test it comes from, runs a short program of spec events through a conformance driver
in lockstep with the reference model (so every step is also checked against the spec), and then asserts what the
Kafka test asserts: the error the last request was answered with, the instance's state and variables afterwards
(None: the coordinator holds no such instance), and how many records the last step appended to the coordinator log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kcoord.conformance.drivers import driver_spec
from kcoord.conformance.drivers.base import Action
from kcoord.conformance.drivers.classic_group import _error_of as classic_error
from kcoord.conformance.drivers.consumer_group import _error_of as consumer_error
from kcoord.conformance.drivers.consumer_group import heartbeat
from kcoord.conformance.drivers.transaction import _error_of as txn_error
from kcoord.conformance.lockstep import Lockstep
from kcoord.conformance.runner import Session

TXN = ("s1",)
GROUP = ("s1",)
CG = ("g1",)
ALL = ["orders-0", "orders-1", "orders-2"]


@dataclass(frozen=True)
class Scenario:
    kafka_test: str
    driver: str
    program: tuple[Action, ...]
    answer: str | None  # the error of the last request's answer (None: the last step sent no request)
    instance: tuple[str, tuple[Any, ...]]  # (machine, key) checked afterwards
    state: str | None  # None: no such instance
    values: Mapping[str, Any] = field(default_factory=dict)
    records: int | None = None  # records appended by the last step


def a(name: str, **args: Any) -> Action:
    return Action(name, args)


def init(**args: Any) -> Action:
    return a("InitProducerId", timeout_ms=60_000, expected_producer_id=args.get("pid", -1),
             expected_epoch=args.get("epoch", -1))


def add(*parts: str, pid: int = 0, epoch: int = 0) -> Action:
    return a("AddPartitions", pid=pid, epoch=epoch, parts=list(parts), txn_version=0)


def end(result: str, pid: int = 0, epoch: int = 0) -> Action:
    return a("EndTxnV1", pid=pid, epoch=epoch, result=result)


def txn(test: str, program: list[Action], answer: str | None, state: str | None, records: int | None = None,
        **values: Any) -> Scenario:
    return Scenario(f"TransactionCoordinatorTest.{test}", "Transaction", tuple(program), answer,
                    ("Transaction", TXN), state, values, records)


TXN_SCENARIOS = [
    txn("shouldInitPidWithEpochZeroForNewTransactionalId", [init()], "NONE", "Empty", 1, producer_epoch=0,
        producer_id=0),
    txn("shouldRespondWithInvalidPidMappingOnAddPartitionsToTransactionWhenTransactionalIdNotPresent", [add("t-0")],
        "INVALID_PRODUCER_ID_MAPPING", None, 0),
    txn("shouldRespondWithConcurrentTransactionsOnAddPartitionsWhenStateIsPrepareCommit",
        [init(), add("t-0"), end("COMMIT"), add("t-1")], "CONCURRENT_TRANSACTIONS", "PrepareCommit", 0,
        partitions=frozenset({"t-0"})),
    txn("shouldRespondWithConcurrentTransactionOnAddPartitionsWhenStateIsPrepareAbort",
        [init(), add("t-0"), end("ABORT"), add("t-1")], "CONCURRENT_TRANSACTIONS", "PrepareAbort", 0),
    txn("shouldRespondWithProducerFencedOnAddPartitionsWhenEpochsAreDifferent", [init(), add("t-0", epoch=1)],
        "PRODUCER_FENCED", "Empty", 0),
    txn("shouldAppendNewMetadataToLogOnAddPartitionsWhenPartitionsAdded", [init(), add("t-0")], "NONE", "Ongoing", 1,
        partitions=frozenset({"t-0"})),
    txn("shouldRespondWithSuccessOnAddPartitionsWhenStateIsOngoing", [init(), add("t-0"), add("t-1")], "NONE",
        "Ongoing", 1, partitions=frozenset({"t-0", "t-1"})),
    txn("shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteCommit",
        [init(), add("t-0"), end("COMMIT"), a("CompleteTxn"), add("t-1")], "NONE", "Ongoing", 1,
        partitions=frozenset({"t-1"})),
    txn("shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteAbort",
        [init(), add("t-0"), end("ABORT"), a("CompleteTxn"), add("t-1")], "NONE", "Ongoing", 1,
        partitions=frozenset({"t-1"})),
    txn("shouldRespondWithErrorsNoneOnAddPartitionWhenNoErrorsAndPartitionsTheSame", [init(), add("t-0"), add("t-0")],
        "NONE", "Ongoing", 0),
    txn("shouldRespondWithErrorsNoneOnAddPartitionWhenOngoingVerifyOnlyAndPartitionsTheSame",
        [init(), add("t-0"), a("VerifyPartition", pid=0, epoch=0, p="t-0")], "NONE", "Ongoing", 0),
    txn("shouldRespondWithInvalidTxnStateWhenVerifyOnlyAndPartitionNotPresent",
        [init(), add("t-0"), a("VerifyPartition", pid=0, epoch=0, p="t-1")], "TRANSACTION_ABORTABLE", "Ongoing", 0),
    txn("shouldReplyWithInvalidPidMappingOnEndTxnWhenTxnIdDoesntExist", [end("COMMIT")],
        "INVALID_PRODUCER_ID_MAPPING", None, 0),
    txn("shouldReplyWithInvalidPidMappingOnEndTxnWhenPidDosentMatchMapped", [init(), add("t-0"), end("COMMIT", pid=5)],
        "INVALID_PRODUCER_ID_MAPPING", "Ongoing", 0),
    txn("shouldReplyWithProducerFencedOnEndTxnWhenEpochIsNotSameAsTransaction",
        [init(), init(), add("t-0", epoch=1), end("COMMIT", epoch=0)], "PRODUCER_FENCED", "Ongoing", 0,
        producer_epoch=1),
    txn("shouldReturnOkOnEndTxnWhenStatusIsCompleteCommitAndResultIsCommit",
        [init(), add("t-0"), end("COMMIT"), a("CompleteTxn"), end("COMMIT")], "NONE", "CompleteCommit", 0),
    txn("shouldReturnOkOnEndTxnWhenStatusIsCompleteAbortAndResultIsAbort",
        [init(), add("t-0"), end("ABORT"), a("CompleteTxn"), end("ABORT")], "NONE", "CompleteAbort", 0),
    txn("shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort",
        [init(), add("t-0"), end("ABORT"), a("CompleteTxn"), end("COMMIT")], "INVALID_TXN_STATE", "CompleteAbort", 0),
    txn("shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteCommitAndResultIsNotCommit",
        [init(), add("t-0"), end("COMMIT"), a("CompleteTxn"), end("ABORT")], "INVALID_TXN_STATE", "CompleteCommit", 0),
    txn("shouldReturnConcurrentTransactionsOnEndTxnRequestWhenStatusIsPrepareCommit",
        [init(), add("t-0"), end("COMMIT"), end("COMMIT")], "CONCURRENT_TRANSACTIONS", "PrepareCommit", 0),
    txn("shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsPrepareAbort",
        [init(), add("t-0"), end("ABORT"), end("COMMIT")], "INVALID_TXN_STATE", "PrepareAbort", 0),
    txn("shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit",
        [init(), add("t-0"), end("COMMIT")], "NONE", "PrepareCommit", 1, partitions=frozenset({"t-0"})),
    txn("shouldAppendPrepareAbortToLogOnEndTxnWhenStatusIsOngoingAndResultIsAbort",
        [init(), add("t-0"), end("ABORT")], "NONE", "PrepareAbort", 1),
    txn("shouldReturnInvalidEpochOnEndTxnWhenEpochIsLarger", [init(), add("t-0"), end("COMMIT", epoch=1)],
        "PRODUCER_FENCED", "Ongoing", 0),
    txn("shouldReturnInvalidEpochOnEndTxnWhenEpochIsSmaller", [init(), init(), add("t-0", epoch=1), end("ABORT")],
        "PRODUCER_FENCED", "Ongoing", 0),
    txn("shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingEmptyTransaction", [init(), init()], "NONE",
        "Empty", 1, producer_epoch=1, producer_id=0),
    txn("shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteTransaction",
        [init(), add("t-0"), end("ABORT"), a("CompleteTxn"), init()], "NONE", "Empty", 1, producer_epoch=1,
        partitions=frozenset()),
    txn("shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteCommitTransaction",
        [init(), add("t-0"), end("COMMIT"), a("CompleteTxn"), init()], "NONE", "Empty", 1, producer_epoch=1),
    txn("shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareCommitState",
        [init(), add("t-0"), end("COMMIT"), init()], "CONCURRENT_TRANSACTIONS", "PrepareCommit", 0),
    txn("shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareAbortState",
        [init(), add("t-0"), end("ABORT"), init()], "CONCURRENT_TRANSACTIONS", "PrepareAbort", 0),
    # Kafka's test runs the server at TV_0; kcoord's driver runs it at TV2, and the epoch moves once under both
    # (Kafka 4.0.2, KAFKA-19367; the 4.0 snapshot bumped once more under TV2): epoch 1. Under TV2 the abort is that
    # bump, so the last epoch is the one before the fence (0), where TV_0 leaves it unknown (-1)
    txn("shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState", [init(), add("t-0"), init()],
        "CONCURRENT_TRANSACTIONS", "PrepareAbort", 1, producer_epoch=1, last_producer_epoch=0),
    txn("shouldUseLastEpochToFenceWhenEpochsAreExhausted",
        [init(), add("t-0"), a("FastForward", epoch=32766), init()], "CONCURRENT_TRANSACTIONS", "PrepareAbort", 1,
        producer_epoch=32767),
    txn("shouldGenerateNewProducerIdIfEpochsExhausted", [init(), a("FastForward", epoch=32766), init()], "NONE",
        "Empty", 1, producer_epoch=0, previous_producer_id=0),
    txn("shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch", [init(), add("t-0"), a("TimeoutExpired")], None,
        "PrepareAbort", 1, producer_epoch=1),  # the fence's bump only, under TV2 too (see above)
    txn("testInitProducerIdWithCurrentEpochProvided", [init(), init(pid=0, epoch=0)], "NONE", "Empty", 1,
        producer_epoch=1),
    txn("testInitProducerIdStaleCurrentEpochProvided", [init(), init(), init(pid=0, epoch=0)], "PRODUCER_FENCED",
        "Empty", 0, producer_epoch=1),
    txn("testDescribeTransactions", [init(), add("t-0"), a("Describe")], "NONE", "Ongoing", 0),
]


def join(version: int = 3, protocol_type: str = "consumer", protocols: tuple[str, ...] = ("range",)) -> Action:
    return a("JoinNewDynamicMember", version=version, protocol_type=protocol_type, protocols=list(protocols),
             session_timeout_ms=10_000)


def classic(test: str, program: list[Action], answer: str | None, state: str | None, records: int | None = None,
            **values: Any) -> Scenario:
    return Scenario(f"GroupMetadataManagerTest.{test}", "ClassicGroup", tuple(program), answer,
                    ("ClassicGroup", GROUP), state, values, records)


SYNC = a("SyncGroup", member="m-1", instance="", generation=1, protocol_type="consumer", protocol="range")
CLASSIC_SCENARIOS = [
    classic("testJoinGroupUnknownMemberNewGroup",
            [a("JoinKnownMember", member="m-99", instance="", version=9, protocol_type="consumer",
               protocols=["range"], same_metadata=False, session_timeout_ms=10_000)], "UNKNOWN_MEMBER_ID", None, 0),
    # the refused join still creates the (empty) group, as Kafka's getOrMaybeCreateClassicGroup does before validating
    classic("testJoinGroupWithEmptyProtocolType", [join(protocol_type="")], "INCONSISTENT_GROUP_PROTOCOL", "Empty",
            members=frozenset()),
    classic("testJoinGroupWithEmptyGroupProtocol", [join(protocols=())], "INCONSISTENT_GROUP_PROTOCOL", "Empty",
            members=frozenset()),
    classic("testHeartbeatUnknownGroup", [a("Heartbeat", member="m-1", instance="", generation=1)],
            "UNKNOWN_MEMBER_ID", None, 0),
    classic("testSyncGroupFromUnknownGroup", [SYNC], "UNKNOWN_MEMBER_ID", None, 0),
    classic("testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup", [join()], None, "PreparingRebalance",
            members=frozenset({"m-1"})),
    classic("testGenerationIdIncrementsOnRebalance", [join(), a("Tick")], None, "CompletingRebalance", 0,
            generation=1, leader="m-1"),
    classic("testSyncGroupFollowerAfterLeader", [join(), a("Tick"), SYNC], "NONE", "Stable", 1, generation=1),
    classic("testValidHeartbeat", [join(), a("Tick"), SYNC, a("Heartbeat", member="m-1", instance="", generation=1)],
            "NONE", "Stable", 0),
    classic("testHeartbeatIllegalGeneration",
            [join(), a("Tick"), SYNC, a("Heartbeat", member="m-1", instance="", generation=2)], "ILLEGAL_GENERATION",
            "Stable", 0),
    classic("testSyncGroupFromIllegalGeneration",
            [join(), a("Tick"), a("SyncGroup", member="m-1", instance="", generation=2, protocol_type="consumer",
                                  protocol="range")], "ILLEGAL_GENERATION", "CompletingRebalance", 0),
    classic("testJoinGroupShouldReceiveErrorIfGroupOverMaxSize", [join(), join(), join(), join()],
            "GROUP_MAX_SIZE_REACHED", "PreparingRebalance", members=frozenset({"m-1", "m-2", "m-3"})),
]


def kip848(test: str, program: list[Action], answer: str | None, instance: tuple[str, tuple[Any, ...]],
           state: str | None, records: int | None = None, **values: Any) -> Scenario:
    return Scenario(f"GroupMetadataManagerTest.{test}", "ConsumerGroup", tuple(program), answer, instance, state,
                    values, records)


def member(m: str) -> tuple[str, tuple[Any, ...]]:
    return ("ConsumerGroupMember", ("g1", m))


GROUP_I = ("ConsumerGroup", CG)
KIP848_SCENARIOS = [
    kip848("testMemberJoinsEmptyConsumerGroup", [heartbeat("a", 0)], "NONE", member("a"), "Stable", None,
           member_epoch=1, assigned=frozenset(ALL)),
    kip848("testUnknownGroupId", [heartbeat("a", 100, owned=[])], "GROUP_ID_NOT_FOUND", GROUP_I, None, 0),
    kip848("testUnknownMemberIdJoinsConsumerGroup", [heartbeat("a", 0), heartbeat("b", 1, owned=[])],
           "UNKNOWN_MEMBER_ID", member("b"), None, 0),
    kip848("testConsumerGroupMemberEpochValidation", [heartbeat("a", 0), heartbeat("a", 200, owned=[])],
           "FENCED_MEMBER_EPOCH", member("a"), "Stable", 0, member_epoch=1),
    kip848("testConsumerHeartbeatRequestValidation", [heartbeat("a", 0, topics=None)], "INVALID_REQUEST", GROUP_I,
           None, 0),
    kip848("testNewJoiningMemberTriggersNewTargetAssignment", [heartbeat("a", 0), heartbeat("b", 0)], "NONE",
           GROUP_I, "Reconciling", None, group_epoch=2, assignment_epoch=2),
    kip848("testLeavingMemberBumpsGroupEpoch", [heartbeat("a", 0), heartbeat("b", 0), heartbeat("b", -1)], "NONE",
           GROUP_I, "Assigning", None, group_epoch=3, members=frozenset({"a"})),
    kip848("testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves",
           [heartbeat("s", 0, instance="i1"), heartbeat("s", -2, instance="i1")], "NONE", member("s"), "StaticLeft",
           1, member_epoch=-2),
    kip848("testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId",
           [heartbeat("s", 0, instance="i1"), heartbeat("r", 0, instance="i1")], "UNRELEASED_INSTANCE_ID", member("r"),
           None, 0),
    kip848("testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdLeaves",
           [heartbeat("s", 0, instance="i1"), heartbeat("r", -1, instance="i1")], "FENCED_INSTANCE_ID", member("s"),
           "Stable", 0),
    kip848("testNewMemberIsRejectedWithMaximumMembersIsReached",
           [heartbeat("a", 0), heartbeat("b", 0), heartbeat("c", 0), heartbeat("s", 0)], "GROUP_MAX_SIZE_REACHED",
           member("s"), None, 0),
    kip848("testReconciliationProcess", [heartbeat("a", 0), heartbeat("b", 0), heartbeat("a", 1, owned=ALL)], "NONE",
           member("a"), "UnrevokedPartitions", None, member_epoch=1),
    kip848("testSessionTimeoutExpiration", [heartbeat("a", 0), a("SessionTimeout")], None, GROUP_I, "Empty", None,
           group_epoch=2, members=frozenset()),
    kip848("testRebalanceTimeoutExpiration",
           [heartbeat("a", 0), heartbeat("b", 0), heartbeat("a", 1, owned=ALL), a("RebalanceTimeout")], None,
           member("a"), None),
]

SCENARIOS = TXN_SCENARIOS + CLASSIC_SCENARIOS + KIP848_SCENARIOS


def _answer(driver: str, action: Action, response: Any) -> str:
    if driver == "Transaction":
        got = txn_error(response)
    elif driver == "ClassicGroup":
        got = classic_error(action, response[1] if isinstance(response, tuple) else response)
    else:
        got = consumer_error(response)
    return "NONE" if got is None else str(got)


def _log_end(driver: Any) -> int:
    return int(driver.shard.log.log_end_offset)


def test_at_least_forty_scenarios_each_citing_a_kafka_test() -> None:
    assert len(SCENARIOS) >= 40
    assert len({s.kafka_test for s in SCENARIOS}) == len(SCENARIOS), "one scenario per Kafka test"


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.kafka_test.split(".")[1] for s in SCENARIOS])
def test_kafka_scenario(s: Scenario, conformance_session: Session) -> None:
    driver = driver_spec(s.driver).factory()()
    try:
        lock = Lockstep(driver, conformance_session.refs(driver.machines))
        for action in s.program[:-1]:
            lock.step(action)
        before = _log_end(driver)
        report = lock.step(s.program[-1])
        if s.answer is not None:
            assert report.outcome.responses, f"{s.program[-1].render()} got no answer"
            got = _answer(s.driver, s.program[-1], report.outcome.responses[0])
            assert got == s.answer, f"{s.kafka_test}: answered {got}, Kafka answers {s.answer}"
        machine, key = s.instance
        inst = driver.instances(machine).get(key)
        if s.state is None:
            assert inst is None or inst.get("state") in ("Absent",), f"{s.kafka_test}: expected no instance, got {inst}"
        else:
            assert inst is not None, f"{s.kafka_test}: no {machine} instance {key}"
            assert inst["state"] == s.state, f"{s.kafka_test}: state {inst['state']}, Kafka's is {s.state}"
            for name, want in s.values.items():
                assert inst[name] == want, f"{s.kafka_test}: {name} = {inst[name]!r}, expected {want!r}"
        if s.records is not None:
            assert _log_end(driver) - before == s.records, \
                f"{s.kafka_test}: {_log_end(driver) - before} records appended, expected {s.records}"
    finally:
        driver.close()
