"""ConsumerProtocolSubscription / ConsumerProtocolAssignment bytes, against kafka-python and Kafka's own tests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription
from kafka.protocol.old.consumer_protocol import ConsumerProtocolMemberAssignment_v0, ConsumerProtocolMemberMetadata_v0

from kcoord.impl.assignors import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    TopicPartition,
    _wire,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

topic_names = st.text(alphabet="abcxyz-_.0123456789", min_size=1, max_size=8)
partitions = st.lists(st.tuples(topic_names, st.integers(0, 2**31 - 1)), unique=True, max_size=8).map(
    lambda tps: tuple(TopicPartition(t, p) for t, p in tps)
)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(topic_names, unique=True, max_size=5).map(lambda ts: tuple(sorted(ts))),
    user_data=st.one_of(st.none(), st.binary(max_size=16)),
    owned_partitions=partitions.map(lambda tps: tuple(sorted(tps))),
    generation_id=st.one_of(st.just(-1), st.integers(0, 2**31 - 1)),
    rack_id=st.one_of(st.none(), st.text(alphabet="abc-1", min_size=1, max_size=5)),
)
assignments = st.builds(Assignment, partitions=partitions, user_data=st.one_of(st.none(), st.binary(max_size=16)))


def _grouped(tps: tuple[TopicPartition, ...]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in tps:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return grouped


@given(subscriptions, st.integers(0, 3))
def test_subscription_round_trip(subscription: Subscription, version: int) -> None:
    decoded = decode_subscription(encode_subscription(subscription, version))
    assert decoded.topics == subscription.topics
    assert decoded.user_data == subscription.user_data
    assert decoded.owned_partitions == (subscription.owned_partitions if version >= 1 else ())
    assert decoded.generation_id == (subscription.generation_id if version >= 2 else -1)
    assert decoded.rack_id == (subscription.rack_id if version >= 3 else None)


@given(assignments, st.integers(0, 3))
def test_assignment_round_trip(assignment: Assignment, version: int) -> None:
    decoded = decode_assignment(encode_assignment(assignment, version))
    assert sorted(decoded.partitions) == sorted(assignment.partitions)
    assert decoded.user_data == assignment.user_data


@given(subscriptions, st.integers(0, 3))
def test_subscription_bytes_equal_kafka_python(subscription: Subscription, version: int) -> None:
    kp_topic_partition = KpSubscription.TopicPartition
    fields: dict[str, object] = {"topics": list(subscription.topics), "user_data": subscription.user_data}
    if version >= 1:
        fields["owned_partitions"] = [
            kp_topic_partition(topic=t, partitions=ps) for t, ps in _grouped(subscription.owned_partitions).items()
        ]
    if version >= 2:
        fields["generation_id"] = subscription.generation_id
    if version >= 3:
        fields["rack_id"] = subscription.rack_id
    theirs = KpSubscription(version=version, **fields).encode()
    assert encode_subscription(subscription, version) == theirs
    assert decode_subscription(theirs).topics == subscription.topics


@given(assignments, st.integers(0, 3))
def test_assignment_bytes_equal_kafka_python(assignment: Assignment, version: int) -> None:
    grouped = list(_grouped(assignment.partitions).items())
    theirs = KpAssignment(version=version, assigned_partitions=grouped, user_data=assignment.user_data).encode()
    assert encode_assignment(assignment, version) == theirs
    ours = KpAssignment.decode(encode_assignment(assignment, version))
    assert [(t, list(ps)) for t, ps in ours.assigned_partitions] == grouped


def test_reads_kafka_python_legacy_struct_encoding() -> None:
    # kafka-python's pre-JSON-schema structs (kafka.protocol.old.consumer_protocol), what 2.x clients sent.
    metadata = ConsumerProtocolMemberMetadata_v0(0, ["t1", "t0"], b"ud").encode()
    assert decode_subscription(metadata) == Subscription(("t1", "t0"), b"ud")
    assignment = ConsumerProtocolMemberAssignment_v0(0, [("t0", [2, 0]), ("t1", [1])], b"").encode()
    assert decode_assignment(assignment).partitions == (
        TopicPartition("t0", 2), TopicPartition("t0", 0), TopicPartition("t1", 1)
    )


def test_encoder_sorts_topics_and_owned_partitions() -> None:
    # ConsumerProtocolTest.serializeSubscriptionShouldOrderTopics / ...ShouldOrderOwnedPartitions
    subscription = Subscription.of(["topic", "other"], owned_partitions=[("topic", 1), ("other", 2), ("topic", 0)])
    decoded = decode_subscription(encode_subscription(subscription))
    assert decoded.topics == ("other", "topic")
    assert decoded.owned_partitions == (
        TopicPartition("other", 2), TopicPartition("topic", 0), TopicPartition("topic", 1)
    )


def test_null_and_empty_user_data_are_distinct() -> None:
    # ConsumerProtocolTest.serializeDeserializeNullSubscriptionUserData / deserializeNullAssignmentUserData
    assert decode_subscription(encode_subscription(Subscription(("t",)))).user_data is None
    assert decode_subscription(encode_subscription(Subscription(("t",), b""))).user_data == b""
    assert decode_assignment(encode_assignment(Assignment(()))).user_data is None


def test_future_subscription_version_is_read_as_v3() -> None:
    # ConsumerProtocolTest.deserializeFutureSubscriptionVersion: v100 = v3 fields + an extra string "bar".
    body = b"".join([
        _wire.int16(100),
        _wire.int32(1), _wire.string("topic"),
        _wire.int32(0),  # user_data: empty bytes
        _wire.int32(1), _wire.string("bar"), _wire.int32(1), _wire.int32(2),
        _wire.int32(1),  # generation_id
        _wire.string("rack-a"),
        _wire.string("bar"),
    ])
    decoded = decode_subscription(body, group_instance_id="instance.id")
    assert decoded == Subscription(("topic",), b"", (TopicPartition("bar", 2),), 1, "rack-a", "instance.id")


def test_future_assignment_version_is_read_as_v3() -> None:
    # ConsumerProtocolTest.deserializeFutureAssignmentVersion
    body = b"".join([
        _wire.int16(100),
        _wire.int32(1), _wire.string("foo"), _wire.int32(1), _wire.int32(1),
        _wire.int32(0),
        _wire.string("bar"),
    ])
    assert decode_assignment(body).partitions == (TopicPartition("foo", 1),)


def test_empty_rack_id_reads_as_none() -> None:
    assert decode_subscription(encode_subscription(Subscription(("t",), rack_id=""))).rack_id is None


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x01\x00\x00\x00\x02\x00\x01a", b"\xff\xff\x00\x00\x00\x00"])
def test_malformed_bytes_are_rejected(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(data)


def test_encoding_below_version_zero_is_rejected() -> None:
    with pytest.raises(ConsumerProtocolError):
        encode_subscription(Subscription(("t",)), -1)
