"""The one-node cluster the storage fault tests start (one coordinator partition of each kind, a manual clock), and
running it until a request completes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcoord.impl.cluster import Cluster, ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.txn.config import TxnConfig


def run(cluster: Cluster, done: Completion[Any]) -> Any:
    """Run the cluster until `done` completes; its result."""
    cluster.run_until(lambda: done.done)
    return done.result()


def small_cluster(data_dir: Path, topic: str | None = None) -> Cluster:
    """A started one-node cluster on `data_dir` with one __transaction_state and one __consumer_offsets partition,
    and `topic` (one partition) made if it is given and not there yet."""
    config = ClusterConfig(txn=TxnConfig(num_partitions=1), groups=GroupConfig(num_partitions=1))
    cluster = Cluster(data_dir, ManualClock(1_000), config=config)
    cluster.start()
    if topic is not None and topic not in cluster.partitions.topic_names():
        cluster.create_topics([(topic, 1)])
    return cluster
