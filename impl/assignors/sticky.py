"""Classic ``sticky`` assignor (``org.apache.kafka.clients.consumer.StickyAssignor``, eager, KIP-54).

Each member reports its previous assignment and generation in its subscription *user data* (schema
``StickyAssignorUserData`` v1: ``previous_assignment [topic string, partitions [int32]]``, ``generation int32``;
v0 lacks the generation). The eager protocol revokes everything before JoinGroup, so the subscription's
``owned_partitions`` field is empty and ignored. The algorithm itself is :mod:`._sticky`.

A member's *valid claims* are the partitions its user data lists, minus those also claimed by a member of a higher
generation (that member keeps them) or of the same generation (nobody keeps them).

Guarantees when all members subscribe to the same topics (the constrained builder), with N members and P partitions:

* every partition of the subscribed topics is assigned exactly once; every member gets ``P // N`` or ``P // N + 1``;
* a member keeps ``min(valid claims, P // N)`` of its valid claims, and ``min(valid claims, P // N + 1)`` if it is
  among the first ``P % N`` members, in Java HashMap order, whose valid claims reach ``P // N + 1``; so only
  surplus partitions, contested ones and those of departed members move;
* an assignment that already has these counts is returned unchanged (a fixed point).

Guarantees when subscriptions differ (the general builder): every partition of a subscribed topic goes to exactly
one of its subscribers; the result is "balanced" only in the weaker sense of :mod:`._sticky_general` (no member
could take a partition of one of its topics from a member holding two or more more); a valid claim stays with its
owner unless the owner unsubscribed from the topic, or a move towards that balance takes it (preferring to hand
it back to its owner from an older generation). Counts within one are *not* promised.

Not promised: the same result as ``range`` or ``roundrobin`` on a fresh group; anything for a member whose user
data cannot be parsed (it is treated as owning nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import _wire
from ._java import string_hash_map_order
from ._sticky import MemberData, sticky_assign
from .classic import (
    DEFAULT_GENERATION,
    Assignment,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    assignable_topics,
    to_assignments,
)


def encode_user_data(partitions: Sequence[TopicPartition], generation: int) -> bytes:
    """``StickyAssignor.serializeTopicPartitionAssignment`` (always v1). Topics are written in the order Java's
    ``CollectionUtils.groupPartitionsByTopic`` HashMap yields them, so the bytes equal Java's."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [_wire.int32(len(by_topic))]
    for topic in string_hash_map_order(by_topic):
        out.append(_wire.string(topic))
        out.append(_wire.int32(len(by_topic[topic])))
        out.extend(_wire.int32(p) for p in by_topic[topic])
    out.append(_wire.int32(generation))
    return b"".join(out)


def _read_topic(reader: _wire.Reader) -> list[TopicPartition]:
    topic = reader.string()
    return [TopicPartition(topic, p) for p in reader.array(_wire.Reader.int32)]


def decode_user_data(data: bytes | None) -> MemberData:
    """``StickyAssignor.memberData``: v1, else v0 (no generation), else "nothing owned, generation -1"."""
    if not data:
        return MemberData((), None)
    try:
        reader = _wire.Reader(data)
        topics = reader.array(_read_topic)
        generation: int | None = reader.int32()
    except _wire.WireError:
        try:
            topics = _wire.Reader(data).array(_read_topic)
            generation = None
        except _wire.WireError:
            return MemberData((), DEFAULT_GENERATION)
    return MemberData(tuple(tp for topic in topics for tp in topic), generation)


def _member_data(subscription: Subscription) -> MemberData:
    return decode_user_data(subscription.user_data)


class StickyAssignor:
    name = "sticky"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        if not subscriptions:
            return {}
        topics = assignable_topics(partitions_per_topic, subscriptions)
        return to_assignments(sticky_assign(topics, subscriptions, _member_data).assignment)

    def subscription_user_data(self, assigned: Sequence[TopicPartition] | None, generation_id: int) -> bytes | None:
        """Java sends no user data until the member's first assignment, then its last assignment + generation."""
        if assigned is None:
            return None
        return encode_user_data(assigned, generation_id)
