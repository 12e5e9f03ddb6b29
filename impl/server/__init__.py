"""The Kafka wire layer: framing, kio codec, dispatch to API handlers, and the asyncio TCP server.

Owns: everything between a socket and a coordinator handler. Must not import `kcoord.model` or any coordinator.

Coordinator glue registers handlers and starts a server::

    registry = HandlerRegistry()
    registry.register(11, join_group, recommended_range(11))   # async (Request) -> kio response body | None
    async with WireServer(Dispatcher(registry), ServerOptions(port=9092)) as server:
        await server.serve_forever()

A handler gets a `Request` (api key, version, correlation id, client id, kio header and body, connection) for a
request that decoded completely at a version it registered, and returns the kio response body of that same version
(`zero_entity` helps build one), None for no response (acks=0), or raises `KafkaProtocolError(code)`.
See `dispatch.py` for how bad input is answered, and `CLIENT_VERSIONS.md` / `versions.py` for the versions real
clients need. ApiVersions is built in and lists exactly the registered ranges.
"""

from .api_versions import Feature, VersionRange
from .codec import DecodedRequest, decode_request, encode_request, encode_response
from .connection import ServerOptions, ServerStats, WireServer
from .dispatch import ConnectionInfo, Dispatcher, Handler, HandlerRegistry, Request
from .errors import KafkaProtocolError
from .responses import error_response, zero_entity
from .versions import CLIENT_VERSIONS, recommended_range

__all__ = (
    "CLIENT_VERSIONS",
    "ConnectionInfo",
    "DecodedRequest",
    "Dispatcher",
    "Feature",
    "Handler",
    "HandlerRegistry",
    "KafkaProtocolError",
    "Request",
    "ServerOptions",
    "ServerStats",
    "VersionRange",
    "WireServer",
    "decode_request",
    "encode_request",
    "encode_response",
    "error_response",
    "recommended_range",
    "zero_entity",
)
