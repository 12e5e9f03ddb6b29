"""Request/response (de)serialisation on top of kio: frame payload bytes <-> kio header and body entities.

Owns: finding the kio schema for (api_key, api_version), choosing the request header version (v1 or flexible v2)
and the response header version (v0 or flexible v1; ApiVersions always v0), tolerating trailing bytes after a
request body, and turning every kio/struct failure on peer input into one of the typed `RequestDecodeError`s — a null
in a field the schema declares non-nullable included (`nullability.py`), so no handler ever sees one.
Also the mirror-image client side (`encode_request`, `decode_response`) used by tests, tools and benchmarks.
Must not import: `kcoord.model`, the dispatcher or the connection layer; it does no I/O.

Input here is the frame payload (no size prefix); see `frames.py` for the prefix.
"""

from __future__ import annotations

import functools
import io
import struct
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from kio.index import UnknownAPIKey, UnknownEntity, load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32
from kio.static.protocol import RequestHeader, RequestPayload, ResponsePayload

from .api_versions import API_VERSIONS_KEY
from .errors import (
    IllegalStateError,
    MalformedBody,
    MalformedHeader,
    RequestDecodeError,
    UnknownApiKey,
    UnsupportedVersion,
)
from .lengths import LengthError, check_body, clamp_durations
from .nullability import null_field

__all__ = (
    "DecodedRequest",
    "EncodedBody",
    "HeaderStart",
    "RequestHeader",
    "RequestPayload",
    "ResponsePayload",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "kio_version_range",
    "read_header_start",
)

PRODUCE_KEY: Final = 0
TXN_OFFSET_COMMIT_KEY: Final = 28
_HEADER_START: Final = struct.Struct(">hhi")  # request_api_key, request_api_version, correlation_id
_CORRELATION_ID: Final = struct.Struct(">i")


class HeaderLike(Protocol):
    """What `encode_response` needs from a request header; kio's headers and `HeaderStart` both fit."""

    @property
    def request_api_key(self) -> int: ...
    @property
    def request_api_version(self) -> int: ...
    @property
    def correlation_id(self) -> int: ...


@dataclass(slots=True)
class HeaderStart:
    """The fixed first 8 bytes of every request header, readable even when the rest is not. Treated as immutable;
    not `frozen`: one is built for every request, and a frozen dataclass's constructor costs ~4× as much."""

    request_api_key: int
    request_api_version: int
    correlation_id: int


@dataclass(slots=True)
class DecodedRequest:
    """A request that decoded completely. `trailing_bytes` counts ignored bytes after the body. Treated as
    immutable; not `frozen` (one per request, as `HeaderStart`)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: RequestHeader
    body: RequestPayload
    trailing_bytes: int = 0


def read_header_start(frame: bytes) -> HeaderStart | None:
    """The api key, version and correlation id, or None if the frame is shorter than 8 bytes."""
    if len(frame) < _HEADER_START.size:
        return None
    api_key, api_version, correlation_id = _HEADER_START.unpack_from(frame, 0)
    return HeaderStart(api_key, api_version, correlation_id)


def kio_version_range(api_key: int) -> tuple[int, int] | None:
    """The (min, max) request versions kio has schemas for, or None for an unknown key."""
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = [v for v, kinds in schema_name_map[name].items() if EntityType.request in kinds]
    return min(versions), max(versions)


_E = TypeVar("_E", bound=RequestDecodeError)


def _decode_error(kind: type[_E], message: str, start: HeaderStart, *, header_parsed: bool = False) -> _E:
    return kind(
        message,
        api_key=start.request_api_key,
        api_version=start.request_api_version,
        correlation_id=start.correlation_id,
        header_parsed=header_parsed,
    )


@functools.cache
def _load_request_schema(api_key: int, api_version: int) -> type[RequestPayload]:
    # A memo of a pure lookup (kio resolves a dotted path each time, ~5 µs); failures are not cached.
    return load_request_schema(api_key, api_version)


def _request_schema(start: HeaderStart) -> type[RequestPayload]:
    try:
        return _load_request_schema(start.request_api_key, start.request_api_version)
    except UnknownAPIKey:
        raise _decode_error(UnknownApiKey, f"unknown api key {start.request_api_key}", start) from None
    except UnknownEntity:
        supported = kio_version_range(start.request_api_key)
        message = (
            f"api key {start.request_api_key} ({api_key_map[start.request_api_key]}) has no version "
            f"{start.request_api_version}; versions with a schema: {supported}"
        )
        raise _decode_error(UnsupportedVersion, message, start) from None


def decode_request(frame: bytes, start: HeaderStart | None = None) -> DecodedRequest:
    """Decode one frame payload (no size prefix) into header and body, ignoring trailing bytes. `start`: the
    frame's `read_header_start`, when the caller has read it already.

    Raises `MalformedHeader`, `UnknownApiKey`, `UnsupportedVersion` or `MalformedBody`; never anything else for
    bad input (kio's native reader raises assorted exception types on garbage, all are caught here).
    """
    if start is None:
        start = read_header_start(frame)
    if start is None:
        raise MalformedHeader(f"frame of {len(frame)} bytes is shorter than the 8-byte header start")
    schema = _request_schema(start)
    try:
        header, header_bytes = entity_reader(schema.__header_schema__)(frame, 0)
    except Exception as e:
        message = f"request header does not decode: {type(e).__name__}: {e}"
        raise _decode_error(MalformedHeader, message, start) from None
    body_key = (schema, frame[header_bytes:]) if (len(frame) - header_bytes <= _MAX_CACHED_BODY_BYTES
                                                  and start.request_api_key not in _NOT_CACHED) else None
    cached = _REQUEST_BODIES.get(body_key) if body_key is not None else None
    if cached is not None:
        body, body_bytes = cached
    else:
        body, body_bytes = _decode_body(schema, frame, header_bytes, start)
        if body_key is not None:
            if len(_REQUEST_BODIES) >= _MAX_CACHED_BODIES:
                _REQUEST_BODIES.clear()
            _REQUEST_BODIES[body_key] = body, body_bytes
    return DecodedRequest(
        api_key=start.request_api_key,
        api_version=start.request_api_version,
        correlation_id=start.correlation_id,
        client_id=header.client_id,
        header=header,
        body=body,
        trailing_bytes=len(frame) - header_bytes - body_bytes,
    )


#: small request bodies decoded once: a client sends the same heartbeat body (only the correlation id, in the header,
#: changes) every few seconds; a body is a pure function of its bytes and schema, and kio's entities are immutable
_REQUEST_BODIES: dict[tuple[type[RequestPayload], bytes], tuple[RequestPayload, int]] = {}
_MAX_CACHED_BODIES: Final = 4096
_MAX_CACHED_BODY_BYTES: Final = 512
#: api keys whose bodies are not cached: a Produce carries new records (a new sequence number, new timestamps) and a
#: TxnOffsetCommit the offsets its transaction consumed up to, so their bytes (nearly) never repeat, and caching them
#: would only push out the bodies that do (the cache is cleared every 4,096 new ones)
_NOT_CACHED: Final = frozenset({PRODUCE_KEY, TXN_OFFSET_COMMIT_KEY})


def _decode_body(schema: type[RequestPayload], frame: bytes, header_bytes: int,
                 start: HeaderStart) -> tuple[RequestPayload, int]:
    """kio's decoding of the body after the header, its lengths checked first and its nulls after."""
    try:
        long_durations = check_body(schema, frame, header_bytes)  # before kio allocates what a length claims
    except LengthError as e:
        message = f"{schema.__name__} v{start.request_api_version} body does not decode: {e}"
        raise _decode_error(MalformedBody, message, start, header_parsed=True) from None
    if long_durations:  # an int64 duration no timedelta holds, which Kafka takes: the nearest one (lengths.py)
        frame = clamp_durations(frame, long_durations)
    try:
        # kio readers return (value, bytes consumed), not the end offset.
        body, body_bytes = entity_reader(schema)(frame, header_bytes)
    except Exception as e:
        message = f"{schema.__name__} v{start.request_api_version} body does not decode: {type(e).__name__}: {e}"
        raise _decode_error(MalformedBody, message, start, header_parsed=True) from None
    null = null_field(body)
    if null is not None:  # kio reads a null length for any array or string: Kafka's readers refuse it here
        message = f"{schema.__name__} v{start.request_api_version}: non-nullable field {null} was serialized as null"
        raise _decode_error(MalformedBody, message, start, header_parsed=True)
    return body, body_bytes


class EncodedBody:
    """A response body already encoded by kio's rules (`answers.py`): `encode_response` puts
    the response header before it, as for a kio body of that api key and version."""

    __slots__ = ("api_key", "data", "flexible", "version")

    def __init__(self, api_key: int, version: int, flexible: bool, data: bytes) -> None:
        self.api_key = api_key
        self.version = version
        self.flexible = flexible  # the response header is v1 (a tagged-field section after the correlation id)
        self.data = data


def _is_api_versions_fallback(request: HeaderLike, body: ResponsePayload) -> bool:
    # Kafka answers an ApiVersions request of a version it does not support with a v0 body (KIP-511).
    return body.__api_key__ == API_VERSIONS_KEY and body.__version__ == 0


def encode_response(request_header: HeaderLike, response_body: ResponsePayload | EncodedBody) -> bytes:
    """Encode the response header (version chosen by the body's schema) and body; no size prefix.

    The body must be the response to the request's api key and version (or the ApiVersions v0 fallback);
    anything else is our bug and raises `IllegalStateError`.
    """
    if isinstance(response_body, EncodedBody):
        if (response_body.api_key, response_body.version) != (request_header.request_api_key,
                                                              request_header.request_api_version):
            raise IllegalStateError(f"an encoded response (api key {response_body.api_key} v{response_body.version}) "
                                    f"does not answer api key {request_header.request_api_key} "
                                    f"v{request_header.request_api_version}")
        header = _CORRELATION_ID.pack(request_header.correlation_id)
        return header + b"\x00" + response_body.data if response_body.flexible else header + response_body.data
    if response_body.__api_key__ != request_header.request_api_key or (
        response_body.__version__ != request_header.request_api_version
        and not _is_api_versions_fallback(request_header, response_body)
    ):
        raise IllegalStateError(
            f"response {type(response_body).__qualname__} v{response_body.__version__} "
            f"(api key {response_body.__api_key__}) does not answer api key {request_header.request_api_key} "
            f"v{request_header.request_api_version}"
        )
    # The header is a correlation id, and in a flexible header (v1) an empty tagged-field section: written here, as
    # kio would (its header schema for ApiVersions responses is v0 at every version, as the protocol requires).
    header = _CORRELATION_ID.pack(request_header.correlation_id)
    if response_body.__header_schema__.__flexible__:
        header += b"\x00"
    return header + encode_body(response_body)


#: response bodies encoded once: many answers repeat (a heartbeat's NONE, a commit's per-partition NONEs)
_BODIES: dict[ResponsePayload, bytes] = {}
_MAX_BODIES: Final = 4096
#: api keys whose answers are not looked up there: an accepted Produce's answer carries the batch's new base offset,
#: so it never repeats, and the look-up would hash the whole body (a Python-level `__hash__` per nested entity) and
#: store it only to push out answers that do repeat
_NOT_MEMOISED: Final = frozenset({PRODUCE_KEY})


def encode_body(body: ResponsePayload) -> bytes:
    """kio's encoding of a response body, from a bounded cache of the bodies already encoded. kio entities are
    frozen dataclasses, equal when their fields are: a body equal to one encoded before has the same bytes. A body
    holding something unhashable, or answering an api in `_NOT_MEMOISED`, is encoded every time."""
    if body.__api_key__ in _NOT_MEMOISED:
        return _encode_body(body)
    try:
        cached = _BODIES.get(body)
    except TypeError:
        cached, body_hashable = None, False
    else:
        body_hashable = True
    if cached is not None:
        return cached
    encoded = _encode_body(body)
    if body_hashable:
        if len(_BODIES) >= _MAX_BODIES:
            _BODIES.clear()
        _BODIES[body] = encoded
    return encoded


def _encode_body(body: ResponsePayload) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


def encode_request(body: RequestPayload, *, correlation_id: int, client_id: str | None) -> bytes:
    """Client side: encode a request header (version from the body's schema) and body; no size prefix."""
    header_schema = body.__header_schema__
    header = header_schema(
        request_api_key=i16(body.__api_key__),
        request_api_version=i16(body.__version__),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buffer = io.BytesIO()
    entity_writer(header_schema)(buffer, header)
    entity_writer(type(body))(buffer, body)
    return buffer.getvalue()


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, ResponsePayload]:
    """Client side: (correlation_id, body) of a response payload. Raises kio's errors on bad bytes."""
    schema = load_response_schema(api_key, api_version)
    _header, header_bytes = entity_reader(schema.__header_schema__)(frame, 0)
    (correlation_id,) = _CORRELATION_ID.unpack_from(frame, 0)
    body, _body_bytes = entity_reader(schema)(frame, header_bytes)
    return correlation_id, body
