"""The ``uniform`` assignor when members subscribe to different topics (``UniformHeterogeneousAssignmentBuilder``).

Members are numbered in :meth:`GroupSpec.member_order`; "least loaded" always means fewest partitions in total
(over all topics), ties to the lower number. Steps:

1. Keep every current partition whose topic the member still subscribes to.
2. Topics sorted by partitions per subscriber (descending), then subscriber count (ascending), then topic id:
   each unassigned partition (ascending) goes to the least-loaded subscriber of its topic.
3. Balance, topic by topic in the same order, for at most 16 rounds or until a whole round moves nothing: while the
   topic's subscribers' totals differ by more than one, move the highest-numbered partition of a most-loaded
   subscriber to a least-loaded one (``MemberAssignmentBalancer``).

Guarantees:

* every partition of a subscribed topic is assigned to exactly one of its subscribers, nothing else is assigned;
* stickiness: a current partition moves only if its owner dropped the topic, or in step 3, from one of the topic's
  most loaded subscribers to one of its least loaded while their totals differ by two or more; so an assignment
  whose every topic has its subscribers' totals within one is returned unchanged;
* balance: per topic, its subscribers' totals end within one of each other when the balancing converges, which it
  does in one round when all subscribers of each topic have identical subscriptions; with overlapping,
  non-identical subscriptions the totals can stay further apart (Kafka's own example: 9 / 10 / 11), and nothing
  is promised after 16 rounds.

Run time is O(rounds x (partitions + subscribers log subscribers)) per topic.
"""

from __future__ import annotations

import uuid

from ..errors import IllegalStateError
from ._java import uuid_sort_key
from .server import GroupSpec, PartitionAssignorError, SubscribedTopicDescriber, TargetAssignment

MAX_ITERATION_COUNT = 16


class _Balancer:
    """``MemberAssignmentBalancer``: two cursors over one topic's subscribers sorted by total load.

    The least-loaded range grows rightwards as its members each receive a partition; the most-loaded range grows
    leftwards as its members each give one up. Members with nothing of this topic to give are swapped out of the
    most-loaded range. Balanced when the two ranges' levels differ by at most one.
    """

    __slots__ = ("least_end", "least_level", "most_end", "most_level", "most_start", "next_least", "next_most",
                 "sizes", "sorted_members")

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sorted_members: list[int] = []
        self.least_end = self.least_level = self.next_least = 0
        self.most_start = self.most_end = self.most_level = self.next_most = 0

    def initialize(self, members: list[int]) -> int:
        """Reset for one topic's subscribers; returns the spread of their totals."""
        if not members:
            raise IllegalStateError("cannot balance an empty subscriber list")
        sizes = self.sizes
        self.sorted_members = sorted(members, key=lambda m: (sizes[m], m))
        first, last = self.sorted_members[0], self.sorted_members[-1]
        self.least_end = 0
        self.least_level = sizes[first] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.sorted_members)
        self.most_level = sizes[last] + 1
        self.next_most = len(self.sorted_members) - 1
        return sizes[last] - sizes[first]

    def next_least_loaded(self) -> int:
        """The member to receive the next partition; assumes it will receive it."""
        if self.next_least >= self.least_end:
            self.least_level += 1
            count = len(self.sorted_members)
            while self.least_end < count and self.sizes[self.sorted_members[self.least_end]] == self.least_level:
                self.least_end += 1
            self.next_least = 0
        member = self.sorted_members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to give up the next partition, or -1 if none can; assumes it will give one up."""
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # The range was emptied by exclusions: restart it from the next member down.
                self.most_level = self.sizes[self.sorted_members[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and self.sizes[self.sorted_members[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.sorted_members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by :meth:`next_most_loaded` from the most-loaded range."""
        position = self.next_most + 1
        members = self.sorted_members
        members[position], members[self.most_end - 1] = members[self.most_end - 1], members[position]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_level - self.least_level <= 1


class _Builder:
    def __init__(self, group_spec: GroupSpec, topics: SubscribedTopicDescriber) -> None:
        self.member_ids = group_spec.member_order()
        self.counts: dict[uuid.UUID, int] = {}
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in group_spec.members[member_id].subscribed_topic_ids:
                count = topics.num_partitions(topic_id)
                if count < 0:
                    raise PartitionAssignorError(f"members subscribe to topic {topic_id}, which has no metadata")
                self.counts[topic_id] = count
                self.subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {topic_id: [-1] * count for topic_id, count in self.counts.items()}
        for index, member_id in enumerate(self.member_ids):
            member = group_spec.members[member_id]
            for topic_id, partitions in member.assignment.items():
                if topic_id not in member.subscribed_topic_ids:
                    continue  # revoked: the member dropped the topic
                owners = self.owners[topic_id]
                for p in partitions:
                    if p < len(owners):  # beyond the count cannot exist in Kafka (counts only grow)
                        owners[p] = index
                        self.sizes[index] += 1

    def sort_topics(self, topic_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        def key(topic_id: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
            subscribers = len(self.subscribers[topic_id])
            return (-(self.counts[topic_id] / subscribers), subscribers, uuid_sort_key(topic_id))

        return sorted(topic_ids, key=key)

    def assign_partition(self, topic_id: uuid.UUID, partition: int, member: int) -> None:
        owners = self.owners[topic_id]
        if owners[partition] != -1:
            self.sizes[owners[partition]] -= 1
        owners[partition] = member
        self.sizes[member] += 1

    def assign_remaining(self) -> None:
        unassigned = {
            topic_id: [p for p, owner in enumerate(owners) if owner == -1]
            for topic_id, owners in self.owners.items()
        }
        balancer = _Balancer(self.sizes)
        for topic_id in self.sort_topics([t for t, ps in unassigned.items() if ps]):
            balancer.initialize(self.subscribers[topic_id])
            for partition in unassigned[topic_id]:
                self.assign_partition(topic_id, partition, balancer.next_least_loaded())

    def balance(self) -> None:
        movable = self.sort_topics([t for t, ms in self.subscribers.items() if len(ms) >= 2])
        if not movable:
            return
        balancer = _Balancer(self.sizes)
        last_rebalanced = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic_id in enumerate(movable):
                if index == last_rebalanced:
                    return  # a full round over the topics moved nothing
                moved = self.balance_topic(topic_id, balancer)
                if moved > 0 or last_rebalanced == -1:
                    last_rebalanced = index

    def balance_topic(self, topic_id: uuid.UUID, balancer: _Balancer) -> int:
        if balancer.initialize(self.subscribers[topic_id]) <= 1:
            return 0
        owners = self.owners[topic_id]
        # Partitions grouped by owner, so "the owner's last partition" is O(1); ranges are [start, end).
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for position, p in enumerate(partitions):
            start.setdefault(owners[p], position)
            end[owners[p]] = position + 1
        moved = 0
        while not balancer.is_balanced():
            giver = balancer.next_most_loaded()
            while giver != -1 and end.get(giver, 0) - start.get(giver, 0) <= 0:
                balancer.exclude_most_loaded()
                giver = balancer.next_most_loaded()
            if giver == -1:
                break
            end[giver] -= 1
            partition = partitions[end[giver]]
            receiver = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.assign_partition(topic_id, partition, receiver)
            moved += 1
        return moved

    def result(self) -> TargetAssignment:
        out: dict[str, dict[uuid.UUID, set[int]]] = {member_id: {} for member_id in self.member_ids}
        for topic_id, owners in self.owners.items():
            for p, owner in enumerate(owners):
                out[self.member_ids[owner]].setdefault(topic_id, set()).add(p)
        return {m: {t: frozenset(ps) for t, ps in topics.items()} for m, topics in out.items()}


def assign_heterogeneous(group_spec: GroupSpec, topics: SubscribedTopicDescriber) -> TargetAssignment:
    builder = _Builder(group_spec, topics)
    if not builder.counts:
        return {member_id: {} for member_id in builder.member_ids}
    builder.assign_remaining()
    builder.balance()
    return builder.result()
