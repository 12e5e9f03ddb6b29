"""Classic ``sticky`` (eager): Kafka's own examples, properties, user-data bytes, and agreement with kafka-python."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription
from kafka.structs import TopicPartition as KafkaTopicPartition

from kcoord.impl.assignors import StickyAssignor, Subscription, TopicPartition
from kcoord.impl.assignors._sticky import MemberData
from kcoord.impl.assignors.sticky import decode_user_data, encode_user_data

from .helpers import (
    Cluster,
    check_valid,
    clusters,
    fresh_subscriptions,
    kafka_python_assign,
    run_classic,
    spread,
    sticky_balanced,
    sticky_user_data_v0,
)


def tps(*pairs: tuple[str, int]) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t, p in pairs}


def owning(topics: Iterable[str], owned: Iterable[TopicPartition], generation: int = 1) -> Subscription:
    """What StickyAssignorTest.buildSubscriptionV2Above builds: owned partitions + generation in the user data."""
    owned = list(owned)
    return Subscription(tuple(topics), encode_user_data(owned, generation), tuple(owned), generation)


def assign(topics: Mapping[str, int], subs: Mapping[str, Subscription]) -> dict[str, set[TopicPartition]]:
    return run_classic(StickyAssignor(), topics, subs)


# -- Kafka's AbstractStickyAssignorTest / StickyAssignorTest ----------------------------------------------------------


def test_consumer_owning_min_quota_expected_max_quota() -> None:
    # AbstractStickyAssignorTest.testConsumerOwningMinQuotaExpectedMaxQuota
    topics = {"topic1": 2, "topic2": 3}
    subs = {
        "consumer1": owning(topics, [TopicPartition("topic1", 0), TopicPartition("topic2", 1)]),
        "consumer2": owning(topics, [TopicPartition("topic1", 1), TopicPartition("topic2", 2)]),
    }
    assert assign(topics, subs) == {
        "consumer1": tps(("topic1", 0), ("topic2", 1), ("topic2", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 2)),
    }


def test_max_quota_owners_beyond_expected_count() -> None:
    # AbstractStickyAssignorTest.testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers
    topics = {"topic1": 2, "topic2": 2}
    subs = {
        "consumer1": owning(topics, [TopicPartition("topic1", 0), TopicPartition("topic2", 0)]),
        "consumer2": owning(topics, [TopicPartition("topic1", 1), TopicPartition("topic2", 1)]),
        "consumer3": owning(topics, []),
    }
    assert assign(topics, subs) == {
        "consumer1": tps(("topic1", 0)),
        "consumer2": tps(("topic1", 1), ("topic2", 1)),
        "consumer3": tps(("topic2", 0)),
    }


def test_all_consumers_under_min_quota() -> None:
    # AbstractStickyAssignorTest.testAllConsumersAreUnderMinQuota
    topics = {"topic1": 2, "topic2": 3}
    subs = {
        "consumer1": owning(topics, [TopicPartition("topic1", 0)]),
        "consumer2": owning(topics, [TopicPartition("topic1", 1)]),
        "consumer3": owning(topics, []),
    }
    assert assign(topics, subs) == {
        "consumer1": tps(("topic1", 0), ("topic2", 1)),
        "consumer2": tps(("topic1", 1), ("topic2", 2)),
        "consumer3": tps(("topic2", 0)),
    }


def test_add_remove_consumer_one_topic() -> None:
    # AbstractStickyAssignorTest.testAddRemoveConsumerOneTopic
    topics = {"topic": 3}
    first = assign(topics, {"consumer1": Subscription(("topic",))})
    assert first == {"consumer1": tps(("topic", 0), ("topic", 1), ("topic", 2))}
    second = assign(topics, {"consumer1": owning(topics, first["consumer1"]), "consumer2": owning(topics, [])})
    assert second == {"consumer1": tps(("topic", 0), ("topic", 1)), "consumer2": tps(("topic", 2))}
    third = assign(topics, {"consumer2": owning(topics, second["consumer2"])})
    assert third == {"consumer2": tps(("topic", 0), ("topic", 1), ("topic", 2))}


def test_doubly_claimed_partition_is_reassigned() -> None:
    # AbstractStickyAssignorTest.testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumers...
    topics = {"topic": 3}
    subs = {
        "consumer1": owning(topics, [TopicPartition("topic", 0), TopicPartition("topic", 1)]),
        "consumer2": owning(topics, [TopicPartition("topic", 0), TopicPartition("topic", 2)]),
        "consumer3": owning(topics, []),
    }
    assert assign(topics, subs) == {
        "consumer1": tps(("topic", 1)), "consumer2": tps(("topic", 2)), "consumer3": tps(("topic", 0)),
    }


def test_partitions_go_to_highest_generation() -> None:
    # AbstractStickyAssignorTest.testEnsurePartitionsAssignedToHighestGeneration
    topics = {"topic": 3, "topic2": 3, "topic3": 3}
    subs = {
        "consumer1": owning(topics, tps(("topic", 0), ("topic2", 0), ("topic3", 0)), 10),
        "consumer2": owning(topics, tps(("topic", 1), ("topic2", 1), ("topic3", 1)), 9),
        "consumer3": owning(topics, tps(("topic2", 1), ("topic3", 0), ("topic3", 2)), 8),
    }
    assert assign(topics, subs) == {
        "consumer1": tps(("topic", 0), ("topic2", 0), ("topic3", 0)),
        "consumer2": tps(("topic", 1), ("topic2", 1), ("topic3", 1)),
        "consumer3": tps(("topic", 2), ("topic2", 2), ("topic3", 2)),
    }


def test_no_reassignment_on_current_members() -> None:
    # AbstractStickyAssignorTest.testNoReassignmentOnCurrentMembers
    topics = {"topic": 3, "topic1": 3, "topic2": 3, "topic3": 3}
    subs = {
        "consumer1": Subscription(tuple(topics)),
        "consumer2": owning(topics, tps(("topic", 0), ("topic2", 0), ("topic1", 0)), 9),
        "consumer3": owning(topics, tps(("topic3", 2), ("topic2", 2), ("topic1", 1)), 8),
        "consumer4": owning(topics, tps(("topic3", 1), ("topic", 1), ("topic", 2)), 7),
    }
    assert assign(topics, subs)["consumer1"] == tps(("topic1", 2), ("topic2", 1), ("topic3", 0))


def test_stale_generation_claims_are_dropped() -> None:
    # AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration
    topics = {"topic": 3, "topic2": 3}
    claim = tps(("topic", 0), ("topic", 2), ("topic2", 1))
    result = assign(topics, {"consumer1": owning(topics, claim, 10), "consumer2": owning(topics, claim, 9)})
    assert result == {"consumer1": claim, "consumer2": tps(("topic", 1), ("topic2", 0), ("topic2", 2))}


def test_conflicting_previous_generations() -> None:
    # StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations, both subscription modes
    for equal in (True, False):
        all_topics = ("topic", "topic2", "topic3")
        topics = dict.fromkeys(all_topics, 4)
        c1_topics = all_topics if equal else ("topic",)
        c2_topics = all_topics if equal else ("topic", "topic2")
        c1 = tps(("topic", 0), ("topic", 1), ("topic", 2), ("topic2", 2), ("topic2", 3), ("topic3", 0)) if equal \
            else tps(("topic", 0), ("topic", 1), ("topic", 2), ("topic", 3))
        c2 = tps(("topic", 0), ("topic", 1), ("topic2", 0), ("topic2", 1), ("topic2", 2), ("topic2", 3))
        c3 = tps(("topic", 2), ("topic", 3), ("topic3", 0), ("topic3", 1), ("topic3", 2), ("topic3", 3))
        subs = {"consumer1": owning(c1_topics, c1, 1), "consumer2": owning(c2_topics, c2, 2),
                "consumer3": owning(all_topics, c3, 2)}
        result = assign(topics, subs)
        assert [len(result[c]) for c in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]
        assert result["consumer2"] <= c2 and result["consumer3"] <= c3


def test_old_user_data_schema_is_read() -> None:
    # StickyAssignorTest.testSchemaBackwardCompatibility: consumer2 sends v0 user data (no generation)
    topics = {"topic": 3}
    subs = {
        "consumer1": owning(topics, tps(("topic", 0), ("topic", 2)), 1),
        "consumer2": Subscription(("topic",), sticky_user_data_v0([TopicPartition("topic", 1)])),
        "consumer3": Subscription(("topic",)),
    }
    result = assign(topics, subs)
    assert all(len(ps) == 1 for ps in result.values())
    assert result["consumer1"] <= tps(("topic", 0), ("topic", 2)) and result["consumer2"] == tps(("topic", 1))


def test_member_data_honours_user_data() -> None:
    # StickyAssignorTest.testMemberDataWillHonorUserData / testMemberDataWithInconsistentData
    owned = [TopicPartition("topic1", 0), TopicPartition("topic2", 1)]
    subscription = Subscription(("topic",), encode_user_data(owned, 0), (TopicPartition("topic", 0),), 1)
    assert decode_user_data(subscription.user_data) == MemberData(tuple(owned), 0)
    assert decode_user_data(None) == MemberData((), None)
    assert decode_user_data(b"\x00\x00") == MemberData((), -1)  # unparseable: nothing owned, generation -1


# -- user data bytes vs kafka-python ----------------------------------------------------------------------------------


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "topic"]), st.integers(0, 50)), unique=True, max_size=10),
       st.integers(-1, 1000))
def test_user_data_body_matches_kafka_python(pairs: list[tuple[str, int]], generation: int) -> None:
    owned = [TopicPartition(t, p) for t, p in pairs]
    by_topic: dict[str, list[int]] = {}
    for tp in owned:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    theirs = StickyAssignorUserData(previous_assignment=list(by_topic.items()), generation=generation).encode()
    # kafka-python prefixes an int16 schema version that Java's StickyAssignor neither writes nor reads (below).
    body = theirs[2:]
    assert decode_user_data(body) == MemberData(tuple(tp for t in by_topic for tp in owned if tp.topic == t),
                                                generation)
    ours = encode_user_data(owned, generation)
    decoded = StickyAssignorUserData.decode(b"\x00\x01" + ours)
    assert decoded.generation == generation
    assert {TopicPartition(t, p) for t, ps in decoded.previous_assignment for p in ps} == set(owned)
    if len(by_topic) <= 1:  # with several topics Java (and we) write them in HashMap order
        assert ours == body


def test_kafka_python_sticky_user_data_is_not_java_compatible() -> None:
    # Intentional difference. kafka-python 3.0.12 encodes StickyAssignorUserData with ApiData.encode(), which
    # writes a 2-byte version header; Java's StickyAssignor.serializeTopicPartitionAssignment writes the v1 struct
    # bare and deserializeTopicPartitionAssignment finds kafka-python's bytes unparseable (as v1 and as v0), so it
    # treats such a member as owning nothing with generation -1. We follow Java.
    theirs = StickyPartitionAssignor._metadata(["a"], [KafkaTopicPartition("a", 1)], 5).user_data.encode()
    assert theirs[:2] == b"\x00\x01"
    assert decode_user_data(theirs) == MemberData((), -1)
    ours = encode_user_data([TopicPartition("a", 1)], 5)
    parsed = StickyPartitionAssignor.parse_member_metadata(KpSubscription(version=0, topics=["a"], user_data=ours))
    assert parsed.partitions == []  # and kafka-python cannot read Java's


# -- properties -------------------------------------------------------------------------------------------------------


@given(clusters(ascii_only=False))
def test_fresh_assignment_is_valid_and_balanced(cluster: Cluster) -> None:
    result = run_classic(StickyAssignor(), cluster.topics, fresh_subscriptions(cluster))
    check_valid(cluster.topics, cluster.subscriptions, result)
    if cluster.homogeneous:
        assert spread(result) <= 1
    assert sticky_balanced(cluster.topics, cluster.subscriptions, result)


@st.composite
def membership_change(draw: st.DrawFn) -> tuple[Cluster, str | None, str | None]:
    """A cluster, plus a member that leaves and/or one that joins after the first assignment."""
    cluster = draw(clusters(max_members=7))
    members = list(cluster.subscriptions)
    leaving = draw(st.sampled_from(members)) if len(members) > 1 and draw(st.booleans()) else None
    joining = "joiner" if leaving is None or draw(st.booleans()) else None
    return cluster, leaving, joining


@settings(max_examples=80)
@given(membership_change())
def test_rebalance_after_membership_change(change: tuple[Cluster, str | None, str | None]) -> None:
    cluster, leaving, joining = change
    first = run_classic(StickyAssignor(), cluster.topics, fresh_subscriptions(cluster))
    subs = {m: owning(cluster.subscriptions[m], first[m]) for m in cluster.subscriptions if m != leaving}
    topic_lists = {m: cluster.subscriptions[m] for m in subs}
    if joining is not None:
        joiner_topics = next(iter(cluster.subscriptions.values()))
        subs[joining] = Subscription(joiner_topics)
        topic_lists[joining] = joiner_topics
    second = run_classic(StickyAssignor(), cluster.topics, subs)
    check_valid(cluster.topics, topic_lists, second)
    assert sticky_balanced(cluster.topics, topic_lists, second)
    if len({frozenset(ts) for ts in topic_lists.values()}) == 1:
        assert spread(second) <= 1
        total = sum(n for t, n in cluster.topics.items() if t in next(iter(topic_lists.values())))
        min_quota = total // len(subs)
        for member in subs:
            if member != joining:
                # a survivor keeps min(previously owned, new minimum quota) of its partitions
                assert len(second[member] & first[member]) >= min(len(first[member]), min_quota)


@given(clusters(homogeneous=True, ascii_only=False))
def test_balanced_assignment_is_a_fixed_point(cluster: Cluster) -> None:
    first = run_classic(StickyAssignor(), cluster.topics, fresh_subscriptions(cluster))
    subs = {m: owning(ts, first[m]) for m, ts in cluster.subscriptions.items()}
    assert run_classic(StickyAssignor(), cluster.topics, subs) == first


# -- agreement with kafka-python --------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(clusters(static=False))
def test_fresh_assignment_equals_kafka_python(cluster: Cluster) -> None:
    # kafka-python 3.0.12 ports the original KIP-54 algorithm (sticky_assignor.py: one general path with a balance
    # score). Java has since added ConstrainedAssignmentBuilder (KAFKA-9987) for identical subscriptions and
    # reworked the general builder, so after a membership change the two may pick different (both valid, balanced)
    # assignments. For a fresh group both reduce to "least-loaded subscriber first" and must agree exactly.
    members = [(m, None, KpSubscription(version=0, topics=list(ts), user_data=b""))
               for m, ts in cluster.subscriptions.items()]
    theirs = kafka_python_assign(StickyPartitionAssignor(), cluster.topics, members)
    assert run_classic(StickyAssignor(), cluster.topics, fresh_subscriptions(cluster)) == theirs


# -- intentional deviations from Java (each where Java breaks the assignor contract) ----------------------------------


def test_member_without_subscription_gets_nothing() -> None:
    # Java's allSubscriptionsEqual skips the equality check for the first member it visits when that member
    # subscribes to nothing, so {"a": [], "b": ["t"]} runs the constrained builder and Java (OpenJDK 17, commit
    # 1eb7644) returns a: [t-0, t-2], b: [t-1, t-3] - partitions for a member that subscribes to no topic.
    topics = {"t": 4}
    subs = {"a": Subscription((), generation_id=1), "b": Subscription(("t",), generation_id=1)}
    assert assign(topics, subs) == {"a": set(), "b": tps(("t", 0), ("t", 1), ("t", 2), ("t", 3))}


def test_previous_owner_must_still_subscribe() -> None:
    # GeneralAssignmentBuilder.performReassignments moves a partition back to its previous-generation owner without
    # checking that the owner still subscribes to the topic. Here b owned t-0 and t-1 in generation 1 and now
    # subscribes to u only; Java returns a: [u-0, u-1], b: [t-1], c: [t-0]. We skip that rule for non-subscribers.
    topics = {"t": 2, "u": 2}
    subs = {
        "a": owning(("t", "u"), [TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0),
                                 TopicPartition("u", 1)], 2),
        "b": owning(("u",), [TopicPartition("t", 0), TopicPartition("t", 1)], 1),
        "c": owning(("t",), [], 2),
    }
    result = assign(topics, subs)
    check_valid(topics, {m: s.topics for m, s in subs.items()}, result)
    assert result == {"a": tps(("u", 1)), "b": tps(("u", 0)), "c": tps(("t", 0), ("t", 1))}


def test_full_scale_rebalance() -> None:
    # 1,000 members x 10,000 partitions: the benchmark's size, checked for correctness rather than speed.
    topics = {f"topic-{i:03d}": 100 for i in range(100)}
    members = [f"consumer-{i}-{i * 7919 % 1000:03d}" for i in range(1000)]
    subscribed = {m: tuple(topics) for m in members}
    first = run_classic(StickyAssignor(), topics, {m: Subscription(ts) for m, ts in subscribed.items()})
    check_valid(topics, subscribed, first)
    assert spread(first) == 0
    survivors = members[1:]
    second = assign(topics, {m: owning(topics, first[m]) for m in survivors})
    check_valid(topics, {m: subscribed[m] for m in survivors}, second)
    assert spread(second) <= 1
    assert all(first[m] <= second[m] for m in survivors)  # quotas only grew: nobody lost anything
