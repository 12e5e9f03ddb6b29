"""PartitionManager's loop work: `poll`, `flush` and the deadlines look only at the partitions written since their
durability caught up (and at every partition when a producer expiration check is due), yet an acks=-1 produce is
still answered exactly when its group commit's fsync ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.impl.errors import Errors
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition.partition import DataPartition
from kcoord.impl.storage.log import Durability

from .helpers import TOPIC, Env, batch, make_env


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Env, list[int]]]:
    """An fsync-durability environment and the partitions each `DataPartition.poll` looked at, in order."""
    polled: list[int] = []
    real_poll = DataPartition.poll

    def counted_poll(self: DataPartition, now_ms: int) -> None:
        polled.append(self.tp.partition)
        real_poll(self, now_ms)

    monkeypatch.setattr(DataPartition, "poll", counted_poll)
    envs = make_env(tmp_path, durability=Durability.fsync())
    try:
        yield next(envs), polled
    finally:
        envs.close()


def test_poll_looks_only_at_written_partitions_and_fsync_mode_answers_after_the_ticket(
        counted: tuple[Env, list[int]]) -> None:
    env, polled = counted
    manager = env.manager
    assert manager.create_topic("wide", 16) == "NONE"
    manager.poll()  # the first poll checks every partition's producer expiration
    polled.clear()
    manager.poll()
    assert polled == []  # nothing written: nothing looked at

    done = manager.produce("wide", 7, batch(), acks=-1, transactional_id=None)
    manager.poll()
    assert polled == [7] and not done.done  # written, not yet fsynced: not answered
    tickets = manager.begin_flush()
    seventh = manager.partition(TopicPartition("wide", 7))
    assert seventh is not None and [t.log for t in tickets] == [seventh.log]
    for ticket in tickets:
        ticket.fsync()
        ticket.log.end_flush(ticket)
    manager.flushed()  # (the round's end, as `Cluster.end_flush` tells it)
    assert not done.done  # durable, answered by the next poll
    manager.poll()
    assert done.done and done.result().error == Errors.NONE
    polled.clear()
    manager.poll()
    assert polled == []  # settled: forgotten until written again

    env.clock.advance(env.config.producer_id_expiration_check_interval_ms)
    manager.poll()
    assert sorted(polled) == [0, *range(16)]  # an expiration check is due: every partition of both topics
    assert manager.next_deadline_ms() == env.clock.now_ms() + env.config.producer_id_expiration_check_interval_ms
    assert TOPIC in manager.topic_names()


def test_fsync_mode_looks_only_at_the_partitions_a_round_covered(counted: tuple[Env, list[int]]) -> None:
    """With `Durability.fsync` a partition waiting for a round still in flight is not looked at by a poll; the
    round's end (`flushed`) has the next poll look at the partitions it covered, and only at those."""
    env, polled = counted
    manager = env.manager
    assert manager.create_topic("wide", 16) == "NONE"
    manager.poll()
    first = [manager.produce("wide", p, batch(), acks=-1, transactional_id=None) for p in (3, 4)]
    manager.poll()
    tickets = manager.begin_flush()
    assert len(tickets) == 2
    late = manager.produce("wide", 9, batch(), acks=-1, transactional_id=None)
    polled.clear()
    manager.poll()
    assert polled == [9] and not late.done and not any(c.done for c in first)
    polled.clear()
    manager.poll()
    assert polled == []  # all three wait for a round: none is looked at
    for ticket in tickets:
        ticket.fsync()
        ticket.log.end_flush(ticket)
    manager.flushed()
    manager.poll()
    assert sorted(polled) == [3, 4], "the round's end looks at the partitions it covered, not at 9"
    assert all(c.done and c.result().error == Errors.NONE for c in first) and not late.done
    (ticket,) = manager.begin_flush()
    ticket.fsync()
    ticket.log.end_flush(ticket)
    manager.flushed()
    polled.clear()
    manager.poll()
    assert polled == [9] and late.done and late.result().error == Errors.NONE
