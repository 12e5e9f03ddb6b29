"""The front door (reference §1.4): routing errors, append-error translation, old-client downgrades, and the read
APIs DescribeTransactions / ListTransactions."""

from __future__ import annotations

import pytest

from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.txn import LogAppendError, TransactionDescription
from kcoord.impl.txn.errors import append_error_name, downgrade_fenced, translate_append_error

from .harness import PARTS, START_MS, TIMEOUT_MS, Harness

T = "txn-door"
PID, E = 5, 4


def test_every_api_answers_not_coordinator_for_a_partition_it_does_not_own(h: Harness) -> None:
    c = h.coordinator
    assert c.init_producer_id(T, TIMEOUT_MS).result().error == "NOT_COORDINATOR"
    assert set(c.add_partitions(T, PID, E, PARTS).result().values()) == {"NOT_COORDINATOR"}
    assert c.add_offsets(T, PID, E, "g").result() == "NOT_COORDINATOR"
    assert c.verify_partition(T, PID, E, PARTS[0]).result() == "NOT_COORDINATOR"
    assert c.end_txn(T, PID, E, "COMMIT", 5).result().error == "NOT_COORDINATOR"
    assert c.describe_transactions([T]).result() == [TransactionDescription(T, "NOT_COORDINATOR")]


def test_every_api_answers_load_in_progress_while_loading(h: Harness) -> None:
    c = h.coordinator
    c.load(h.partition(T), wait=False)
    assert c.init_producer_id(T, TIMEOUT_MS).result().error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert set(c.add_partitions(T, PID, E, PARTS).result().values()) == {"COORDINATOR_LOAD_IN_PROGRESS"}
    assert c.add_offsets(T, PID, E, "g").result() == "COORDINATOR_LOAD_IN_PROGRESS"
    assert c.verify_partition(T, PID, E, PARTS[0]).result() == "COORDINATOR_LOAD_IN_PROGRESS"
    assert c.end_txn(T, PID, E, "COMMIT", 5).result().error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert c.describe_transactions([T]).result()[0].error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert c.list_transactions().result().error == "COORDINATOR_LOAD_IN_PROGRESS"
    c.poll()
    assert c.init_producer_id(T, TIMEOUT_MS).result().error == "NONE"


@pytest.mark.parametrize(("replica_error", "answer"), [
    ("UNKNOWN_TOPIC_OR_PARTITION", "COORDINATOR_NOT_AVAILABLE"),
    ("NOT_ENOUGH_REPLICAS", "COORDINATOR_NOT_AVAILABLE"),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", "COORDINATOR_NOT_AVAILABLE"),
    ("REQUEST_TIMED_OUT", "COORDINATOR_NOT_AVAILABLE"),
    ("NOT_LEADER_OR_FOLLOWER", "NOT_COORDINATOR"),
    ("KAFKA_STORAGE_ERROR", "NOT_COORDINATOR"),
    ("MESSAGE_TOO_LARGE", "UNKNOWN_SERVER_ERROR"),
    ("RECORD_LIST_TOO_LARGE", "UNKNOWN_SERVER_ERROR"),
    ("INVALID_TIMESTAMP", "INVALID_TIMESTAMP"),  # anything else passes through
])
def test_append_errors_are_translated(h: Harness, replica_error: str, answer: str) -> None:
    assert translate_append_error(replica_error) == answer
    h.seed(T, "Empty", producer_id=PID, previous_producer_id=PID, producer_epoch=E)
    shard = h.shard(T)
    append = shard.log.append

    def failing(*args: object, **kw: object) -> object:
        shard.log.append = append  # type: ignore[method-assign]
        raise LogAppendError(replica_error)

    shard.log.append = failing  # type: ignore[method-assign]
    mark = h.end_offset(T)
    assert h.add(T, PID, E) == dict.fromkeys(PARTS, answer)
    assert h.records_since(T, mark) == [] and h.get(T)["state"] == "Empty"  # nothing applied


def test_a_local_disk_error_is_a_storage_error(h: Harness) -> None:
    assert append_error_name(OSError(5, "EIO")) == "KAFKA_STORAGE_ERROR"
    h.seed(T, "Empty", producer_id=PID, previous_producer_id=PID, producer_epoch=E)
    h.shard(T).log.fail_next_append(written_bytes=7)  # a torn write: the log cuts it off again
    r = h.end(T, PID, E, "ABORT", 5)
    assert r.error == "NOT_COORDINATOR" and h.get(T)["state"] == "Empty"
    assert h.end(T, PID, E, "ABORT", 5).error == "NONE"


@pytest.mark.parametrize(("api", "first_version"), [("InitProducerId", 4), ("AddPartitionsToTxn", 2),
                                                     ("AddOffsetsToTxn", 2), ("EndTxn", 2)])
def test_producer_fenced_is_downgraded_for_old_clients(api: str, first_version: int) -> None:
    assert downgrade_fenced("PRODUCER_FENCED", api, first_version - 1) == "INVALID_PRODUCER_EPOCH"
    assert downgrade_fenced("PRODUCER_FENCED", api, first_version) == "PRODUCER_FENCED"
    assert downgrade_fenced("PRODUCER_FENCED", api, None) == "PRODUCER_FENCED"
    assert downgrade_fenced("CONCURRENT_TRANSACTIONS", api, 0) == "CONCURRENT_TRANSACTIONS"


# ---------------------------------------------------------------- DescribeTransactions


def test_describe(h: Harness) -> None:
    assert h.describe(T).error == "TRANSACTIONAL_ID_NOT_FOUND"
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset({"orders-1", "orders-0"}))
    assert h.describe(T) == TransactionDescription(
        T, "NONE", state="Ongoing", producer_id=PID, producer_epoch=E, timeout_ms=TIMEOUT_MS,
        start_timestamp_ms=START_MS, partitions=(TopicPartition("orders", 0), TopicPartition("orders", 1)))
    assert h.run(h.coordinator.describe_transactions([""])) == [TransactionDescription("", "INVALID_REQUEST")]
    h.coordinator.active = False
    assert h.run(h.coordinator.describe_transactions([T]))[0].error == "COORDINATOR_NOT_AVAILABLE"


# ---------------------------------------------------------------- ListTransactions


def test_list_with_filters(h: Harness) -> None:
    h.seed("t-a", "Ongoing", producer_id=1, previous_producer_id=1, producer_epoch=0,
           partitions=frozenset({"orders-0"}))
    h.seed("t-b", "CompleteCommit", producer_id=2, previous_producer_id=2, producer_epoch=0)
    h.seed("t-c", "Empty", producer_id=3, previous_producer_id=3, producer_epoch=0)
    c = h.coordinator
    everything = c.list_transactions().result()
    assert everything.error == "NONE"
    assert [(t.transactional_id, t.producer_id, t.state) for t in everything.transactions] == \
        [("t-a", 1, "Ongoing"), ("t-b", 2, "CompleteCommit"), ("t-c", 3, "Empty")]
    by_state = c.list_transactions(["Ongoing", "Bogus", "Dead"]).result()
    assert [t.transactional_id for t in by_state.transactions] == ["t-a"]
    assert by_state.unknown_state_filters == ("Bogus",)
    assert [t.transactional_id for t in c.list_transactions(producer_id_filters=[2, 3]).result().transactions] == \
        ["t-b", "t-c"]
    assert c.list_transactions(["Bogus"]).result().transactions == ()
    h.clock.advance(500)
    long_running = c.list_transactions(duration_filter_ms=400).result()
    assert [t.transactional_id for t in long_running.transactions] == ["t-a", "t-b", "t-c"]  # -1 starts: very old
    assert c.list_transactions(duration_filter_ms=500).result().transactions[0].transactional_id == "t-b"
    c.active = False
    assert c.list_transactions().result().error == "COORDINATOR_NOT_AVAILABLE"
