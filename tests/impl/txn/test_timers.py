"""The periodic tasks: timeout-driven abort (reference §1.11) and transactional-id expiration (§1.12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.storage.log import Durability
from kcoord.impl.txn import LogAppendError, TxnConfig

from .harness import START_MS, TIMEOUT_MS, Harness, states

T = "txn-timers"
PID, E = 5, 4


def ongoing(h: Harness, txn_id: str = T) -> None:
    h.seed(txn_id, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset({"orders-0"}))


def advance_to(h: Harness, when_ms: int) -> None:
    h.clock.advance(when_ms - h.clock.now_ms())
    h.settle()


# ---------------------------------------------------------------- §1.11


@pytest.mark.parametrize(("server_tv", "abort_epoch"), [(2, E + 1), (0, E + 1)])  # no second bump (KAFKA-19367)
def test_a_timed_out_transaction_is_fenced_and_aborted_by_the_periodic_task(
        tmp_path: Path, server_tv: int, abort_epoch: int) -> None:
    h = Harness(tmp_path, config=TxnConfig(server_txn_version=server_tv))
    ongoing(h)  # started at START_MS with a 60 s timeout; the task runs every 10 s from the load
    mark = h.end_offset(T)
    advance_to(h, START_MS + TIMEOUT_MS)
    assert h.get(T)["state"] == "Ongoing"  # start + timeout < now is strict
    h.target.hold = True
    advance_to(h, START_MS + TIMEOUT_MS + 10_000)
    (record,) = h.records_since(T, mark)
    assert record[1] is not None
    assert (record[1]["state"], record[1]["producer_epoch"], record[1]["client_txn_version"]) == \
        ("PrepareAbort", abort_epoch, server_tv)
    ((marker,),) = h.target.requests
    assert (marker.producer_epoch, marker.result) == (abort_epoch, "ABORT")
    assert h.end(T, PID, E, "COMMIT", 3).error == "PRODUCER_FENCED"  # the old producer is fenced
    h.target.hold = False
    h.target.release()
    h.settle()
    assert states(h.records_since(T, mark)) == ["PrepareAbort", "CompleteAbort"]


@pytest.mark.parametrize("state", ["Empty", "PrepareCommit", "CompleteCommit", "CompleteAbort"])
def test_only_ongoing_transactions_time_out(h: Harness, state: str) -> None:
    h.target.hold = True
    parts = frozenset({"orders-0"}) if state == "PrepareCommit" else frozenset()
    h.seed(T, state, producer_id=PID, previous_producer_id=PID, producer_epoch=E, partitions=parts)
    h.clock.advance(10 * TIMEOUT_MS)
    assert h.coordinator.timed_out(h.shard(T)) == []


def test_a_pending_transaction_is_skipped(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=1_000_000, max_bytes=1 << 30))
    ongoing(h)
    h.clock.advance(TIMEOUT_MS + 1)
    adding = h.coordinator.add_partitions(T, PID, E, [])
    assert adding.done  # nothing to add: answered at once
    growing = h.coordinator.add_partitions(T, PID, E, [h.coordinator.offsets_partition("g")])
    assert not growing.done
    assert h.coordinator.timed_out(h.shard(T)) == []
    assert h.coordinator.abort_timed_out(h.shard(T), [(T, PID, E)])[0].result() == "CONCURRENT_TRANSACTIONS"


def test_a_concurrent_epoch_bump_makes_the_scanned_abort_fail(tmp_path: Path) -> None:
    """Kafka's shouldNotAcceptSmallerEpochDuringTransactionExpiration: between the scan and the abort, a failed
    fence bumped the epoch in memory; the abort with the scanned epoch is refused and writes nothing. Only below
    transaction.version 2: a failed TV2 fence keeps no epoch (see test_a_failed_timeout_fence_is_remembered)."""
    h = Harness(tmp_path, config=TxnConfig(server_txn_version=0))
    ongoing(h)
    h.clock.advance(TIMEOUT_MS + 1)
    shard = h.shard(T)
    (candidate,) = h.coordinator.timed_out(shard)
    assert candidate == (T, PID, E)
    append = shard.log.append

    def failing(*args: object, **kw: object) -> object:
        shard.log.append = append  # type: ignore[method-assign]
        raise LogAppendError("REQUEST_TIMED_OUT")

    shard.log.append = failing  # type: ignore[method-assign]
    assert h.init(T).error == "COORDINATOR_NOT_AVAILABLE"  # the InitProducerId fence failed: epoch E+1 in memory
    mark = h.end_offset(T)
    (answer,) = h.coordinator.abort_timed_out(shard, [candidate])
    assert answer.result() == "PRODUCER_FENCED" and h.records_since(T, mark) == []
    (answer,) = h.coordinator.abort_timed_out(shard)  # a fresh scan: reuses the failed fence's epoch (kept)
    assert answer.result() == "NONE"
    (record,) = h.records_since(T, mark)
    assert record[1] is not None and (record[1]["state"], record[1]["producer_epoch"]) == ("PrepareAbort", E + 1)
    h.coordinator.shutdown()


@pytest.mark.parametrize(("server_tv", "kept_epoch", "remembered"), [(0, E + 1, True), (2, E, False)])
def test_a_failed_timeout_fence_is_remembered(tmp_path: Path, server_tv: int, kept_epoch: int,
                                              remembered: bool) -> None:
    """Below transaction.version 2 the fence's epoch stays in memory (hasFailedEpochFence); Kafka 4.0.2's TV2 fence
    changes nothing until its abort is written."""
    h = Harness(tmp_path, config=TxnConfig(server_txn_version=server_tv))
    ongoing(h)
    h.clock.advance(TIMEOUT_MS + 1)
    shard = h.shard(T)
    append = shard.log.append

    def failing(*args: object, **kw: object) -> object:
        shard.log.append = append  # type: ignore[method-assign]
        raise LogAppendError("NOT_ENOUGH_REPLICAS")

    shard.log.append = failing  # type: ignore[method-assign]
    (answer,) = h.coordinator.abort_timed_out(shard)
    assert answer.result() == "COORDINATOR_NOT_AVAILABLE"
    after = h.get(T)
    assert (after["state"], after["producer_epoch"], after["has_failed_epoch_fence"]) == \
        ("Ongoing", kept_epoch, remembered)
    h.coordinator.shutdown()


# ---------------------------------------------------------------- §1.12


EXPIRATION_MS = 7 * 24 * 3600 * 1000


@pytest.mark.parametrize("state", ["Empty", "CompleteCommit", "CompleteAbort"])
def test_an_idle_id_is_tombstoned_and_forgotten(h: Harness, state: str) -> None:
    h.seed(T, state, producer_id=PID, previous_producer_id=PID, producer_epoch=E)
    mark = h.end_offset(T)
    advance_to(h, START_MS + EXPIRATION_MS - 1)  # the hourly task ran, but the id is not old enough
    assert h.get(T) is not None and h.records_since(T, mark) == []
    advance_to(h, START_MS + EXPIRATION_MS + 3_600_000)
    assert h.records_since(T, mark) == [(T, None)]
    assert h.get(T) is None and h.describe(T).error == "TRANSACTIONAL_ID_NOT_FOUND"
    r = h.init(T)  # the id starts over with a fresh producer id
    assert r.error == "NONE" and r.producer_epoch == 0 and r.producer_id != PID


@pytest.mark.parametrize("state", ["Ongoing", "PrepareCommit", "PrepareAbort"])
def test_open_transactions_never_expire(h: Harness, state: str) -> None:
    h.target.hold = True
    h.seed(T, state, producer_id=PID, previous_producer_id=PID, producer_epoch=E, partitions=frozenset({"a-0"}),
           txn_timeout_ms=900_000)
    h.clock.advance(2 * EXPIRATION_MS)
    assert h.coordinator.expire_ids(h.shard(T)) == []


def test_a_pending_id_does_not_expire(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=1_000_000, max_bytes=1 << 30))
    h.seed(T, "CompleteCommit", producer_id=PID, previous_producer_id=PID, producer_epoch=E)
    h.clock.advance(EXPIRATION_MS + 1)
    assert not h.coordinator.init_producer_id(T, TIMEOUT_MS).done
    assert h.coordinator.expire_ids(h.shard(T)) == []


def test_expiration_writes_batches_of_tombstones(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=TxnConfig(num_partitions=1, expiration_batch_records=2))
    ids = [f"idle-{i}" for i in range(5)]
    for txn_id in ids:
        h.seed(txn_id, "CompleteAbort", producer_id=PID, previous_producer_id=PID, producer_epoch=E)
    mark = h.end_offset(ids[0])
    h.clock.advance(EXPIRATION_MS)
    done = h.coordinator.expire_ids(h.shard(ids[0]))
    assert [d.result() for d in done] == ["NONE"] * 3
    assert h.records_since(ids[0], mark) == [(t, None) for t in sorted(ids)]
    batches = [b for b in h.shard(ids[0]).log.read(mark)]
    assert [len(b.records) for b in batches] == [2, 2, 1]
    assert h.shard(ids[0]).instances["Transaction"] == {}
