"""The asyncio TCP server: accept connections, read frames, hand them to the dispatcher, write the answers.

Owns: sockets, per-connection tasks and their lifetimes, the read-ahead queue, server options and counters.
Knows nothing of APIs: every decision about a frame is the `Dispatcher`'s (`dispatch.py`).
Must not import: `kcoord.model`.

Ordering: Kafka guarantees that requests on one connection are processed in the order sent and answered in that
order. Each connection has one reader task, which reads frames ahead into a queue bounded in frames and bytes (so
pipelining clients are not blocked on the socket, and no client makes us buffer more than the bounds), and one
processor that dispatches them strictly one at a time and writes each answer before taking the next frame:
request order, processing order and response order are the same.
A bad size prefix, a frame the dispatcher cannot answer, or a peer vanishing mid-frame closes only that
connection; nothing that happens on a connection stops the server.

Memory across connections: every frame's size is taken from the server's `RequestMemory` (Kafka's
`queued.max.request.bytes`) before its body is read and given back once it is answered, so the bytes of requests held
are bounded however many peers send large frames (see `request_memory.py`). Idle connections (Kafka's
`connections.max.idle.ms`): a connection on which nothing was read or answered for that long, and no request is
being answered, is closed — including one that waits for memory (nothing is read from it), as Kafka's muted
channels expire.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import struct
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, Protocol

from .dispatch import CloseConnection, ConnectionInfo, NoReply, Outcome, Reply
from .errors import FrameTruncated, WireError
from .frames import DEFAULT_MAX_FRAME_BYTES, SIZE_PREFIX_BYTES, check_frame_size, encode_frame
from .request_memory import RequestMemory

__all__ = ("FrameDispatcher", "ListenerSettings", "ServerOptions", "ServerStats", "WireServer")

_log = logging.getLogger(__name__)
_END_OF_STREAM: Final = None
_SIZE: Final = struct.Struct(">i")
_READ_CHUNK_BYTES: Final = 1 << 20  # a large body is read in chunks, each one counting as activity
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


@dataclass(frozen=True, slots=True)
class _Closing:
    reason: str
    bad_input: bool = True  # False: the server closes it (idle)


_Item = bytes | _Closing | None


@dataclass(slots=True)
class _Live:
    """What the idle reaper needs to know of one open connection."""

    queue: _ReadAhead
    last_active_s: float
    reading: asyncio.Task[None] | None = None
    busy: bool = False  # a request of it is being answered (a parked JoinGroup may wait minutes)


class _ReadAhead:
    """A FIFO of frames bounded in count and in bytes; an empty queue always accepts one item."""

    __slots__ = ("_bytes", "_changed", "_items", "_max_bytes", "_max_items")

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self._items: collections.deque[_Item] = collections.deque()
        self._bytes = 0
        self._max_items = max_items
        self._max_bytes = max_bytes
        self._changed = asyncio.Condition()

    def _has_room(self, size: int) -> bool:
        return not self._items or (len(self._items) < self._max_items and self._bytes + size <= self._max_bytes)

    async def put(self, item: _Item) -> None:
        size = len(item) if isinstance(item, bytes) else 0
        async with self._changed:
            await self._changed.wait_for(lambda: self._has_room(size))
            self._items.append(item)
            self._bytes += size
            self._changed.notify_all()

    async def get(self) -> _Item:
        async with self._changed:
            await self._changed.wait_for(lambda: bool(self._items))
            item = self._items.popleft()
            self._bytes -= len(item) if isinstance(item, bytes) else 0
            self._changed.notify_all()
            return item

    async def close(self, reason: str) -> None:
        """Put a `_Closing` first in line, whatever the bounds (the reaper closing an idle connection)."""
        async with self._changed:
            self._items.appendleft(_Closing(reason, bad_input=False))
            self._changed.notify_all()

    def __len__(self) -> int:
        return len(self._items)

    def drain(self) -> list[bytes]:
        """The frames still queued, removed (a closing connection gives their memory back)."""
        frames = [item for item in self._items if isinstance(item, bytes)]
        self._items.clear()
        self._bytes = 0
        return frames


class WireServer:
    """A Kafka-protocol listener. Use `async with WireServer(dispatcher, options) as server:`."""

    def __init__(self, dispatcher: FrameDispatcher, options: ServerOptions | None = None,
                 memory: RequestMemory | None = None) -> None:
        """`memory`: the request memory shared with the server's other listeners (default: one of its own)."""
        self._dispatcher = dispatcher
        self._accepting = False  # True from start() until stop() begins
        self._stopping = False
        self._options = options or ServerOptions()
        self.memory = memory or RequestMemory(self._options.settings.queued_max_request_bytes)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._live: dict[int, _Live] = {}
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
        self._server = await asyncio.start_server(self._on_connect, self._options.host, self._options.port)
        self._accepting = True
        if self._options.settings.connections_max_idle_ms > 0:
            self._reaper = asyncio.create_task(self._reap_idle(), name="kcoord-idle-connections")
        _log.info("listening on %s:%d", *self.address)

    async def stop(self) -> None:
        """Stop listening, close every connection and wait for their tasks."""
        if self._server is None:
            return
        self._accepting = False
        self._server.close()
        self._stopping = True
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
            self._reaper = None
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None
        self._stopping = False

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

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self._accepting:
            # Accepted just before stop(): asyncio runs this task's first step one loop step after the accept, so
            # stop() did not see it. Serving it now would reach a cluster that is closed (or closing).
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        connection = ConnectionInfo(next(self._ids), str(peer[0]), int(peer[1]))
        self.stats.connections_accepted += 1
        self.stats.connections_open += 1
        _log.info("conn %d: open from %s:%d", connection.connection_id, connection.client_host, connection.client_port)
        try:
            await self._serve_connection(reader, writer, connection)
        except asyncio.CancelledError:
            if not self._stopping:
                raise
            # Cancelled by stop(): end normally, or asyncio's stream callback logs the cancellation as an error.
            task.uncancel()
            _log.info("conn %d: closed (server stopping)", connection.connection_id)
        finally:
            self.stats.connections_open -= 1
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: ConnectionInfo
    ) -> None:
        queue = _ReadAhead(self._options.max_queued_requests, self._options.max_queued_bytes)
        live = _Live(queue, time.monotonic())
        reading = live.reading = asyncio.create_task(self._read_loop(reader, queue, live))
        self._live[connection.connection_id] = live
        try:
            reason = await self._process_loop(queue, writer, connection, live)
        finally:
            del self._live[connection.connection_id]
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            for frame in queue.drain():
                self.memory.release(len(frame))
        _log.info("conn %d: closed (%s)", connection.connection_id, reason)

    async def _read_loop(self, reader: asyncio.StreamReader, queue: _ReadAhead, live: _Live) -> None:
        try:
            while True:
                frame = await self._read_frame(reader, live)
                if frame is None:
                    await queue.put(_END_OF_STREAM)
                    return
                self.stats.frames_received += 1
                try:
                    await queue.put(frame)
                except BaseException:
                    self.memory.release(len(frame))
                    raise
        except WireError as e:
            await queue.put(_Closing(f"{type(e).__name__}: {e}"))
        except (ConnectionError, OSError) as e:
            await queue.put(_Closing(f"socket error: {e}"))

    async def _read_frame(self, reader: asyncio.StreamReader, live: _Live) -> bytes | None:
        """One frame's payload, holding its size in `memory` (given back when it is answered); None at a clean end
        of stream. The body is read only once the memory is there, a large one in chunks (each one activity)."""
        try:
            prefix = await reader.readexactly(SIZE_PREFIX_BYTES)
        except asyncio.IncompleteReadError as e:
            if not e.partial:
                return None
            raise FrameTruncated(f"stream ended after {len(e.partial)} of 4 size-prefix bytes") from None
        live.last_active_s = time.monotonic()
        (size,) = _SIZE.unpack(prefix)
        check_frame_size(size, self._options.max_frame_bytes)
        await self.memory.acquire(size)
        try:
            chunks = []
            left = size
            while left:
                chunk = await reader.read(min(left, _READ_CHUNK_BYTES))
                if not chunk:
                    raise FrameTruncated(f"stream ended after {size - left} of {size} frame bytes")
                chunks.append(chunk)
                left -= len(chunk)
                live.last_active_s = time.monotonic()
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        except BaseException:
            self.memory.release(size)
            raise

    async def _process_loop(
        self, queue: _ReadAhead, writer: asyncio.StreamWriter, connection: ConnectionInfo, live: _Live
    ) -> str:
        while True:
            item = await queue.get()
            if item is _END_OF_STREAM:
                return "peer closed"
            if isinstance(item, _Closing):
                if item.bad_input:
                    self.stats.count_close(item.reason)
                return item.reason
            live.busy = True
            try:
                outcome = await self._dispatcher.dispatch(item, connection)
            finally:
                live.busy = False
                live.last_active_s = time.monotonic()
                self.memory.release(len(item))
            if isinstance(outcome, CloseConnection):
                self.stats.count_close(outcome.reason)
                return outcome.reason
            if isinstance(outcome, NoReply):
                continue
            if not await self._send(writer, outcome):
                return "peer gone while writing"

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        try:
            writer.write(encode_frame(reply.payload))
            await writer.drain()
        except (ConnectionError, OSError):
            return False
        self.stats.replies_sent += 1
        return True

    def busy_connections(self) -> int:
        """Connections answering a request now."""
        return sum(1 for live in self._live.values() if live.busy)

    def has_ready_frames(self) -> bool:
        """A connection holds a request it has read and will dispatch at the next loop turn (it is not answering
        another): the group commit waits for it (see `serve.py`)."""
        return any(len(live.queue) and not live.busy for live in self._live.values())

    async def _reap_idle(self) -> None:
        """Close every connection idle for `connections_max_idle_ms` (Kafka's `connections.max.idle.ms`)."""
        idle_s = self._options.settings.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(idle_s / 4, _REAP_INTERVAL_MAX_S))
            now = time.monotonic()
            for connection_id, live in list(self._live.items()):
                if not live.busy and now - live.last_active_s >= idle_s and live.reading is not None:
                    live.last_active_s = now  # (closed once)
                    live.reading.cancel()
                    self.stats.closed_idle += 1
                    await live.queue.close(f"idle for more than {idle_s:g} s (connections.max.idle.ms)")
                    _log.debug("conn %d: closing, idle", connection_id)
