"""KIP-890 verification of a Produce request's partitions in one ask of the transaction coordinator
(`PartitionManager.produce(..., deferred=)` + `verify_deferred`, as `DataHandlers.produce` does it; Kafka 4.0:
`ReplicaManager.appendRecords` → `maybeStartTransactionVerificationForPartitions`, one verify-only
AddPartitionsToTxn per transactional id). The answers, logs and PartitionProducer rows are those of one verification
per partition (`FakeVerifier` answers both ways alike); only the number of asks differs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.errors import KafkaError
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition import PartitionManager
from kcoord.impl.partition.verification import PendingWrite
from kcoord.impl.storage.log import read_partition_dir

from .helpers import Env, batch, make_env

PID = 7
MULTI = "multi"
A, B, C = (TopicPartition(MULTI, i) for i in range(3))

Sends = list[tuple[TopicPartition, Any]]


def _request(manager: PartitionManager, sends: Sends, txn_id: str | None, *, batched: bool
             ) -> list[tuple[str, str | None]]:
    deferred: list[PendingWrite] | None = [] if batched else None
    answers = [manager.produce(tp.topic, tp.partition, sent, transactional_id=txn_id, deferred=deferred)
               for tp, sent in sends]
    if deferred is not None:
        manager.verify_deferred(deferred, txn_id)
    return [(r.error, r.error_message) for r in (answer.result() for answer in answers)]


def _both(tmp_path: Path, setup: Callable[[Env], None], sends: Sends, txn_id: str | None = "t1"
          ) -> tuple[list[Any], Env]:
    """The request one partition after the other, then deferred, each on a fresh manager: the same answers, rows
    and logs; returns the answers and the deferred run's env (closed)."""
    outcomes = []
    for batched in (False, True):
        envs = make_env(tmp_path / str(batched))
        env = next(envs)
        try:
            assert env.manager.create_topic(MULTI, 3) == "NONE"
            setup(env)
            answers = _request(env.manager, sends, txn_id, batched=batched)
            logs = {tp: [(b.base_offset, b.producer_id, b.is_transactional, len(b.records))
                         for b in read_partition_dir(env.path / str(tp))] for tp in (A, B, C)}
            outcomes.append((answers, env.sink.rows.get("PartitionProducer", []), logs, env))
        finally:
            envs.close()
    (answers_a, rows_a, logs_a, _), (answers_b, rows_b, logs_b, env) = outcomes
    assert answers_b == answers_a
    assert rows_b == rows_a
    assert logs_b == logs_a
    return answers_b, env


def _txn(seq: int = 0, pid: int = PID, epoch: int = 0) -> Any:
    return batch(pid, epoch, seq=seq, txn=True)


def test_one_ask_for_all_the_partitions_of_a_request(tmp_path: Path) -> None:
    answers, env = _both(tmp_path, lambda e: e.verifier.add(PID, A, C), [(A, _txn()), (B, _txn()), (C, _txn())])
    assert [error for error, _ in answers] == ["NONE", "INVALID_TXN_STATE", "NONE"]
    assert env.verifier.asks == [("t1", PID, 0, (A, B, C))]


@pytest.mark.parametrize("forced", ["NONE", "TRANSACTION_ABORTABLE", "PRODUCER_FENCED", "CONCURRENT_TRANSACTIONS",
                                    "NOT_COORDINATOR", "INVALID_PRODUCER_ID_MAPPING", "UNSUPPORTED_VERSION"])
def test_every_answer_of_the_coordinator_is_translated_per_partition_as_before(tmp_path: Path, forced: str) -> None:
    def setup(e: Env) -> None:
        e.verifier.forced = forced

    answers, env = _both(tmp_path, setup, [(A, _txn()), (B, _txn())])
    assert len(env.verifier.asks) == 1 and len(answers) == 2 and answers[0] == answers[1]


@pytest.mark.parametrize("failure", [KafkaError("NOT_COORDINATOR"), ConnectionResetError("gone")])
def test_a_failed_ask_is_retriable_for_every_partition(tmp_path: Path, failure: BaseException) -> None:
    def setup(e: Env) -> None:
        e.verifier.failure = failure

    envs = make_env(tmp_path)
    env = next(envs)
    try:
        assert env.manager.create_topic(MULTI, 3) == "NONE"
        setup(env)
        answers = _request(env.manager, [(A, _txn()), (B, _txn())], "t1", batched=True)
    finally:
        envs.close()
    reason = "NOT_COORDINATOR" if isinstance(failure, KafkaError) else "NETWORK_EXCEPTION"
    message = f"unable to verify the partition has been added to the transaction: {reason}"
    assert answers == [("NOT_ENOUGH_REPLICAS", message)] * 2


def test_no_transactional_id_and_mixed_writes_answer_as_before(tmp_path: Path) -> None:
    answers, env = _both(tmp_path, lambda e: None, [(A, _txn()), (B, _txn())], txn_id=None)
    assert [error for error, _ in answers] == ["INVALID_REQUEST"] * 2 and env.verifier.asks == []
    # an idempotent batch, a transactional one, one of another producer: one ask per producer id and epoch
    answers, env = _both(tmp_path / "mixed", lambda e: e.verifier.add(8, C),
                         [(A, batch(PID, 0, seq=0)), (B, _txn()), (C, _txn(pid=8))])
    assert [error for error, _ in answers] == ["NONE", "INVALID_TXN_STATE", "NONE"]
    assert env.verifier.asks == []  # one partition per producer: asked as on its own (`verify_partition`)
    assert len(env.verifier.calls) == 2


def test_the_same_partition_twice_is_verified_once_then_appended_in_order(tmp_path: Path) -> None:
    answers, env = _both(tmp_path, lambda e: e.verifier.add(PID, A, B),
                         [(A, _txn(0)), (B, _txn(0)), (A, _txn(1))])
    assert [error for error, _ in answers] == ["NONE"] * 3
    assert env.verifier.asks == [("t1", PID, 0, (A, B))] and len(env.verifier.calls) == 2  # the second A: open
    # an idempotent batch after a deferred transactional one of the same partition is appended after it
    answers, env = _both(tmp_path / "idempotent", lambda e: e.verifier.add(PID, A, B),
                         [(A, _txn(0)), (B, _txn(0)), (A, batch(9, 0, seq=0))])
    assert [error for error, _ in answers] == ["NONE"] * 3
