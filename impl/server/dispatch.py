"""From one frame to one outcome: decode, route to the registered handler, encode the answer.

Owns: the handler registry (`HandlerRegistry`: api key -> async handler and the versions it serves), what a
handler receives (`Request`) and returns (a kio response body, or None for "no response" as for acks=0 Produce),
the built-in ApiVersions handler, and the policy for bad input:

| input                                                         | outcome                                        |
|---------------------------------------------------------------|------------------------------------------------|
| frame < 8 bytes, or request header does not decode            | close (no correlation id to answer with)       |
| unknown api key                                               | close (no response schema; Kafka closes too)   |
| ApiVersions at a version we do not advertise                  | v0 body, UNSUPPORTED_VERSION, our ranges       |
| other API, version without a kio schema                       | close (no response schema for that version)    |
| other API, version with a schema but not advertised/no handler| error response, UNSUPPORTED_VERSION            |
| header decodes, body does not (advertised version), or holds  | close (Kafka 4.0 closes: "Error getting        |
|   a null where the schema forbids one (`nullability.py`)      | request for apiKey")                           |
| header decodes, body does not (version not advertised)        | error response, UNSUPPORTED_VERSION            |
| handler raises `KafkaProtocolError(code)` / `KafkaError(NAME)`| error response, that code                      |
| handler raises anything else, or returns a wrong body         | error response, UNKNOWN_SERVER_ERROR; logged   |

A handler is called only for a request that decoded completely at an advertised version, with no null where its
schema forbids one (`nullability.py`), so bad input can never reach coordinator state. Bad input is logged in one
INFO line at most every 10 s per node (`_BadInputLog`: a peer may send thousands), saying how many went unsaid.
The dispatcher is pure apart from awaiting handlers: it does no I/O.
Must not import: `kcoord.model`, the connection layer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestHeader, RequestPayload, ResponsePayload

from .api_versions import (
    API_VERSIONS_KEY,
    API_VERSIONS_RANGE,
    Feature,
    VersionRange,
    api_versions_response,
    is_valid_client_software,
    unsupported_version_fallback,
)
from .codec import (
    DecodedRequest,
    EncodedBody,
    HeaderLike,
    HeaderStart,
    decode_request,
    encode_response,
    kio_version_range,
    read_header_start,
)
from .errors import (
    IllegalStateError,
    KafkaError,
    MalformedBody,
    RequestDecodeError,
    UnsupportedVersion,
    error_code_of,
)
from .responses import error_response

__all__ = (
    "CloseConnection",
    "ConnectionInfo",
    "Dispatcher",
    "Handler",
    "HandlerRegistry",
    "NoReply",
    "Outcome",
    "Reply",
    "Request",
)

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """Who sent a request: a server-unique connection id and the peer address (JoinGroup's client host)."""

    connection_id: int
    client_host: str
    client_port: int


@dataclass(slots=True)
class Request:
    """What a handler receives: a fully decoded request at an advertised version, and its connection. Treated as
    immutable; not `frozen`: one is built for every request, and a frozen dataclass's constructor costs ~4× as
    much."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: RequestHeader
    body: RequestPayload
    connection: ConnectionInfo


Handler = Callable[[Request], Awaitable[ResponsePayload | EncodedBody | None]]
"""An API handler: returns the response body at `request.api_version`, or None to send no response (acks=0)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """Send this response payload (no size prefix)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class NoReply:
    """Send nothing (the handler returned None)."""


@dataclass(frozen=True, slots=True)
class CloseConnection:
    """Close the connection after the replies already sent; `reason` is logged."""

    reason: str


Outcome = Reply | NoReply | CloseConnection


class HandlerRegistry:
    """API key -> (handler, versions). Filled by the coordinator glue, then sealed when a `Dispatcher` takes it."""

    __slots__ = ("_entries", "_sealed")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Handler, VersionRange]] = {}
        self._sealed = False

    def register(self, api_key: int, handler: Handler, versions: VersionRange) -> None:
        """Serve `api_key` at `versions` with `handler`; the versions must all have kio schemas."""
        if self._sealed:
            raise IllegalStateError(f"registry is sealed (a Dispatcher uses it); cannot register api key {api_key}")
        if api_key in self._entries:
            raise IllegalStateError(f"api key {api_key} already has a handler")
        schemas = kio_version_range(api_key)
        if schemas is None or not schemas[0] <= versions.min_version <= versions.max_version <= schemas[1]:
            raise IllegalStateError(f"api key {api_key}: versions {versions} outside kio's schemas {schemas}")
        self._entries[api_key] = (handler, versions)

    def seal(self) -> None:
        self._sealed = True

    def lookup(self, api_key: int, api_version: int) -> Handler | None:
        """The handler serving this key at this version, or None."""
        entry = self._entries.get(api_key)
        if entry is None or api_version not in entry[1]:
            return None
        return entry[0]

    def advertised(self) -> tuple[tuple[int, VersionRange], ...]:
        """(api key, versions) for every registered API, sorted by key: what ApiVersions lists."""
        return tuple(sorted((key, versions) for key, (_handler, versions) in self._entries.items()))


class _BadInputLog:
    """One INFO line about bad input at most every `interval_s`, then how many requests went unsaid meanwhile."""

    __slots__ = ("_interval_s", "_last_s", "_unsaid")

    def __init__(self, interval_s: float = 10.0) -> None:
        self._interval_s = interval_s
        self._last_s = -interval_s
        self._unsaid = 0

    def say(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._last_s < self._interval_s:
            self._unsaid += 1
            return
        if self._unsaid:
            message += " (and %d more bad requests in the last %.0f s)"
            args = (*args, self._unsaid, now - self._last_s)
        _log.info(message, *args)
        self._last_s, self._unsaid = now, 0


class Dispatcher:
    """Turns frames into outcomes using a sealed registry plus the built-in ApiVersions handler."""

    __slots__ = ("_advertised", "_api_versions_bodies", "_bad_input", "_features", "_features_epoch", "_registry")

    def __init__(
        self,
        registry: HandlerRegistry,
        features: Sequence[Feature] = (),
        api_versions_range: VersionRange = API_VERSIONS_RANGE,
        features_epoch: int = 0,
    ) -> None:
        """Serve `registry` plus ApiVersions at `api_versions_range`; `features` (and their epoch) go into
        ApiVersions v3+."""
        registry.register(API_VERSIONS_KEY, self._api_versions, api_versions_range)
        registry.seal()
        self._registry = registry
        self._advertised = registry.advertised()
        self._features = tuple(features)
        self._features_epoch = features_epoch
        self._api_versions_bodies: dict[int, ResponsePayload] = {}  # per version; the answer never changes
        self._bad_input = _BadInputLog()

    @property
    def advertised(self) -> tuple[tuple[int, VersionRange], ...]:
        return self._advertised

    async def dispatch(self, frame: bytes, connection: ConnectionInfo) -> Outcome:
        """Decode `frame` (a payload without size prefix), run its handler, and say what to send."""
        start = read_header_start(frame)
        if start is not None and start.request_api_key == API_VERSIONS_KEY and (
            self._registry.lookup(API_VERSIONS_KEY, start.request_api_version) is None
        ):
            # Checked before decoding, as Kafka does: the body of a newer version need not decode here.
            return self._encode(start, unsupported_version_fallback(self._advertised))
        try:
            decoded = decode_request(frame, start)
        except RequestDecodeError as e:
            return self._on_decode_error(e, connection)
        handler = self._registry.lookup(decoded.api_key, decoded.api_version)
        if handler is None:
            self._bad_input.say("conn %d: api key %d v%d is not advertised", connection.connection_id,
                                decoded.api_key, decoded.api_version)
            return self._error(decoded.header, ErrorCode.unsupported_version)
        if decoded.trailing_bytes:
            _log.debug("conn %d: ignored %d trailing bytes after api key %d v%d", connection.connection_id,
                       decoded.trailing_bytes, decoded.api_key, decoded.api_version)
        return await self._run_handler(handler, _request(decoded, connection))

    def _on_decode_error(self, error: RequestDecodeError, connection: ConnectionInfo) -> Outcome:
        self._bad_input.say("conn %d: %s: %s", connection.connection_id, type(error).__name__, error)
        if error.api_key is None or error.api_version is None or error.correlation_id is None:
            return CloseConnection(f"{type(error).__name__}: {error}")
        start = HeaderStart(error.api_key, error.api_version, error.correlation_id)
        if isinstance(error, MalformedBody) and self._registry.lookup(error.api_key, error.api_version) is None:
            return self._error(start, ErrorCode.unsupported_version)
        assert not isinstance(error, UnsupportedVersion) or error.api_key != API_VERSIONS_KEY
        return CloseConnection(f"{type(error).__name__}: {error}")

    async def _run_handler(self, handler: Handler, request: Request) -> Outcome:
        try:
            body = await handler(request)
        except KafkaError as e:
            code = error_code_of(e)
            if code is None:
                _log.error("conn %d: handler for api key %d raised KafkaError %r, which is no Kafka error name",
                           request.connection.connection_id, request.api_key, e.name)
                code = ErrorCode.unknown_server_error
            _log.debug("conn %d: api key %d answered %s", request.connection.connection_id, request.api_key, e)
            return self._error(request.header, code)
        except Exception:
            _log.exception("conn %d: handler for api key %d v%d failed", request.connection.connection_id,
                           request.api_key, request.api_version)
            return self._error(request.header, ErrorCode.unknown_server_error)
        if body is None:
            return NoReply()
        return self._encode(request.header, body)

    def _encode(self, header: HeaderLike, body: ResponsePayload | EncodedBody) -> Outcome:
        try:
            return Reply(encode_response(header, body))
        except Exception:
            # A handler returned the wrong type or an out-of-range value: our bug, but one bad answer must not
            # take the connection down; the client gets UNKNOWN_SERVER_ERROR as from any failed handler.
            _log.exception("cannot encode %s for api key %d v%d", type(body).__qualname__, header.request_api_key,
                           header.request_api_version)
            return self._error(header, ErrorCode.unknown_server_error)

    def _error(self, header: HeaderLike, error_code: ErrorCode) -> Reply:
        body = error_response(header.request_api_key, header.request_api_version, error_code)
        return Reply(encode_response(header, body))

    async def _api_versions(self, request: Request) -> ResponsePayload:
        if not is_valid_client_software(request.body):
            return api_versions_response(request.api_version, (), error_code=ErrorCode.invalid_request)
        body = self._api_versions_bodies.get(request.api_version)
        if body is None:
            body = api_versions_response(request.api_version, self._advertised, self._features,
                                         features_epoch=self._features_epoch)
            self._api_versions_bodies[request.api_version] = body
        return body


def _request(decoded: DecodedRequest, connection: ConnectionInfo) -> Request:
    return Request(
        api_key=decoded.api_key,
        api_version=decoded.api_version,
        correlation_id=decoded.correlation_id,
        client_id=decoded.client_id,
        header=decoded.header,
        body=decoded.body,
        connection=connection,
    )
