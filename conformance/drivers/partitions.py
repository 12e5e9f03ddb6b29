"""Reading the partition side's `PartitionProducer` instances out of a running cluster, wherever they live.

Owns: `partition_producer_instances` — the instances of every data partition's producer-state manager and of every
loaded `__consumer_offsets` partition (where the group coordinator keeps the producers of transactional offset
commits), keyed as the spec keys them: (partition, producer id).
Must not import: kcoord.cli.
"""

from __future__ import annotations

from typing import Any

from kcoord.impl.cluster import Cluster

Key = tuple[Any, ...]


def partition_producer_instances(cluster: Cluster) -> dict[Key, dict[str, Any]]:
    out: dict[Key, dict[str, Any]] = {}
    for part in cluster.partitions.partitions():
        for producer_id, inst in part.states.instances().items():
            out[(inst["partition"], producer_id)] = dict(inst)
    for node in cluster.nodes:
        if not node.alive:
            continue
        for shard in node.groups.runtime.shards.values():
            for key, inst in shard.instances.get("PartitionProducer", {}).items():
                out[tuple(key)] = dict(inst)
    return out
