"""Transaction APIs: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions and
ListTransactions, for one node — translations between kio messages and this node's `TransactionCoordinator`.

Owns: nothing but the translation. Every answer is the coordinator's (its front door and the Transaction spec): a
node that does not own the transactional id's `__transaction_state` partition answers NOT_COORDINATOR (or
COORDINATOR_LOAD_IN_PROGRESS while loading), which sends clients back to FindCoordinator. An idempotent producer's
InitProducerId (no transactional id) is answered by any node from the cluster's one producer-id block store.
ListTransactions' v2 `transactional_id_pattern` is applied here (a regular expression that must match the whole
id; an invalid one answers INVALID_REGULAR_EXPRESSION), as Kafka's broker does after the coordinator's listing.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kio.static.protocol import ResponsePayload

from ..errors import Errors
from ..interfaces import TopicPartition
from .answers import BodyMemo
from .broker import BrokerContext
from .codec import EncodedBody
from .dispatch import Request
from .kio_build import build, code, datetime_of_ms, item_type, ms_of, response_schema, timedelta_of_ms

_BATCHED_ADD_PARTITIONS_FROM = 4  # AddPartitionsToTxn v4+: batched transactions, from brokers (KIP-890)


def _topic_results(topic_type: type[Any], requested: list[TopicPartition], errors: Mapping[TopicPartition, str]
                   ) -> tuple[Any, ...]:
    """Per topic, each requested partition's error (in request order, a partition named twice once)."""
    partition_type = item_type(topic_type, "results_by_partition")
    by_topic: dict[str, list[Any]] = {}
    for tp in dict.fromkeys(requested):
        by_topic.setdefault(tp.topic, []).append(build(partition_type, partition_index=tp.partition,
                                                       partition_error_code=code(errors[tp])))
    return tuple(build(topic_type, name=name, results_by_partition=tuple(parts)) for name, parts in by_topic.items())


class TxnHandlers:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._bodies = BodyMemo()  # AddPartitionsToTxn (v3-), AddOffsetsToTxn and EndTxn answers, built once each

    async def init_producer_id(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        answer = await self.ctx.wait(self.ctx.node.txn.init_producer_id(
            body.transactional_id, ms_of(body.transaction_timeout), getattr(body, "producer_id", -1),
            getattr(body, "producer_epoch", -1), request_version=request.api_version))
        schema = response_schema(request.api_key, request.api_version)
        return build(schema, error_code=code(answer.error), producer_id=answer.producer_id,
                     producer_epoch=answer.producer_epoch)

    async def add_partitions_to_txn(self, request: Request) -> ResponsePayload | EncodedBody:
        if request.api_version >= _BATCHED_ADD_PARTITIONS_FROM:
            return await self._add_partitions_batched(request)
        body: Any = request.body
        requested = [TopicPartition(t.name, p) for t in body.v3_and_below_topics for p in t.partitions]
        answer = await self.ctx.wait(self.ctx.node.txn.add_partitions(
            body.v3_and_below_transactional_id, body.v3_and_below_producer_id, body.v3_and_below_producer_epoch,
            requested, request_version=request.api_version))
        schema = response_schema(request.api_key, request.api_version)
        return self._bodies.body(
            (request.api_key, request.api_version, *requested, *(answer[tp] for tp in requested)),
            lambda: build(schema, results_by_topic_v3_and_below=_topic_results(
                item_type(schema, "results_by_topic_v3_and_below"), requested, answer)))

    async def _add_partitions_batched(self, request: Request) -> ResponsePayload | EncodedBody:
        """AddPartitionsToTxn v4+ (KIP-890), what brokers send the coordinator: several transactions, each either
        verified (`verify_only`: per partition, as handleVerifyPartitionsInTransaction) or added at client version
        2 (`transactionVersionForAddPartitionsToTxn`: v4+ is a Transactions V2 client's), each answered on its own."""
        body: Any = request.body
        txn = self.ctx.node.txn
        schema = response_schema(request.api_key, request.api_version)
        result_type = item_type(schema, "results_by_transaction")
        topic_type = item_type(result_type, "topic_results")
        results = []
        for t in body.transactions:
            requested = [TopicPartition(topic.name, p) for topic in t.topics for p in topic.partitions]
            if t.verify_only:
                errors = await self.ctx.wait(txn.verify_partitions(t.transactional_id, t.producer_id,
                                                                    t.producer_epoch, requested))
            else:
                errors = await self.ctx.wait(txn.add_partitions(t.transactional_id, t.producer_id, t.producer_epoch,
                                                                requested, 2, request_version=request.api_version))
            results.append(build(result_type, transactional_id=t.transactional_id,
                                 topic_results=_topic_results(topic_type, requested, errors)))
        return build(schema, error_code=code(Errors.NONE), results_by_transaction=tuple(results))

    async def add_offsets_to_txn(self, request: Request) -> ResponsePayload | EncodedBody:
        body: Any = request.body
        error = await self.ctx.wait(self.ctx.node.txn.add_offsets(
            body.transactional_id, body.producer_id, body.producer_epoch, body.group_id,
            request_version=request.api_version))
        return self._bodies.body((request.api_key, request.api_version, error),
                                 lambda: build(response_schema(request.api_key, request.api_version),
                                               error_code=code(error)))

    async def end_txn(self, request: Request) -> ResponsePayload | EncodedBody:
        body: Any = request.body
        txn = self.ctx.node.txn
        answer = await self.ctx.wait(txn.end_txn(
            body.transactional_id, body.producer_id, body.producer_epoch, "COMMIT" if body.committed else "ABORT",
            request.api_version))
        hold_ms = txn.config.end_txn_waits_for_markers_ms
        if hold_ms and answer.error == Errors.NONE and self._waits_for_disk():
            # answered once the markers and the Complete* record are written (bounded): the client's next
            # transaction then starts at once instead of meeting CONCURRENT_TRANSACTIONS (DEVIATIONS.md)
            settled = txn.when_settled(body.transactional_id)
            if settled is not None:
                await self.ctx.wait_at_most(settled, hold_ms / 1000)
        return self._bodies.body(
            (request.api_key, request.api_version, answer.error, answer.producer_id, answer.producer_epoch),
            lambda: build(response_schema(request.api_key, request.api_version), error_code=code(answer.error),
                          producer_id=answer.producer_id, producer_epoch=answer.producer_epoch))

    def _waits_for_disk(self) -> bool:
        """Writes are answered once fsynced (not `--durability os`, where the markers and the Complete* record are
        written within the loop turn that answers EndTxn, so no client meets CONCURRENT_TRANSACTIONS and waiting
        would only cost loop turns)."""
        durability = self.ctx.cluster.config.durability
        return durability is None or durability.mode != "os"

    async def describe_transactions(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        described = await self.ctx.wait(self.ctx.node.txn.describe_transactions(list(body.transactional_ids)))
        schema = response_schema(request.api_key, request.api_version)
        state_type = item_type(schema, "transaction_states")
        topic_type = item_type(state_type, "topics")
        states = []
        for d in described:
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(d.partitions):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            states.append(build(
                state_type, error_code=code(d.error), transactional_id=d.transactional_id,
                transaction_state=d.state, transaction_timeout=timedelta_of_ms(d.timeout_ms),
                transaction_start_time=datetime_of_ms(d.start_timestamp_ms), producer_id=d.producer_id,
                producer_epoch=d.producer_epoch,
                topics=tuple(build(topic_type, topic=t, partitions=tuple(ps)) for t, ps in by_topic.items())))
        return build(schema, transaction_states=tuple(states))

    async def list_transactions(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        pattern_text = getattr(body, "transactional_id_pattern", None)
        pattern = None
        if pattern_text:
            try:
                pattern = re.compile(pattern_text)
            except re.error:
                return build(schema, error_code=code(Errors.INVALID_REGULAR_EXPRESSION))
        answer = await self.ctx.wait(self.ctx.node.txn.list_transactions(
            tuple(body.state_filters), tuple(body.producer_id_filters), getattr(body, "duration_filter", -1)))
        listed = [t for t in answer.transactions if pattern is None or pattern.fullmatch(t.transactional_id)]
        state_type = item_type(schema, "transaction_states")
        return build(schema, error_code=code(answer.error), unknown_state_filters=answer.unknown_state_filters,
                     transaction_states=tuple(build(state_type, transactional_id=t.transactional_id,
                                                    producer_id=t.producer_id, transaction_state=t.state)
                                              for t in listed))
