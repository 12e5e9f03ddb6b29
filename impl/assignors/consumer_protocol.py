"""The consumer protocol's embedded bytes: ``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment`` v0-v3.

Classic consumers put a version-prefixed subscription in each JoinGroup protocol's ``metadata`` and the leader puts
a version-prefixed assignment in each SyncGroup ``assignment``. Layout (non-flexible; int16 version first):

* subscription: ``topics [string]``, ``user_data nullable bytes``, v1+ ``owned_partitions [topic, [int32]]``,
  v2+ ``generation_id int32`` (default -1), v3+ ``rack_id nullable string``;
* assignment: ``assigned_partitions [topic, [int32]]``, ``user_data nullable bytes`` (v1-v3 add nothing; they
  exist to stay in step with the subscription).

Encoding follows Java's ``ConsumerProtocol``: topics and owned partitions are written sorted (Java string order,
then partition), assigned partitions grouped by topic in first-seen order. Decoding also follows it: a version
above 3 is read as v3 (newer versions only append fields), trailing bytes are ignored, an empty rack id reads as
none, a negative version is an error. The field codec is kio's. One difference: Java substitutes U+FFFD for
malformed UTF-8, kio (and so this module) rejects it.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from kio.schema.consumer_protocol_assignment.v0 import data as assignment_v0
from kio.schema.consumer_protocol_assignment.v1 import data as assignment_v1
from kio.schema.consumer_protocol_assignment.v2 import data as assignment_v2
from kio.schema.consumer_protocol_assignment.v3 import data as assignment_v3
from kio.schema.consumer_protocol_subscription.v0 import data as subscription_v0
from kio.schema.consumer_protocol_subscription.v1 import data as subscription_v1
from kio.schema.consumer_protocol_subscription.v2 import data as subscription_v2
from kio.schema.consumer_protocol_subscription.v3 import data as subscription_v3
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.primitive import i32

from ._java import string_sort_key
from .classic import DEFAULT_GENERATION, Assignment, Subscription, TopicPartition

LOWEST_VERSION = 0
HIGHEST_VERSION = 3
PROTOCOL_TYPE = "consumer"

_VERSION = struct.Struct(">h")
_SUBSCRIPTION_MODULES: tuple[Any, ...] = (subscription_v0, subscription_v1, subscription_v2, subscription_v3)
_ASSIGNMENT_MODULES: tuple[Any, ...] = (assignment_v0, assignment_v1, assignment_v2, assignment_v3)


class ConsumerProtocolError(ValueError):
    """Bytes that are not a valid consumer-protocol subscription or assignment (Java: ``SchemaException``)."""


def _check_version(version: int) -> int:
    """Java's ``checkSubscriptionVersion``: reject below the lowest, read anything newer as the highest."""
    if version < LOWEST_VERSION:
        raise ConsumerProtocolError(f"unsupported consumer protocol version {version} (lowest is {LOWEST_VERSION})")
    return min(version, HIGHEST_VERSION)


def _group(partitions: tuple[TopicPartition, ...] | list[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


def _write(entity: Any, version: int) -> bytes:
    buffer = io.BytesIO()
    buffer.write(_VERSION.pack(version))
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def _read(data: bytes, modules: tuple[Any, ...], name: str) -> tuple[int, Any]:
    if len(data) < _VERSION.size:
        raise ConsumerProtocolError(f"{name}: {len(data)} bytes is too short for the version header")
    version = _check_version(_VERSION.unpack_from(data)[0])
    entity_type = getattr(modules[version], name)
    try:
        entity, _size = entity_reader(entity_type)(data[_VERSION.size :], 0)
    except SerialError as exc:
        raise ConsumerProtocolError(f"malformed {name} v{version}: {exc}") from exc
    return version, entity


def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """``ConsumerProtocol.serializeSubscription``. ``group_instance_id`` is not part of the bytes."""
    version = _check_version(version)
    module = _SUBSCRIPTION_MODULES[version]
    fields: dict[str, Any] = {
        "topics": tuple(sorted(subscription.topics, key=string_sort_key)),
        "user_data": subscription.user_data,
    }
    if version >= 1:
        owned = sorted(subscription.owned_partitions, key=lambda tp: (string_sort_key(tp.topic), tp.partition))
        fields["owned_partitions"] = tuple(
            module.TopicPartition(topic=TopicName(topic), partitions=tuple(i32(p) for p in partitions))
            for topic, partitions in _group(owned).items()
        )
    if version >= 2:
        fields["generation_id"] = i32(subscription.generation_id)
    if version >= 3:
        fields["rack_id"] = subscription.rack_id
    return _write(module.ConsumerProtocolSubscription(**fields), version)


def decode_subscription(data: bytes, group_instance_id: str | None = None) -> Subscription:
    """``ConsumerProtocol.deserializeSubscription``; the instance id comes from the JoinGroup member, not the bytes."""
    version, entity = _read(data, _SUBSCRIPTION_MODULES, "ConsumerProtocolSubscription")
    owned: tuple[TopicPartition, ...] = ()
    if version >= 1:
        owned = tuple(TopicPartition(tp.topic, p) for tp in entity.owned_partitions for p in tp.partitions)
    generation = int(entity.generation_id) if version >= 2 else DEFAULT_GENERATION
    rack = entity.rack_id if version >= 3 and entity.rack_id else None
    return Subscription(
        topics=tuple(entity.topics),
        user_data=entity.user_data,
        owned_partitions=owned,
        generation_id=generation if generation >= 0 else DEFAULT_GENERATION,
        rack_id=rack,
        group_instance_id=group_instance_id,
    )


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """``ConsumerProtocol.serializeAssignment``: partitions grouped by topic, topics in first-seen order."""
    version = _check_version(version)
    module = _ASSIGNMENT_MODULES[version]
    entity = module.ConsumerProtocolAssignment(
        assigned_partitions=tuple(
            module.TopicPartition(topic=TopicName(topic), partitions=tuple(i32(p) for p in partitions))
            for topic, partitions in _group(assignment.partitions).items()
        ),
        user_data=assignment.user_data,
    )
    return _write(entity, version)


def decode_assignment(data: bytes) -> Assignment:
    """``ConsumerProtocol.deserializeAssignment``."""
    _version, entity = _read(data, _ASSIGNMENT_MODULES, "ConsumerProtocolAssignment")
    return Assignment(
        partitions=tuple(TopicPartition(tp.topic, p) for tp in entity.assigned_partitions for p in tp.partitions),
        user_data=entity.user_data,
    )
