"""Codec, framing and whole-request error responses: exact bytes and fields."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import struct

import pytest
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3 import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4 import HeartbeatResponse as HeartbeatResponseV4
from kio.schema.index import api_key_map, schema_name_map
from kio.schema.join_group.v5 import JoinGroupResponse as JoinGroupResponseV5
from kio.schema.metadata.v13 import MetadataRequest as MetadataRequestV13
from kio.schema.metadata.v13.request import MetadataRequestTopic
from kio.schema.request_header.v1 import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2 import RequestHeader as RequestHeaderV2
from kio.static.constants import EntityType
from kio.static.primitive import i32, i32Timedelta

from kcoord.impl.server.codec import (
    HeaderStart,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    kio_version_range,
)
from kcoord.impl.server.errors import (
    FrameTooLarge,
    FrameTruncated,
    IllegalStateError,
    InvalidFrameLength,
    MalformedBody,
    MalformedHeader,
    UnknownApiKey,
    UnsupportedVersion,
)
from kcoord.impl.server.frames import FrameSplitter, encode_frame, read_frame
from kcoord.impl.server.responses import error_response, zero_entity

# ApiVersions v3, correlation id 7, client id "abc", software "x"/"1": written out by hand from the protocol spec.
API_VERSIONS_V3_FRAME = bytes.fromhex("0012 0003 00000007 0003 616263 00" "02 78 02 31 00".replace(" ", ""))


def test_decodes_hand_written_flexible_request() -> None:
    decoded = decode_request(API_VERSIONS_V3_FRAME)
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id, decoded.client_id) == (18, 3, 7, "abc")
    assert isinstance(decoded.header, RequestHeaderV2)
    assert decoded.body == ApiVersionsRequestV3(client_software_name="x", client_software_version="1")
    assert decoded.trailing_bytes == 0


def test_non_flexible_request_uses_header_v1_and_null_client_id() -> None:
    frame = bytes.fromhex("0012 0000 0000002a ffff".replace(" ", ""))  # ApiVersions v0, client id null
    decoded = decode_request(frame)
    assert isinstance(decoded.header, RequestHeaderV1)
    assert (decoded.correlation_id, decoded.client_id) == (42, None)
    assert decoded.body == ApiVersionsRequestV0()


def test_trailing_bytes_are_ignored_and_counted() -> None:
    # librdkafka's Metadata v13 request carries 3 extra bytes after the body.
    body = MetadataRequestV13(topics=(MetadataRequestTopic(topic_id=None, name="t1"),),
                              allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    frame = encode_request(body, correlation_id=5, client_id="rdkafka") + b"\x00\x00\x00"
    decoded = decode_request(frame)
    assert decoded.body == body
    assert decoded.trailing_bytes == 3


def test_encode_request_round_trips_every_api_versions_version() -> None:
    for version in range(5):
        schema = {0: ApiVersionsRequestV0, 3: ApiVersionsRequestV3}.get(version)
        if schema is None:
            continue
        body = schema() if version == 0 else schema(client_software_name="kcoord", client_software_version="1.0")
        decoded = decode_request(encode_request(body, correlation_id=version, client_id="c"))
        assert decoded.body == body and decoded.correlation_id == version


@pytest.mark.parametrize(
    ("frame", "error", "correlation_id"),
    [
        (b"", MalformedHeader, None),
        (b"\x00\x12\x00\x03\x00\x00\x00", MalformedHeader, None),  # 7 bytes: no correlation id
        (struct.pack(">hhi", 9999, 0, 11) + b"\xff\xff", UnknownApiKey, 11),
        (struct.pack(">hhi", -1, 0, 12), UnknownApiKey, 12),
        (struct.pack(">hhi", 11, 99, 13) + b"\xff\xff", UnsupportedVersion, 13),
        (struct.pack(">hhi", 0, 2, 14) + b"\xff\xff", UnsupportedVersion, 14),  # Produce v2: kio starts at v3
        (struct.pack(">hhih", 18, 3, 15, 50) + b"abc", MalformedHeader, 15),  # client id claims 50 bytes
        (API_VERSIONS_V3_FRAME[:-3], MalformedBody, 7),
        (API_VERSIONS_V3_FRAME[:15] + b"\xff" + API_VERSIONS_V3_FRAME[16:], MalformedBody, 7),  # bad UTF-8
    ],
)
def test_decode_errors_are_typed_and_carry_what_was_read(
    frame: bytes, error: type[Exception], correlation_id: int | None
) -> None:
    with pytest.raises(error) as info:
        decode_request(frame)
    assert getattr(info.value, "correlation_id", None) == correlation_id
    assert getattr(info.value, "header_parsed", None) == (error is MalformedBody)


def test_error_codes_of_decode_errors() -> None:
    assert UnsupportedVersion.error_code == ErrorCode.unsupported_version == 35
    assert MalformedBody.error_code == ErrorCode.invalid_request == 42
    assert UnknownApiKey.error_code == ErrorCode.invalid_request


def test_api_versions_response_header_is_v0_even_when_flexible() -> None:
    body = ApiVersionsResponseV3(error_code=ErrorCode.none, api_keys=(),
                                 throttle_time=i32Timedelta.parse(datetime.timedelta(0)))
    payload = encode_response(HeaderStart(18, 3, 0x01020304), body)
    # correlation id, then directly the body (error code 0, empty compact array = 0x01, throttle 0, no tags)
    assert payload == bytes.fromhex("01020304" "0000" "01" "00000000" "00")


def test_flexible_response_header_has_tag_buffer() -> None:
    body = HeartbeatResponseV4(throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.none)
    assert encode_response(HeaderStart(12, 4, 9), body) == bytes.fromhex("00000009" "00" "00000000" "0000" "00")


def test_non_flexible_response_header_is_v0() -> None:
    body = error_response(11, 5, ErrorCode.coordinator_not_available)
    assert isinstance(body, JoinGroupResponseV5)
    payload = encode_response(HeaderStart(11, 5, 3), body)
    assert payload[:4] == b"\x00\x00\x00\x03"
    assert payload[4:8] == b"\x00\x00\x00\x00"  # throttle time
    assert payload[8:10] == struct.pack(">h", 15)  # COORDINATOR_NOT_AVAILABLE
    assert decode_response(11, 5, payload) == (3, body)


def test_encode_response_rejects_a_body_for_another_request() -> None:
    body = error_response(11, 5, ErrorCode.none)
    with pytest.raises(IllegalStateError, match="does not answer api key 11 v6"):
        encode_response(HeaderStart(11, 6, 1), body)
    with pytest.raises(IllegalStateError):
        encode_response(HeaderStart(12, 5, 1), body)


def test_api_versions_v0_fallback_may_answer_any_api_versions_version() -> None:
    body = error_response(18, 0, ErrorCode.unsupported_version)
    payload = encode_response(HeaderStart(18, 7, 21), body)
    assert payload == bytes.fromhex("00000015" "0023" "00000000")


def _all_response_versions() -> list[tuple[int, int]]:
    return [(key, version) for key, name in sorted(api_key_map.items())
            for version, kinds in sorted(schema_name_map[name].items()) if EntityType.response in kinds]


def test_error_response_exists_and_round_trips_for_every_kio_response() -> None:
    pairs = _all_response_versions()
    assert len(pairs) > 250
    for api_key, version in pairs:
        body = error_response(api_key, version, ErrorCode.not_coordinator)
        top_level_codes = [getattr(body, f.name) for f in dataclasses.fields(body)
                           if f.metadata.get("kafka_type") == "error_code"]
        assert all(code == ErrorCode.not_coordinator for code in top_level_codes), (api_key, version)
        correlation_id, back = decode_response(api_key, version,
                                               encode_response(HeaderStart(api_key, version, 77), body))
        assert (correlation_id, back) == (77, body)


def test_zero_entity_sets_given_fields_and_rejects_unknown_ones() -> None:
    body = zero_entity(JoinGroupResponseV5, generation_id=i32(4), member_id="m")
    assert (body.generation_id, body.member_id, body.error_code, body.members) == (4, "m", ErrorCode.none, ())
    with pytest.raises(TypeError, match="no field"):
        zero_entity(JoinGroupResponseV5, nope=1)


def test_kio_version_ranges() -> None:
    assert kio_version_range(18) == (0, 4)
    assert kio_version_range(0) == (3, 13)
    assert kio_version_range(4) is None


# --- frames ------------------------------------------------------------------------------------------------


def test_encode_frame_and_splitter() -> None:
    stream = encode_frame(b"abc") + encode_frame(b"") + encode_frame(b"xy")
    assert stream[:7] == b"\x00\x00\x00\x03abc"
    splitter = FrameSplitter()
    assert splitter.feed(stream[:5]) == []
    assert splitter.feed(stream[5:12]) == [b"abc", b""]
    assert splitter.pending_bytes == 1
    assert splitter.feed(stream[12:]) == [b"xy"]
    with pytest.raises(InvalidFrameLength):
        FrameSplitter().feed(b"\xff\xff\xff\xff")
    with pytest.raises(FrameTooLarge):
        FrameSplitter(max_frame_bytes=10).feed(struct.pack(">i", 11))


async def _read_all(data: bytes, max_frame_bytes: int = 100) -> list[bytes | None]:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    frames: list[bytes | None] = []
    while True:
        frame = await read_frame(reader, max_frame_bytes)
        frames.append(frame)
        if frame is None:
            return frames


def test_read_frame_ok_and_eof() -> None:
    assert asyncio.run(_read_all(encode_frame(b"hello") + encode_frame(b""))) == [b"hello", b"", None]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"\x00\x00", FrameTruncated),
        (b"\x00\x00\x00\x05abc", FrameTruncated),
        (b"\x80\x00\x00\x00", InvalidFrameLength),
        (struct.pack(">i", 101), FrameTooLarge),
    ],
)
def test_read_frame_errors(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        asyncio.run(_read_all(data))


def test_an_int64_duration_no_timedelta_holds_is_read_as_the_nearest_one() -> None:
    """OffsetCommit v2-v4's retention time is an int64 of milliseconds; Kafka takes any value. kio reads it into a
    timedelta, counting microseconds in an int64 (about ±292,000 years): the codec used to refuse a longer one
    (MalformedBody, the connection closed; found by test_valid_requests, KCOORD_FUZZ_SEED=72 with 3000 requests). It
    is read as the longest duration kio reads (an offset kept for ever, as Kafka keeps it)."""
    from kio.schema.offset_commit.v2.request import OffsetCommitRequest, OffsetCommitRequestTopic
    from kio.static.primitive import i64Timedelta

    longest = ((1 << 63) - 1) // 1000  # the most milliseconds kio reads into a timedelta
    request = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=i32(-1), member_id="",
                                  retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=123_456_789)),
                                  topics=(OffsetCommitRequestTopic(name="t", partitions=()),))
    frame = encode_request(request, correlation_id=7, client_id="c")
    for raw, expected in (((1 << 63) - 1, longest), (-(1 << 63), -longest), (5, 5)):
        patched = frame.replace(struct.pack(">q", 123_456_789), struct.pack(">q", raw))
        decoded = decode_request(patched)
        assert decoded.body.retention_time == datetime.timedelta(milliseconds=expected), raw
        assert decoded.body.topics[0].name == "t" and decoded.trailing_bytes == 0
