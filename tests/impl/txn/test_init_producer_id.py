"""InitProducerId, one test per row of reference §1.5 (and the spec's InitProducerId rows 0-11).

Each test asserts the answer, the state afterwards, and the records written (decoded from the log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.storage.log import Durability
from kcoord.impl.txn import LogAppendError, TxnConfig

from .harness import PARTS, START_MS, TIMEOUT_MS, Harness, states

T = "txn-init"


# ---------------------------------------------------------------- 1-3: request-level checks


def test_null_transactional_id_gets_a_fresh_producer_id_at_epoch_0(h: Harness) -> None:
    first = h.run(h.coordinator.init_producer_id(None, 0))
    second = h.run(h.coordinator.init_producer_id(None, 0))
    assert (first.error, first.producer_epoch, second.error, second.producer_epoch) == ("NONE", 0, "NONE", 0)
    assert second.producer_id == first.producer_id + 1
    assert h.coordinator.runtime.shards == {}  # no transactional state, nothing written


def test_null_transactional_id_answers_the_producer_id_managers_error(h: Harness) -> None:
    h.producer_ids._requester = lambda on_complete: on_complete(OSError("controller unreachable"))  # type: ignore
    assert h.run(h.coordinator.init_producer_id(None, 0)).error == "COORDINATOR_LOAD_IN_PROGRESS"


def test_half_given_expected_producer_id_is_invalid(h: Harness) -> None:
    assert h.run(h.coordinator.init_producer_id(None, 0, 5, -1)).error == "INVALID_REQUEST"
    mark = h.end_offset(T)
    assert h.init(T, pid=-1, epoch=3).error == "INVALID_REQUEST"  # spec row 0
    assert h.records_since(T, mark) == [] and h.get(T) is None


def test_empty_transactional_id_is_invalid(h: Harness) -> None:
    assert h.run(h.coordinator.init_producer_id("", TIMEOUT_MS)).error == "INVALID_REQUEST"


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_timeout_outside_range_is_invalid(h: Harness, timeout_ms: int) -> None:
    mark = h.end_offset(T)
    assert h.init(T, timeout_ms).error == "INVALID_TRANSACTION_TIMEOUT"
    assert h.records_since(T, mark) == [] and h.get(T) is None


def test_timeout_at_the_maximum_is_accepted(h: Harness) -> None:
    assert h.init(T, 900_000).error == "NONE"
    assert h.get(T)["txn_timeout_ms"] == 900_000


# ---------------------------------------------------------------- 4: a new transactional id


def test_unknown_id_gets_a_new_producer_id_at_epoch_0(h: Harness) -> None:
    mark = h.end_offset(T)
    r = h.init(T)
    assert (r.error, r.producer_epoch) == ("NONE", 0)
    (record,) = h.records_since(T, mark)
    assert record[1] is not None
    assert (record[1]["state"], record[1]["producer_id"], record[1]["producer_epoch"],
            record[1]["txn_start_timestamp_ms"], record[1]["partitions"]) == ("Empty", r.producer_id, 0, -1,
                                                                             frozenset())
    assert h.get(T)["state"] == "Empty" and h.get(T)["last_producer_epoch"] == -1


def test_expected_producer_id_on_an_unknown_id_is_accepted(h: Harness) -> None:
    """Kafka's `current epoch == -1` clause: a producer whose id expired re-initialises with its old pid/epoch."""
    r = h.init(T, pid=77, epoch=4)
    assert (r.error, r.producer_epoch) == ("NONE", 0) and r.producer_id != 77


# ---------------------------------------------------------------- 5: checks under the lock, in order


def test_pending_write_answers_concurrent_transactions(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=10, max_bytes=1 << 20))
    h.shard(T)
    first = h.coordinator.init_producer_id(T, TIMEOUT_MS)
    second = h.coordinator.init_producer_id(T, TIMEOUT_MS)
    assert not first.done and second.result().error == "CONCURRENT_TRANSACTIONS"
    h.clock.advance(10)
    h.coordinator.poll()
    assert first.result().error == "NONE" and h.get(T)["producer_epoch"] == 0
    assert states(h.records_since(T, 0)) == ["Empty"]


def test_expected_producer_id_of_another_producer_is_fenced(h: Harness) -> None:
    h.seed(T, "Empty", producer_id=5, previous_producer_id=5, producer_epoch=3)
    mark = h.end_offset(T)
    assert h.init(T, pid=99, epoch=3).error == "PRODUCER_FENCED"
    assert h.init(T, pid=99, epoch=3, request_version=3).error == "INVALID_PRODUCER_EPOCH"  # old-client downgrade
    assert h.records_since(T, mark) == [] and h.get(T)["producer_epoch"] == 3


@pytest.mark.parametrize("state", ["PrepareCommit", "PrepareAbort"])
def test_prepare_states_answer_concurrent_transactions(h: Harness, state: str) -> None:
    h.target.hold = True  # the markers stay unanswered
    h.seed(T, state, producer_id=5, previous_producer_id=5, producer_epoch=3, partitions=frozenset({"orders-0"}))
    mark = h.end_offset(T)
    assert h.init(T).error == "CONCURRENT_TRANSACTIONS"
    assert h.init(T, pid=5, epoch=3).error == "CONCURRENT_TRANSACTIONS"
    assert h.records_since(T, mark) == [] and h.get(T)["state"] == state


@pytest.mark.parametrize("state", ["Empty", "CompleteCommit", "CompleteAbort"])
def test_exhausted_epoch_rotates_the_producer_id(h: Harness, state: str) -> None:
    h.seed(T, state, producer_id=5, previous_producer_id=5, producer_epoch=32766)
    mark = h.end_offset(T)
    r = h.init(T)
    assert r.error == "NONE" and r.producer_epoch == 0 and r.producer_id not in (5, -1)
    (record,) = h.records_since(T, mark)
    assert record[1] is not None
    assert (record[1]["state"], record[1]["producer_id"], record[1]["previous_producer_id"],
            record[1]["producer_epoch"]) == ("Empty", r.producer_id, 5, 0)
    assert h.get(T)["last_producer_epoch"] == -1  # no expected epoch: nothing to remember


def test_exhausted_epoch_with_the_current_epoch_rotates_and_a_retry_gets_the_same_answer(h: Harness) -> None:
    h.seed(T, "CompleteCommit", producer_id=5, previous_producer_id=5, producer_epoch=32766)
    r = h.init(T, pid=5, epoch=32766)
    assert r.error == "NONE" and r.producer_epoch == 0
    assert h.get(T)["last_producer_epoch"] == 32766 and h.get(T)["previous_producer_id"] == 5
    mark = h.end_offset(T)
    retry = h.init(T, pid=5, epoch=32766)  # the old id is the previous one and its epoch is exhausted
    assert (retry.error, retry.producer_id, retry.producer_epoch) == ("NONE", r.producer_id, 0)
    (record,) = h.records_since(T, mark)  # a transition (the retry row), epoch unchanged
    assert record[1] is not None and (record[1]["producer_id"], record[1]["producer_epoch"]) == (r.producer_id, 0)


def test_exhausted_epoch_with_a_retried_epoch_is_the_unknown_server_error_quirk(h: Harness) -> None:
    h.seed(T, "CompleteAbort", producer_id=5, previous_producer_id=5, producer_epoch=32766)
    mark = h.end_offset(T)
    assert h.init(T, pid=5, epoch=32765).error == "UNKNOWN_SERVER_ERROR"
    assert h.records_since(T, mark) == [] and h.get(T)["producer_epoch"] == 32766


@pytest.mark.parametrize("state", ["Empty", "CompleteCommit", "CompleteAbort"])
def test_no_expected_epoch_bumps_the_epoch(h: Harness, state: str) -> None:
    h.seed(T, state, producer_id=5, previous_producer_id=5, producer_epoch=3)
    mark = h.end_offset(T)
    r = h.init(T, 30_000)
    assert (r.error, r.producer_id, r.producer_epoch) == ("NONE", 5, 4)
    (record,) = h.records_since(T, mark)
    assert record[1] is not None
    assert (record[1]["state"], record[1]["producer_epoch"], record[1]["txn_timeout_ms"]) == ("Empty", 4, 30_000)
    assert h.get(T)["last_producer_epoch"] == -1


def test_expected_current_epoch_bumps_and_a_retry_with_the_last_epoch_does_not(h: Harness) -> None:
    h.seed(T, "CompleteCommit", producer_id=5, previous_producer_id=5, producer_epoch=3)
    r = h.init(T, pid=5, epoch=3)
    assert (r.error, r.producer_epoch) == ("NONE", 4) and h.get(T)["last_producer_epoch"] == 3
    mark = h.end_offset(T)
    retry = h.init(T, pid=5, epoch=3)  # the response was lost; the client asks again with its old epoch
    assert (retry.error, retry.producer_id, retry.producer_epoch) == ("NONE", 5, 4)
    (record,) = h.records_since(T, mark)
    assert record[1] is not None and record[1]["producer_epoch"] == 4


def test_expected_epoch_neither_current_nor_last_is_fenced(h: Harness) -> None:
    h.seed(T, "Empty", producer_id=5, previous_producer_id=5, producer_epoch=3)
    mark = h.end_offset(T)
    assert h.init(T, pid=5, epoch=1).error == "PRODUCER_FENCED"
    assert h.records_since(T, mark) == [] and h.get(T)["producer_epoch"] == 3


def test_retry_by_last_epoch_is_fenced_after_a_reload(h: Harness) -> None:
    """§1.13 / §9.22: lastProducerEpoch is not persisted, so the retry after a failover is fenced."""
    h.seed(T, "Empty", producer_id=5, previous_producer_id=5, producer_epoch=3)
    assert h.init(T, pid=5, epoch=3).producer_epoch == 4
    h.coordinator.unload(h.partition(T))
    h.coordinator.load(h.partition(T))
    assert h.get(T)["last_producer_epoch"] == -1
    assert h.init(T, pid=5, epoch=3).error == "PRODUCER_FENCED"


# ---------------------------------------------------------------- Ongoing: the fence


@pytest.mark.parametrize("server_tv", [2, 1, 0])
def test_ongoing_is_fenced_and_aborted_in_one_record(tmp_path: Path, server_tv: int) -> None:
    """The epoch moves once under every transaction version (Kafka 4.0.2, KAFKA-19367: the reference broker at
    transaction.version 2 answered the retry with the fence's epoch + 1; a producer restarted mid-transaction at epoch
    0 gets epoch 2); under TV2 the abort is that bump, so the last epoch is the one before the fence (a timed-out
    producer's InitProducerId with its old epoch is a retry)."""
    abort_epoch = 4
    h = Harness(tmp_path, config=TxnConfig(server_txn_version=server_tv))
    h.seed(T, "Ongoing", producer_id=5, previous_producer_id=5, producer_epoch=3,
           partitions=frozenset({"orders-0", "payments-0"}))
    h.target.hold = True
    mark = h.end_offset(T)
    r = h.init(T, 45_000)
    assert (r.error, r.producer_id, r.producer_epoch) == ("CONCURRENT_TRANSACTIONS", -1, -1)
    (record,) = h.records_since(T, mark)  # PrepareEpochFence is never written
    assert record[1] is not None
    assert (record[1]["state"], record[1]["producer_epoch"], record[1]["client_txn_version"],
            record[1]["partitions"]) == ("PrepareAbort", abort_epoch, server_tv, frozenset({"orders-0", "payments-0"}))
    assert record[1]["txn_timeout_ms"] == TIMEOUT_MS  # unchanged by the fence (the retry sets the new timeout)
    assert h.get(T)["last_producer_epoch"] == (3 if server_tv == 2 else -1)
    h.coordinator.poll()
    (marker,) = h.target.markers()
    assert (marker.producer_id, marker.producer_epoch, marker.result) == (5, abort_epoch, "ABORT")


def test_ongoing_is_fenced_by_a_stale_expected_epoch_of_the_same_producer_id(h: Harness) -> None:
    """§1.5: in Ongoing only the expected producer id is checked, not the epoch (Kafka 4.0's isValidProducerId). So a
    zombie's KIP-360 bump (InitProducerId with its old epoch, as kafka-python 3.0.12 sends after
    INVALID_PRODUCER_EPOCH) aborts the newer producer's open transaction; in Empty the same request is fenced."""
    h.seed(T, "Ongoing", producer_id=5, previous_producer_id=5, producer_epoch=3, partitions=frozenset({"orders-0"}))
    mark = h.end_offset(T)
    assert h.init(T, pid=5, epoch=0).error == "CONCURRENT_TRANSACTIONS"
    (record,) = h.records_since(T, mark)
    assert record[1] is not None and (record[1]["state"], record[1]["producer_epoch"]) == ("PrepareAbort", 4)
    h.settle()
    assert h.get(T)["state"] == "CompleteAbort"
    mark = h.end_offset(T)
    assert h.init(T, pid=5, epoch=0).error == "PRODUCER_FENCED"  # no longer Ongoing: the epoch is checked
    assert h.records_since(T, mark) == []


def test_fence_then_retry_sequence(h: Harness) -> None:
    h.seed(T, "Ongoing", producer_id=5, previous_producer_id=5, producer_epoch=3, partitions=frozenset({"orders-0"}))
    h.target.hold = True
    assert h.init(T).error == "CONCURRENT_TRANSACTIONS"
    h.coordinator.poll()
    assert h.init(T).error == "CONCURRENT_TRANSACTIONS"  # PrepareAbort: markers not yet acknowledged
    h.target.hold = False
    h.target.release()
    h.settle()
    assert h.get(T)["state"] == "CompleteAbort"
    mark = h.end_offset(T)
    r = h.init(T, 45_000)
    assert (r.error, r.producer_id, r.producer_epoch) == ("NONE", 5, 5)  # fence and abort 4 (4.0.2), this bump 5
    assert states(h.records_since(T, mark)) == ["Empty"] and h.get(T)["txn_timeout_ms"] == 45_000


@pytest.mark.parametrize(("server_tv", "kept_epoch", "remembered"), [(0, 4, True), (1, 4, True), (2, 3, False)])
def test_a_failed_fence_bumps_once_in_all(tmp_path: Path, server_tv: int, kept_epoch: int, remembered: bool) -> None:
    """Kafka's shouldNotRepeatedlyBumpEpochDueToInitPidDuringOngoingTxnIfAppendToLogFails. TV<2 keeps the fence's epoch
    in memory and the next fence reuses it (hasFailedEpochFence); TV2 keeps nothing (4.0.2's endTransaction bumps only
    in the record it failed to write), so the next fence bumps from the same epoch: the abort is at 4 either way."""
    h = Harness(tmp_path, config=TxnConfig(server_txn_version=server_tv))
    h.seed(T, "Ongoing", producer_id=5, previous_producer_id=5, producer_epoch=3, partitions=frozenset({"orders-0"}))
    shard = h.shard(T)
    mark = h.end_offset(T)
    append = shard.log.append

    def failing(*args: object, **kw: object) -> object:
        shard.log.append = append  # type: ignore[method-assign]
        raise LogAppendError("NOT_ENOUGH_REPLICAS")

    shard.log.append = failing  # type: ignore[method-assign]
    assert h.init(T).error == "COORDINATOR_NOT_AVAILABLE"
    after = h.get(T)
    assert (after["state"], after["producer_epoch"], after["has_failed_epoch_fence"]) == \
        ("Ongoing", kept_epoch, remembered)
    assert h.records_since(T, mark) == []
    assert h.init(T).error == "CONCURRENT_TRANSACTIONS"  # the fence again: reuses epoch 4, which the abort keeps
    (record,) = h.records_since(T, mark)
    assert record[1] is not None and (record[1]["state"], record[1]["producer_epoch"]) == ("PrepareAbort", 4)
    h.settle()
    assert h.get(T)["has_failed_epoch_fence"] is False and h.get(T)["state"] == "CompleteAbort"
    h.coordinator.shutdown()


def test_the_fenced_producer_cannot_continue(h: Harness) -> None:
    r = h.init(T)
    assert h.add(T, r.producer_id, r.producer_epoch)[PARTS[0]] == "NONE"
    h.target.hold = True
    assert h.init(T).error == "CONCURRENT_TRANSACTIONS"
    result = h.add(T, r.producer_id, r.producer_epoch)
    assert set(result.values()) == {"PRODUCER_FENCED"}
    assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", 3).error == "PRODUCER_FENCED"
    assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", 1).error == "INVALID_PRODUCER_EPOCH"


def test_timestamps_of_a_first_init(h: Harness) -> None:
    h.clock.advance(5)
    h.init(T)
    instance = h.get(T)
    assert instance["txn_last_update_timestamp_ms"] == START_MS + 5 and instance["txn_start_timestamp_ms"] == -1
