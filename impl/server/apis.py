"""The APIs `kcoord serve` implements, at which versions, and the handler registry of one node.

Owns: `SERVED` (api key → versions: exactly what the handlers implement and ApiVersions advertises),
`served_features` (the feature flags ApiVersions v3+ lists) and `node_registry` (a `HandlerRegistry` wired to one
node's handlers, each timed for the metrics). The client-facing ranges are the hull of what kafka-python 3.0.12,
aiokafka 0.14 and confluent-kafka 2.16 send (`versions.py`, from `CLIENT_VERSIONS.md`), widened only where one handler
serves the extra versions unchanged; the APIs no client flow sent (CreateTopics, DeleteGroups, OffsetDelete,
DescribeCluster, WriteTxnMarkers) take the versions their admin calls and Kafka's brokers use. The Transactions V2
versions (KIP-890) reach Kafka 4.0's: Produce 12, InitProducerId 5, AddPartitionsToTxn 5 (v4+ batched, from brokers),
AddOffsetsToTxn 4, EndTxn 5, TxnOffsetCommit 5 — Kafka's Java client 4.0 takes them once `transaction.version` 2 is
finalized.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Final

from kio.schema.index import api_key_map

from .api_versions import Feature, VersionRange
from .broker import BrokerContext
from .dispatch import Handler, HandlerRegistry
from .handlers_cluster import ClusterHandlers
from .handlers_configs import ConfigHandlers
from .handlers_data import DataHandlers
from .handlers_groups import GroupHandlers
from .handlers_offsets import OffsetHandlers
from .handlers_topics import TopicHandlers
from .handlers_txn import TxnHandlers

__all__ = ("SERVED", "node_registry", "served_features")

#: api key -> the versions served (ApiVersions, key 18, is the wire layer's and serves 0..4)
SERVED: Final[types.MappingProxyType[int, VersionRange]] = types.MappingProxyType({
    0: VersionRange(3, 12),  # Produce (aiokafka 7, kafka-python 9, librdkafka 10; v11 TRANSACTION_ABORTABLE, v12 TV2)
    1: VersionRange(4, 16),  # Fetch (aiokafka 11, kafka-python 12, librdkafka 16)
    2: VersionRange(1, 11),  # ListOffsets (aiokafka 3, librdkafka 7, kafka-python 11)
    3: VersionRange(1, 13),  # Metadata (aiokafka 5, kafka-python 13, librdkafka 13)
    8: VersionRange(2, 9),  # OffsetCommit (aiokafka 3, kafka-python 8, librdkafka 9)
    9: VersionRange(1, 9),  # OffsetFetch (aiokafka 3, kafka-python 8, librdkafka 9; v8+ batched groups)
    10: VersionRange(0, 6),  # FindCoordinator (aiokafka 1, librdkafka 2, kafka-python 6; v4+ batched keys)
    11: VersionRange(2, 7),  # JoinGroup (aiokafka 5, librdkafka 5, kafka-python 7)
    12: VersionRange(0, 4),  # Heartbeat (aiokafka 1, librdkafka 3, kafka-python 4)
    13: VersionRange(0, 5),  # LeaveGroup (aiokafka 1, librdkafka 1, kafka-python 5; v3+ batched members)
    14: VersionRange(0, 5),  # SyncGroup (aiokafka 3, librdkafka 3, kafka-python 5)
    15: VersionRange(0, 6),  # DescribeGroups (aiokafka 3, librdkafka 5, kafka-python 6)
    16: VersionRange(0, 5),  # ListGroups (aiokafka 1, librdkafka 5, kafka-python 5)
    19: VersionRange(2, 7),  # CreateTopics (admin clients)
    22: VersionRange(0, 5),  # InitProducerId (aiokafka 0, kafka-python 4, librdkafka 4; the Java client 5)
    23: VersionRange(2, 4),  # OffsetForLeaderEpoch (KIP-320 position validation; kafka-python 4, librdkafka)
    24: VersionRange(0, 5),  # AddPartitionsToTxn (v4+ is broker-to-broker, KIP-890)
    25: VersionRange(0, 4),  # AddOffsetsToTxn (v4 TRANSACTION_ABORTABLE)
    26: VersionRange(0, 5),  # EndTxn (v4 TRANSACTION_ABORTABLE; v5 Transactions V2, the Java client's)
    27: VersionRange(1, 1),  # WriteTxnMarkers (the coordinators' internal path, over the wire for other brokers)
    28: VersionRange(0, 5),  # TxnOffsetCommit (aiokafka 0, kafka-python 3, librdkafka 3; v5 Transactions V2)
    32: VersionRange(1, 4),  # DescribeConfigs (kafka-topics --describe; Kafka 4.0 serves 1-4)
    42: VersionRange(0, 2),  # DeleteGroups (admin clients)
    47: VersionRange(0, 0),  # OffsetDelete (admin clients)
    60: VersionRange(0, 1),  # DescribeCluster (admin clients)
    61: VersionRange(0, 0),  # DescribeProducers (kafka-python admin)
    65: VersionRange(0, 0),  # DescribeTransactions (kafka-python admin)
    66: VersionRange(0, 2),  # ListTransactions (kafka-python admin 2)
    68: VersionRange(0, 1),  # ConsumerGroupHeartbeat (librdkafka group.protocol=consumer 1)
    69: VersionRange(0, 0),  # ConsumerGroupDescribe (librdkafka admin 0)
    75: VersionRange(0, 0),  # DescribeTopicPartitions (KIP-966: Kafka 4.0's admin describeTopics)
})


def served_features(server_txn_version: int) -> tuple[Feature, ...]:
    """The feature flags ApiVersions v3+ lists, with Kafka 4.0's names and supported ranges, for what kcoord
    implements: `group.version` 1 (KIP-848's consumer protocol) and `transaction.version` (the transaction
    coordinators' `TxnConfig.server_txn_version`; 2 makes Kafka's Java client use Transactions V2; 0 is listed as
    supported only, as Kafka lists no level 0). Kafka's `metadata.version`, `kraft.version` and
    `eligible.leader.replicas.version` describe a KRaft controller and replication that kcoord does not have."""
    return (Feature("group.version", 0, 1, 1), Feature("transaction.version", 0, 2, server_txn_version))


def _handlers(ctx: BrokerContext) -> dict[int, Callable[..., Any]]:
    cluster, data, groups = ClusterHandlers(ctx), DataHandlers(ctx), GroupHandlers(ctx)
    offsets, txn, configs, topics = OffsetHandlers(ctx), TxnHandlers(ctx), ConfigHandlers(ctx), TopicHandlers(ctx)
    return {
        0: data.produce, 1: data.fetch, 2: data.list_offsets, 3: cluster.metadata, 8: offsets.offset_commit,
        9: offsets.offset_fetch, 10: cluster.find_coordinator, 11: groups.join_group, 12: groups.heartbeat,
        13: groups.leave_group, 14: groups.sync_group, 15: groups.describe_groups, 16: groups.list_groups,
        19: cluster.create_topics, 22: txn.init_producer_id, 23: data.offset_for_leader_epoch,
        24: txn.add_partitions_to_txn, 25: txn.add_offsets_to_txn, 26: txn.end_txn, 27: data.write_txn_markers,
        28: offsets.txn_offset_commit, 32: configs.describe_configs,
        42: groups.delete_groups, 47: offsets.offset_delete, 60: cluster.describe_cluster, 61: data.describe_producers,
        65: txn.describe_transactions, 66: txn.list_transactions, 68: groups.consumer_group_heartbeat,
        69: groups.consumer_group_describe, 75: topics.describe_topic_partitions,
    }


def node_registry(ctx: BrokerContext) -> HandlerRegistry:
    """Every served API of one node, each handler timed under its kio name (`join_group`, ...)."""
    handlers = _handlers(ctx)
    assert set(handlers) == set(SERVED), sorted(set(handlers) ^ set(SERVED))
    registry = HandlerRegistry()
    for api_key, versions in sorted(SERVED.items()):
        handler: Handler = ctx.metrics.timed(api_key_map[api_key], handlers[api_key])
        registry.register(api_key, handler, versions)
    return registry
