"""Server-side ``uniform`` assignor (KIP-848 default; ``UniformAssignor`` and its homogeneous builder).

Dispatch: the homogeneous builder below when every member subscribes to the same topics, else the heterogeneous
builder (:mod:`.uniform_heterogeneous`). An empty group, or a homogeneous group subscribed to nothing, gets
empty assignments. A subscription to a topic id the describer does not know raises
:class:`~.server.PartitionAssignorError`.

Homogeneous builder. With N members and P partitions over the subscribed topics, members get quotas
``P // N + 1`` (the first ``P % N`` members in :meth:`GroupSpec.member_order`) or ``P // N`` (the rest). In that
order, each member keeps its current partitions of subscribed topics up to its quota (topics in Kafka ``Uuid``
order, partitions ascending; the rest are revoked); then the partitions nobody holds — unassigned ones in topic
order (Java ``HashSet<Uuid>`` order of the subscription), then the revoked ones — fill the members below quota,
in member order.

Guarantees (homogeneous):

* every partition of the subscribed topics is assigned to exactly one member; counts differ by at most one;
* stickiness: a member keeps ``min(c, quota)`` of its ``c`` current partitions of subscribed topics, so at least
  ``min(c, P // N)``; only partitions above a member's quota, of departed members, or new partitions move, and an
  assignment that already meets the quotas is returned unchanged;
* the result does not depend on rack ids (Kafka's uniform assignor at the reference snapshot is not rack-aware).

Not promised: *which* members get the ``+1`` (it follows hash order, not current counts), so a member holding
``P // N + 1`` may give one up while another member gains one.

Fidelity: identical to Kafka's ``UniformHomogeneousAssignmentBuilder`` whenever Kafka's per-member partition sets
iterate in ascending order (true when partition numbers are below the set's hash table capacity, at least 16)
and its per-member topic maps iterate in ``Uuid`` order; otherwise Kafka keeps a different subset of the same size.
"""

from __future__ import annotations

import uuid

from ..errors import IllegalStateError
from ._java import hash_map_order, hash_set_copy_capacity, uuid_hash, uuid_sort_key
from .server import (
    GroupSpec,
    PartitionAssignorError,
    SubscribedTopicDescriber,
    SubscriptionType,
    TargetAssignment,
    freeze,
)
from .uniform_heterogeneous import assign_heterogeneous


class UniformAssignor:
    name = "uniform"

    def assign(self, group_spec: GroupSpec, topics: SubscribedTopicDescriber) -> TargetAssignment:
        if not group_spec.members:
            return {}
        if group_spec.subscription_type is SubscriptionType.HOMOGENEOUS:
            return assign_homogeneous(group_spec, topics)
        return assign_heterogeneous(group_spec, topics)


def subscribed_topic_order(topic_ids: frozenset[uuid.UUID]) -> list[uuid.UUID]:
    """Iteration order of ``new HashSet<>(subscribedTopicIds)``, fed in ``Uuid`` order."""
    source = sorted(topic_ids, key=uuid_sort_key)
    return hash_map_order(source, uuid_hash, hash_set_copy_capacity(len(source)))


def assign_homogeneous(group_spec: GroupSpec, topics: SubscribedTopicDescriber) -> TargetAssignment:
    members = group_spec.member_order()
    subscribed = group_spec.members[members[0]].subscribed_topic_ids
    if not subscribed:
        return {member: {} for member in members}

    unassigned: list[tuple[uuid.UUID, int]] = []
    total = 0
    for topic_id in subscribed_topic_order(subscribed):
        num_partitions = topics.num_partitions(topic_id)
        if num_partitions < 0:
            raise PartitionAssignorError(f"members subscribe to topic {topic_id}, which has no metadata")
        unassigned.extend(
            (topic_id, p) for p in range(num_partitions) if not group_spec.is_partition_assigned(topic_id, p)
        )
        total += num_partitions

    min_quota, extra = divmod(total, len(members))
    target: dict[str, dict[uuid.UUID, list[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(members):
        quota = min_quota + (1 if index < extra else 0)
        kept: dict[uuid.UUID, list[int]] = {}
        current = group_spec.members[member].assignment
        for topic_id in sorted(current, key=uuid_sort_key):
            if topic_id not in subscribed:
                continue
            # Partitions beyond the topic's count cannot exist in Kafka (counts only grow); drop them.
            partitions = sorted(p for p in current[topic_id] if p < topics.num_partitions(topic_id))
            keep = min(quota, len(partitions))
            kept[topic_id] = partitions[:keep]
            unassigned.extend((topic_id, p) for p in partitions[keep:])
            quota -= keep
        if quota > 0:
            unfilled.append((member, quota))
        target[member] = kept

    cursor = 0
    for member, remaining in unfilled:
        for topic_id, partition in unassigned[cursor : cursor + remaining]:
            target[member].setdefault(topic_id, []).append(partition)
        cursor += remaining
    if cursor < len(unassigned):
        # Quotas add up to the partition count and a GroupSpec holds no partition twice, so this is our bug.
        raise IllegalStateError(f"{len(unassigned) - cursor} partitions were left unassigned")
    return freeze(target)
