"""Classic ``range`` and ``roundrobin``: Kafka's own examples, properties, and agreement with kafka-python."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription

from kcoord.impl.assignors import RangeAssignor, RoundRobinAssignor, Subscription, TopicPartition, classic_assignor

from .helpers import Cluster, check_valid, clusters, fresh_subscriptions, kafka_python_assign, run_classic, spread


def tps(*pairs: tuple[str, int]) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t, p in pairs}


def static(topics: tuple[str, ...], instance: str) -> Subscription:
    return Subscription(topics, group_instance_id=instance)


# -- range: Kafka's RangeAssignorTest ---------------------------------------------------------------------------------


def test_range_multiple_consumers_mixed_topics() -> None:
    # RangeAssignorTest.testMultipleConsumersMixedTopics
    subs = {"consumer1": Subscription(("topic1",)), "consumer2": Subscription(("topic1", "topic2")),
            "consumer3": Subscription(("topic1",))}
    assert run_classic(RangeAssignor(), {"topic1": 3, "topic2": 2}, subs) == {
        "consumer1": tps(("topic1", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 1)),
        "consumer3": tps(("topic1", 2)),
    }


def test_range_two_consumers_two_topics_six_partitions() -> None:
    # RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions (the class Javadoc's example)
    subs = {"consumer1": Subscription(("topic1", "topic2")), "consumer2": Subscription(("topic1", "topic2"))}
    assert run_classic(RangeAssignor(), {"topic1": 3, "topic2": 3}, subs) == {
        "consumer1": tps(("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)),
        "consumer2": tps(("topic1", 2), ("topic2", 2)),
    }


def test_range_static_members_order_by_instance_id() -> None:
    # RangeAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions and
    # testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions
    topics = ("topic1", "topic2")
    expected = {
        "consumer-b": tps(("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)),
        "consumer-a": tps(("topic1", 2), ("topic2", 2)),
    }
    both_static = {"consumer-b": static(topics, "instance1"), "consumer-a": static(topics, "instance2")}
    one_static = {"consumer-b": static(topics, "instance1"), "consumer-a": Subscription(topics)}
    assert run_classic(RangeAssignor(), {"topic1": 3, "topic2": 3}, both_static) == expected
    assert run_classic(RangeAssignor(), {"topic1": 3, "topic2": 3}, one_static) == expected


def test_range_static_assignment_persists_when_dynamic_member_replaced() -> None:
    # RangeAssignorTest.testStaticMemberRangeAssignmentPersistent
    topics = ("topic1", "topic2")
    subs = {f"consumer{i}": static(topics, f"instance{i}") for i in (1, 2, 3)}
    expected = {
        "consumer1": tps(("topic1", 0), ("topic1", 1), ("topic2", 0)),
        "consumer2": tps(("topic1", 2), ("topic2", 1)),
        "consumer3": tps(("topic1", 3), ("topic2", 2)),
    }
    for dynamic in ("consumer4", "consumer5"):
        result = run_classic(RangeAssignor(), {"topic1": 5, "topic2": 4}, {**subs, dynamic: Subscription(topics)})
        assert result == {**expected, dynamic: tps(("topic1", 4), ("topic2", 3))}


def test_range_skips_topics_without_metadata() -> None:
    # RangeAssignorTest.testOneConsumerNonexistentTopic / testOnlyAssignsPartitionsFromSubscribedTopics
    subs = {"c": Subscription(("topic", "missing"))}
    assert run_classic(RangeAssignor(), {"topic": 2, "other": 3}, subs) == {"c": tps(("topic", 0), ("topic", 1))}


# -- roundrobin: Kafka's RoundRobinAssignorTest -----------------------------------------------------------------------


def test_roundrobin_javadoc_unbalanced_example() -> None:
    # RoundRobinAssignor's class Javadoc: C0 [t0], C1 [t0, t1], C2 [t0, t1, t2] with 1, 2, 3 partitions.
    subs = {"C0": Subscription(("t0",)), "C1": Subscription(("t0", "t1")), "C2": Subscription(("t0", "t1", "t2"))}
    assert run_classic(RoundRobinAssignor(), {"t0": 1, "t1": 2, "t2": 3}, subs) == {
        "C0": tps(("t0", 0)),
        "C1": tps(("t1", 0)),
        "C2": tps(("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)),
    }


def test_roundrobin_multiple_consumers_mixed_topics() -> None:
    # RoundRobinAssignorTest.testMultipleConsumersMixedTopics
    subs = {"consumer1": Subscription(("topic1",)), "consumer2": Subscription(("topic1", "topic2")),
            "consumer3": Subscription(("topic1",))}
    assert run_classic(RoundRobinAssignor(), {"topic1": 3, "topic2": 2}, subs) == {
        "consumer1": tps(("topic1", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 0), ("topic2", 1)),
        "consumer3": tps(("topic1", 2)),
    }


def test_roundrobin_static_members() -> None:
    # RoundRobinAssignorTest.testTwoStaticConsumersTwoTopicsSixPartitions and
    # RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistent
    topics = ("topic1", "topic2")
    both_static = {"consumer-b": static(topics, "instance1"), "consumer-a": static(topics, "instance2")}
    assert run_classic(RoundRobinAssignor(), {"topic1": 3, "topic2": 3}, both_static) == {
        "consumer-b": tps(("topic1", 0), ("topic1", 2), ("topic2", 1)),
        "consumer-a": tps(("topic1", 1), ("topic2", 0), ("topic2", 2)),
    }
    subs = {f"consumer{i}": static(topics, f"instance{i}") for i in (1, 2, 3)}
    for dynamic in ("consumer4", "consumer5"):
        result = run_classic(RoundRobinAssignor(), {"topic1": 3, "topic2": 3}, {**subs, dynamic: Subscription(topics)})
        assert result == {
            "consumer1": tps(("topic1", 0), ("topic2", 1)),
            "consumer2": tps(("topic1", 1), ("topic2", 2)),
            "consumer3": tps(("topic1", 2)),
            dynamic: tps(("topic2", 0)),
        }


# -- properties -------------------------------------------------------------------------------------------------------


@given(clusters(ascii_only=False))
def test_range_properties(cluster: Cluster) -> None:
    result = run_classic(RangeAssignor(), cluster.topics, fresh_subscriptions(cluster))
    check_valid(cluster.topics, cluster.subscriptions, result)
    for topic in cluster.topics:
        subscribers = [m for m, ts in cluster.subscriptions.items() if topic in ts]
        per_topic = {m: [tp for tp in result[m] if tp.topic == topic] for m in subscribers}
        assert spread(per_topic) <= 1  # per topic only: range promises nothing across topics
        # contiguous ranges
        for partitions in per_topic.values():
            numbers = sorted(tp.partition for tp in partitions)
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) if numbers else True


@given(clusters(ascii_only=False))
def test_roundrobin_properties(cluster: Cluster) -> None:
    result = run_classic(RoundRobinAssignor(), cluster.topics, fresh_subscriptions(cluster))
    check_valid(cluster.topics, cluster.subscriptions, result)
    if cluster.homogeneous:
        assert spread(result) <= 1


@given(clusters(ascii_only=False))
def test_range_co_partitions_equal_topics(cluster: Cluster) -> None:
    # Members with identical subscriptions get the same partition numbers of every equally sized topic.
    result = run_classic(RangeAssignor(), cluster.topics, fresh_subscriptions(cluster))
    for member, topics in cluster.subscriptions.items():
        sizes: dict[int, set[frozenset[int]]] = {}
        for topic in topics:
            if cluster.homogeneous and cluster.topics[topic] > 0:
                numbers = frozenset(tp.partition for tp in result[member] if tp.topic == topic)
                sizes.setdefault(cluster.topics[topic], set()).add(numbers)
        assert all(len(variants) == 1 for variants in sizes.values())


# -- agreement with kafka-python --------------------------------------------------------------------------------------


def _kafka_python(assignor: object, cluster: Cluster) -> dict[str, set[TopicPartition]]:
    members = [
        (m, cluster.instance_ids[m], KpSubscription(version=0, topics=list(ts), user_data=b""))
        for m, ts in cluster.subscriptions.items()
    ]
    return kafka_python_assign(assignor, cluster.topics, members)


@settings(max_examples=80)
@given(clusters(static=False) | clusters(static=True))
def test_range_equals_kafka_python(cluster: Cluster) -> None:
    # ASCII ids (Python and Java order agree) and all-static or all-dynamic groups: see the tests below for why.
    subs = fresh_subscriptions(cluster)
    assert run_classic(RangeAssignor(), cluster.topics, subs) == _kafka_python(RangePartitionAssignor, cluster)


@settings(max_examples=80)
@given(clusters(static=False, homogeneous=True) | clusters(static=True, homogeneous=True))
def test_roundrobin_equals_kafka_python(cluster: Cluster) -> None:
    # Identical subscriptions only: kafka-python's round robin fails as soon as it must skip a member (below).
    subs = fresh_subscriptions(cluster)
    theirs = _kafka_python(RoundRobinPartitionAssignor, cluster)
    assert run_classic(RoundRobinAssignor(), cluster.topics, subs) == theirs


def test_kafka_python_roundrobin_fails_when_skipping_a_member() -> None:
    # Intentional difference. kafka-python 3.0.12 roundrobin.py skips an unsubscribed member with
    # `member_id = next(member_iter)`, but the cycle yields (instance_id, member_id) tuples, so the next
    # `member_topics[member_id]` raises KeyError. Java's CircularIterator skip works; so does ours (Javadoc example).
    cluster = Cluster(
        topics={"t0": 1, "t1": 2, "t2": 3},
        subscriptions={"C0": ("t0",), "C1": ("t0", "t1"), "C2": ("t0", "t1", "t2")},
        instance_ids={"C0": None, "C1": None, "C2": None},
    )
    with pytest.raises(KeyError):
        _kafka_python(RoundRobinPartitionAssignor, cluster)
    check_valid(cluster.topics, cluster.subscriptions,
                run_classic(RoundRobinAssignor(), cluster.topics, fresh_subscriptions(cluster)))


def test_kafka_python_drops_members_when_static_and_dynamic_interleave() -> None:
    # Intentional difference. kafka-python 3.0.12 (range.py, roundrobin.py) splits members with
    # `{k: list(g) for k, g in itertools.groupby(members, key=has_instance_id)}` over the *unsorted* member list, so
    # a dynamic/static/dynamic join order keeps only the last dynamic run and the first member gets nothing.
    # Java's MemberInfo.compareTo sorts all of them (static first), which is what we do.
    cluster = Cluster(
        topics={"t": 3},
        subscriptions={"a": ("t",), "b": ("t",), "c": ("t",)},
        instance_ids={"a": None, "b": "static-b", "c": None},
    )
    ours = run_classic(RangeAssignor(), cluster.topics, fresh_subscriptions(cluster))
    assert ours == {"b": tps(("t", 0)), "a": tps(("t", 1)), "c": tps(("t", 2))}
    theirs = _kafka_python(RangePartitionAssignor, cluster)
    assert theirs["a"] == set() and theirs["b"] | theirs["c"] == tps(("t", 0), ("t", 1), ("t", 2))


def test_registry_names_match_partition_assignment_strategy() -> None:
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        assert classic_assignor(name).name == name
    with pytest.raises(ValueError, match="unknown classic assignor"):
        classic_assignor("uniform")
