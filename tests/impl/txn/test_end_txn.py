"""EndTxn: every cell of reference §1.7 (Transactions V1, request version <= 4) and §1.8 (V2, version >= 5),
the checks before the tables, epoch overflow with producer-id rotation, and the response's producer id/epoch."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.storage.log import Durability
from kcoord.impl.txn import TxnConfig

from .harness import Harness, states

T = "txn-end"
PID, E = 5, 4
OPEN = frozenset({"orders-0", "payments-0"})
V1, V2 = 3, 5


def seed(h: Harness, state: str, epoch: int = E, **kw: object) -> None:
    parts = OPEN if state in ("Ongoing", "PrepareCommit", "PrepareAbort") else frozenset()
    h.seed(T, state, producer_id=PID, previous_producer_id=PID, producer_epoch=epoch, partitions=parts, **kw)


# ---------------------------------------------------------------- §1.7: the TV1 table (12 cells)

TV1_TABLE = [
    ("Ongoing", "COMMIT", "NONE", "PrepareCommit"),
    ("Ongoing", "ABORT", "NONE", "PrepareAbort"),
    ("PrepareCommit", "COMMIT", "CONCURRENT_TRANSACTIONS", None),
    ("PrepareCommit", "ABORT", "INVALID_TXN_STATE", None),
    ("PrepareAbort", "COMMIT", "INVALID_TXN_STATE", None),
    ("PrepareAbort", "ABORT", "CONCURRENT_TRANSACTIONS", None),
    ("CompleteCommit", "COMMIT", "NONE", None),
    ("CompleteCommit", "ABORT", "INVALID_TXN_STATE", None),
    ("CompleteAbort", "COMMIT", "INVALID_TXN_STATE", None),
    ("CompleteAbort", "ABORT", "NONE", None),
    ("Empty", "COMMIT", "INVALID_TXN_STATE", None),
    ("Empty", "ABORT", "INVALID_TXN_STATE", None),
]


@pytest.mark.parametrize(("state", "result", "error", "written"), TV1_TABLE)
def test_tv1_table(h: Harness, state: str, result: str, error: str, written: str | None) -> None:
    h.target.hold = True
    seed(h, state)
    mark = h.end_offset(T)
    r = h.end(T, PID, E, result, V1)
    assert r.error == error
    records = h.records_since(T, mark)
    assert states(records) == ([written] if written else [])
    assert h.get(T)["state"] == (written or state)
    if written:
        post = records[0][1]
        assert post is not None
        assert (post["producer_id"], post["producer_epoch"], post["partitions"], post["client_txn_version"]) == \
            (PID, E, OPEN, 0)  # TV1: no epoch bump
        assert (r.producer_id, r.producer_epoch) == (PID, E)
    elif error == "NONE":
        assert (r.producer_id, r.producer_epoch) == (PID, E)  # a retry: the current id and epoch
    else:
        assert (r.producer_id, r.producer_epoch) == (-1, -1)


def test_tv1_checks_before_the_table(h: Harness) -> None:
    assert h.end(T, PID, E, "COMMIT", V1).error == "INVALID_PRODUCER_ID_MAPPING"  # no metadata
    assert h.run(h.coordinator.end_txn("", PID, E, "COMMIT", V1)).error == "INVALID_REQUEST"
    seed(h, "Ongoing")
    mark = h.end_offset(T)
    assert h.end(T, PID + 1, E, "COMMIT", V1).error == "INVALID_PRODUCER_ID_MAPPING"
    assert h.end(T, PID, E - 1, "COMMIT", V1).error == "PRODUCER_FENCED"
    assert h.end(T, PID, E + 1, "COMMIT", V1).error == "PRODUCER_FENCED"
    assert h.end(T, PID, E - 1, "COMMIT", 1).error == "INVALID_PRODUCER_EPOCH"  # EndTxn v<2 downgrade
    assert h.records_since(T, mark) == []


def test_pending_write_answers_concurrent_transactions(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=10, max_bytes=1 << 20))
    seed(h, "Ongoing")
    first = h.coordinator.end_txn(T, PID, E, "COMMIT", V1)
    assert not first.done
    assert h.coordinator.end_txn(T, PID, E, "COMMIT", V1).result().error == "CONCURRENT_TRANSACTIONS"
    assert h.coordinator.end_txn(T, PID, E, "ABORT", V2).result().error == "CONCURRENT_TRANSACTIONS"
    h.clock.advance(10)
    h.coordinator.poll()
    assert first.result().error == "NONE" and h.get(T)["state"] == "PrepareCommit"


def test_the_answer_is_released_after_the_prepare_not_after_the_markers(h: Harness) -> None:
    seed(h, "Ongoing")
    h.target.hold = True
    assert h.end(T, PID, E, "COMMIT", V1).error == "NONE"
    h.settle()
    assert h.get(T)["state"] == "PrepareCommit" and len(h.target.held) == 1
    h.target.release()
    h.settle()
    assert h.get(T)["state"] == "CompleteCommit" and h.get(T)["partitions"] == frozenset()
    assert states(h.records_since(T, 0))[-2:] == ["PrepareCommit", "CompleteCommit"]


def test_new_end_txn_is_pushed_back_while_the_marker_backlog_is_full(tmp_path: Path) -> None:
    h = Harness(tmp_path, config=TxnConfig(marker_backlog_max=1))
    seed(h, "Ongoing")
    h.target.hold = True
    assert h.end(T, PID, E, "COMMIT", V1).error == "NONE"
    assert h.coordinator.channel.pending_transactions == 1
    assert h.end(T, PID, E, "COMMIT", V1).error == "COORDINATOR_NOT_AVAILABLE"
    h.target.hold = False
    h.settle()
    assert h.end(T, PID, E, "COMMIT", V1).error == "NONE"  # the retry of the completed commit


# ---------------------------------------------------------------- §1.8: the TV2 table (6 states x 4 requests)

RETRY, CURRENT = E - 1, E
TV2_TABLE = [
    ("Ongoing", "COMMIT", RETRY, "PRODUCER_FENCED", None),
    ("Ongoing", "COMMIT", CURRENT, "NONE", "PrepareCommit"),
    ("Ongoing", "ABORT", RETRY, "PRODUCER_FENCED", None),
    ("Ongoing", "ABORT", CURRENT, "NONE", "PrepareAbort"),
    ("PrepareCommit", "COMMIT", RETRY, "CONCURRENT_TRANSACTIONS", None),
    ("PrepareCommit", "COMMIT", CURRENT, "PRODUCER_FENCED", None),
    ("PrepareCommit", "ABORT", RETRY, "INVALID_TXN_STATE", None),
    ("PrepareCommit", "ABORT", CURRENT, "PRODUCER_FENCED", None),
    ("PrepareAbort", "COMMIT", RETRY, "INVALID_TXN_STATE", None),
    ("PrepareAbort", "COMMIT", CURRENT, "PRODUCER_FENCED", None),
    ("PrepareAbort", "ABORT", RETRY, "CONCURRENT_TRANSACTIONS", None),
    ("PrepareAbort", "ABORT", CURRENT, "PRODUCER_FENCED", None),
    ("CompleteCommit", "COMMIT", RETRY, "NONE", None),
    ("CompleteCommit", "COMMIT", CURRENT, "INVALID_TXN_STATE", None),
    ("CompleteCommit", "ABORT", RETRY, "INVALID_TXN_STATE", None),
    ("CompleteCommit", "ABORT", CURRENT, "NONE", "PrepareAbort"),
    ("CompleteAbort", "COMMIT", RETRY, "INVALID_TXN_STATE", None),
    ("CompleteAbort", "COMMIT", CURRENT, "INVALID_TXN_STATE", None),
    ("CompleteAbort", "ABORT", RETRY, "NONE", None),
    ("CompleteAbort", "ABORT", CURRENT, "NONE", "PrepareAbort"),
    ("Empty", "COMMIT", RETRY, "PRODUCER_FENCED", None),
    ("Empty", "COMMIT", CURRENT, "INVALID_TXN_STATE", None),
    ("Empty", "ABORT", RETRY, "PRODUCER_FENCED", None),
    ("Empty", "ABORT", CURRENT, "NONE", "PrepareAbort"),
]


@pytest.mark.parametrize(("state", "result", "epoch", "error", "written"), TV2_TABLE)
def test_tv2_table(h: Harness, state: str, result: str, epoch: int, error: str, written: str | None) -> None:
    h.target.hold = True
    seed(h, state, client_txn_version=2)
    h.clock.advance(3)
    mark = h.end_offset(T)
    r = h.end(T, PID, epoch, result, V2)
    assert r.error == error
    records = h.records_since(T, mark)
    assert states(records) == ([written] if written else [])
    assert h.get(T)["state"] == (written or state)
    if written:
        post = records[0][1]
        assert post is not None
        from_open = state == "Ongoing"
        assert (post["producer_id"], post["producer_epoch"], post["client_txn_version"], post["next_producer_id"],
                post["partitions"]) == (PID, E + 1, 2, -1, OPEN if from_open else frozenset())
        assert h.get(T)["last_producer_epoch"] == E
        assert (r.producer_id, r.producer_epoch) == (PID, E + 1)  # the post-Prepare epoch
        if not from_open:  # an abort with nothing added starts its (empty) transaction now
            assert post["txn_start_timestamp_ms"] == h.clock.now_ms()
    elif error == "NONE":
        assert (r.producer_id, r.producer_epoch) == (PID, E)
    else:
        assert (r.producer_id, r.producer_epoch) == (-1, -1)


def test_tv2_abort_with_no_partitions_completes_without_markers(h: Harness) -> None:
    seed(h, "CompleteCommit", client_txn_version=2)
    mark = h.end_offset(T)
    assert h.end(T, PID, E, "ABORT", V2).error == "NONE"
    h.settle()
    assert states(h.records_since(T, mark)) == ["PrepareAbort", "CompleteAbort"]
    assert h.target.requests == [] and h.get(T)["producer_epoch"] == E + 1


def test_tv2_checks_before_the_table(h: Harness) -> None:
    seed(h, "Ongoing")
    assert h.end(T, PID + 1, E, "COMMIT", V2).error == "INVALID_PRODUCER_ID_MAPPING"
    assert h.end(T, PID, E + 1, "COMMIT", V2).error == "PRODUCER_FENCED"


def test_tv1_retry_of_a_tv2_commit_is_fenced(h: Harness) -> None:
    """[4.0] chooses the rules by the request's version: a TV1 retry against a TV2 Prepare carries a stale epoch."""
    seed(h, "Ongoing")
    h.target.hold = True
    assert h.end(T, PID, E, "COMMIT", V2).error == "NONE"
    assert h.end(T, PID, E, "COMMIT", V1).error == "PRODUCER_FENCED"
    assert h.end(T, PID, E, "COMMIT", V2).error == "CONCURRENT_TRANSACTIONS"  # the V2 retry
    assert h.end(T, PID, E + 1, "COMMIT", V2).error == "PRODUCER_FENCED"  # the current epoch = the next transaction


# ---------------------------------------------------------------- §1.8: epoch overflow


def test_tv2_overflow_rotates_the_producer_id_at_complete(h: Harness) -> None:
    seed(h, "Ongoing", epoch=32766)
    h.target.hold = True
    mark = h.end_offset(T)
    r = h.end(T, PID, 32766, "COMMIT", V2)
    new_pid = r.producer_id
    assert r.error == "NONE" and r.producer_epoch == 0 and new_pid not in (PID, -1)  # (next producer id, 0)
    (prepare,) = h.records_since(T, mark)
    assert prepare[1] is not None
    assert (prepare[1]["state"], prepare[1]["producer_id"], prepare[1]["producer_epoch"],
            prepare[1]["next_producer_id"]) == ("PrepareCommit", PID, 32767, new_pid)
    h.coordinator.poll()
    ((marker,),) = [batch for batch, _ in h.target.held]
    assert (marker.producer_id, marker.producer_epoch) == (PID, 32767)  # markers use the post-Prepare id/epoch
    assert h.end(T, PID, 32766, "COMMIT", V2).error == "CONCURRENT_TRANSACTIONS"  # retry while Prepare
    h.target.release()
    h.settle()
    (complete,) = h.records_since(T, mark)[1:]
    assert complete[1] is not None
    assert (complete[1]["state"], complete[1]["producer_id"], complete[1]["producer_epoch"],
            complete[1]["previous_producer_id"], complete[1]["next_producer_id"]) == \
        ("CompleteCommit", new_pid, 0, PID, -1)
    retry = h.end(T, PID, 32766, "COMMIT", V2)  # the client never saw the answer: retryOnOverflow
    assert (retry.error, retry.producer_id, retry.producer_epoch) == ("NONE", new_pid, 0)
    assert h.end(T, PID, 32766, "ABORT", V2).error == "INVALID_TXN_STATE"
    assert h.end(T, new_pid, 0, "COMMIT", V2).error == "INVALID_TXN_STATE"  # the new id, current epoch
    assert len(h.records_since(T, mark)) == 2


def test_tv2_overflow_abort_from_complete(h: Harness) -> None:
    seed(h, "CompleteAbort", epoch=32766, client_txn_version=2)
    r = h.end(T, PID, 32766, "ABORT", V2)
    assert r.error == "NONE" and r.producer_epoch == 0
    h.settle()
    after = h.get(T)
    assert (after["state"], after["producer_id"], after["producer_epoch"]) == ("CompleteAbort", r.producer_id, 0)


def test_tv1_at_an_exhausted_epoch_does_not_rotate(h: Harness) -> None:
    seed(h, "Ongoing", epoch=32766)
    r = h.end(T, PID, 32766, "COMMIT", V1)
    assert (r.error, r.producer_id, r.producer_epoch) == ("NONE", PID, 32766)
    h.settle()
    assert (h.get(T)["state"], h.get(T)["producer_id"]) == ("CompleteCommit", PID)


# ---------------------------------------------------------------- a TV2 request the coordinator cannot write


def test_tv2_requests_to_a_tv0_coordinator_are_unsupported_and_change_nothing(tmp_path: Path) -> None:
    """transaction.version 0 writes TransactionLogValue v0, which cannot hold a client transaction version of 2. Kafka
    4.0.2 answers EndTxn v5 there UNSUPPORTED_VERSION (its log encoder throws UnsupportedVersionException), but leaves
    the transaction's pending state set, so every later request is CONCURRENT_TRANSACTIONS until the partition is
    reloaded (seen on the reference broker with transaction.version downgraded to 0). kcoord answers the same and
    changes nothing: the transaction stays Ongoing and a TV1 EndTxn still ends it."""
    h = Harness(tmp_path, config=TxnConfig(server_txn_version=0))
    try:
        r = h.init(T)
        assert set(h.add(T, r.producer_id, r.producer_epoch).values()) == {"NONE"}
        mark = h.end_offset(T)
        assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", V2).error == "UNSUPPORTED_VERSION"
        added = h.add(T, r.producer_id, r.producer_epoch, [TopicPartition("late", 0)], txn_version=2)
        assert set(added.values()) == {"UNSUPPORTED_VERSION"}
        assert h.records_since(T, mark) == []
        assert h.get(T)["state"] == "Ongoing" and not h.shard(T).pending("Transaction", (T,))
        assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", V1).error == "NONE"
    finally:
        h.coordinator.shutdown()
