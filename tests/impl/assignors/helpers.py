"""Shared pieces of the assignor tests: hypothesis strategies, property checkers, and kafka-python adapters."""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from kcoord.impl.assignors import (
    Assignment,
    ClassicAssignor,
    GroupSpec,
    MemberSpec,
    SubscribedTopicDescriber,
    Subscription,
    TargetAssignment,
    TopicMetadata,
    TopicPartition,
    _wire,
)

TOPIC_NAMES = ("a", "b", "t1", "topic", "x-y", "BB", "Aa")
MEMBER_PREFIXES = ("consumer-", "c", "member-", "Aa", "BB", "")


# -- classic clusters -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """Topics and members of a classic group; ``subscriptions`` maps member -> topics (mapping order = join order)."""

    topics: dict[str, int]
    subscriptions: dict[str, tuple[str, ...]]
    instance_ids: dict[str, str | None]

    @property
    def homogeneous(self) -> bool:
        return len({frozenset(ts) for ts in self.subscriptions.values()}) <= 1


_ASCII_IDS = st.lists(
    st.tuples(st.sampled_from(MEMBER_PREFIXES), st.integers(0, 10**6).map(str)).map("".join), min_size=1,
    max_size=12, unique=True,
)
_ANY_IDS = st.lists(
    st.tuples(st.sampled_from(MEMBER_PREFIXES), st.integers(0, 10**6).map(str) | st.text(min_size=1, max_size=3))
    .map("".join), min_size=1, max_size=12, unique=True,
)


def member_ids(max_size: int = 8, ascii_only: bool = True) -> st.SearchStrategy[list[str]]:
    """Unique member ids shaped like real ones; non-ASCII (even astral) characters unless ``ascii_only``."""
    return (_ASCII_IDS if ascii_only else _ANY_IDS).map(lambda ids: ids[:max_size])


@st.composite
def clusters(
    draw: st.DrawFn,
    *,
    homogeneous: bool | None = None,
    max_members: int = 8,
    max_partitions: int = 12,
    static: bool | None = None,
    ascii_only: bool = True,
) -> Cluster:
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=4, unique=True))
    topics = {t: draw(st.integers(0, max_partitions)) for t in names}
    members = draw(member_ids(max_size=max_members, ascii_only=ascii_only))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    rnd = draw(st.randoms(use_true_random=False))  # cheap bulk choices (see server_groups)

    def some_topics() -> tuple[str, ...]:
        return tuple(rnd.sample(names, rnd.randint(1, len(names))))

    common = some_topics()
    subscriptions = {m: common if same else some_topics() for m in members}
    instance_ids: dict[str, str | None] = {}
    for index, m in enumerate(members):
        is_static = rnd.random() < 0.5 if static is None else static
        instance_ids[m] = f"instance-{rnd.randrange(100):02d}-{index}" if is_static else None
    return Cluster(topics, subscriptions, instance_ids)


def fresh_subscriptions(cluster: Cluster) -> dict[str, Subscription]:
    return {
        m: Subscription(ts, group_instance_id=cluster.instance_ids[m]) for m, ts in cluster.subscriptions.items()
    }


def partitions_of(assignments: Mapping[str, Assignment]) -> dict[str, set[TopicPartition]]:
    return {m: set(a.partitions) for m, a in assignments.items()}


def check_valid(
    topics: Mapping[str, int],
    subscriptions: Mapping[str, Iterable[str]],
    assigned: Mapping[str, Iterable[TopicPartition]],
    *,
    complete: bool = True,
) -> None:
    """Every member present; only subscribed, existing partitions; none twice; all assigned if ``complete``."""
    assert set(assigned) == set(subscriptions)
    owner: dict[TopicPartition, str] = {}
    for member, partitions in assigned.items():
        subscribed = set(subscriptions[member])
        for tp in partitions:
            assert tp.topic in subscribed, f"{member} got {tp} without subscribing to {tp.topic}"
            assert 0 <= tp.partition < topics[tp.topic], f"{tp} does not exist"
            assert tp not in owner, f"{tp} assigned to {owner[tp]} and {member}"
            owner[tp] = member
    if complete:
        subscribed_topics = {t for ts in subscriptions.values() for t in ts if t in topics}
        wanted = {TopicPartition(t, p) for t in subscribed_topics for p in range(topics[t])}
        assert set(owner) == wanted, f"unassigned: {sorted(wanted - set(owner))}"


def spread(assigned: Mapping[str, Collection[object] | int], members: Iterable[str] | None = None) -> int:
    """Largest minus smallest count (values are collections or counts)."""
    counts = [v if isinstance(v, int) else len(v) for v in (assigned[m] for m in (members or assigned))]
    return max(counts) - min(counts) if counts else 0


def sticky_balanced(
    topics: Mapping[str, int], subscriptions: Mapping[str, Iterable[str]], assigned: Mapping[str, set[TopicPartition]]
) -> bool:
    """The general sticky builder's promise: no member could take a partition of one of its topics from a member
    holding two or more extra (members already holding every partition they could hold are exempt)."""
    owner = {tp: m for m, tps in assigned.items() for tp in tps}
    counts = {m: len(tps) for m, tps in assigned.items()}
    for member, member_topics in subscriptions.items():
        member_topics = [t for t in dict.fromkeys(member_topics) if t in topics]
        if counts[member] == sum(topics[t] for t in member_topics):
            continue
        for t in member_topics:
            for p in range(topics[t]):
                other = owner.get(TopicPartition(t, p))
                if other is not None and other != member and counts[member] + 1 < counts[other]:
                    return False
    return True


# -- sticky user data -------------------------------------------------------------------------------------------------


def sticky_user_data_v0(partitions: Iterable[TopicPartition]) -> bytes:
    """``StickyAssignorUserData`` v0 (no generation), as pre-2.3 Java consumers send it."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [_wire.int32(len(by_topic))]
    for topic, ps in by_topic.items():
        out += [_wire.string(topic), _wire.int32(len(ps)), *(_wire.int32(p) for p in ps)]
    return b"".join(out)


def run_classic(assignor: ClassicAssignor, topics: Mapping[str, int], subs: Mapping[str, Subscription]) -> dict[
        str, set[TopicPartition]]:
    return partitions_of(assignor.assign(topics, subs))


# -- kafka-python adapters --------------------------------------------------------------------------------------------


class KafkaPythonCluster:
    """The two ClusterMetadata methods kafka-python's assignors call."""

    def __init__(self, topics: Mapping[str, int]) -> None:
        self._topics = dict(topics)

    def topics(self) -> set[str]:
        return set(self._topics)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self._topics[topic])) if topic in self._topics else None


KafkaPythonMember = collections.namedtuple("KafkaPythonMember", "member_id group_instance_id metadata")


def kafka_python_assign(
    assignor: Any, topics: Mapping[str, int], members: Iterable[tuple[str, str | None, Any]]
) -> dict[str, set[TopicPartition]]:
    result = assignor.assign(KafkaPythonCluster(topics), [KafkaPythonMember(*m) for m in members])
    return {
        member: {TopicPartition(t, p) for t, ps in a.assigned_partitions for p in ps}
        for member, a in result.items()
    }


# -- server-side groups -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerGroup:
    topics: dict[uuid.UUID, int]
    members: dict[str, MemberSpec]

    def spec(self) -> GroupSpec:
        return GroupSpec(self.members)

    def describer(self) -> SubscribedTopicDescriber:
        return SubscribedTopicDescriber(
            TopicMetadata(t, f"topic-{i}", n) for i, (t, n) in enumerate(self.topics.items())
        )


@st.composite
def server_groups(
    draw: st.DrawFn,
    *,
    homogeneous: bool | None = None,
    max_members: int = 8,
    max_partitions: int = 12,
    with_current: bool = True,
    disjoint_groups: bool = False,
) -> ServerGroup:
    """Random KIP-848 groups. ``disjoint_groups``: members fall into groups with identical subscriptions to
    pairwise disjoint topic sets (the condition under which the heterogeneous builder promises balance)."""
    # One seeded Random for the bulk of the shape: composing many small strategies per example costs more than the
    # assignors under test, and these parts (ids, subscriptions, ownership) gain little from shrinking.
    rnd = draw(st.randoms(use_true_random=False))
    count = draw(st.integers(1, 5))
    topic_ids = [uuid.UUID(int=rnd.getrandbits(128)) for _ in range(count)]
    topics = {t: draw(st.integers(0, max_partitions)) for t in topic_ids}
    ids = draw(member_ids(max_size=max_members))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    if disjoint_groups:
        blocks = [rnd.randrange(3) for _ in topic_ids]
        block_topics = [frozenset(t for t, tb in zip(topic_ids, blocks, strict=True) if tb == b) for b in set(blocks)]
        subs = {m: rnd.choice(block_topics) for m in ids}
    else:
        common = frozenset(t for t in topic_ids if rnd.random() < 0.7)
        subs = {m: common if same else frozenset(t for t in topic_ids if rnd.random() < 0.6) for m in ids}
    owner: dict[tuple[uuid.UUID, int], str] = {}
    if with_current:
        for t, n in topics.items():
            for p in range(n):
                if rnd.random() < 0.7:
                    owner[(t, p)] = rnd.choice(ids)
    members = {}
    for m in ids:
        current: dict[uuid.UUID, set[int]] = {}
        for (t, p), o in owner.items():
            if o == m:
                current.setdefault(t, set()).add(p)
        instance = f"i{rnd.randrange(100)}-{m}" if rnd.random() < 0.5 else None
        members[m] = MemberSpec.of(subs[m], current, instance_id=instance)
    return ServerGroup(topics, members)


def check_server_valid(group: ServerGroup, result: TargetAssignment) -> None:
    assert set(result) == set(group.members)
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for member, topics in result.items():
        for t, ps in topics.items():
            assert ps, f"{member} has an empty entry for {t}"
            assert t in group.members[member].subscribed_topic_ids, f"{member} got {t} without subscribing"
            for p in ps:
                assert 0 <= p < group.topics[t]
                assert (t, p) not in seen, f"{t}-{p} assigned to {seen[(t, p)]} and {member}"
                seen[(t, p)] = member
    subscribed = {t for m in group.members.values() for t in m.subscribed_topic_ids}
    wanted = {(t, p) for t in subscribed for p in range(group.topics[t])}
    assert set(seen) == wanted


def server_counts(result: TargetAssignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in topics.values()) for m, topics in result.items()}


def with_assignment(group: ServerGroup, result: TargetAssignment, change: Callable[[dict[str, MemberSpec]], object]
                    ) -> ServerGroup:
    """The group after adopting ``result`` as current assignment, then applying ``change`` to its members."""
    members = {
        m: MemberSpec(spec.subscribed_topic_ids, result[m], spec.instance_id, spec.rack_id)
        for m, spec in group.members.items()
    }
    change(members)
    return ServerGroup(group.topics, members)
