"""Reopening a partition: the producer state, the duplicate cache, the open transactions, the LSO and the aborted
index are rebuilt by scanning the log; a torn tail is cut first; topics and leader epochs come back from their
files."""

from __future__ import annotations

import os
from pathlib import Path

from kcoord.impl.partition import AbortedTxn, IsolationLevel
from kcoord.impl.partition.data_log import read_leader_epochs, read_partition_metadata

from .helpers import TOPIC, TP, Env, batch, read_all, values

A, B, C = 11, 22, 33


def write_history(env: Env) -> None:
    """0: A txn, 1: C idem, 2: ABORT A, 3: B txn, 4: C idem, 5: COMMIT B (coordinator epoch 4)."""
    env.verifier.add(A)
    env.verifier.add(B)
    results = [env.produce(batch(A, 0, seq=0, txn=True, tag="a")).error,
               env.produce(batch(C, 2, seq=0, tag="c")).error,
               env.marker(A, 0, "ABORT", coordinator_epoch=4)[TP],
               env.produce(batch(B, 0, seq=0, n=2, txn=True, tag="b")).error,
               env.produce(batch(C, 2, seq=1, tag="c")).error,
               env.marker(B, 0, "COMMIT", coordinator_epoch=4)[TP]]
    assert results == ["NONE"] * 6


def snapshot(env: Env) -> tuple[object, ...]:
    states = env.part.states
    return (dict(states.instances()), {pid: states.cached_batches(pid) for pid in states}, states.aborted_index,
            states.open_transactions(), env.part.last_stable_offset, env.part.high_watermark)


def test_clean_reopen_rebuilds_the_same_producer_state(env: Env) -> None:
    write_history(env)
    before = snapshot(env)
    epoch = env.part.leader_epoch
    env.manager.close()
    env.reopen()
    assert snapshot(env) == before
    assert env.part.leader_epoch == epoch + 1
    loads = [r for r in env.rows() if r["kind"] == "load"]
    assert sorted(r["producer_id"] for r in loads) == [A, B, C]
    assert all(r["seq"] == (epoch + 1) << 32 and r["from_state"] == r["to_state"] == "Known" for r in loads)
    # the duplicate cache survived: a retry of C's last batch gets its original offset
    again = env.produce(batch(C, 2, seq=1, tag="c"))
    assert (again.error, again.base_offset) == ("NONE", 5)


def test_crash_with_a_torn_tail_reopens_the_transaction_the_lost_marker_closed(env: Env) -> None:
    write_history(env)
    segment = env.path / str(TP) / "00000000000000000000.log"
    crashed = env.manager
    with open(segment, "r+b") as f:
        f.truncate(os.path.getsize(segment) - 7)  # the COMMIT marker at offset 6 is torn
    env.reopen()
    assert env.part.log.recovery.truncated_bytes > 0 and env.part.log_end_offset == 6
    b = env.state(B)
    assert b is not None
    assert (b["state"], b["current_txn_first_offset"], b["txn_coordinator_epoch"]) == ("Ongoing", 3, -1)
    assert env.state(A)["txn_coordinator_epoch"] == 4  # type: ignore[index]
    assert env.part.states.aborted_index == (AbortedTxn(A, 0, 2, 3),)
    assert env.part.last_stable_offset == 3
    assert values(read_all(env.manager, IsolationLevel.READ_COMMITTED)[0]) == ["c-0"]
    # the coordinator re-sends the marker it never got an answer for
    assert env.marker(B, 0, "COMMIT", coordinator_epoch=4) == {TP: "NONE"}
    assert values(read_all(env.manager, IsolationLevel.READ_COMMITTED)[0]) == ["c-0", "b-0", "b-1", "c-1"]
    crashed.close()


def test_a_torn_first_transactional_batch_leaves_no_trace_of_the_producer(env: Env) -> None:
    env.verifier.add(A)
    assert env.produce(batch(C, 0, seq=0)).error == "NONE"
    assert env.produce(batch(A, 0, seq=0, txn=True)).error == "NONE"
    segment = env.path / str(TP) / "00000000000000000000.log"
    with open(segment, "ab") as f:
        f.write(b"\x00" * 9)  # and a few zeros past it, as a preallocated or half-written tail leaves
    with open(segment, "r+b") as f:
        f.truncate(os.path.getsize(segment) - 9 - 3)
    env.reopen()
    assert env.state(A) is None and env.part.states.open_transactions() == {}
    assert (env.part.last_stable_offset, env.part.log_end_offset) == (1, 1)


def test_an_idle_producer_is_expired_when_the_partition_reopens(env: Env) -> None:
    env.verifier.add(A)
    assert env.produce(batch(C, 0, seq=0)).error == "NONE"
    assert env.produce(batch(A, 0, seq=0, txn=True)).error == "NONE"
    env.manager.close()
    env.clock.advance(env.config.producer_id_expiration_ms + 10)
    env.reopen()
    assert env.state(C) is None  # idle for longer than producer.id.expiration.ms
    assert env.state(A)["state"] == "Ongoing"  # type: ignore[index]  # an open transaction never expires


def test_topics_topic_ids_and_leader_epochs_survive_a_restart(env: Env, tmp_path: Path) -> None:
    assert env.manager.create_topic("events", 3) == "NONE"
    assert env.manager.produce("events", 2, batch()).result().error == "NONE"
    ids = {t.name: t.topic_id for t in env.manager.describe_topics()}
    env.manager.close()
    env.reopen()
    assert {t.name: t.topic_id for t in env.manager.describe_topics()} == ids
    assert [len(t.partitions) for t in env.manager.describe_topics()] == [3, 1]
    directory = tmp_path / "events-2"
    assert read_partition_metadata(directory) == ids["events"]
    assert (directory / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n1 1\n"  # Kafka's format
    assert read_leader_epochs(tmp_path / "events-1") == [(1, 0)]  # an epoch that wrote nothing leaves no entry
    assert env.manager.describe_topics([TOPIC])[0].partitions[0].leader_epoch == 1
    assert env.manager.list_offsets("events", 2, -2).leader_epoch == 0  # offset 0 was written in epoch 0
