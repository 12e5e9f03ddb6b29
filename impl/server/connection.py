"""The asyncio TCP server: accept connections, hand each to a `Peer` (`peer.py`: frames in, answers out), close them.

Owns: the listening socket, the connections and their lifetimes, the idle reaper, server options and counters.
Knows nothing of APIs: every decision about a frame is the `Dispatcher`'s (`dispatch.py`).
Must not import: `kcoord.model`.

Ordering: Kafka guarantees that requests on one connection are processed in the order sent and answered in that
order. Each connection reads frames ahead into a queue bounded in frames and bytes (so pipelining clients are not
blocked on the socket, and no client makes us buffer more than the bounds) and dispatches them strictly one at a
time, writing each answer before taking the next frame: request order, processing order and response order are the
same (see `peer.py`). A bad size prefix, a frame the dispatcher cannot answer, or a peer vanishing mid-frame closes
only that connection; nothing that happens on a connection stops the server.

Memory across connections: every frame's size is taken from the server's `RequestMemory` (Kafka's
`queued.max.request.bytes`) before its body is read and given back once it is answered, so the bytes of requests held
are bounded however many peers send large frames (see `request_memory.py`). Idle connections (Kafka's
`connections.max.idle.ms`): a connection on which nothing was read or answered for that long, and no request is
being answered, is closed — including one that waits for memory (nothing is read from it), as Kafka's muted
channels expire.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, Protocol

from .dispatch import ConnectionInfo, Outcome
from .frames import DEFAULT_MAX_FRAME_BYTES
from .peer import Peer
from .request_memory import RequestMemory

__all__ = ("FrameDispatcher", "ListenerSettings", "ServerOptions", "ServerStats", "WireServer")

_log = logging.getLogger(__name__)
_REAP_INTERVAL_MAX_S: Final = 1.0


class FrameDispatcher(Protocol):
    """What the server needs from a dispatcher: `Dispatcher` or a wrapper around it (tests record frames)."""

    async def dispatch(self, frame: bytes, connection: ConnectionInfo) -> Outcome: ...


@dataclass(frozen=True, slots=True)
class ListenerSettings:
    """The listener settings `kcoord serve --set server.KEY=VALUE` tunes, with Kafka's broker defaults."""

    connections_max_idle_ms: int = 600_000  # connections.max.idle.ms; 0: never closed for idleness
    queued_max_request_bytes: int = 104_857_600  # queued.max.request.bytes (Kafka: unbounded by default)

    def __post_init__(self) -> None:
        if self.connections_max_idle_ms < 0:
            raise ValueError(f"server.connections_max_idle_ms={self.connections_max_idle_ms}: must be >= 0")
        if self.queued_max_request_bytes < 1:
            raise ValueError(f"server.queued_max_request_bytes={self.queued_max_request_bytes}: must be positive")


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """Where to listen and the per-connection bounds. Port 0 picks a free port (see `WireServer.address`)."""

    host: str = "127.0.0.1"
    port: int = 0
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    max_queued_requests: int = 64  # frames read ahead per connection before the reader waits
    max_queued_bytes: int = 16 * 1024 * 1024  # bytes read ahead likewise (one larger frame is still let through)
    settings: ListenerSettings = field(default_factory=ListenerSettings)

    def __post_init__(self) -> None:
        if self.max_frame_bytes < 8:
            raise ValueError(f"max_frame_bytes is {self.max_frame_bytes}; a request needs at least 8 bytes")
        if self.max_queued_requests < 1 or self.max_queued_bytes < 1:
            raise ValueError(f"max_queued_requests={self.max_queued_requests} and max_queued_bytes="
                             f"{self.max_queued_bytes}; both must be >= 1")


@dataclass(slots=True)
class ServerStats:
    """Counters for tests and logs; one instance per server."""

    connections_accepted: int = 0
    connections_open: int = 0
    frames_received: int = 0
    replies_sent: int = 0
    closed_idle: int = 0
    closed_for_bad_input: int = 0
    close_reasons: dict[str, int] = field(default_factory=dict)

    def count_close(self, reason: str) -> None:
        self.closed_for_bad_input += 1
        kind = reason.split(":", 1)[0]
        self.close_reasons[kind] = self.close_reasons.get(kind, 0) + 1


class WireServer:
    """A Kafka-protocol listener. Use `async with WireServer(dispatcher, options) as server:`."""

    def __init__(self, dispatcher: FrameDispatcher, options: ServerOptions | None = None,
                 memory: RequestMemory | None = None) -> None:
        """`memory`: the request memory shared with the server's other listeners (default: one of its own)."""
        self.dispatcher = dispatcher
        self.accepting = False  # True from start() until stop() begins
        self.options = options or ServerOptions()
        self.memory = memory or RequestMemory(self.options.settings.queued_max_request_bytes)
        self._server: asyncio.Server | None = None
        self._peers: dict[int, Peer] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self.stats = ServerStats()

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) actually bound."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("server is not started")
        host, port = self._server.sockets[0].getsockname()[:2]
        return str(host), int(port)

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("server already started")
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self.new_peer, self.options.host, self.options.port)
        self.accepting = True
        if self.options.settings.connections_max_idle_ms > 0:
            self._reaper = asyncio.create_task(self._reap_idle(), name="kcoord-idle-connections")
        _log.info("listening on %s:%d", *self.address)

    async def stop(self) -> None:
        """Stop listening, close every connection (cancelling the requests being answered) and wait for them."""
        if self._server is None:
            return
        self.accepting = False
        self._server.close()
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
            self._reaper = None
        tasks = [peer.task.finished() for peer in self._peers.values() if peer.task is not None]
        for peer in list(self._peers.values()):
            peer.abort("server stopping")
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def __aenter__(self) -> WireServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # ------------------------------------------------------------------ from the peers

    def new_peer(self) -> Peer:
        """The protocol of an accepted socket (the listener's protocol factory)."""
        return Peer(self)

    def next_id(self) -> int:
        return next(self._ids)

    def opened(self, peer: Peer) -> None:
        self._peers[peer.info.connection_id] = peer
        self.stats.connections_accepted += 1
        self.stats.connections_open += 1

    def closed(self, peer: Peer) -> None:
        if self._peers.pop(peer.info.connection_id, None) is not None:
            self.stats.connections_open -= 1

    def busy_connections(self) -> int:
        """Connections answering a request now."""
        return sum(1 for peer in self._peers.values() if peer.busy)

    def has_ready_frames(self) -> bool:
        """A connection holds a request it has read and will dispatch at the next loop turn (it is not answering
        another): the group commit waits for it (see `serve.py`)."""
        return any(peer.has_ready_frame() for peer in self._peers.values())

    async def _reap_idle(self) -> None:
        """Close every connection idle for `connections_max_idle_ms` (Kafka's `connections.max.idle.ms`)."""
        idle_s = self.options.settings.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(idle_s / 4, _REAP_INTERVAL_MAX_S))
            now = time.monotonic()
            for peer in list(self._peers.values()):
                if not peer.busy and now - peer.last_active_s >= idle_s:
                    peer.close_idle(f"idle for more than {idle_s:g} s (connections.max.idle.ms)")
