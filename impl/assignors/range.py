"""Classic ``range`` assignor (``org.apache.kafka.clients.consumer.RangeAssignor``, eager).

Algorithm, per topic, independently: order the topic's subscribers by ``MemberInfo`` order (members with a
``group.instance.id`` first, by instance id; then the others by member id; Java string order), lay the partitions
out 0..P-1, and hand out contiguous ranges: with C subscribers, each gets ``P // C`` partitions and the first
``P % C`` subscribers one more.

Guarantees:

* Every partition of every subscribed topic (with metadata) goes to exactly one subscriber of that topic.
* Per topic, the subscribers' counts differ by at most one. Across topics there is **no** balance promise: the same
  members get the extra partition of every topic, so with T topics two members can differ by T partitions.
* Co-partitioning: topics with the same partition count and the same set of subscribers are split identically,
  so each of those subscribers gets the same partition numbers of each such topic.
* Stickiness: none is attempted (previously owned partitions are ignored). The result is a pure function of the
  ordered subscriber list per topic, so it is stable while membership is: with static members (instance ids) it
  survives member-id changes; a joining or leaving member shifts the ranges after its position.

Not implemented: the rack-aware variant (KIP-881). It needs replica racks per partition, which this interface
(partition counts only) does not carry; Java also skips it in that case (``assign(Map<String, Integer>, ...)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._java import string_hash_map_order
from .classic import (
    Assignment,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
    assignable_topics,
    member_sort_key,
    to_assignments,
)


class RangeAssignor:
    name = "range"
    supported_protocols = (RebalanceProtocol.EAGER,)

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        topics = assignable_topics(partitions_per_topic, subscriptions)
        # Java collects subscribers while walking its HashMap of subscriptions; the sort below is stable, so the
        # walk order would only show for two members claiming one instance id.
        subscribers: dict[str, list[str]] = {}
        for member in string_hash_map_order(subscriptions):
            for topic in dict.fromkeys(subscriptions[member].topics):
                subscribers.setdefault(topic, []).append(member)

        raw: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
        for topic, num_partitions in topics.items():
            members = subscribers.get(topic, [])
            if not members:
                continue
            members.sort(key=lambda m: member_sort_key(m, subscriptions[m].group_instance_id))
            quota, extra = divmod(num_partitions, len(members))
            start = 0
            for index, member in enumerate(members):
                length = quota + (1 if index < extra else 0)
                raw[member].extend(TopicPartition(topic, p) for p in range(start, start + length))
                start += length
        return to_assignments(raw)

    def subscription_user_data(self, assigned: Sequence[TopicPartition] | None, generation_id: int) -> bytes | None:
        return None
