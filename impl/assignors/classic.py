"""Types shared by the classic (client-side) assignors: what a member subscribes with and what it is assigned.

In the classic protocol the group leader runs the assignor: it receives every member's
``ConsumerProtocolSubscription`` (decoded into :class:`Subscription`) and the partition count of every topic, and
returns one :class:`Assignment` per member, which SyncGroup carries back. These are the Python counterparts of
``ConsumerPartitionAssignor.Subscription`` / ``Assignment`` and of ``AbstractPartitionAssignor.assign``.

Conventions, the same for every classic assignor here:

* ``assign(partitions_per_topic, subscriptions)`` is ``AbstractPartitionAssignor.assign(Cluster, GroupSubscription)``
  without the ``Cluster``: topics nobody subscribes to, and topics with no partitions, are dropped first, exactly
  as Java drops topics without metadata; a subscribed topic missing from ``partitions_per_topic`` is skipped.
* Every subscribed member gets an entry in the result, possibly empty.
* Result partitions are sorted (topic in Java string order, then partition number). Java returns them in the
  order it happened to assign them; the set is the same, and the consumer protocol does not depend on the order.
* Strings compare as Java compares them (UTF-16 code units), see :mod:`._java`.

Owns: the data types and the classic assignor interface. Imports: :mod:`._java` only.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from ._java import string_sort_key

DEFAULT_GENERATION = -1
"""Generation id meaning "none" (``AbstractStickyAssignor.DEFAULT_GENERATION``)."""


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class RebalanceProtocol(enum.IntEnum):
    """``ConsumerPartitionAssignor.RebalanceProtocol`` (KIP-429)."""

    EAGER = 0
    COOPERATIVE = 1


@dataclass(frozen=True, slots=True)
class Subscription:
    """One member's JoinGroup metadata, decoded (``ConsumerPartitionAssignor.Subscription``).

    ``owned_partitions`` (protocol v1+), ``generation_id`` (v2+, ``-1`` when absent) and ``rack_id`` (v3+) come
    from the subscription bytes; ``group_instance_id`` comes from the JoinGroup response member, not the bytes.
    """

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = DEFAULT_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None

    @staticmethod
    def of(
        topics: Iterable[str],
        *,
        user_data: bytes | None = None,
        owned_partitions: Iterable[tuple[str, int]] = (),
        generation_id: int = DEFAULT_GENERATION,
        rack_id: str | None = None,
        group_instance_id: str | None = None,
    ) -> Subscription:
        """Build from any iterables (tests and simulated clients)."""
        return Subscription(
            topics=tuple(topics),
            user_data=user_data,
            owned_partitions=tuple(TopicPartition(t, p) for t, p in owned_partitions),
            generation_id=generation_id,
            rack_id=rack_id,
            group_instance_id=group_instance_id,
        )


@dataclass(frozen=True, slots=True)
class Assignment:
    """One member's SyncGroup assignment (``ConsumerPartitionAssignor.Assignment``)."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = field(default=None)

    def by_topic(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for tp in self.partitions:
            out.setdefault(tp.topic, []).append(tp.partition)
        return out


class ClassicAssignor(Protocol):
    """What the group leader's consumer calls (``ConsumerPartitionAssignor``), minus hidden member-side state.

    Java assignors remember the member's last assignment and generation between rebalances; here the caller
    passes them to :meth:`subscription_user_data` explicitly.
    """

    @property
    def name(self) -> str: ...

    @property
    def supported_protocols(self) -> tuple[RebalanceProtocol, ...]: ...

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]: ...

    def subscription_user_data(
        self, assigned: Sequence[TopicPartition] | None, generation_id: int
    ) -> bytes | None: ...


def assignable_topics(
    partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
) -> dict[str, int]:
    """The topics ``AbstractPartitionAssignor.assign(Cluster, ...)`` passes on: subscribed, with partitions."""
    subscribed: set[str] = set()
    for subscription in subscriptions.values():
        subscribed.update(subscription.topics)
    return {t: n for t, n in partitions_per_topic.items() if t in subscribed and n > 0}


def member_sort_key(member_id: str, group_instance_id: str | None) -> tuple[int, bytes]:
    """``AbstractPartitionAssignor.MemberInfo.compareTo``: static members first by instance id, then member id."""
    if group_instance_id is not None:
        return (0, string_sort_key(group_instance_id))
    return (1, string_sort_key(member_id))


def partition_sort_key(tp: TopicPartition) -> tuple[bytes, int]:
    """Topic (Java string order), then partition number."""
    return (string_sort_key(tp.topic), tp.partition)


def to_assignments(raw: Mapping[str, Iterable[TopicPartition]]) -> dict[str, Assignment]:
    return {member: Assignment(tuple(sorted(parts, key=partition_sort_key))) for member, parts in raw.items()}
