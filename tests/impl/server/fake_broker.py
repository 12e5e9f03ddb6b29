"""A test-only fake broker: just enough answers to walk real Kafka clients through their normal flows.

NOT a coordinator and not part of kcoord: every group has one member that is its own leader, every transaction
succeeds, fetches return no records. It exists to (1) get clients through bootstrap in wire-layer tests (the
minimal Metadata) and (2) record which (api key, version) each client sends (`RecordingBroker`), the data behind
`impl/server/CLIENT_VERSIONS.md`. The real handlers belong to the coordinator glue.
"""

from __future__ import annotations

import dataclasses
import datetime
import itertools
import types
import typing
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map
from kio.static.protocol import ResponsePayload

from kcoord.impl.server import HandlerRegistry, Request, VersionRange
from kcoord.impl.server.codec import kio_version_range
from kcoord.impl.server.responses import zero_entity

Fake = Callable[["FakeBroker", Request, type[typing.Any]], object]


def item_type(entity_type: type[typing.Any], field_name: str) -> type[typing.Any]:
    """The element type of a tuple field, or the struct type of an (optional) struct field."""
    field_type = {f.name: f.type for f in dataclasses.fields(entity_type)}[field_name]
    for candidate in (field_type, *typing.get_args(field_type)):
        if typing.get_origin(candidate) is tuple:
            return typing.cast(type, typing.get_args(candidate)[0])
        if isinstance(candidate, type) and dataclasses.is_dataclass(candidate):
            return candidate
    raise TypeError(f"{entity_type.__qualname__}.{field_name} is not a struct or an array of structs")


def build(entity_type: type[typing.Any], **values: object) -> typing.Any:
    """A kio entity with the given values for the fields this version has (others dropped) and zeros elsewhere."""
    names = {f.name for f in dataclasses.fields(entity_type)}
    return zero_entity(entity_type, **{k: v for k, v in values.items() if k in names})


def ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


@dataclass
class FakeBroker:
    """State of the fake: the address it tells clients, its topics, and what it saw."""

    host: str
    port: int
    topics: dict[str, int] = field(default_factory=lambda: {"t1": 3})
    seen: list[tuple[str | None, int, int]] = field(default_factory=list)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def topic_id(self, name: str) -> uuid.UUID:
        return self.topic_ids.setdefault(name, uuid.uuid5(uuid.NAMESPACE_OID, name))

    def next_id(self) -> int:
        return next(self._ids)


def _metadata(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    wanted = [t.name for t in body.topics] if body.topics is not None else sorted(broker.topics)
    for name in wanted:
        if name is not None:
            broker.topics.setdefault(name, 1)
    topic_type = item_type(schema, "topics")
    partition_type = item_type(topic_type, "partitions")
    topics = tuple(
        build(topic_type, name=name, topic_id=broker.topic_id(name), partitions=tuple(
            build(partition_type, partition_index=p, leader_id=0, replica_nodes=(0,), isr_nodes=(0,))
            for p in range(broker.topics[name])))
        for name in wanted if name is not None
    )
    brokers = (build(item_type(schema, "brokers"), node_id=0, host=broker.host, port=broker.port),)
    return build(schema, brokers=brokers, cluster_id="kcoord-test", controller_id=0, topics=topics)


def minimal_metadata_handler(broker: FakeBroker) -> Callable[[Request], typing.Awaitable[ResponsePayload]]:
    """Metadata (api key 3) naming one broker (ourselves) and every requested topic: enough for bootstrap."""

    async def handle(request: Request) -> ResponsePayload:
        schema = load_response_schema(request.api_key, request.api_version)
        return typing.cast(ResponsePayload, _metadata(broker, request, schema))

    return handle


def _find_coordinator(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    if "coordinators" not in {f.name for f in dataclasses.fields(schema)}:
        return build(schema, node_id=0, host=broker.host, port=broker.port)
    keys = body.coordinator_keys if hasattr(body, "coordinator_keys") else (body.key,)
    coordinator = item_type(schema, "coordinators")
    return build(schema, coordinators=tuple(
        build(coordinator, key=k, node_id=0, host=broker.host, port=broker.port) for k in keys))


def _init_producer_id(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    return build(schema, producer_id=broker.next_id(), producer_epoch=0)


def _join_group(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    member_id = body.member_id or f"member-{broker.next_id()}"
    protocol = body.protocols[0]
    member = build(item_type(schema, "members"), member_id=member_id, metadata=protocol.metadata)
    return build(schema, generation_id=1, protocol_type=body.protocol_type, protocol_name=protocol.name,
                 leader=member_id, member_id=member_id, members=(member,))


def _sync_group(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    mine = [a.assignment for a in body.assignments if a.member_id == body.member_id]
    return build(schema, protocol_type=getattr(body, "protocol_type", None),
                 protocol_name=getattr(body, "protocol_name", None), assignment=mine[0] if mine else b"")


def _echo_partitions(schema: type[typing.Any], topics: Iterable[typing.Any], **partition_values: object) -> object:
    """Answer `topics[name, partitions[partition_index]]` requests (ListOffsets, OffsetCommit, TxnOffsetCommit)."""
    topic_type = item_type(schema, "topics")
    partition_type = item_type(topic_type, "partitions")
    return build(schema, topics=tuple(
        build(topic_type, name=t.name, partitions=tuple(
            build(partition_type, partition_index=p.partition_index, **partition_values) for p in t.partitions))
        for t in topics))


def _produce(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object | None:
    body: typing.Any = request.body
    if body.acks == 0:
        return None
    topic_type = item_type(schema, "responses")
    partition_type = item_type(topic_type, "partition_responses")
    return build(schema, responses=tuple(
        build(topic_type, name=t.name, partition_responses=tuple(
            build(partition_type, index=p.index, base_offset=0, log_start_offset=0)
            for p in t.partition_data))
        for t in body.topic_data))


def _list_offsets(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    return _echo_partitions(schema, body.topics, offset=0, timestamp=-1)


def _offset_commit(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    return _echo_partitions(schema, body.topics)


def _add_partitions_to_txn(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    topic_type = item_type(schema, "results_by_topic_v3_and_below")
    partition_type = item_type(topic_type, "results_by_partition")
    return build(schema, results_by_topic_v3_and_below=tuple(
        build(topic_type, name=t.name, results_by_partition=tuple(
            build(partition_type, partition_index=p) for p in t.partitions))
        for t in body.v3_and_below_topics))


def _consumer_group_heartbeat(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    member_id = body.member_id or str(uuid.uuid4())
    if body.member_epoch == -1:
        return build(schema, member_id=member_id, member_epoch=-1, heartbeat_interval=ms(1000))
    assignment_type = item_type(schema, "assignment")
    tp_type = item_type(assignment_type, "topic_partitions")
    names = body.subscribed_topic_names or tuple(broker.topics)
    assignment = build(assignment_type, topic_partitions=tuple(
        build(tp_type, topic_id=broker.topic_id(n), partitions=tuple(range(broker.topics.get(n, 1))))
        for n in names))
    return build(schema, member_id=member_id, member_epoch=body.member_epoch + 1, heartbeat_interval=ms(1000),
                 assignment=assignment)


def _describe_groups(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    group_type = item_type(schema, "groups")
    return build(schema, groups=tuple(build(group_type, group_id=g, group_state="Empty", protocol_type="consumer")
                                      for g in body.groups))


def _offset_fetch_topics(topic_type: type[typing.Any], topics: typing.Any) -> tuple[object, ...]:
    partition_type = item_type(topic_type, "partitions")
    return tuple(
        build(topic_type, name=t.name, partitions=tuple(
            build(partition_type, partition_index=p, committed_offset=-1, committed_leader_epoch=-1)
            for p in t.partition_indexes))
        for t in topics or ())


def _offset_fetch(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    if not hasattr(body, "groups"):
        return build(schema, topics=_offset_fetch_topics(item_type(schema, "topics"), body.topics))
    group_type = item_type(schema, "groups")
    topic_type = item_type(group_type, "topics")
    return build(schema, groups=tuple(
        build(group_type, group_id=g.group_id, topics=_offset_fetch_topics(topic_type, g.topics))
        for g in body.groups))


def _consumer_group_describe(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    body: typing.Any = request.body
    group_type = item_type(schema, "groups")
    return build(schema, groups=tuple(
        build(group_type, group_id=g, error_code=ErrorCode.group_id_not_found) for g in body.group_ids))


def _describe_cluster(broker: FakeBroker, request: Request, schema: type[typing.Any]) -> object:
    brokers = (build(item_type(schema, "brokers"), broker_id=0, host=broker.host, port=broker.port),)
    return build(schema, cluster_id="kcoord-test", controller_id=0, brokers=brokers)


FAKES: types.MappingProxyType[int, Fake] = types.MappingProxyType({
    0: _produce,
    2: _list_offsets,
    3: _metadata,
    8: _offset_commit,
    9: _offset_fetch,
    10: _find_coordinator,
    11: _join_group,
    14: _sync_group,
    15: _describe_groups,
    22: _init_producer_id,
    24: _add_partitions_to_txn,
    28: _offset_commit,
    60: _describe_cluster,
    68: _consumer_group_heartbeat,
    69: _consumer_group_describe,
})


def recording_registry(broker: FakeBroker, api_keys: Iterable[int] | None = None) -> HandlerRegistry:
    """A registry answering every kio API (or `api_keys`) at every kio version; each call is recorded."""
    registry = HandlerRegistry()
    for api_key in sorted(api_keys if api_keys is not None else api_key_map):
        if api_key == 18:
            continue
        versions = kio_version_range(api_key)
        assert versions is not None
        registry.register(api_key, _recording_handler(broker), VersionRange(*versions))
    return registry


def _recording_handler(broker: FakeBroker) -> Callable[[Request], typing.Awaitable[ResponsePayload | None]]:
    async def handle(request: Request) -> ResponsePayload | None:
        broker.seen.append((request.client_id, request.api_key, request.api_version))
        schema = load_response_schema(request.api_key, request.api_version)
        fake = FAKES.get(request.api_key)
        if fake is None:
            return typing.cast(ResponsePayload, zero_entity(schema))
        return typing.cast(ResponsePayload | None, fake(broker, request, schema))

    return handle
