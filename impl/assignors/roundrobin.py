"""Classic ``roundrobin`` assignor (``org.apache.kafka.clients.consumer.RoundRobinAssignor``, eager).

Algorithm: list every partition of every subscribed topic, topics in Java string order and partitions ascending;
order the members by ``MemberInfo`` order (static members first by instance id, then member id); walk the
partitions, giving each to the next member in a circular walk, skipping (and so passing over) members not
subscribed to the partition's topic.

Guarantees:

* Every partition of every subscribed topic (with metadata) goes to exactly one subscriber of that topic.
* When all members subscribe to the same topics, counts differ by at most one. With different subscriptions there
  is no balance promise (``RoundRobinAssignor``'s own example ends 1 / 1 / 4).
* Stickiness: none is attempted. With identical subscriptions and static members the result depends only on the
  instance ids and the topics, so it survives restarts that keep instance ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._java import string_hash_map_order, string_sort_key
from .classic import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    assignable_topics,
    member_sort_key,
    to_assignments,
)


class RoundRobinAssignor:
    name = "roundrobin"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        topics = assignable_topics(partitions_per_topic, subscriptions)
        raw: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        if not topics:
            return to_assignments(raw)
        members = sorted(
            string_hash_map_order(subscriptions),
            key=lambda m: member_sort_key(m, subscriptions[m].group_instance_id),
        )
        member_topics = [frozenset(subscriptions[m].topics) for m in members]
        cursor = 0
        for topic in sorted(topics, key=string_sort_key):
            for partition in range(topics[topic]):
                # Terminates: the topic is in `topics` only because some member subscribes to it.
                while topic not in member_topics[cursor]:
                    cursor = (cursor + 1) % len(members)
                raw[members[cursor]].append(TopicPartition(topic, partition))
                cursor = (cursor + 1) % len(members)
        return to_assignments(raw)

    def subscription_user_data(self, assigned: Sequence[TopicPartition] | None, generation_id: int) -> bytes | None:
        return None
