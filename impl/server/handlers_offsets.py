"""Offset APIs: OffsetCommit, OffsetFetch (single-group v3–7 and batched v8+), OffsetDelete and TxnOffsetCommit, for
one node — translations between kio messages and this node's `GroupCoordinator`.

Owns: nothing but the translation. OffsetFetch v8+ asks the coordinator once per group and answers each group with
its own error (a group this node does not coordinate gets NOT_COORDINATOR in its entry, as Kafka answers per group).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from typing import Any

from kio.static.protocol import ResponsePayload

from ..errors import Errors
from ..group.messages import (
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionErrors,
    TxnOffsetCommitRequest,
)
from .answers import BodyMemo
from .broker import BrokerContext
from .codec import EncodedBody
from .dispatch import Request
from .kio_build import build, code, item_type, ms_of, response_schema

_OFFSET_FETCH_BATCHED_FROM = 8


def _commit_topics(topics: Any) -> tuple[tuple[str, tuple[OffsetCommitPartition, ...]], ...]:
    return tuple((t.name, tuple(OffsetCommitPartition(p.partition_index, p.committed_offset,
                                                      getattr(p, "committed_leader_epoch", -1),
                                                      p.committed_metadata) for p in t.partitions))
                 for t in topics)


def _partition_errors(schema: type[Any], topics: PartitionErrors) -> tuple[Any, ...]:
    topic_type = item_type(schema, "topics")
    partition_type = item_type(topic_type, "partitions")
    return tuple(build(topic_type, name=name, partitions=tuple(
        build(partition_type, partition_index=p, error_code=code(e)) for p, e in parts)) for name, parts in topics)


def _committed(topics: PartitionErrors) -> int:
    return sum(1 for _, parts in topics for _, e in parts if e == Errors.NONE)


class OffsetHandlers:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._bodies = BodyMemo()  # TxnOffsetCommit answers, built once each

    async def offset_commit(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        req = OffsetCommitRequest(
            group_id=body.group_id, topics=_commit_topics(body.topics), member_id=body.member_id,
            generation_id=body.generation_id_or_member_epoch,
            group_instance_id=getattr(body, "group_instance_id", None),
            retention_time_ms=ms_of(getattr(body, "retention_time", None)), api_version=request.api_version)
        r = await self.ctx.wait(self.ctx.node.groups.offset_commit(req))
        self.ctx.metrics.count_offset_commits("commit", _committed(r.topics))
        schema = response_schema(request.api_key, request.api_version)
        return build(schema, topics=_partition_errors(schema, r.topics))

    async def txn_offset_commit(self, request: Request) -> ResponsePayload | EncodedBody:
        body: Any = request.body
        req = TxnOffsetCommitRequest(
            transactional_id=body.transactional_id, producer_id=body.producer_id, producer_epoch=body.producer_epoch,
            group_id=body.group_id, topics=_commit_topics(body.topics), member_id=getattr(body, "member_id", ""),
            generation_id=getattr(body, "generation_id", -1),
            group_instance_id=getattr(body, "group_instance_id", None), api_version=request.api_version)
        r = await self.ctx.wait(self.ctx.node.groups.txn_offset_commit(req))
        self.ctx.metrics.count_offset_commits("transactional", _committed(r.topics))
        schema = response_schema(request.api_key, request.api_version)
        return self._bodies.body((request.api_key, request.api_version, r.topics),
                                 lambda: build(schema, topics=_partition_errors(schema, r.topics)))

    async def offset_delete(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        req = OffsetDeleteRequest(body.group_id, tuple((t.name, tuple(p.partition_index for p in t.partitions))
                                                       for t in body.topics))
        r = await self.ctx.wait(self.ctx.node.groups.offset_delete(req))
        schema = response_schema(request.api_key, request.api_version)
        return build(schema, error_code=code(r.error), topics=_partition_errors(schema, r.topics))

    async def offset_fetch(self, request: Request) -> ResponsePayload:
        body: Any = request.body
        schema = response_schema(request.api_key, request.api_version)
        require_stable = bool(getattr(body, "require_stable", False))
        if request.api_version < _OFFSET_FETCH_BATCHED_FROM:
            r = await self._fetch_one(body.group_id, body.topics, require_stable, None, -1)
            return build(schema, error_code=code(r.error), topics=self._fetched_topics(schema, r))
        group_type = item_type(schema, "groups")
        groups = []
        for g in body.groups:
            r = await self._fetch_one(g.group_id, g.topics, require_stable, getattr(g, "member_id", None),
                                      getattr(g, "member_epoch", -1))
            groups.append(build(group_type, group_id=g.group_id, error_code=code(r.error),
                                topics=self._fetched_topics(group_type, r)))
        return build(schema, groups=tuple(groups))

    async def _fetch_one(self, group_id: str, topics: Any, require_stable: bool, member_id: str | None,
                         member_epoch: int) -> OffsetFetchResponse:
        wanted = None if topics is None else tuple((t.name, tuple(t.partition_indexes)) for t in topics)
        req = OffsetFetchRequest(group_id, wanted, require_stable, member_id, member_epoch)
        return await self.ctx.wait(self.ctx.node.groups.offset_fetch(req))

    @staticmethod
    def _fetched_topics(parent: type[Any], r: OffsetFetchResponse) -> tuple[Any, ...]:
        topic_type = item_type(parent, "topics")
        partition_type = item_type(topic_type, "partitions")
        return tuple(build(topic_type, name=name, partitions=tuple(
            build(partition_type, partition_index=f.partition, committed_offset=f.offset,
                  committed_leader_epoch=f.leader_epoch, metadata=f.metadata, error_code=code(f.error))
            for f in fetched)) for name, fetched in r.topics)
