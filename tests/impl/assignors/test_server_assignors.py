"""KIP-848 server-side ``uniform`` and ``range``: Kafka's own examples and properties."""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import given, settings

from kcoord.impl.assignors import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    ServerRangeAssignor,
    SubscribedTopicDescriber,
    SubscriptionType,
    TopicMetadata,
    UniformAssignor,
    server_assignor,
)
from kcoord.impl.assignors.uniform import subscribed_topic_order

from .helpers import ServerGroup, check_server_valid, server_counts, server_groups, spread, with_assignment


def kafka_uuid(text: str) -> uuid.UUID:
    """``Uuid.fromString``: URL-safe base64 of the 16 bytes, unpadded."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


T1 = kafka_uuid("T1-A4s3VTwiI5CTbEp6POw")
T2 = kafka_uuid("T2-B4s3VTwiI5YHbPp6YUe")
T3 = kafka_uuid("T3-CU8fVTLCz5YMkLoDQsa")


def describe(**counts: int) -> SubscribedTopicDescriber:
    ids = {"t1": T1, "t2": T2, "t3": T3}
    return SubscribedTopicDescriber(TopicMetadata(ids[name], name, n) for name, n in counts.items())


def member(*topics: uuid.UUID, current: dict[uuid.UUID, set[int]] | None = None,
           instance: str | None = None) -> MemberSpec:
    return MemberSpec.of(topics, current or {}, instance_id=instance)


def frozen(assignment: dict[uuid.UUID, set[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return {t: frozenset(ps) for t, ps in assignment.items()}


# -- uniform, homogeneous: OptimizedUniformAssignmentBuilderTest ------------------------------------------------------


def test_uniform_first_assignment_two_members_two_topics() -> None:
    # OptimizedUniformAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks. The unassigned
    # partitions come topic by topic in Java HashSet<Uuid> order, which puts topic3 before topic1.
    assert subscribed_topic_order(frozenset({T1, T3})) == [T3, T1]
    spec = GroupSpec({"A": member(T1, T3), "B": member(T1, T3)})
    assert UniformAssignor().assign(spec, describe(t1=3, t3=2)) == {
        "A": frozen({T1: {0}, T3: {0, 1}}),
        "B": frozen({T1: {1, 2}}),
    }


def test_uniform_rebalances_unbalanced_previous_assignment() -> None:
    # OptimizedUniformAssignmentBuilderTest.testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment
    spec = GroupSpec({
        "A": member(T1, T2, current={T1: {0, 1}, T2: {0, 1}}),
        "B": member(T1, T2, current={T1: {2}, T2: {2}}),
    })
    assert UniformAssignor().assign(spec, describe(t1=3, t2=3)) == {
        "A": frozen({T1: {0, 1}, T2: {0}}),
        "B": frozen({T1: {2}, T2: {1, 2}}),
    }


def test_uniform_member_added() -> None:
    # OptimizedUniformAssignmentBuilderTest
    #     .testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    spec = GroupSpec({
        "A": member(T1, T2, current={T1: {0, 2}, T2: {0}}),
        "B": member(T1, T2, current={T1: {1}, T2: {1, 2}}),
        "C": member(T1, T2),
    })
    assert UniformAssignor().assign(spec, describe(t1=3, t2=3)) == {
        "A": frozen({T1: {0, 2}}),
        "B": frozen({T1: {1}, T2: {1}}),
        "C": frozen({T2: {0, 2}}),
    }


def test_uniform_member_removed() -> None:
    # OptimizedUniformAssignmentBuilderTest
    #     .testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics
    spec = GroupSpec({
        "A": member(T1, T2, current={T1: {0}, T2: {0}}),
        "B": member(T1, T2, current={T1: {1}, T2: {1}}),
    })
    assert UniformAssignor().assign(spec, describe(t1=3, t2=3)) == {
        "A": frozen({T1: {0}, T2: {0, 2}}),
        "B": frozen({T1: {1, 2}, T2: {1}}),
    }


def test_uniform_unknown_topic_is_an_error() -> None:
    # OptimizedUniformAssignmentBuilderTest.testOneMemberSubscribedToNonexistentTopic
    with pytest.raises(PartitionAssignorError):
        UniformAssignor().assign(GroupSpec({"A": member(T2)}), describe(t1=3))
    with pytest.raises(PartitionAssignorError):
        UniformAssignor().assign(GroupSpec({"A": member(T2), "B": member(T1)}), describe(t1=3))


def test_uniform_no_subscription() -> None:
    # OptimizedUniformAssignmentBuilderTest.testOneMemberNoTopicSubscription
    assert UniformAssignor().assign(GroupSpec({"A": member()}), describe(t1=3)) == {"A": {}}
    assert UniformAssignor().assign(GroupSpec({}), describe(t1=3)) == {}


# -- uniform, heterogeneous: UniformHeterogeneousAssignmentBuilderTest ------------------------------------------------


def test_uniform_heterogeneous_unbalanced_previous_assignment() -> None:
    # UniformHeterogeneousAssignmentBuilderTest.testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment
    spec = GroupSpec({
        "A": member(T1, current={T1: {0, 1, 2}}),
        "B": member(T1, T2, current={T1: {3}, T2: {0}}),
        "C": member(T1, T2, T3, current={T1: {4, 5}, T2: {1, 2, 3}, T3: {0, 1, 2, 3}}),
    })
    assert spec.subscription_type is SubscriptionType.HETEROGENEOUS
    assert UniformAssignor().assign(spec, describe(t1=6, t2=4, t3=4)) == {
        "A": frozen({T1: {0, 1, 2, 5}}),
        "B": frozen({T1: {3}, T2: {0, 1, 2, 3}}),
        "C": frozen({T1: {4}, T3: {0, 1, 2, 3}}),
    }


def test_uniform_heterogeneous_member_without_subscription() -> None:
    # UniformHeterogeneousAssignmentBuilderTest.testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions
    spec = GroupSpec({"A": member(T1), "B": member()})
    assert UniformAssignor().assign(spec, describe(t1=3)) == {"A": frozen({T1: {0, 1, 2}}), "B": {}}


# -- range: server RangeAssignorTest ----------------------------------------------------------------------------------


def test_range_three_members_three_topics_different_subscriptions() -> None:
    # RangeAssignorTest.testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions
    spec = GroupSpec({"A": member(T1, T2), "B": member(T3), "C": member(T2, T3)})
    assert ServerRangeAssignor().assign(spec, describe(t1=3, t2=3, t3=2)) == {
        "A": frozen({T1: {0, 1, 2}, T2: {0, 1}}),
        "B": frozen({T3: {0}}),
        "C": frozen({T2: {2}, T3: {1}}),
    }


def test_range_mixed_static_membership_survives_member_id_change() -> None:
    # RangeAssignorTest.testMixedStaticMembership
    topics = describe(t1=5)
    members = {"A": member(T1, instance="instanceA"), "C": member(T1, instance="instanceC"), "B": member(T1)}
    before = ServerRangeAssignor().assign(GroupSpec(members), topics)
    members.pop("A")
    members["memberA1"] = member(T1, instance="instanceA")
    after = ServerRangeAssignor().assign(GroupSpec(members), topics)
    assert after == {"memberA1": before["A"], "B": before["B"], "C": before["C"]}
    assert before == {"A": frozen({T1: {0, 1}}), "C": frozen({T1: {2, 3}}), "B": frozen({T1: {4}})}


# -- group spec -------------------------------------------------------------------------------------------------------


def test_group_spec_rejects_inconsistent_input() -> None:
    with pytest.raises(ValueError, match="assigned to both"):
        GroupSpec({"A": member(T1, current={T1: {0}}), "B": member(T1, current={T1: {0}})})
    with pytest.raises(ValueError, match="HOMOGENEOUS"):
        GroupSpec({"A": member(T1), "B": member(T2)}, SubscriptionType.HOMOGENEOUS)
    # Kafka decides by topic *names*; a caller may force the heterogeneous builder for equal id sets.
    forced = GroupSpec({"A": member(T1), "B": member(T1)}, SubscriptionType.HETEROGENEOUS)
    assert UniformAssignor().assign(forced, describe(t1=3)) == {"A": frozen({T1: {0, 2}}), "B": frozen({T1: {1}})}


def test_registry() -> None:
    assert server_assignor("uniform").name == "uniform"
    assert server_assignor("range").name == "range"
    with pytest.raises(ValueError, match="unknown server assignor"):
        server_assignor("simple")


# -- properties -------------------------------------------------------------------------------------------------------


def _valid_current(group: ServerGroup, member_id: str) -> set[tuple[uuid.UUID, int]]:
    spec = group.members[member_id]
    return {(t, p) for t, ps in spec.assignment.items() if t in spec.subscribed_topic_ids for p in ps}


def _pairs(assignment: dict[uuid.UUID, frozenset[int]]) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


@given(server_groups(homogeneous=True))
def test_uniform_homogeneous_balance_and_stickiness(group: ServerGroup) -> None:
    result = UniformAssignor().assign(group.spec(), group.describer())
    check_server_valid(group, result)
    assert spread(server_counts(result)) <= 1
    subscribed = next(iter(group.members.values())).subscribed_topic_ids
    total = sum(group.topics[t] for t in subscribed)
    min_quota = total // len(group.members)
    for m in group.members:
        kept = _pairs(result[m]) & _valid_current(group, m)
        assert len(kept) >= min(len(_valid_current(group, m)), min_quota)


@given(server_groups(homogeneous=True))
def test_uniform_homogeneous_is_a_fixed_point(group: ServerGroup) -> None:
    first = UniformAssignor().assign(group.spec(), group.describer())
    again = with_assignment(group, first, lambda members: None)
    assert UniformAssignor().assign(again.spec(), again.describer()) == first


@given(server_groups(homogeneous=True, max_members=7))
def test_uniform_survivors_keep_their_partitions_when_a_member_leaves(group: ServerGroup) -> None:
    first = UniformAssignor().assign(group.spec(), group.describer())
    leaving = next(iter(group.members))
    after = with_assignment(group, first, lambda members: members.pop(leaving))
    if not after.members:
        return
    second = UniformAssignor().assign(after.spec(), after.describer())
    check_server_valid(after, second)
    for m in after.members:
        assert _pairs(first[m]) <= _pairs(second[m])  # quotas only grow when a member leaves


@given(server_groups(homogeneous=False))
def test_uniform_heterogeneous_validity_and_stability(group: ServerGroup) -> None:
    result = UniformAssignor().assign(group.spec(), group.describer())
    check_server_valid(group, result)
    # Stickiness: an assignment in which every topic's subscribers are within one of each other is left alone.
    counts = server_counts(result)
    per_topic_balanced = all(
        spread(counts, [m for m, spec in group.members.items() if t in spec.subscribed_topic_ids]) <= 1
        for t in group.topics
    )
    if per_topic_balanced:
        again = with_assignment(group, result, lambda members: None)
        assert UniformAssignor().assign(again.spec(), again.describer()) == result


@settings(max_examples=80)
@given(server_groups(disjoint_groups=True))
def test_uniform_heterogeneous_balances_identical_subscribers(group: ServerGroup) -> None:
    result = UniformAssignor().assign(group.spec(), group.describer())
    check_server_valid(group, result)
    counts = server_counts(result)
    by_subscription: dict[frozenset[uuid.UUID], list[str]] = {}
    for m, spec in group.members.items():
        by_subscription.setdefault(spec.subscribed_topic_ids, []).append(m)
    for members in by_subscription.values():
        assert spread(counts, members) <= 1
    again = with_assignment(group, result, lambda members: None)
    assert UniformAssignor().assign(again.spec(), again.describer()) == result


@given(server_groups())
def test_server_range_properties(group: ServerGroup) -> None:
    result = ServerRangeAssignor().assign(group.spec(), group.describer())
    check_server_valid(group, result)
    for t in group.topics:
        subscribers = [m for m, spec in group.members.items() if t in spec.subscribed_topic_ids]
        per_topic = {m: result[m].get(t, frozenset()) for m in subscribers}
        assert spread(per_topic) <= 1
        for ps in per_topic.values():
            assert not ps or sorted(ps) == list(range(min(ps), max(ps) + 1))
    if group.spec().subscription_type is SubscriptionType.HOMOGENEOUS and len(set(group.topics.values())) == 1:
        for m in group.members:
            assert len({ps for ps in result[m].values()}) <= 1  # co-partitioned: same numbers in every topic


def test_full_scale_uniform() -> None:
    # 1,000 members x 10,000 partitions: the benchmark's size, checked for correctness rather than speed.
    topics = {uuid.UUID(int=i + 1): 100 for i in range(100)}
    members = {f"member-{i}": MemberSpec(frozenset(topics)) for i in range(1000)}
    group = ServerGroup(topics, members)
    first = UniformAssignor().assign(group.spec(), group.describer())
    check_server_valid(group, first)
    assert spread(server_counts(first)) == 0
    joined = with_assignment(group, first, lambda ms: ms.update({"joiner": MemberSpec(frozenset(topics))}))
    second = UniformAssignor().assign(joined.spec(), joined.describer())
    check_server_valid(joined, second)
    assert spread(server_counts(second)) <= 1
    for m in members:
        assert len(_pairs(second[m]) & _pairs(first[m])) >= min(len(_pairs(first[m])), 10_000 // 1001)
