"""Errors of the wire layer, each mapped to exactly one Kafka error code.

Owns: the exception types that the frame reader, the codec and the dispatcher raise, and `KafkaProtocolError`,
the project's `KafkaError` carrying kio's `ErrorCode` (a handler may raise either; the dispatcher answers both).
Must not import: `kcoord.model`, anything in `kcoord.impl` but `kcoord.impl.errors`.

Two kinds of failure are kept apart (style habit 2): a peer sending bad bytes is a `WireError` (answered or the
connection closed, never a crash); our own bug is an `IllegalStateError` (an `AssertionError`, so it is never
mistaken for bad input and swallowed as such).
"""

from __future__ import annotations

from typing import ClassVar

from kio.schema.errors import ErrorCode

from ..errors import IllegalStateError, KafkaError

__all__ = (
    "FrameTooLarge",
    "FrameTruncated",
    "IllegalStateError",
    "InvalidFrameLength",
    "KafkaError",
    "KafkaProtocolError",
    "MalformedBody",
    "MalformedHeader",
    "RequestDecodeError",
    "UnknownApiKey",
    "UnsupportedVersion",
    "WireError",
    "error_code_of",
)


class WireError(Exception):
    """Bad input from a peer. `error_code` is the Kafka error the broker reports for it."""

    error_code: ClassVar[ErrorCode] = ErrorCode.invalid_request


# --- framing (frames.py) ---------------------------------------------------------------------------------------


class InvalidFrameLength(WireError):
    """The 4-byte size prefix is negative. Kafka's `InvalidReceiveException`: the connection is closed."""


class FrameTooLarge(WireError):
    """The size prefix exceeds the configured maximum (Kafka's `socket.request.max.bytes`): close."""


class FrameTruncated(WireError):
    """The peer closed the connection in the middle of a frame (size prefix or body)."""


# --- request decoding (codec.py) -------------------------------------------------------------------------------


class RequestDecodeError(WireError):
    """A complete frame that is not a request we can decode.

    The fields are what could be read before the failure: `correlation_id` is None when the frame is shorter than
    the fixed 8-byte header start (api key, api version, correlation id); `header_parsed` says whether the whole
    request header (client id and, for flexible versions, tagged fields) decoded, which decides whether the
    dispatcher may answer or must close the connection.
    """

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
        header_parsed: bool = False,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.header_parsed = header_parsed


class MalformedHeader(RequestDecodeError):
    """The request header is truncated or does not decode (Kafka: `InvalidRequestException`, connection closed)."""


class UnknownApiKey(RequestDecodeError):
    """No API has this key (Kafka: `InvalidRequestException` "Unknown API key", connection closed)."""


class UnsupportedVersion(RequestDecodeError):
    """The API exists but this version has no schema here (Kafka: `UnsupportedVersionException`)."""

    error_code: ClassVar[ErrorCode] = ErrorCode.unsupported_version


class MalformedBody(RequestDecodeError):
    """The header decoded but the body did not (truncated, bad length, bad UTF-8, ...): `INVALID_REQUEST`."""


# --- handler results (dispatch.py) -----------------------------------------------------------------------------


class KafkaProtocolError(KafkaError):
    """Raised by a coordinator handler to answer the whole request with one Kafka error code.

    The dispatcher turns it (or a plain `KafkaError` named as in Kafka's `Errors`) into the API's error response
    (every top-level `error_code` field set, see `responses.error_response`). Per-partition or per-member errors are
    the handler's job: it returns a normal response with those fields set.
    """

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(error_code.name.upper(), message)
        self.error_code = error_code


def error_code_of(error: KafkaError) -> ErrorCode | None:
    """The kio code of a `KafkaError` (by `error_code`, else by its Kafka name), or None for an unknown name."""
    if isinstance(error, KafkaProtocolError):
        return error.error_code
    try:
        return ErrorCode[error.name.lower()]
    except KeyError:
        return None
