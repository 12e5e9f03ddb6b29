"""The marker channel: reference §1.10, one test per error class, plus routing, batching, back-off and the Complete*
append's own errors."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kcoord.impl.errors import Errors, IllegalStateError, KafkaError
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.runtime.shard import Shard
from kcoord.impl.storage.log import Durability
from kcoord.impl.txn import LogAppendError, TxnConfig
from kcoord.impl.txn.markers import DONE_ERRORS, GIVE_UP_ERRORS, RETRY_ERRORS

from .harness import PARTS, Harness, RecordingTarget, states

T = "txn-markers"
PID, E = 5, 4
A0, A1, B0 = PARTS


def prepared(h: Harness, result: str = "COMMIT", parts: frozenset[str] | None = None) -> int:
    """Ongoing → Prepare* through a TV1 EndTxn; returns the log offset before the Prepare record."""
    parts = frozenset(str(tp) for tp in PARTS) if parts is None else parts
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E, partitions=parts)
    mark = h.end_offset(T)
    assert h.end(T, PID, E, result, 3).error == "NONE"
    return mark


def test_markers_carry_the_post_prepare_ids_and_the_coordinator_epoch(h: Harness) -> None:
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset(str(tp) for tp in PARTS))
    mark = h.end_offset(T)
    assert h.end(T, PID, E, "ABORT", 5).error == "NONE"
    h.settle()
    (request,) = h.target.requests
    (marker,) = request
    assert (marker.producer_id, marker.producer_epoch, marker.result, marker.partitions) == \
        (PID, E + 1, "ABORT", tuple(sorted(PARTS)))
    assert marker.coordinator_epoch == h.shard(T).coordinator_epoch
    assert states(h.records_since(T, mark)) == ["PrepareAbort", "CompleteAbort"]


def test_markers_are_queued_per_destination(h: Harness) -> None:
    other = RecordingTarget(node_id=2)
    h.router.leaders[B0] = other
    mark = prepared(h)
    h.coordinator.poll()
    assert [m.partitions for m in h.target.markers()] == [(A0, A1)]
    assert [m.partitions for m in other.markers()] == [(B0,)]
    h.settle()
    assert states(h.records_since(T, mark)) == ["PrepareCommit", "CompleteCommit"]


def test_markers_of_many_transactions_share_a_request_up_to_the_batch_limit(tmp_path: Path) -> None:
    for batch_max, requests in ((1_000, 1), (2, 2)):
        h = Harness(tmp_path / str(batch_max), config=TxnConfig(marker_batch_max=batch_max))
        ids = [f"txn-batch-{i}" for i in range(3)]
        for txn_id in ids:
            h.seed(txn_id, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
                   partitions=frozenset({"orders-0"}))
        for txn_id in ids:
            assert h.end(txn_id, PID, E, "COMMIT", 3).error == "NONE"
        h.settle()
        assert len(h.target.requests) == requests and len(h.target.markers()) == 3
        assert all(h.get(t)["state"] == "CompleteCommit" for t in ids)


def test_complete_records_of_one_poll_share_a_batch(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=TxnConfig(num_partitions=1))
    ids = [f"txn-complete-{i}" for i in range(4)]
    for txn_id in ids:
        h.seed(txn_id, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
               partitions=frozenset({"orders-0"}))
    mark = h.end_offset(ids[0])
    for txn_id in ids:
        assert h.end(txn_id, PID, E, "ABORT", 3).error == "NONE"
    h.settle()
    batches = [[r.key for r in b.records] for b in h.shard(ids[0]).log.read(mark)]
    assert [len(b) for b in batches] == [1, 1, 1, 1, 4]  # four Prepare records, then the Complete records together
    assert {h.get(t)["state"] for t in ids} == {"CompleteAbort"}


def test_in_flight_requests_per_destination_are_bounded(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=TxnConfig(marker_batch_max=1, marker_in_flight_max=2))
    h.target.hold = True
    ids = [f"txn-flight-{i}" for i in range(3)]
    for txn_id in ids:
        h.seed(txn_id, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
               partitions=frozenset({"orders-0"}))
        assert h.end(txn_id, PID, E, "COMMIT", 3).error == "NONE"
    h.coordinator.poll()
    assert len(h.target.requests) == 2 and h.coordinator.channel.queue_sizes() == {"1": 1, "delayed": 0}
    h.target.release()
    h.coordinator.poll()
    assert len(h.target.requests) == 3


@pytest.mark.parametrize("error", sorted(DONE_ERRORS))
def test_done_errors_count_the_partition_as_written(h: Harness, error: str) -> None:
    h.target.answer = lambda m, tp: error if tp == A1 else "NONE"
    mark = prepared(h)
    h.settle()
    assert states(h.records_since(T, mark)) == ["PrepareCommit", "CompleteCommit"]
    assert len(h.target.requests) == 1


@pytest.mark.parametrize("error", sorted(RETRY_ERRORS))
def test_retry_errors_send_the_partition_again_after_a_back_off(h: Harness, error: str) -> None:
    failures = {"left": 2}

    def answer(marker: object, tp: TopicPartition) -> str:
        if tp == B0 and failures["left"]:
            failures["left"] -= 1
            return error
        return "NONE"

    h.target.answer = answer  # type: ignore[assignment]
    mark = prepared(h)
    h.settle()
    assert [m.partitions for m in h.target.markers()] == [tuple(sorted(PARTS))]
    assert h.coordinator.channel.queue_sizes()["delayed"] == 1 and h.get(T)["state"] == "PrepareCommit"
    h.clock.advance(99)
    h.settle()
    assert len(h.target.requests) == 1  # back-off 100 ms not over yet
    h.clock.advance(1)
    h.settle()
    assert [m.partitions for m in h.target.markers()][1:] == [(B0,)]
    h.clock.advance(199)  # second back-off: 200 ms
    h.settle()
    assert len(h.target.requests) == 2
    h.clock.advance(1)
    h.settle()
    assert len(h.target.requests) == 3
    assert states(h.records_since(T, mark)) == ["PrepareCommit", "CompleteCommit"]
    assert h.coordinator.channel.stats.partition_retries == 2


def test_a_retry_goes_to_the_new_leader(h: Harness) -> None:
    h.target.answer = lambda m, tp: "NOT_LEADER_OR_FOLLOWER" if tp == B0 else "NONE"
    new_leader = RecordingTarget(node_id=7)
    mark = prepared(h)
    h.settle()
    h.router.leaders[B0] = new_leader
    h.clock.advance(100)
    h.settle()
    assert [m.partitions for m in new_leader.markers()] == [(B0,)]
    assert states(h.records_since(T, mark)) == ["PrepareCommit", "CompleteCommit"]


@pytest.mark.parametrize("error", sorted(GIVE_UP_ERRORS))
def test_give_up_errors_stop_the_markers_and_write_no_complete(h: Harness, error: str) -> None:
    h.target.answer = lambda m, tp: error if tp == A0 else "NONE"
    mark = prepared(h)
    h.settle()
    h.clock.advance(60_000)
    h.settle()
    assert states(h.records_since(T, mark)) == ["PrepareCommit"]
    assert h.get(T)["state"] == "PrepareCommit" and h.coordinator.channel.pending(T) is None
    assert h.coordinator.channel.stats.gave_up == 1 and len(h.target.requests) == 1


@pytest.mark.parametrize("error", ["CORRUPT_MESSAGE", "MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE",
                                   "INVALID_REQUIRED_ACKS", "UNKNOWN_SERVER_ERROR"])
def test_other_errors_are_illegal_state(h: Harness, error: str) -> None:
    h.target.answer = lambda m, tp: error
    prepared(h)
    with pytest.raises(IllegalStateError, match=error):
        h.coordinator.poll()


def test_a_disconnection_sends_every_marker_of_the_request_again(h: Harness) -> None:
    h.target.hold = True
    mark = prepared(h)
    h.coordinator.poll()
    h.target.release(disconnect=True)
    assert h.coordinator.channel.stats.disconnects == 1
    h.target.hold = False
    h.clock.advance(100)
    h.settle()
    assert [m.partitions for m in h.target.markers()] == [tuple(sorted(PARTS))] * 2
    assert states(h.records_since(T, mark)) == ["PrepareCommit", "CompleteCommit"]


def test_a_request_that_timed_out_is_sent_again_but_our_own_bug_is_raised(h: Harness) -> None:
    """A request failed with a Kafka error (the simulator's lost answer: REQUEST_TIMED_OUT) counts as a disconnection
    and is sent again; an IllegalStateError behind the target is a bug of ours: it surfaces from whoever completes
    the request, and nothing is retried (it was once counted as a disconnection and retried for ever)."""
    h.target.hold = True
    mark = prepared(h)
    h.coordinator.poll()
    (_, lost), = h.target.held
    h.target.held.clear()
    lost.fail(KafkaError(Errors.REQUEST_TIMED_OUT, "the answer was lost"))
    assert h.coordinator.channel.stats.disconnects == 1
    h.clock.advance(100)
    h.coordinator.poll()
    (_, again), = h.target.held
    with pytest.raises(IllegalStateError, match="planted"):
        again.fail(IllegalStateError("planted"))
    assert h.coordinator.channel.stats.disconnects == 1
    assert states(h.records_since(T, mark)) == ["PrepareCommit"]


def test_partitions_without_a_leader_are_dropped(h: Harness) -> None:
    h.router.leaders[A0] = None
    h.router.leaders[A1] = None
    mark = prepared(h)
    h.settle()
    assert [m.partitions for m in h.target.markers()] == [(B0,)]
    assert states(h.records_since(T, mark)) == ["PrepareCommit", "CompleteCommit"]
    h.router.leaders[B0] = None
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset({"payments-0"}))
    mark = h.end_offset(T)
    assert h.end(T, PID, E, "ABORT", 3).error == "NONE"
    h.settle()
    assert states(h.records_since(T, mark)) == ["PrepareAbort", "CompleteAbort"]
    assert h.coordinator.channel.stats.leaderless_partitions == 3


# ---------------------------------------------------------------- the Complete* append


def fail_next_append(shard: Shard, error: str) -> None:
    append = shard.log.append

    def failing(*args: object, **kw: object) -> object:
        shard.log.append = append  # type: ignore[method-assign]
        raise LogAppendError(error)

    shard.log.append = failing  # type: ignore[method-assign]


@pytest.mark.parametrize("error", ["NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT", "KAFKA_STORAGE_ERROR"])
def test_complete_append_failure_is_retried_while_the_partition_is_ours(h: Harness, error: str) -> None:
    """COORDINATOR_NOT_AVAILABLE is retried (Kafka); NOT_COORDINATOR too while this node still owns the partition
    at the same coordinator epoch (a local storage error: nobody else would finish the transaction)."""
    h.target.hold = True
    mark = prepared(h)
    h.coordinator.poll()
    fail_next_append(h.shard(T), error)
    h.target.hold = False
    h.target.release()
    h.coordinator.poll()  # the Complete* records of a poll are written together, at its end
    assert states(h.records_since(T, mark)) == ["PrepareCommit"]
    assert h.coordinator.channel.stats.complete_retries == 1
    h.clock.advance(100)
    h.settle()
    assert states(h.records_since(T, mark)) == ["PrepareCommit", "CompleteCommit"]


def test_complete_is_dropped_when_the_partition_moves_away(tmp_path: Path) -> None:
    """(With the Complete* record applied once durable, `complete_when_written=False`: only then is it pending.)"""
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=50, max_bytes=1 << 20),
                config=TxnConfig(complete_when_written=False))
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset({"orders-0"}))
    h.run(h.coordinator.end_txn(T, PID, E, "COMMIT", 3))
    h.coordinator.poll()  # markers acknowledged at once; the Complete record is appended, not yet durable
    assert h.shard(T).pending("Transaction", (T,)) and h.coordinator.channel.pending(T) is not None
    h.coordinator.unload(h.partition(T))  # the append fails with NOT_COORDINATOR; the new owner finishes
    assert h.coordinator.channel.pending(T) is None
    h.coordinator.load(h.partition(T))
    h.settle()
    assert h.get(T)["state"] == "CompleteCommit"


def test_complete_is_visible_once_written_and_durable_with_the_next_write(tmp_path: Path) -> None:
    """The Complete* record, written once every marker is durable, is applied once written (not fsynced yet); the
    log is not flushed for it, and the transactional id's next write (an Ongoing) is appended after it, so the fsync
    that write is answered after covers it."""
    h = Harness(tmp_path, durability=Durability.fsync())
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset({"orders-0"}))
    log = h.shard(T).log
    h.coordinator.flush()
    h.run(h.coordinator.end_txn(T, PID, E, "COMMIT", 3))
    h.coordinator.poll()  # markers acknowledged at once; the Complete record is appended and applied
    assert h.get(T)["state"] == "CompleteCommit" and not h.shard(T).pending("Transaction", (T,))
    assert h.coordinator.channel.pending(T) is None
    complete_end = log.log_end_offset
    assert log.flushed_offset < complete_end  # not fsynced ...
    assert not h.coordinator.runtime.begin_flush()  # ... and nothing asks for it
    added = h.coordinator.add_partitions(T, PID, E, [TopicPartition("orders", 1)], request_version=3)
    h.coordinator.poll()
    assert not added.done  # the Ongoing record waits for its fsync, which covers the Complete record before it
    tickets = h.coordinator.runtime.begin_flush()
    assert [t.end_offset for t in tickets] == [complete_end + 1]
    for t in tickets:
        t.fsync()
        t.log.end_flush(t)
    h.coordinator.runtime.flushed()  # (the round's end, as `Cluster.end_flush` tells the runtime)
    h.coordinator.poll()
    assert added.done and log.flushed_offset == log.log_end_offset


def test_back_off_doubles_up_to_the_maximum(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=TxnConfig(marker_retry_backoff_ms=100, marker_retry_backoff_max_ms=300))
    h.target.answer = lambda m, tp: "REQUEST_TIMED_OUT"
    prepared(h, parts=frozenset({"orders-0"}))
    h.settle()
    sent_at = [h.clock.now_ms()]
    for _ in range(5):
        while len(h.target.requests) == len(sent_at):
            h.clock.advance(1)
            h.coordinator.poll()
        sent_at.append(h.clock.now_ms())
    assert [b - a for a, b in itertools.pairwise(sent_at)] == [100, 200, 300, 300, 300]
