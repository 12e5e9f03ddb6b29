"""Data-partition APIs: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DescribeProducers, and the broker side of
WriteTxnMarkers, for one node.

Owns: translating these kio requests to the shared `PartitionManager` and back. A node answers only for the data
partitions it leads (`Cluster.data_leader`); any other partition is NOT_LEADER_OR_FOLLOWER, so clients refresh
their metadata. Produce hands each partition's record bytes (kio's `records` field, untouched) to the partition
side, answers acks=0 with no response, and waits for every partition's answer otherwise. Fetch reads each partition
at the request's isolation level (read_committed: below the LSO, with the aborted transactions) within the
request's byte limits, and long-polls (up to `max_wait`) until `min_bytes` are available. WriteTxnMarkers hands the
markers to this node's marker target (data partitions and its `__consumer_offsets` partitions).
Front-door answers of our own: a partition without records → INVALID_RECORD; an unknown Fetch topic id →
UNKNOWN_TOPIC_ID. Everything else comes from the partition side.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import time
from typing import Any

from kio.static.protocol import ResponsePayload

from ..errors import Errors
from ..interfaces import TopicPartition, TxnMarker, TxnOperation
from ..partition.types import FetchResult, IsolationLevel, PartitionProducers, ProduceResult
from ..partition.verification import PendingWrite
from ..runtime.completion import Completion
from .answers import ProduceAnswers, Results
from .broker import BrokerContext
from .codec import PRODUCE_KEY, EncodedBody
from .dispatch import Request
from .kio_build import build, code, datetime_of_ms, item_type, ms_of, response_schema

_FETCH_TOPIC_IDS_FROM = 13  # Fetch v13+ names topics by id
PRODUCE_FLEXIBLE_FROM = 9  # Produce v9+ is flexible (a v1 response header)


def produce_response(version: int, results: Results) -> ResponsePayload:
    """kio's Produce answer (`ProduceAnswers` encodes it once per shape and writes the offsets in place after)."""
    schema = response_schema(PRODUCE_KEY, version)
    topic_type = item_type(schema, "responses")
    partition_type = item_type(topic_type, "partition_responses")
    return build(schema, responses=tuple(
        build(topic_type, name=name, partition_responses=tuple(
            build(partition_type, index=index, error_code=code(r.error), base_offset=r.base_offset,
                  log_append_time=datetime_of_ms(r.log_append_time_ms), log_start_offset=r.log_start_offset,
                  record_errors=(), error_message=r.error_message)
            for index, r in parts))
        for name, parts in results))


class DataHandlers:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._produce_answers = ProduceAnswers(produce_response, PRODUCE_FLEXIBLE_FROM)

    # ------------------------------------------------------------------ Produce (0)

    async def produce(self, request: Request) -> ResponsePayload | EncodedBody | None:
        body: Any = request.body
        partitions = self.ctx.cluster.partitions
        operation = TxnOperation.for_produce(request.api_version)  # v12+: Transactions V2 adds the partition
        answers: list[tuple[str, list[tuple[int, Completion[ProduceResult]]]]] = []
        deferred: list[PendingWrite] = []  # KIP-890: verified once for the whole request
        for topic in body.topic_data:
            parts = []
            for data in topic.partition_data:
                tp = TopicPartition(topic.name, data.index)
                if partitions.partition(tp) is None:
                    answer = Completion.of(ProduceResult(partitions.missing(tp)))
                elif not self.ctx.leads(tp):
                    answer = Completion.of(ProduceResult(Errors.NOT_LEADER_OR_FOLLOWER))
                elif data.records is None:
                    answer = Completion.of(ProduceResult(Errors.INVALID_RECORD, error_message="no records"))
                else:
                    answer = partitions.produce(topic.name, data.index, bytes(data.records), acks=body.acks,
                                                transactional_id=body.transactional_id, operation=operation,
                                                deferred=deferred)
                parts.append((data.index, answer))
            answers.append((topic.name, parts))
        partitions.verify_deferred(deferred, body.transactional_id)
        self.ctx.shared.kick()
        if body.acks == 0:
            self.ctx.shared.progress.notify()
            return None
        results = [(name, [(index, await self.ctx.wait(answer)) for index, answer in parts])
                   for name, parts in answers]
        self.ctx.shared.progress.notify()
        return self._produce_answers.body(request.api_version, results)

    # ------------------------------------------------------------------ Fetch (1)

    async def fetch(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        isolation = IsolationLevel.READ_COMMITTED if body.isolation_level == 1 else IsolationLevel.READ_UNCOMMITTED
        deadline = time.monotonic() + max(ms_of(body.max_wait, 0), 0) / 1000
        while True:
            results, total_bytes, any_error = self._read_all(request, body, isolation)
            remaining_s = deadline - time.monotonic()
            if total_bytes >= body.min_bytes or any_error or remaining_s <= 0:
                return self._fetch_response(request, results)
            await self.ctx.shared.progress.wait(remaining_s)

    def _read_all(self, request: Request, body: Any, isolation: IsolationLevel
                  ) -> tuple[list[tuple[Any, list[FetchResult]]], int, bool]:
        by_id = request.api_version >= _FETCH_TOPIC_IDS_FROM
        budget = body.max_bytes
        total, any_error = 0, False
        out: list[tuple[Any, list[FetchResult]]] = []
        for topic in body.topics:
            name = self.ctx.shared.topic_name(topic.topic_id) if by_id else topic.topic
            results = []
            for part in topic.partitions:
                result = self._read_one(name, part, budget if total else max(budget, 1), isolation, by_id)
                total += len(result.records)
                budget = max(budget - len(result.records), 0)
                any_error = any_error or result.error != Errors.NONE
                results.append(result)
            out.append((topic, results))
        return out, total, any_error

    def _read_one(self, name: str | None, part: Any, budget: int, isolation: IsolationLevel,
                  by_id: bool) -> FetchResult:
        if name is None:
            return FetchResult(Errors.UNKNOWN_TOPIC_ID if by_id else Errors.UNKNOWN_TOPIC_OR_PARTITION)
        tp = TopicPartition(name, part.partition)
        partitions = self.ctx.cluster.partitions
        if partitions.partition(tp) is None:
            return FetchResult(partitions.missing(tp))
        if not self.ctx.leads(tp):
            return FetchResult(Errors.NOT_LEADER_OR_FOLLOWER)
        if budget <= 0:  # the response is full: report the partition's offsets only
            empty = partitions.fetch(name, part.partition, part.fetch_offset, 1, isolation)
            return FetchResult(empty.error, empty.high_watermark, empty.last_stable_offset, empty.log_start_offset,
                               isolation, part.fetch_offset, () if empty.aborted_transactions is not None else None)
        return partitions.fetch(name, part.partition, part.fetch_offset, min(part.partition_max_bytes, budget),
                                isolation)

    @staticmethod
    def _fetch_response(request: Request, results: list[tuple[Any, list[FetchResult]]]) -> ResponsePayload:
        schema = response_schema(request.api_key, request.api_version)
        topic_type = item_type(schema, "responses")
        partition_type = item_type(topic_type, "partitions")
        aborted_type = item_type(partition_type, "aborted_transactions")
        topics = []
        for topic, parts in results:
            partitions = []
            for part, r in zip(topic.partitions, parts, strict=True):
                aborted = None if r.aborted_transactions is None else tuple(
                    build(aborted_type, producer_id=a.producer_id, first_offset=a.first_offset)
                    for a in r.aborted_transactions)
                partitions.append(build(partition_type, partition_index=part.partition, error_code=code(r.error),
                                        high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
                                        log_start_offset=r.log_start_offset, aborted_transactions=aborted,
                                        preferred_read_replica=-1, records=r.records))
            topics.append(build(topic_type, topic=getattr(topic, "topic", None),
                                topic_id=getattr(topic, "topic_id", None), partitions=tuple(partitions)))
        return build(schema, error_code=code(Errors.NONE), session_id=0, responses=tuple(topics))

    # ------------------------------------------------------------------ ListOffsets (2)

    async def list_offsets(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        level = getattr(body, "isolation_level", 0)  # v1 has none: read_uncommitted
        isolation = IsolationLevel.READ_COMMITTED if level == 1 else IsolationLevel.READ_UNCOMMITTED
        schema = response_schema(request.api_key, request.api_version)
        topic_type = item_type(schema, "topics")
        partition_type = item_type(topic_type, "partitions")
        partitions = self.ctx.cluster.partitions
        topics = []
        for topic in body.topics:
            answers = []
            for part in topic.partitions:
                tp = TopicPartition(topic.name, part.partition_index)
                error: str
                if partitions.partition(tp) is None:
                    error, timestamp, offset, epoch = partitions.missing(tp), -1, -1, -1
                elif not self.ctx.leads(tp):
                    error, timestamp, offset, epoch = Errors.NOT_LEADER_OR_FOLLOWER, -1, -1, -1
                else:
                    r = partitions.list_offsets(topic.name, part.partition_index, part.timestamp, isolation)
                    error, timestamp, offset, epoch = r.error, r.timestamp_ms, r.offset, r.leader_epoch
                answers.append(build(partition_type, partition_index=part.partition_index, error_code=code(error),
                                     timestamp=timestamp, offset=offset, leader_epoch=epoch))
            topics.append(build(topic_type, name=topic.name, partitions=tuple(answers)))
        return build(schema, topics=tuple(topics))

    # ------------------------------------------------------------------ DescribeProducers (61)

    async def describe_producers(self, request: Request) -> ResponsePayload:
        """KIP-664: the producers each partition keeps state for (what `kafka-transactions.sh describe-producers`
        and `find-hanging` read, and the epochs an administrator's abort of a hanging transaction needs)."""
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        topic_type = item_type(schema, "topics")
        partition_type = item_type(topic_type, "partitions")
        producer_type = item_type(partition_type, "active_producers")
        partitions = self.ctx.cluster.partitions
        topics = []
        for topic in body.topics:
            answers = []
            for index in topic.partition_indexes:
                tp = TopicPartition(topic.name, index)
                answer = partitions.describe_producers(topic.name, index)
                if answer.error == Errors.NONE and not self.ctx.leads(tp):
                    answer = PartitionProducers(Errors.NOT_LEADER_OR_FOLLOWER)
                answers.append(build(partition_type, partition_index=index, error_code=code(answer.error),
                                     error_message=answer.error_message, active_producers=tuple(
                    build(producer_type, producer_id=p.producer_id, producer_epoch=p.producer_epoch,
                          last_sequence=p.last_sequence, last_timestamp=p.last_timestamp_ms,
                          coordinator_epoch=p.coordinator_epoch, current_txn_start_offset=p.current_txn_start_offset)
                    for p in answer.producers)))
            topics.append(build(topic_type, name=topic.name, partitions=tuple(answers)))
        return build(schema, topics=tuple(topics))

    # ------------------------------------------------------------------ OffsetForLeaderEpoch (23)

    async def offset_for_leader_epoch(self, request: Request) -> ResponsePayload:
        """KIP-320: where a leader epoch ends, so a consumer can validate its position after a leader change (a
        restart begins a new epoch; a failover shows one)."""
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        topic_type = item_type(schema, "topics")
        partition_type = item_type(topic_type, "partitions")
        topics = []
        for topic in body.topics:
            answers = []
            for part in topic.partitions:
                error, epoch, end_offset = self._epoch_end(TopicPartition(topic.topic, part.partition),
                                                           part.current_leader_epoch, part.leader_epoch)
                answers.append(build(partition_type, error_code=code(error), partition=part.partition,
                                     leader_epoch=epoch, end_offset=end_offset))
            topics.append(build(topic_type, topic=topic.topic, partitions=tuple(answers)))
        return build(schema, topics=tuple(topics))

    def _epoch_end(self, tp: TopicPartition, current_epoch: int, requested_epoch: int) -> tuple[str, int, int]:
        part = self.ctx.cluster.partitions.partition(tp)
        if part is None:
            return self.ctx.cluster.partitions.missing(tp), -1, -1
        if not self.ctx.leads(tp):
            return Errors.NOT_LEADER_OR_FOLLOWER, -1, -1
        shown = self.ctx.shown_leader_epoch(tp, part.leader_epoch)
        if current_epoch != -1 and current_epoch != shown:  # Kafka's fencing of stale or future metadata
            return (Errors.FENCED_LEADER_EPOCH if current_epoch < shown else Errors.UNKNOWN_LEADER_EPOCH), -1, -1
        if part.leader_epoch < requested_epoch <= shown:  # an epoch shown for a failover: nothing was truncated
            return Errors.NONE, requested_epoch, part.log_end_offset
        epoch, end_offset = part.end_offset_for_epoch(requested_epoch)
        return Errors.NONE, epoch, end_offset

    # ------------------------------------------------------------------ WriteTxnMarkers (27)

    async def write_txn_markers(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        markers = [TxnMarker(m.producer_id, m.producer_epoch, "COMMIT" if m.transaction_result else "ABORT",
                             m.coordinator_epoch, tuple(TopicPartition(t.name, p) for t in m.topics
                                                        for p in t.partition_indexes))
                   for m in body.markers]
        results = await self.ctx.wait(self.ctx.node.markers.write_txn_markers(markers))
        self.ctx.shared.progress.notify()
        schema = response_schema(request.api_key, request.api_version)
        marker_type = item_type(schema, "markers")
        topic_type = item_type(marker_type, "topics")
        partition_type = item_type(topic_type, "partitions")
        out = []
        for marker, result in zip(markers, results, strict=True):
            by_topic: dict[str, list[Any]] = {}
            for tp in marker.partitions:
                error = result.get(tp, Errors.UNKNOWN_SERVER_ERROR)
                by_topic.setdefault(tp.topic, []).append(build(partition_type, partition_index=tp.partition,
                                                               error_code=code(error)))
            out.append(build(marker_type, producer_id=marker.producer_id, topics=tuple(
                build(topic_type, name=name, partitions=tuple(parts)) for name, parts in by_topic.items())))
        return build(schema, markers=tuple(out))
