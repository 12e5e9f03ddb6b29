"""PartitionManager's loop work: `poll`, `flush` and the deadlines look only at the partitions written since their
durability caught up (and at every partition when a producer expiration check is due), yet an acks=-1 produce is
still answered exactly when its group commit's fsync ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcoord.impl.errors import Errors
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition.partition import DataPartition
from kcoord.impl.storage.log import Durability

from .helpers import TOPIC, Env, batch, make_env


def test_poll_looks_only_at_written_partitions_and_fsync_mode_answers_after_the_ticket(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    polled: list[int] = []
    real_poll = DataPartition.poll

    def counted(self: DataPartition, now_ms: int) -> None:
        polled.append(self.tp.partition)
        real_poll(self, now_ms)

    monkeypatch.setattr(DataPartition, "poll", counted)
    envs = make_env(tmp_path, durability=Durability.fsync())
    env = next(envs)
    try:
        _check(env, polled)
    finally:
        envs.close()


def _check(env: Env, polled: list[int]) -> None:
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
