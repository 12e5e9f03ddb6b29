"""Dispatcher policy without sockets: which frames reach handlers, and the exact answers to the rest."""

from __future__ import annotations

import asyncio
import datetime
import logging
import struct

import pytest
from kio.schema.api_versions.v0 import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3 import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.api_versions.v4 import ApiVersionsRequest as ApiVersionsRequestV4
from kio.schema.api_versions.v4 import ApiVersionsResponse as ApiVersionsResponseV4
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4 import HeartbeatRequest as HeartbeatRequestV4
from kio.schema.heartbeat.v4 import HeartbeatResponse as HeartbeatResponseV4
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from kcoord.impl.errors import IllegalStateError, KafkaError
from kcoord.impl.server import (
    ConnectionInfo,
    Dispatcher,
    Feature,
    HandlerRegistry,
    KafkaProtocolError,
    Request,
    VersionRange,
    encode_request,
    error_response,
)
from kcoord.impl.server.codec import decode_response
from kcoord.impl.server.dispatch import CloseConnection, NoReply, Outcome, Reply

CONN = ConnectionInfo(connection_id=1, client_host="127.0.0.1", client_port=5555)
HEARTBEAT = HeartbeatRequestV4(group_id="g", generation_id=i32(1), member_id="m", group_instance_id=None)


def dispatch(dispatcher: Dispatcher, frame: bytes) -> Outcome:
    return asyncio.run(dispatcher.dispatch(frame, CONN))


def reply_body(outcome: Outcome, api_key: int, version: int) -> tuple[int, ResponsePayload]:
    assert isinstance(outcome, Reply), outcome
    return decode_response(api_key, version, outcome.payload)


class Recorder:
    """A heartbeat handler that records calls and answers per `mode`."""

    def __init__(self, mode: str = "ok") -> None:
        self.calls: list[Request] = []
        self.mode = mode

    async def __call__(self, request: Request) -> ResponsePayload | None:
        self.calls.append(request)
        if self.mode == "kafka-error":
            raise KafkaProtocolError(ErrorCode.rebalance_in_progress)
        if self.mode == "named-kafka-error":
            raise KafkaError("NOT_COORDINATOR", "moved")
        if self.mode == "unknown-kafka-error":
            raise KafkaError("NO_SUCH_ERROR")
        if self.mode == "crash":
            raise RuntimeError("handler bug")
        if self.mode == "wrong-type":
            return error_response(12, 3, ErrorCode.none)
        if self.mode == "none":
            return None
        return error_response(request.api_key, request.api_version, ErrorCode.none)


ALL_HEARTBEAT_VERSIONS = VersionRange(0, 4)


def heartbeat_dispatcher(
    mode: str = "ok", versions: VersionRange = ALL_HEARTBEAT_VERSIONS
) -> tuple[Dispatcher, Recorder]:
    recorder = Recorder(mode)
    registry = HandlerRegistry()
    registry.register(12, recorder, versions)
    return Dispatcher(registry, features=(Feature("group.version", 0, 1, 1),)), recorder


def test_api_versions_lists_registered_apis_and_itself() -> None:
    dispatcher, _ = heartbeat_dispatcher()
    frame = encode_request(ApiVersionsRequestV3(client_software_name="kcoord-test", client_software_version="1.0"),
                           correlation_id=3, client_id="c")
    correlation_id, body = reply_body(dispatch(dispatcher, frame), 18, 3)
    assert correlation_id == 3 and isinstance(body, ApiVersionsResponseV3)
    assert body.error_code == ErrorCode.none
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(12, 0, 4), (18, 0, 4)]
    # KAFKA-17492: a v3 answer leaves out the supported features whose minimum is 0; the finalized level stays
    assert body.supported_features == ()
    assert [(f.name, f.min_version_level, f.max_version_level) for f in body.finalized_features] == \
        [("group.version", 1, 1)]


def test_api_versions_v4_lists_every_feature_and_finalizes_at_one_level() -> None:
    """As Kafka's createFinalizedFeatureKeys: a finalized feature's min and max level are both its level; a level of
    0 is not listed as finalized; the epoch is the one given (what a client compares to re-read the levels)."""
    registry = HandlerRegistry()
    registry.register(12, Recorder(), ALL_HEARTBEAT_VERSIONS)
    dispatcher = Dispatcher(registry, features=(Feature("group.version", 0, 1, 1), Feature("transaction.version", 0,
                                                                                            2, 0)),
                            features_epoch=77)
    frame = encode_request(ApiVersionsRequestV4(client_software_name="kcoord-test", client_software_version="1.0"),
                           correlation_id=4, client_id="c")
    _, body = reply_body(dispatch(dispatcher, frame), 18, 4)
    assert isinstance(body, ApiVersionsResponseV4)
    assert [(f.name, f.min_version, f.max_version) for f in body.supported_features] == \
        [("group.version", 0, 1), ("transaction.version", 0, 2)]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in body.finalized_features] == \
        [("group.version", 1, 1)]
    assert body.finalized_features_epoch == 77


def test_api_versions_newer_than_ours_gets_v0_fallback_bytes() -> None:
    dispatcher, _ = heartbeat_dispatcher()
    frame = struct.pack(">hhi", 18, 9, 0x0A0B0C0D) + b"garbage that is never parsed"
    outcome = dispatch(dispatcher, frame)
    assert isinstance(outcome, Reply)
    assert outcome.payload == bytes.fromhex(
        "0a0b0c0d" "0023" "00000002" "000c00000004" "001200000004"
    )  # v0 header; UNSUPPORTED_VERSION (35); [(12, 0..4), (18, 0..4)]


def test_api_versions_fallback_when_our_max_is_lower_than_the_clients() -> None:
    registry = HandlerRegistry()
    dispatcher = Dispatcher(registry, api_versions_range=VersionRange(0, 2))
    frame = encode_request(ApiVersionsRequestV3(client_software_name="a", client_software_version="1"),
                           correlation_id=8, client_id=None)
    correlation_id, body = reply_body(dispatch(dispatcher, frame), 18, 0)
    assert correlation_id == 8 and isinstance(body, ApiVersionsResponseV0)
    assert body.error_code == ErrorCode.unsupported_version
    assert [(k.api_key, k.max_version) for k in body.api_keys] == [(18, 2)]


def test_api_versions_v3_rejects_bad_client_software_name() -> None:
    dispatcher, _ = heartbeat_dispatcher()
    frame = encode_request(ApiVersionsRequestV3(client_software_name="-bad name", client_software_version="1"),
                           correlation_id=4, client_id="c")
    _, body = reply_body(dispatch(dispatcher, frame), 18, 3)
    assert isinstance(body, ApiVersionsResponseV3)
    assert (body.error_code, body.api_keys) == (ErrorCode.invalid_request, ())


def test_handler_gets_decoded_request_and_connection() -> None:
    dispatcher, recorder = heartbeat_dispatcher()
    frame = encode_request(HEARTBEAT, correlation_id=10, client_id="client-1")
    correlation_id, body = reply_body(dispatch(dispatcher, frame), 12, 4)
    assert correlation_id == 10 and isinstance(body, HeartbeatResponseV4) and body.error_code == ErrorCode.none
    [request] = recorder.calls
    assert (request.api_key, request.api_version, request.correlation_id, request.client_id) == (12, 4, 10, "client-1")
    assert request.body == HEARTBEAT and request.connection == CONN


@pytest.mark.parametrize(
    ("mode", "error_code"),
    [("kafka-error", ErrorCode.rebalance_in_progress), ("named-kafka-error", ErrorCode.not_coordinator),
     ("unknown-kafka-error", ErrorCode.unknown_server_error), ("crash", ErrorCode.unknown_server_error),
     ("wrong-type", ErrorCode.unknown_server_error)],
)
def test_handler_failures_become_error_responses(mode: str, error_code: ErrorCode) -> None:
    dispatcher, recorder = heartbeat_dispatcher(mode)
    _, body = reply_body(dispatch(dispatcher, encode_request(HEARTBEAT, correlation_id=1, client_id=None)), 12, 4)
    assert isinstance(body, HeartbeatResponseV4) and body.error_code == error_code
    assert len(recorder.calls) == 1


def test_handler_returning_none_sends_nothing() -> None:
    dispatcher, _ = heartbeat_dispatcher("none")
    assert dispatch(dispatcher, encode_request(HEARTBEAT, correlation_id=1, client_id=None)) == NoReply()


def test_unadvertised_version_with_schema_gets_unsupported_version_and_no_call() -> None:
    dispatcher, recorder = heartbeat_dispatcher(versions=VersionRange(0, 3))
    correlation_id, body = reply_body(dispatch(dispatcher, encode_request(HEARTBEAT, correlation_id=6,
                                                                            client_id=None)), 12, 4)
    assert correlation_id == 6 and body.error_code == ErrorCode.unsupported_version  # type: ignore[attr-defined]
    assert recorder.calls == []


def test_unregistered_api_gets_unsupported_version() -> None:
    dispatcher, _ = heartbeat_dispatcher()
    frame = struct.pack(">hhih", 16, 0, 2, -1)  # ListGroups v0: null client id, empty body
    _, body = reply_body(dispatch(dispatcher, frame), 16, 0)
    assert body.error_code == ErrorCode.unsupported_version  # type: ignore[attr-defined]


def test_malformed_body_closes_the_connection_and_calls_nothing() -> None:
    """Kafka 4.0 closes the connection on a request whose body does not parse ("Error getting request for apiKey"),
    as the reference broker does to the bad-input scenario's Metadata v9 with an overflowing array length."""
    dispatcher, recorder = heartbeat_dispatcher()
    frame = encode_request(HEARTBEAT, correlation_id=12, client_id=None)[:-4]
    assert isinstance(dispatch(dispatcher, frame), CloseConnection)
    assert recorder.calls == []


def test_a_null_where_the_schema_forbids_it_closes_the_connection_and_calls_nothing() -> None:
    """JoinGroup v5's protocols is a non-nullable array: kio reads a null length as None (strings it refuses
    itself); the codec refuses it from the schema, as Kafka's reader does ("non-nullable field protocols was
    serialized as null"), and Kafka closes the connection."""
    from kio.schema.join_group.v5 import JoinGroupRequest

    recorder = Recorder()
    registry = HandlerRegistry()
    registry.register(11, recorder, VersionRange(5, 5))
    dispatcher = Dispatcher(registry)
    join = JoinGroupRequest(group_id="g", session_timeout=datetime.timedelta(seconds=10),
                            rebalance_timeout=datetime.timedelta(seconds=10), member_id="", group_instance_id=None,
                            protocol_type="consumer", protocols=None)  # type: ignore[arg-type]
    outcome = dispatch(dispatcher, encode_request(join, correlation_id=12, client_id=None))
    assert isinstance(outcome, CloseConnection) and recorder.calls == []
    assert outcome.reason == "MalformedBody: JoinGroupRequest v5: non-nullable field protocols was serialized as null"


def test_bad_input_is_logged_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    dispatcher, _ = heartbeat_dispatcher()
    frame = encode_request(HEARTBEAT, correlation_id=12, client_id=None)[:-4]
    with caplog.at_level(logging.INFO, logger="kcoord"):
        for _ in range(200):
            assert isinstance(dispatch(dispatcher, frame), CloseConnection)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "MalformedBody: HeartbeatRequest v4 body does not decode" in line


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x0c\x00",
        struct.pack(">hhi", 999, 0, 1),
        struct.pack(">hhi", 12, 77, 1),  # no schema for Heartbeat v77: nothing to answer with
        struct.pack(">hhih", 12, 4, 1, 30000),  # client id longer than the frame
    ],
)
def test_unanswerable_frames_close_the_connection(frame: bytes) -> None:
    dispatcher, recorder = heartbeat_dispatcher()
    assert isinstance(dispatch(dispatcher, frame), CloseConnection)
    assert recorder.calls == []


def test_registry_rejects_misuse() -> None:
    registry = HandlerRegistry()
    recorder = Recorder()
    registry.register(12, recorder, VersionRange(0, 4))
    with pytest.raises(IllegalStateError, match="already has a handler"):
        registry.register(12, recorder, VersionRange(0, 4))
    with pytest.raises(IllegalStateError, match="outside kio's schemas"):
        registry.register(11, recorder, VersionRange(0, 10))
    with pytest.raises(IllegalStateError, match="outside kio's schemas"):
        registry.register(4, recorder, VersionRange(0, 0))
    Dispatcher(registry)
    with pytest.raises(IllegalStateError, match="sealed"):
        registry.register(13, recorder, VersionRange(0, 5))
    with pytest.raises(ValueError, match="bad version range"):
        VersionRange(3, 1)
