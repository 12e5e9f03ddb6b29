"""__consumer_offsets records: exact bytes for every key type and every value version Kafka defines (0-8)."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcoord.impl.storage.group_log_schema import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupKey,
    GroupMetadataKey,
    GroupMetadataValue,
    GroupValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    OtherKey,
    OtherValue,
    PartitionMetadata,
    SchemaError,
    TopicMetadata,
    TopicPartitions,
    UnknownRecordTypeError,
    decode_any_key,
    decode_any_value,
    decode_key,
    decode_record,
    decode_value,
    default_value_version,
    encode_key,
    encode_value,
    record_type,
    value_versions,
)

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")


def s16(s: str | None) -> bytes:
    """Classic (int16-length) string; -1 for null."""
    return struct.pack(">h", -1) if s is None else struct.pack(">h", len(s.encode())) + s.encode()


def b32(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def cs(s: str | None) -> bytes:
    """Compact string: unsigned varint length+1 (0 = null); small lengths only."""
    return b"\x00" if s is None else bytes([len(s.encode()) + 1]) + s.encode()


def cb(b: bytes) -> bytes:
    return bytes([len(b) + 1]) + b


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


NO_TAGS = b"\x00"

# ------------------------------------------------------------------------------------------ keys

KEY_VECTORS: list[tuple[GroupKey, bytes]] = [
    (OffsetCommitKey("g", "orders", 7), i16(1) + s16("g") + s16("orders") + i32(7)),
    (GroupMetadataKey("g"), i16(2) + s16("g")),
    (ConsumerGroupMetadataKey("g"), i16(3) + s16("g")),
    (ConsumerGroupPartitionMetadataKey("g"), i16(4) + s16("g")),
    (ConsumerGroupMemberMetadataKey("g", "m-1"), i16(5) + s16("g") + s16("m-1")),
    (ConsumerGroupTargetAssignmentMetadataKey("g"), i16(6) + s16("g")),
    (ConsumerGroupTargetAssignmentMemberKey("g", "m-1"), i16(7) + s16("g") + s16("m-1")),
    (ConsumerGroupCurrentMemberAssignmentKey("g", "m-1"), i16(8) + s16("g") + s16("m-1")),
]


@pytest.mark.parametrize(("key", "expected"), KEY_VECTORS)
def test_key_bytes(key: GroupKey, expected: bytes) -> None:
    assert encode_key(key) == expected
    assert decode_key(expected) == key
    assert record_type(expected) == expected[1]


def test_offset_commit_key_version_0_decodes() -> None:
    assert decode_key(i16(0) + s16("g") + s16("t") + i32(1)) == OffsetCommitKey("g", "t", 1)


def test_unknown_record_types() -> None:
    """Kafka 4.0 declares record types 0-16; 17 and up are streams groups (Kafka 4.1+)."""
    with pytest.raises(UnknownRecordTypeError) as info:
        decode_key(i16(17) + s16("streams-group"))
    assert info.value.record_type == 17
    with pytest.raises(UnknownRecordTypeError):
        decode_value(18, b"\x00\x00")
    with pytest.raises(SchemaError, match="too short"):
        record_type(b"\x00")


def test_share_group_and_regular_expression_records_decode() -> None:
    """Types 9-15 (share groups) have no class: they read as their declaration's fields, in declaration order, and
    write back; 16 (a regular expression's resolution) has its classes."""
    with pytest.raises(UnknownRecordTypeError):  # a coordinator's load skips what it does not serve
        decode_key(i16(11) + s16("sg"))
    key_bytes = i16(16) + s16("g") + s16("topic-.*")
    assert decode_key(key_bytes) == decode_any_key(key_bytes) == ConsumerGroupRegularExpressionKey("g", "topic-.*")
    assert encode_key(ConsumerGroupRegularExpressionKey("g", "topic-.*")) == key_bytes
    value_bytes = i16(0) + bytes([3]) + cs("a") + cs("b") + i64(7) + i64(1_000) + NO_TAGS
    value = decode_any_value(16, value_bytes)
    assert value == ConsumerGroupRegularExpressionValue(("a", "b"), 7, 1_000)
    assert encode_value(value) == value_bytes
    share = decode_any_value(11, i16(0) + i32(3) + NO_TAGS)
    assert share == OtherValue("ShareGroupMetadataValue", (3,))
    assert encode_value(share) == i16(0) + i32(3) + NO_TAGS
    share_key = decode_any_key(i16(11) + s16("sg"))
    assert share_key == OtherKey(11, "ShareGroupMetadataKey", ("sg",))
    assert encode_key(share_key) == i16(11) + s16("sg")


# ------------------------------------------------------------------------------------------ OffsetCommitValue


def test_offset_commit_value_every_version() -> None:
    base = i64(42)
    meta = "m"
    vectors = {
        0: i16(0) + base + s16(meta) + i64(1000),
        1: i16(1) + base + s16(meta) + i64(1000) + i64(5000),
        2: i16(2) + base + s16(meta) + i64(1000),
        3: i16(3) + base + i32(6) + s16(meta) + i64(1000),
        4: i16(4) + base + i32(6) + cs(meta) + i64(1000) + NO_TAGS,
    }
    full = OffsetCommitValue(42, meta, 1000, leader_epoch=6, expire_timestamp=5000)
    for version, data in vectors.items():
        decoded = decode_value(1, data)
        expected = OffsetCommitValue(42, meta, 1000, leader_epoch=6 if version >= 3 else -1,
                                     expire_timestamp=5000 if version == 1 else -1)
        assert decoded == expected, version
        assert decode_value(0, data) == expected  # key version 0 uses the same value schema
        assert encode_value(full, version) == data  # fields absent from a version are dropped (ignorable)
    assert value_versions(1) == (0, 1, 2, 3, 4)


def test_offset_commit_value_version_kafka_writes() -> None:
    assert default_value_version(OffsetCommitValue(1, "", 2)) == 3
    assert default_value_version(OffsetCommitValue(1, "", 2, expire_timestamp=3)) == 1
    assert encode_value(OffsetCommitValue(1, "", 2))[:2] == i16(3)  # type: ignore[index]
    assert encode_value(OffsetCommitValue(1, "", 2, expire_timestamp=3))[:2] == i16(1)  # type: ignore[index]


# ------------------------------------------------------------------------------------------ GroupMetadataValue

MEMBER = MemberMetadata("m-1", "client", "/10.0.0.1", 10_000, b"\x00\x01sub", b"\x00\x02asg",
                        group_instance_id="inst", rebalance_timeout=30_000)
GROUP = GroupMetadataValue("consumer", 5, "range", "m-1", (MEMBER,), current_state_timestamp=1234)


def _member_classic(version: int) -> bytes:
    out = s16("m-1")
    if version >= 3:
        out += s16("inst")
    out += s16("client") + s16("/10.0.0.1")
    if version >= 1:
        out += i32(30_000)
    return out + i32(10_000) + b32(b"\x00\x01sub") + b32(b"\x00\x02asg")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_metadata_value_classic_versions(version: int) -> None:
    data = (i16(version) + s16("consumer") + i32(5) + s16("range") + s16("m-1")
            + (i64(1234) if version >= 2 else b"") + i32(1) + _member_classic(version))
    assert encode_value(GROUP, version) == data
    member = MemberMetadata("m-1", "client", "/10.0.0.1", 10_000, b"\x00\x01sub", b"\x00\x02asg",
                            group_instance_id="inst" if version >= 3 else None,
                            rebalance_timeout=30_000 if version >= 1 else -1)
    assert decode_value(2, data) == GroupMetadataValue("consumer", 5, "range", "m-1", (member,),
                                                       current_state_timestamp=1234 if version >= 2 else -1)


def test_group_metadata_value_flexible_version_4() -> None:
    member = (cs("m-1") + cs("inst") + cs("client") + cs("/10.0.0.1") + i32(30_000) + i32(10_000)
              + cb(b"\x00\x01sub") + cb(b"\x00\x02asg") + NO_TAGS)
    data = i16(4) + cs("consumer") + i32(5) + cs("range") + cs("m-1") + i64(1234) + bytes([2]) + member + NO_TAGS
    assert encode_value(GROUP, 4) == data
    assert decode_value(2, data) == GROUP


def test_group_metadata_nulls_and_kafka_version() -> None:
    empty = GroupMetadataValue("consumer", 0, None, None, ())
    assert default_value_version(empty) == 3
    data = encode_value(empty)
    assert data == i16(3) + s16("consumer") + i32(0) + s16(None) + s16(None) + i64(-1) + i32(0)
    assert decode_value(2, data) == empty
    with pytest.raises(SchemaError, match="non-nullable"):
        decode_value(2, i16(3) + s16(None) + i32(0) + s16(None) + s16(None) + i64(-1) + i32(0))


# ------------------------------------------------------------------------------------------ consumer group (KIP-848)


def test_consumer_group_metadata_and_target_assignment_metadata() -> None:
    assert encode_value(ConsumerGroupMetadataValue(12)) == i16(0) + i32(12) + NO_TAGS
    assert decode_value(3, i16(0) + i32(12) + NO_TAGS) == ConsumerGroupMetadataValue(12)
    assert encode_value(ConsumerGroupTargetAssignmentMetadataValue(4)) == i16(0) + i32(4) + NO_TAGS
    assert decode_value(6, i16(0) + i32(4) + NO_TAGS) == ConsumerGroupTargetAssignmentMetadataValue(4)


def test_partition_metadata_value() -> None:
    value = ConsumerGroupPartitionMetadataValue((
        TopicMetadata(TOPIC_ID, "orders", 3, (PartitionMetadata(0, ("rack-a", "rack-b")),)),))
    data = (i16(0) + bytes([2]) + TOPIC_ID.bytes + cs("orders") + i32(3)
            + bytes([2]) + i32(0) + bytes([3]) + cs("rack-a") + cs("rack-b") + NO_TAGS
            + NO_TAGS + NO_TAGS)
    assert encode_value(value) == data
    assert decode_value(4, data) == value


def test_member_metadata_value_with_and_without_classic_tagged_field() -> None:
    """Kafka 4.0.2's generated writer writes tag 0 for a null ClassicMemberMetadata too (count it when null or not a
    default-made struct; a null is the varint 0): a consumer-protocol member's value ends `01 00 01 00`, as the
    record below, read from a Kafka 4.0.2 broker's __consumer_offsets (librdkafka member, KIP-848), shows. Without
    the tag (what kcoord wrote before) it still reads back the same."""
    consumer = ConsumerGroupMemberMetadataValue(None, "rack", "client", "/1.2.3.4", ("a", "b"), None, "uniform",
                                                rebalance_timeout_ms=300_000)
    head = (i16(0) + cs(None) + cs("rack") + cs("client") + cs("/1.2.3.4") + bytes([3]) + cs("a") + cs("b")
            + cs(None) + i32(300_000) + cs("uniform"))
    data = head + bytes([1, 0, 1, 0])  # one tagged field: tag 0, 1 byte, null
    assert encode_value(consumer) == data
    assert decode_value(5, data) == consumer
    assert decode_value(5, head + NO_TAGS) == consumer
    kafka = bytes.fromhex("000000000872646b61666b610b2f3132372e302e302e3103076f7264657273097061796d656e7473010004"
                          "93e00001000100")
    read = decode_value(5, kafka)
    assert read == ConsumerGroupMemberMetadataValue(None, None, "rdkafka", "/127.0.0.1", ("orders", "payments"), "",
                                                    None, 300_000, None)
    assert encode_value(read) == kafka

    classic = ConsumerGroupMemberMetadataValue(
        "inst", None, "client", "/1.2.3.4", ("a",), "re.*", None,
        classic_member_metadata=ClassicMemberMetadata(45_000, (ClassicProtocol("range", b"\x01\x02"),)))
    tagged_struct = b"\x01" + i32(45_000) + bytes([2]) + cs("range") + cb(b"\x01\x02") + NO_TAGS + NO_TAGS
    data = (i16(0) + cs("inst") + cs(None) + cs("client") + cs("/1.2.3.4") + bytes([2]) + cs("a") + cs("re.*")
            + i32(-1) + cs(None) + bytes([1, 0, len(tagged_struct)]) + tagged_struct)
    assert encode_value(classic) == data
    assert decode_value(5, data) == classic


def test_assignment_values() -> None:
    target = ConsumerGroupTargetAssignmentMemberValue((TopicPartitions(TOPIC_ID, (0, 5)),))
    tp = TOPIC_ID.bytes + bytes([3]) + i32(0) + i32(5) + NO_TAGS
    assert encode_value(target) == i16(0) + bytes([2]) + tp + NO_TAGS
    assert decode_value(7, i16(0) + bytes([2]) + tp + NO_TAGS) == target
    current = ConsumerGroupCurrentMemberAssignmentValue(7, 6, 1, (TopicPartitions(TOPIC_ID, (0, 5)),), ())
    data = i16(0) + i32(7) + i32(6) + b"\x01" + bytes([2]) + tp + bytes([1]) + NO_TAGS
    assert encode_value(current) == data
    assert decode_value(8, data) == current


def test_tombstones_and_decode_record() -> None:
    key = encode_key(ConsumerGroupCurrentMemberAssignmentKey("g", "m"))
    assert decode_record(key, None) == (ConsumerGroupCurrentMemberAssignmentKey("g", "m"), None)
    assert encode_value(None) is None


def test_version_errors() -> None:
    with pytest.raises(SchemaError, match="cannot write version 1"):
        encode_value(ConsumerGroupMetadataValue(1), 1)
    with pytest.raises(SchemaError, match="unknown value version 5"):
        decode_value(1, i16(5) + i64(0))
    with pytest.raises(SchemaError, match="trailing"):
        decode_value(3, i16(0) + i32(12) + NO_TAGS + b"\x00")
    with pytest.raises(SchemaError):
        decode_value(3, i16(0) + i32(12))  # flexible value missing its tagged-field section
    with pytest.raises(TypeError):
        encode_key("not a key")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ round trips

_text = st.text(max_size=12)
_opt = st.one_of(st.none(), _text)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_uuid = st.uuids()
_tps = st.lists(st.builds(TopicPartitions, _uuid, st.lists(_i32, max_size=4).map(tuple)), max_size=3).map(tuple)

_values: st.SearchStrategy[GroupValue] = st.one_of(
    st.builds(OffsetCommitValue, _i64, _text, _i64, _i32, _i64),
    st.builds(GroupMetadataValue, _text, _i32, _opt, _opt,
              st.lists(st.builds(MemberMetadata, _text, _text, _text, _i32, st.binary(max_size=20),
                                 st.binary(max_size=20), _opt, _i32), max_size=3).map(tuple), _i64),
    st.builds(ConsumerGroupMetadataValue, _i32),
    st.builds(ConsumerGroupPartitionMetadataValue, st.lists(st.builds(
        TopicMetadata, _uuid, _text, _i32, st.lists(st.builds(
            PartitionMetadata, _i32, st.lists(_text, max_size=3).map(tuple)), max_size=3).map(tuple)),
        max_size=3).map(tuple)),
    st.builds(ConsumerGroupMemberMetadataValue, _opt, _opt, _text, _text, st.lists(_text, max_size=3).map(tuple),
              _opt, _opt, _i32, st.one_of(st.none(), st.builds(ClassicMemberMetadata, _i32, st.lists(
                  st.builds(ClassicProtocol, _text, st.binary(max_size=300)), max_size=3).map(tuple))
                  # Kafka 4.0.2's writer leaves out a default-made ClassicMemberMetadata (it reads back as null)
                  .filter(lambda m: m != ClassicMemberMetadata(0, ())))),
    st.builds(ConsumerGroupTargetAssignmentMetadataValue, _i32),
    st.builds(ConsumerGroupTargetAssignmentMemberValue, _tps),
    st.builds(ConsumerGroupCurrentMemberAssignmentValue, _i32, _i32, st.integers(-128, 127), _tps, _tps),
)

_RECORD_TYPE = {OffsetCommitValue: 1, GroupMetadataValue: 2, ConsumerGroupMetadataValue: 3,
                ConsumerGroupPartitionMetadataValue: 4, ConsumerGroupMemberMetadataValue: 5,
                ConsumerGroupTargetAssignmentMetadataValue: 6, ConsumerGroupTargetAssignmentMemberValue: 7,
                ConsumerGroupCurrentMemberAssignmentValue: 8}


@given(_values)
def test_round_trip_at_the_newest_version(value: GroupValue) -> None:
    rtype = _RECORD_TYPE[type(value)]
    newest = value_versions(rtype)[-1]
    if isinstance(value, OffsetCommitValue):
        value = OffsetCommitValue(value.offset, value.metadata, value.commit_timestamp, value.leader_epoch)
    assert decode_value(rtype, encode_value(value, newest)) == value
    assert decode_value(rtype, encode_value(value)) is not None
