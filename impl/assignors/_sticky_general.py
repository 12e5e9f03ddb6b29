"""Sticky assignment when members subscribe to different topics (``GeneralAssignmentBuilder``).

Steps (the KIP-54 algorithm as ``AbstractStickyAssignor`` runs it today):

1. Keep every valid owned partition (topic still subscribed by its owner).
2. Give each unassigned partition to the least-loaded subscriber of its topic (ties: member id). Partitions are
   visited topic by topic, topics with fewer potential subscribers first.
3. Set aside what cannot move: topics with a single subscriber, and members that already hold every partition they
   could hold, none of which another member could take.
4. Repeatedly walk the movable partitions; while the assignment is not balanced, move a partition to a member
   that has at least two fewer partitions: back to its owner from an older generation if that owner is that much
   lighter, else to the lightest subscriber of its topic. A move that would undo an earlier move of the same topic
   between the same two members moves that earlier partition instead ("stickiness", ``PartitionMovements``).
5. If step 4 moved anything but did not lower the balance score (sum of pairwise count differences), undo it.

"Balanced" (``isBalanced``) means: counts differ by at most one, or no member that could hold more could take a
partition of one of its topics from a member holding at least two more. That is what is promised, not equal
counts: a member subscribed to a small topic can end far below one subscribed to a large one. The loop in step 4
stops as soon as that holds, or when a full pass moves nothing.

Deviations from Java, only where Java would fail: (a) when a partition's previous-generation owner no longer
subscribes to its topic, or was set aside in step 3, Java still reads its load and may move the partition to it
(a NullPointerException, or a partition assigned to a non-subscriber); here that rule is skipped for it.
(b) ``isBalanced`` is computed from per-topic maxima in O(partitions + subscriptions) per change instead of
Java's O(members x partitions) scan; same answer.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator, Mapping

from ..errors import IllegalStateError
from ._java import HashOrder, string_hash, string_sort_key, topic_partition_hash
from .classic import TopicPartition

_Pair = tuple[str, str]  # (source member, destination member)


class _LoadOrder:
    """``TreeSet<String>`` ordered by (current partition count, member id), as ``sortedCurrentSubscriptions``."""

    __slots__ = ("_buckets", "_keys", "_sizes", "_stored")

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        self._keys = keys
        self._buckets: dict[int, list[tuple[bytes, str]]] = {}
        self._sizes: list[int] = []  # sorted sizes with a non-empty bucket
        self._stored: dict[str, int] = {}

    def add(self, member: str, size: int) -> None:
        assert member not in self._stored, member
        bucket = self._buckets.get(size)
        if bucket is None:
            bucket = self._buckets[size] = []
            insort(self._sizes, size)
        insort(bucket, (self._keys[member], member))
        self._stored[member] = size

    def remove(self, member: str) -> None:
        size = self._stored.pop(member)
        bucket = self._buckets[size]
        del bucket[bisect_left(bucket, (self._keys[member], member))]
        if not bucket:
            del self._buckets[size]
            del self._sizes[bisect_left(self._sizes, size)]

    def first_size(self) -> int:
        return self._sizes[0]

    def last_size(self) -> int:
        return self._sizes[-1]

    def last(self) -> str:
        return self._buckets[self._sizes[-1]][-1][1]

    def __iter__(self) -> Iterator[str]:
        # No copies: every caller stops iterating as soon as it changes the order.
        for size in self._sizes:
            for _, member in self._buckets[size]:
                yield member


class _PartitionMovements:
    """``PartitionMovements``: net moves made so far, to avoid shuffling a topic back and forth between two members."""

    def __init__(self, topic_hashes: Mapping[str, int]) -> None:
        self._topic_hashes = topic_hashes
        self._moves: dict[TopicPartition, _Pair] = {}
        self._by_topic: dict[str, dict[_Pair, HashOrder[TopicPartition]]] = {}

    def _tp_hash(self, tp: TopicPartition) -> int:
        return topic_partition_hash(self._topic_hashes[tp.topic], tp.partition)

    def _remove_record(self, tp: TopicPartition) -> _Pair:
        pair = self._moves.pop(tp)
        per_topic = self._by_topic[tp.topic]
        per_pair = per_topic[pair]
        per_pair.remove(tp)
        if not len(per_pair):
            del per_topic[pair]
        if not per_topic:
            del self._by_topic[tp.topic]
        return pair

    def _add_record(self, tp: TopicPartition, pair: _Pair) -> None:
        self._moves[tp] = pair
        per_topic = self._by_topic.setdefault(tp.topic, {})
        per_pair = per_topic.get(pair)
        if per_pair is None:
            per_pair = per_topic[pair] = HashOrder(self._tp_hash)
        per_pair.add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self._moves:
            source, destination = self._remove_record(tp)
            assert destination == old, (tp, destination, old)
            if source != new:
                self._add_record(tp, (source, new))
        else:
            self._add_record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """``getTheActualPartitionToBeMoved``: prefer undoing an earlier new->old move of the same topic."""
        per_topic = self._by_topic.get(tp.topic)
        if per_topic is None:
            return tp
        earlier = self._moves.get(tp)
        if earlier is not None:
            old = earlier[0]
        reverse = per_topic.get((new, old))
        if reverse is None:
            return tp
        return reverse.first()  # Java: HashSet<TopicPartition>.iterator().next()


class _GeneralBuilder:
    def __init__(
        self,
        topics: Mapping[str, int],
        subscribed: Mapping[str, tuple[str, ...]],
        owned: Mapping[str, Mapping[TopicPartition, None]],
        prev: Mapping[TopicPartition, tuple[str, int]],
    ) -> None:
        self.topics = topics
        self.prev = prev
        self.keys = {member: string_sort_key(member) for member in subscribed}
        self.topic_members: dict[str, list[str]] = {topic: [] for topic in topics}
        self.member_topics: dict[str, list[str]] = {}
        for member, member_topics in subscribed.items():
            existing = [t for t in member_topics if t in topics]
            self.member_topics[member] = existing
            for topic in existing:
                self.topic_members[topic].append(member)
        self.member_topic_sets = {m: frozenset(ts) for m, ts in self.member_topics.items()}
        self.max_sizes = {m: sum(topics[t] for t in ts) for m, ts in self.member_topics.items()}
        self.current: dict[str, dict[TopicPartition, None]] = {m: dict(owned.get(m, {})) for m in subscribed}
        self.owner: dict[TopicPartition, str] = {tp: m for m, tps in self.current.items() for tp in tps}
        self.load = _LoadOrder(self.keys)
        self.movements = _PartitionMovements({t: string_hash(t) for t in topics})
        self.revocation_required = False
        self._balanced_cache: bool | None = None
        sorted_topics = sorted(topics, key=lambda t: (len(self.topic_members[t]), string_sort_key(t)))
        self.sorted_partitions = [TopicPartition(t, p) for t in sorted_topics for p in range(topics[t])]

    # -- steps 1 and 2 -------------------------------------------------------------------------------------------

    def keep_owned(self) -> list[TopicPartition]:
        """``assignOwnedPartitions``: drop owned partitions whose topic the owner no longer subscribes to."""
        unassigned_set = set(self.sorted_partitions)
        for member, partitions in self.current.items():
            for tp in list(partitions):
                if tp.topic not in self.member_topic_sets[member]:
                    del partitions[tp]
                    self.revocation_required = True
                else:
                    unassigned_set.discard(tp)
        return [tp for tp in self.sorted_partitions if tp in unassigned_set]

    def assign_to_lightest(self, tp: TopicPartition) -> None:
        for member in self.load:
            if tp.topic in self.member_topic_sets[member]:
                self.load.remove(member)
                self.current[member][tp] = None
                self.owner[tp] = member
                self.load.add(member, len(self.current[member]))
                self._balanced_cache = None
                return

    # -- step 4 --------------------------------------------------------------------------------------------------

    def is_balanced(self) -> bool:
        if self._balanced_cache is None:
            self._balanced_cache = self._compute_balanced()
        return self._balanced_cache

    def _compute_balanced(self) -> bool:
        if self.load.first_size() >= self.load.last_size() - 1:
            return True
        sizes = {m: len(ps) for m, ps in self.current.items()}
        # Per topic: the heaviest owner, and the heaviest owner other than that one.
        best: dict[str, tuple[int, str | None, int]] = {}
        for member, partitions in self.current.items():
            size = sizes[member]
            for topic in {tp.topic for tp in partitions}:
                top_size, top_member, second = best.get(topic, (-1, None, -1))
                if size > top_size:
                    best[topic] = (size, member, top_size)
                elif size > second:
                    best[topic] = (top_size, top_member, size)
        for member, size in sizes.items():
            if size == self.max_sizes[member]:
                continue
            for topic in self.member_topics[member]:
                top_size, top_member, second = best.get(topic, (-1, None, -1))
                heaviest_other = second if top_member == member else top_size
                if size + 1 < heaviest_other:
                    return False
        return True

    def perform_reassignments(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self.is_balanced():
                    break
                member = self.owner[tp]
                size = len(self.current[member])
                previous = self.prev.get(tp)
                if (
                    previous is not None
                    and previous[0] in self.current
                    and tp.topic in self.member_topic_sets[previous[0]]
                    and size > len(self.current[previous[0]]) + 1
                ):
                    self.reassign(tp, previous[0])
                    performed = modified = True
                    continue
                # Java scans the topic's subscribers for one holding at least two fewer, then moves the partition
                # to the lightest subscriber; the lightest one alone answers the first question.
                lightest = self.lightest_subscriber(tp.topic)
                if size > len(self.current[lightest]) + 1:
                    self.reassign(tp, lightest)
                    performed = modified = True
        return performed

    def lightest_subscriber(self, topic: str) -> str:
        for member in self.load:
            if topic in self.member_topic_sets[member]:
                return member
        raise IllegalStateError(f"no subscriber left for topic {topic!r}")

    def reassign(self, tp: TopicPartition, new: str) -> None:
        to_move = self.movements.partition_to_move(tp, self.owner[tp], new)
        old = self.owner[to_move]
        self.load.remove(old)
        self.load.remove(new)
        self.movements.move(to_move, old, new)
        del self.current[old][to_move]
        self.current[new][to_move] = None
        self.owner[to_move] = new
        self.load.add(new, len(self.current[new]))
        self.load.add(old, len(self.current[old]))
        self._balanced_cache = None

    # -- steps 3 and 5 -------------------------------------------------------------------------------------------

    def can_member_move(self, member: str) -> bool:
        partitions = self.current[member]
        if len(partitions) < self.max_sizes[member]:
            return True
        return any(len(self.topic_members[tp.topic]) >= 2 for tp in partitions)

    def balance(self, unassigned: list[TopicPartition]) -> None:
        for member, partitions in self.current.items():
            self.load.add(member, len(partitions))
        initializing = len(self.current[self.load.last()]) == 0
        for tp in unassigned:
            if self.topic_members[tp.topic]:
                self.assign_to_lightest(tp)

        movable_topics = {t for t, ms in self.topic_members.items() if len(ms) >= 2}
        movable = [tp for tp in self.sorted_partitions if tp.topic in movable_topics]
        unassigned = [tp for tp in unassigned if tp.topic in movable_topics]
        fixed: dict[str, dict[TopicPartition, None]] = {}
        for member in self.member_topics:
            if not self.can_member_move(member):
                self.load.remove(member)
                fixed[member] = self.current.pop(member)
        self._balanced_cache = None

        before = {m: dict(ps) for m, ps in self.current.items()}
        owner_before = dict(self.owner)
        if not self.revocation_required:
            self.perform_reassignments(unassigned)
        performed = self.perform_reassignments(movable)
        if not initializing and performed and _balance_score(self.current) >= _balance_score(before):
            self.current = before
            self.owner = owner_before
        self.current.update(fixed)


def _balance_score(assignment: Mapping[str, Mapping[TopicPartition, None]]) -> int:
    """Sum over member pairs of |count difference| (``getBalanceScore``), in O(n log n)."""
    sizes = sorted(len(ps) for ps in assignment.values())
    n = len(sizes)
    return sum(size * (2 * i - n + 1) for i, size in enumerate(sizes))


def build_general(
    topics: Mapping[str, int],
    subscribed: Mapping[str, tuple[str, ...]],
    owned: Mapping[str, Mapping[TopicPartition, None]],
    prev: Mapping[TopicPartition, tuple[str, int]],
) -> dict[str, list[TopicPartition]]:
    """Members of ``subscribed`` in Java HashMap order; ``owned`` already stripped of conflicting claims."""
    builder = _GeneralBuilder(topics, subscribed, owned, prev)
    unassigned = builder.keep_owned()
    builder.balance(unassigned)
    return {member: list(builder.current[member]) for member in subscribed}
