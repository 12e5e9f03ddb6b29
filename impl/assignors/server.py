"""Types for the KIP-848 server-side assignors (``org.apache.kafka.coordinator.group.api.assignor``).

The group coordinator computes a *target assignment* whenever the group epoch moves: it hands the assignor a
:class:`GroupSpec` (every member's subscribed topic ids, instance id, rack and current target assignment) and a
:class:`SubscribedTopicDescriber` (partition counts by topic id), and gets back, for every member, a map
``topic id -> frozenset of partitions`` (:data:`TargetAssignment`). Reconciling members towards it
(revoke before assign) is the coordinator's job, not the assignor's.

Member order: Kafka's ``GroupSpecImpl`` holds members in a ``java.util.HashMap``, and the uniform assignor's
tie-breaks follow its iteration order; :meth:`GroupSpec.member_order` reproduces it (see :mod:`._java`), with the
order of ``GroupSpec.members`` standing in for the insertion order Kafka's member table would give.

Owns: data types and the assignor interface. Imports: :mod:`._java` only.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ._java import string_hash_map_order

TargetAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]
"""member id -> topic id -> partitions. Every member of the spec has an entry; topics with no partition are absent."""


class PartitionAssignorError(Exception):
    """``PartitionAssignorException``: the assignor cannot produce an assignment (e.g. an unknown topic id)."""


class SubscriptionType(enum.Enum):
    HOMOGENEOUS = "Homogeneous"
    HETEROGENEOUS = "Heterogeneous"


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as the assignor sees it (``MemberSubscriptionAndAssignmentImpl``)."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None

    @staticmethod
    def of(
        subscribed_topic_ids: Iterable[uuid.UUID],
        assignment: Mapping[uuid.UUID, Iterable[int]] | None = None,
        *,
        instance_id: str | None = None,
        rack_id: str | None = None,
    ) -> MemberSpec:
        return MemberSpec(
            subscribed_topic_ids=frozenset(subscribed_topic_ids),
            assignment={t: frozenset(ps) for t, ps in (assignment or {}).items() if ps},
            instance_id=instance_id,
            rack_id=rack_id,
        )


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    name: str
    num_partitions: int
    # partition -> racks of its replicas; unused by the assignors here (Kafka's at [S] are not rack-aware either).
    partition_racks: Mapping[int, frozenset[str]] = field(default_factory=dict)


class SubscribedTopicDescriber:
    """Partition counts (and racks) of the subscribed topics, by topic id (``SubscribedTopicDescriberImpl``)."""

    __slots__ = ("_by_id", "_by_name")

    def __init__(self, topics: Iterable[TopicMetadata]) -> None:
        self._by_id = {t.topic_id: t for t in topics}
        self._by_name = {t.name: t.topic_id for t in self._by_id.values()}

    def num_partitions(self, topic_id: uuid.UUID) -> int:
        """The partition count, or -1 for an unknown topic id (Kafka's convention)."""
        metadata = self._by_id.get(topic_id)
        return -1 if metadata is None else metadata.num_partitions

    def racks_for_partition(self, topic_id: uuid.UUID, partition: int) -> frozenset[str]:
        metadata = self._by_id.get(topic_id)
        return frozenset() if metadata is None else metadata.partition_racks.get(partition, frozenset())

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        metadata = self._by_id.get(topic_id)
        return None if metadata is None else metadata.name

    def resolve(self, names: Iterable[str]) -> frozenset[uuid.UUID]:
        """Topic ids of the given names; unknown names are skipped, as Kafka's ``TopicIds`` does."""
        return frozenset(self._by_name[n] for n in names if n in self._by_name)


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The group as the assignor sees it (``GroupSpecImpl``).

    ``subscription_type`` defaults to HOMOGENEOUS exactly when every member subscribes to the same topic ids.
    Kafka decides it from subscribed topic *names*, which can differ only by topics that do not exist; a caller
    that wants that may pass HETEROGENEOUS explicitly. Passing HOMOGENEOUS for differing subscriptions is an error.
    Raises ValueError if two members' current assignments share a partition.
    """

    members: Mapping[str, MemberSpec]
    subscription_type: SubscriptionType | None = None
    _owners: dict[uuid.UUID, dict[int, str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owners: dict[uuid.UUID, dict[int, str]] = {}
        for member_id, member in self.members.items():
            for topic_id, partitions in member.assignment.items():
                per_topic = owners.setdefault(topic_id, {})
                for p in partitions:
                    other = per_topic.setdefault(p, member_id)
                    if other != member_id:
                        raise ValueError(f"partition {topic_id}-{p} is assigned to both {other!r} and {member_id!r}")
        object.__setattr__(self, "_owners", owners)
        homogeneous = len({m.subscribed_topic_ids for m in self.members.values()}) <= 1
        if self.subscription_type is None:
            kind = SubscriptionType.HOMOGENEOUS if homogeneous else SubscriptionType.HETEROGENEOUS
            object.__setattr__(self, "subscription_type", kind)
        elif self.subscription_type is SubscriptionType.HOMOGENEOUS and not homogeneous:
            raise ValueError("subscription_type HOMOGENEOUS, but members subscribe to different topics")

    def member_order(self) -> list[str]:
        """``groupSpec.memberIds()`` iteration order: Java ``HashMap<String, ...>`` order (see :mod:`._java`)."""
        return string_hash_map_order(self.members)

    def is_partition_assigned(self, topic_id: uuid.UUID, partition: int) -> bool:
        """Whether some member's current assignment holds the partition."""
        return partition in self._owners.get(topic_id, {})


class ServerAssignor(Protocol):
    """``ConsumerGroupPartitionAssignor``."""

    @property
    def name(self) -> str: ...

    def assign(self, group_spec: GroupSpec, topics: SubscribedTopicDescriber) -> TargetAssignment: ...


def freeze(assignment: Mapping[str, Mapping[uuid.UUID, Iterable[int]]]) -> TargetAssignment:
    """Normalise a working assignment into :data:`TargetAssignment` (drop empty topics)."""
    return {
        member: {t: frozenset(ps) for t, ps in topics.items() if ps}
        for member, topics in assignment.items()
    }
