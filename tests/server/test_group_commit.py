"""Group commit (`kcoord serve --durability group`) never makes a lone writer wait for company: with a linger of 2 s
(`--group-commit-ms 2000`), a transactional producer alone on the server still commits in well under one linger,
because a write is flushed as soon as no other request is in progress or queued; nothing is answered before its
records are fsynced."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.server.embedded import ServerThread
from kcoord.impl.server.serve import ServeOptions
from kcoord.impl.storage.log import Durability

pytestmark = [pytest.mark.wire]

LINGER_MS = 2_000


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[ServerThread]:
    config = ClusterConfig(groups=GroupConfig(initial_rebalance_delay_ms=0),
                           durability=Durability.group(LINGER_MS, 1 << 20))
    with ServerThread(ServeOptions(data_dir=tmp_path, port=0, cluster=config)) as thread:
        yield thread


def test_a_lone_transactional_producer_does_not_wait_the_linger(server: ServerThread,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import kafka

    fsyncs = [0]
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        fsyncs[0] += 1
        real_fsync(fd)

    producer = kafka.KafkaProducer(bootstrap_servers=server.bootstrap, transactional_id="lone", linger_ms=0,
                                   request_timeout_ms=30_000, max_block_ms=30_000)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("lone-topic", b"warm-up", partition=0)
        producer.commit_transaction()  # the topic made, the partition added once
        monkeypatch.setattr(os, "fsync", counting_fsync)
        started = time.monotonic()
        for i in range(3):
            producer.begin_transaction()
            producer.send("lone-topic", b"%d" % i, partition=0).get(timeout=30)
            producer.commit_transaction()
        elapsed = time.monotonic() - started
    finally:
        producer.close()
    # each transaction writes AddPartitionsToTxn, the record, PrepareCommit, the marker and CompleteCommit: five
    # writes that waited a 2 s linger each before (over 25 s for three); none waits now
    assert elapsed < LINGER_MS / 1000, f"3 transactions took {elapsed:.1f} s with a {LINGER_MS} ms linger"
    assert fsyncs[0] >= 3 * 3  # the writes were fsynced (nothing answered before it)
