"""Cluster-level APIs: Metadata, CreateTopics, DescribeCluster and FindCoordinator, for one node.

Owns: translating these kio requests to the cluster's topic and ownership facts and back. Brokers are the live nodes
with their endpoints; a data partition's leader is `Cluster.data_leader` (its only replica and ISR); the leader
epoch shown is the partition's epoch plus how far leadership moved past its first-choice node, so clients see a
newer epoch after a failover. FindCoordinator names the node owning the key's coordinator partition
(`Cluster.node_for_coordinator`), old single-key and v4+ batched forms alike.
Front-door answers of our own (documented, not from any spec): FindCoordinator with an unknown key type or an empty
transactional id → INVALID_REQUEST; with the owner stopped → COORDINATOR_NOT_AVAILABLE; CreateTopics with a manual
replica assignment → INVALID_REQUEST (every other CreateTopics answer is Kafka's controller's, in its words).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

from kio.static.protocol import ResponsePayload

from ..cluster import CoordinatorKind
from ..errors import Errors
from ..interfaces import TopicPartition
from ..partition.manager import MAX_RECORDS_PER_USER_OP
from ..partition.types import TopicMetadata
from .broker import BrokerContext
from .dispatch import Request
from .kio_build import AUTHORIZED_OPERATIONS_OMITTED, build, code, item_type, response_schema

_KEY_TYPES: dict[int, CoordinatorKind] = {0: "group", 1: "transaction"}
_EXCESSIVE_BATCH: Final = "Unable to perform excessively large batch operation."  # Kafka's PolicyViolationException


class ClusterHandlers:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ Metadata (3)

    async def metadata(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        shared = self.ctx.shared
        schema = response_schema(request.api_key, request.api_version)
        names = self._requested_topics(body)
        allow = bool(getattr(body, "allow_auto_topic_creation", True))
        before = len(shared.cluster.partitions.topic_names())
        described = shared.cluster.partitions.describe_topics(names, allow_auto_creation=allow)
        if len(shared.cluster.partitions.topic_names()) != before:
            shared.topics_changed()
        brokers_type = item_type(schema, "brokers")
        brokers = tuple(build(brokers_type, node_id=e.node_id, host=e.host, port=e.port, rack=None)
                        for e in shared.live_endpoints())
        topics_type = item_type(schema, "topics")
        topics = tuple(self._topic(topics_type, meta) for meta in described)
        return build(schema, brokers=brokers, cluster_id=shared.cluster_id, controller_id=self._controller(),
                     topics=topics, cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)

    def _requested_topics(self, body: Any) -> list[str] | None:
        if body.topics is None:
            return None
        names = []
        for topic in body.topics:
            name = topic.name
            if name is None and getattr(topic, "topic_id", None) is not None:
                name = self.ctx.shared.topic_name(topic.topic_id)
            if name is not None:
                names.append(name)
        return names

    def _controller(self) -> int:
        live = self.ctx.shared.live_endpoints()
        return live[0].node_id if live else -1

    def _topic(self, topic_type: type[Any], meta: TopicMetadata) -> Any:
        partition_type = item_type(topic_type, "partitions")
        partitions = []
        for p in meta.partitions:
            tp = TopicPartition(meta.name, p.partition)
            leader = self.ctx.cluster.data_leader(tp)
            if p.leader_id < 0:  # offline (a damaged log): no leader, its only replica offline
                partitions.append(build(partition_type, error_code=code(p.error), partition_index=p.partition,
                                        leader_id=-1, leader_epoch=-1, replica_nodes=(leader,), isr_nodes=(),
                                        offline_replicas=(leader,)))
                continue
            partitions.append(build(partition_type, error_code=code(p.error), partition_index=p.partition,
                                    leader_id=leader, leader_epoch=self.ctx.shown_leader_epoch(tp, p.leader_epoch),
                                    replica_nodes=(leader,), isr_nodes=(leader,), offline_replicas=()))
        return build(topic_type, error_code=code(meta.error), name=meta.name, topic_id=meta.topic_id,
                     is_internal=meta.is_internal, partitions=tuple(partitions),
                     topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)

    # ------------------------------------------------------------------ CreateTopics (19)

    async def create_topics(self, request: Request) -> ResponsePayload:
        """Kafka's controller: a name given twice is refused once, INVALID_REQUEST, after the others; each other
        topic is refused for its own reason or created; a request that would write more than 10,000 metadata
        records (a topic record, its config records and one per partition, for every topic it creates) creates
        nothing and answers POLICY_VIOLATION for every topic it named."""
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        topic_type = item_type(schema, "topics")
        partitions = self.ctx.cluster.partitions
        named = Counter(topic.name for topic in body.topics)
        planned = [(topic, self._refusal(topic), partitions.partition_count(topic.num_partitions))
                   for topic in body.topics if named[topic.name] == 1]
        records = sum(1 + len({c.name for c in topic.configs}) + count
                      for topic, refusal, count in planned if refusal is None)
        if records > MAX_RECORDS_PER_USER_OP:
            return build(schema, topics=tuple(
                build(topic_type, name=topic.name, topic_id=None, error_code=code(Errors.POLICY_VIOLATION),
                      error_message=_EXCESSIVE_BATCH, num_partitions=-1, replication_factor=-1, configs=())
                for topic in body.topics))
        results = []
        for topic, refusal, count in planned:
            error, message = refusal or (Errors.NONE, None)
            meta = None
            if error == Errors.NONE and not body.validate_only:
                created = self.ctx.shared.create_topic(topic.name, count)
                assert created == Errors.NONE, created  # `_refusal` looked just now, with no await in between
                (meta,) = partitions.describe_topics([topic.name])
            results.append(build(
                topic_type, name=topic.name, topic_id=meta.topic_id if meta is not None else None,
                error_code=code(error), error_message=message,
                num_partitions=len(meta.partitions) if meta is not None else count if error == Errors.NONE else -1,
                replication_factor=1 if error == Errors.NONE else -1, configs=()))
        results += [build(topic_type, name=name, topic_id=None, error_code=code(Errors.INVALID_REQUEST),
                          error_message="Duplicate topic name.", num_partitions=-1, replication_factor=-1,
                          configs=()) for name, n in named.items() if n > 1]
        return build(schema, topics=tuple(results))

    def _refusal(self, topic: Any) -> tuple[str, str] | None:
        """Why this topic of a CreateTopics request is not created, in the order Kafka's controller looks, or None:
        its name (`creation_problem`), null config values, a manual assignment (not served: the partitions of this
        cluster have one replica), the replication factor, the partition count."""
        partitions = self.ctx.cluster.partitions
        problem = partitions.creation_problem(topic.name, topic.num_partitions)
        if problem is not None and problem[0] != Errors.INVALID_PARTITIONS:
            return problem
        nulls = [c.name for c in topic.configs if c.value is None]
        if nulls:
            return Errors.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}"
        if topic.assignments:
            return Errors.INVALID_REQUEST, "manual replica assignments are not supported"
        if topic.replication_factor < -1 or topic.replication_factor == 0:
            return Errors.INVALID_REPLICATION_FACTOR, ("Replication factor must be larger than 0, or -1 to use the "
                                                       "default value.")
        live = len(self.ctx.shared.live_endpoints())
        if topic.replication_factor > live:
            return Errors.INVALID_REPLICATION_FACTOR, (
                f"Unable to replicate the partition {topic.replication_factor} time(s): The target replication "
                f"factor of {topic.replication_factor} cannot be reached because only {live} broker(s) are "
                "registered.")
        return problem

    # ------------------------------------------------------------------ DescribeCluster (60)

    async def describe_cluster(self, request: Request) -> ResponsePayload:
        shared = self.ctx.shared
        schema = response_schema(request.api_key, request.api_version)
        broker_type = item_type(schema, "brokers")
        brokers = tuple(build(broker_type, broker_id=e.node_id, host=e.host, port=e.port, rack=None)
                        for e in shared.live_endpoints())
        return build(schema, endpoint_type=1, cluster_id=shared.cluster_id, controller_id=self._controller(),
                     brokers=brokers, cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)

    # ------------------------------------------------------------------ FindCoordinator (10)

    async def find_coordinator(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        if request.api_version < 4:
            node_id, host, port, error, message = self._coordinator(getattr(body, "key_type", 0), body.key)
            return build(schema, error_code=code(error), error_message=message, node_id=node_id, host=host,
                         port=port)
        entry_type = item_type(schema, "coordinators")
        entries = []
        for key in body.coordinator_keys:
            node_id, host, port, error, message = self._coordinator(body.key_type, key)
            entries.append(build(entry_type, key=key, node_id=node_id, host=host, port=port, error_code=code(error),
                                 error_message=message))
        return build(schema, coordinators=tuple(entries))

    def _coordinator(self, key_type: int, key: str) -> tuple[int, str, int, str, str | None]:
        kind = _KEY_TYPES.get(key_type)
        if kind is None:
            return -1, "", -1, Errors.INVALID_REQUEST, f"unsupported coordinator key type {key_type}"
        if kind == "transaction" and not key:
            return -1, "", -1, Errors.INVALID_REQUEST, "the transactional id is empty"
        node = self.ctx.cluster.node_for_coordinator(kind, key)
        endpoint = self.ctx.shared.endpoints.get(node.node_id)
        if endpoint is None or not node.alive or node.node_id in self.ctx.shared.stopped_nodes:
            return -1, "", -1, Errors.COORDINATOR_NOT_AVAILABLE, f"node {node.node_id} is not available"
        return endpoint.node_id, endpoint.host, endpoint.port, Errors.NONE, None
