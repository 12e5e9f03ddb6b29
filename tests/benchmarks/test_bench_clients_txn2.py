"""`benchmarks.bench_clients`' `txn2` workload (Transactions V2, as Kafka 4.0's Java client sends a transaction)
against an in-process `kcoord serve`: every transaction is 3 requests (Produce v12, TxnOffsetCommit v5, EndTxn v5),
each EndTxn answer carries the producer's epoch + 1, no answer is an error, and the coordinator's state says the
producers' last transitions were made by a Transactions V2 client, committed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from benchmarks.bench_clients import create_topics, measure
from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.server.embedded import ServerThread
from kcoord.impl.server.serve import ServeOptions
from kcoord.impl.storage.log import Durability

CONNECTIONS = 2


def _transactions(server: ServerThread) -> list[dict[str, Any]]:
    cluster = server.server.cluster
    assert cluster is not None
    found = []
    for node in cluster.nodes:
        for shard in node.txn.runtime.shards.values():
            found += [dict(i) for i in shard.instances["Transaction"].values()
                      if str(i["transactional_id"]).startswith("bench-txn2-")]
    return found


def test_txn2_commits_transactions_v2_with_three_requests_each(tmp_path: Path) -> None:
    config = ClusterConfig(groups=GroupConfig(initial_rebalance_delay_ms=0), durability=Durability.named("os"))
    with ServerThread(ServeOptions(data_dir=tmp_path, port=0, cluster=config)) as server:
        asyncio.run(create_topics(server.bootstrap))
        counts = asyncio.run(measure(server.bootstrap, "txn2", CONNECTIONS, "test", 1.0))
        transactions = server.call(lambda: _transactions(server))

    assert counts.done >= 5, counts
    assert counts.errors == []
    assert counts.requests == 3 * counts.done, counts  # no AddPartitionsToTxn, no AddOffsetsToTxn, no retry
    assert counts.retries == 0 and counts.retried == {}, counts
    assert counts.epoch_bumps == counts.done, counts  # each EndTxn v5 answer: the next epoch
    assert len(transactions) == CONNECTIONS
    for state in transactions:
        assert state["client_txn_version"] == 2, state
        assert state["state"] in ("PrepareCommit", "CompleteCommit"), state
