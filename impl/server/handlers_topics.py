"""DescribeTopicPartitions (api key 75, KIP-966), for one node: what Kafka 4.0's admin client asks to describe topics
(`kafka-topics --describe`), paged by a cursor, as Kafka's `DescribeTopicPartitionsRequestHandler` answers it.

Owns: the translation and the paging. The topics asked for (all data topics when none is named) are answered in name
order from the cursor's topic and partition on, at most `response_partition_limit` partitions (at least 1, at most
Kafka's `max.request.partition.size.limit` of 2,000); `next_cursor` names the first partition left out. A topic that
does not exist is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name) when named, and left out
when all topics are asked for. A cursor whose topic is not among those named, or whose partition is negative, is
INVALID_REQUEST for the whole request. A partition's leader, epoch, replicas and ISR are Metadata's
(`ClusterHandlers`); kcoord has one replica per partition, so no eligible leader replicas and none offline.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from typing import Any, Final

from kio.static.protocol import ResponsePayload

from ..errors import Errors, KafkaError
from ..interfaces import TopicPartition
from ..partition.manager import topic_name_problem
from ..partition.types import TopicMetadata
from .broker import BrokerContext
from .dispatch import Request
from .kio_build import AUTHORIZED_OPERATIONS_OMITTED, build, code, item_type, response_schema

MAX_PARTITIONS_PER_RESPONSE: Final = 2_000  # max.request.partition.size.limit


class TopicHandlers:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    async def describe_topic_partitions(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        topic_type = item_type(schema, "topics")
        cursor = body.cursor
        cursor_topic = cursor.topic_name if cursor is not None else ""
        named = [t.name for t in body.topics]
        every = not named
        names = sorted({n for n in (self.ctx.cluster.partitions.topic_names() if every else named)
                        if n >= cursor_topic})
        if cursor is not None and not every and cursor_topic not in names:
            raise KafkaError(Errors.INVALID_REQUEST, "DescribeTopicPartitionsRequest topic list should contain the "
                                                     f"cursor topic: {cursor_topic}")
        if cursor is not None and cursor.partition_index < 0:
            raise KafkaError(Errors.INVALID_REQUEST, "DescribeTopicPartitionsRequest cursor partition must be valid")
        remaining = max(min(MAX_PARTITIONS_PER_RESPONSE, body.response_partition_limit), 1)
        topics, next_cursor = [], None
        for name in names:
            if remaining == 0:
                next_cursor = (name, 0)
                break
            (meta,) = self.ctx.cluster.partitions.describe_topics([name])
            if meta.error != Errors.NONE:
                if not every:
                    error = Errors.INVALID_TOPIC_EXCEPTION if topic_name_problem(name) else meta.error
                    topics.append(build(topic_type, error_code=code(error), name=name, topic_id=None,
                                        is_internal=False, partitions=(),
                                        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
                continue
            start = cursor.partition_index if name == cursor_topic and cursor is not None else 0
            shown = [p for p in meta.partitions if p.partition >= start][:remaining]
            topics.append(self._topic(topic_type, meta, shown))
            remaining -= len(shown)
            if shown and shown[-1].partition + 1 < len(meta.partitions):
                next_cursor = (name, shown[-1].partition + 1)
                break
        cursor_type = item_type(schema, "next_cursor")
        return build(schema, topics=tuple(topics), next_cursor=None if next_cursor is None else build(
            cursor_type, topic_name=next_cursor[0], partition_index=next_cursor[1]))

    def _topic(self, topic_type: type[Any], meta: TopicMetadata, shown: list[Any]) -> Any:
        partition_type = item_type(topic_type, "partitions")
        partitions = []
        for p in shown:
            tp = TopicPartition(meta.name, p.partition)
            leader = self.ctx.cluster.data_leader(tp)
            partitions.append(build(partition_type, error_code=code(p.error), partition_index=p.partition,
                                    leader_id=leader, leader_epoch=self.ctx.shown_leader_epoch(tp, p.leader_epoch),
                                    replica_nodes=(leader,), isr_nodes=(leader,), eligible_leader_replicas=(),
                                    last_known_elr=(), offline_replicas=()))
        return build(topic_type, error_code=code(meta.error), name=meta.name, topic_id=meta.topic_id,
                     is_internal=meta.is_internal, partitions=tuple(partitions),
                     topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
