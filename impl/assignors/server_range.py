"""Server-side ``range`` assignor (KIP-848; ``org.apache.kafka.coordinator.group.assignor.RangeAssignor``).

Members are ordered: those with an instance id first, by instance id; then the others by member id (Java string
order). Per topic, with P partitions and S subscribers, the subscribers in that order receive consecutive ranges,
``P // S`` each and one more for the first ``P % S``.

Guarantees:

* every partition of a subscribed topic goes to exactly one of its subscribers; per topic, counts differ by at most
  one; across topics nothing is promised (the same members receive every topic's extra partition);
* co-partitioning: when all members subscribe to the same topics and the topics have equal partition counts, each
  member receives the same partition numbers of every topic;
* the result ignores current assignments (no stickiness beyond determinism): it is a function of the members'
  order and subscriptions, so with static members it survives restarts that keep instance ids, while a member
  joining or leaving shifts every range after its position.
"""

from __future__ import annotations

import uuid

from ._java import string_sort_key
from .server import (
    GroupSpec,
    PartitionAssignorError,
    SubscribedTopicDescriber,
    TargetAssignment,
)


def member_sort_key(member_id: str, instance_id: str | None) -> tuple[int, bytes]:
    if instance_id is not None:
        return (0, string_sort_key(instance_id))
    return (1, string_sort_key(member_id))


class ServerRangeAssignor:
    name = "range"

    def assign(self, group_spec: GroupSpec, topics: SubscribedTopicDescriber) -> TargetAssignment:
        members = sorted(
            group_spec.members, key=lambda m: member_sort_key(m, group_spec.members[m].instance_id)
        )
        subscribers: dict[uuid.UUID, int] = {}
        for member_id in members:
            for topic_id in group_spec.members[member_id].subscribed_topic_ids:
                if topics.num_partitions(topic_id) < 0:
                    raise PartitionAssignorError(f"member {member_id!r} subscribes to unknown topic {topic_id}")
                subscribers[topic_id] = subscribers.get(topic_id, 0) + 1

        next_start = dict.fromkeys(subscribers, 0)
        extra_left = {t: topics.num_partitions(t) % n for t, n in subscribers.items()}
        out: TargetAssignment = {}
        for member_id in members:
            assignment: dict[uuid.UUID, frozenset[int]] = {}
            for topic_id in group_spec.members[member_id].subscribed_topic_ids:
                num_partitions = topics.num_partitions(topic_id)
                quota = num_partitions // subscribers[topic_id]
                if extra_left[topic_id] > 0:
                    quota += 1
                    extra_left[topic_id] -= 1
                start = next_start[topic_id]
                end = min(start + quota, num_partitions)
                next_start[topic_id] = end
                if start < end:
                    assignment[topic_id] = frozenset(range(start, end))
            out[member_id] = assignment
        return out
