"""One client connection of the listener: an asyncio `Protocol` that splits frames as bytes arrive and answers them
in order, most of them within the same loop callback.

Owns: `Peer` (frame splitting, the read-ahead bounds, request memory per frame, dispatching one frame at a time,
writing answers, flow control both ways, end of stream and errors, closing) and `run_soon` (drive a dispatch to its
first suspension, and on from there, without a task). Knows nothing of APIs: every decision about a frame is the
dispatcher's.
Must not import: `kcoord.model`.

Why a protocol and not a stream reader: a request costs the event loop one callback (`data_received`) and the answer
one `transport.write`, where a reader task and a processor task cost two task wake-ups, half a dozen futures and a
condition variable per request. A dispatch is started in the callback itself (`run_soon`): a request answered from
memory (a heartbeat, an offset fetch) is answered before the callback returns, and several requests that arrived
together are answered in one wake-up; a request that has to wait (a write being made durable, a parked JoinGroup)
is resumed where it stopped by a callback of the future it waits for (`Driven`; no asyncio task).

Ordering (Kafka's guarantee): requests on one connection are dispatched strictly one at a time, in the order sent,
and each answer is written before the next request is taken. The read-ahead is bounded as before: at most
`max_queued_requests` frames or `max_queued_bytes` bytes wait (an empty queue always takes one), plus one frame read
and waiting for room; then the socket is not read (`pause_reading`) until the queue drains. A frame's size is taken
from the server's `RequestMemory` once its size prefix is read, before its body is buffered (past the cap the socket
is not read until memory frees) and given back once it is answered. A bad size prefix, a peer vanishing mid-frame or a
frame the dispatcher cannot answer closes only this connection, after the answers to the frames before it.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import struct
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast

from .dispatch import CloseConnection, ConnectionInfo, NoReply, Outcome, Reply
from .errors import WireError
from .frames import SIZE_PREFIX_BYTES, check_frame_size
from .request_memory import RequestMemory

__all__ = ("Closing", "Listener", "Peer", "run_soon")

_log = logging.getLogger(__name__)
_SIZE: Final = struct.Struct(">i")


class _Bounds(Protocol):
    @property
    def max_frame_bytes(self) -> int: ...
    @property
    def max_queued_requests(self) -> int: ...
    @property
    def max_queued_bytes(self) -> int: ...


class _Counters(Protocol):
    frames_received: int
    replies_sent: int
    closed_idle: int

    def count_close(self, reason: str) -> None: ...


class _Dispatcher(Protocol):
    async def dispatch(self, frame: bytes, connection: ConnectionInfo) -> Outcome: ...


class Listener(Protocol):
    """What a connection needs of the listener that accepted it (`WireServer`; a protocol, so that this module does
    not import `connection.py`, which imports it)."""

    accepting: bool

    @property
    def options(self) -> _Bounds: ...
    @property
    def stats(self) -> _Counters: ...
    @property
    def memory(self) -> RequestMemory: ...
    @property
    def dispatcher(self) -> _Dispatcher: ...
    def next_id(self) -> int: ...
    def opened(self, peer: Peer) -> None: ...
    def closed(self, peer: Peer) -> None: ...


@dataclass(frozen=True, slots=True)
class Closing:
    """The end of a connection's input, queued after the frames before it: `reason` is logged."""

    reason: str
    bad_input: bool = True  # False: a clean end of stream, or the server closing it


_PEER_CLOSED: Final = Closing("peer closed", bad_input=False)


class Driven:
    """A coroutine that suspended: resumed, without an asyncio task, by a callback of the future it waits for (a
    task costs a `Task`, a context copy, a loop turn for its first step and another for its done callback; this costs
    the future's one callback). Follows `asyncio.Task`'s protocol for what the coroutine yields: a future that
    blocks (resumed once it is done), a bare yield (`asyncio.sleep(0)`: resumed at the next loop turn). `cancel`
    throws `CancelledError` into the coroutine at once (and cancels the future it waits for)."""

    __slots__ = ("_done", "_failed", "_finished", "_loop", "_steps", "_waiting")

    def __init__(self, steps: Generator[Any, None, Any], done: Callable[[Any], None],
                 failed: Callable[[BaseException], None]) -> None:
        self._steps = steps
        self._done = done
        self._failed = failed
        self._loop = asyncio.get_running_loop()
        self._waiting: Any = None  # the future it waits for (or `_BARE`)
        self._finished: asyncio.Future[None] | None = None  # made by `finished()` only (the server stopping)

    def _suspend(self, yielded: Any) -> None:
        if yielded is None:  # a bare yield
            self._waiting = _BARE
            self._loop.call_soon(self._resume, _BARE)
        elif getattr(yielded, "_asyncio_future_blocking", False):
            yielded._asyncio_future_blocking = False
            self._waiting = yielded
            yielded.add_done_callback(self._resume)
        else:
            self._step(RuntimeError(f"a dispatch yielded {yielded!r}, not a future"))

    def _resume(self, waited: Any) -> None:
        if waited is not self._waiting:
            return  # (cancelled meanwhile: a done future's callback was already scheduled)
        self._waiting = None
        self._step(None)

    def _step(self, error: BaseException | None) -> None:
        try:
            yielded = self._steps.send(None) if error is None else self._steps.throw(error)
        except StopIteration as stop:
            self._end()
            self._done(stop.value)
        except (Exception, asyncio.CancelledError) as e:
            self._end()
            self._failed(e)
        else:
            self._suspend(yielded)

    def _end(self) -> None:
        finished, self._finished = self._finished, _ENDED
        if finished is not None and finished is not _ENDED and not finished.done():
            finished.set_result(None)

    def cancel(self) -> None:
        """Throw `CancelledError` into the coroutine now (it ends, or suspends again if it catches it)."""
        if self._finished is _ENDED:
            return
        waiting, self._waiting = self._waiting, None
        if waiting is not None and waiting is not _BARE:
            waiting.remove_done_callback(self._resume)
            waiting.cancel()
        self._step(asyncio.CancelledError())

    def finished(self) -> asyncio.Future[None]:
        """Done once the coroutine has ended."""
        if self._finished is _ENDED:
            future = self._loop.create_future()
            future.set_result(None)
            return future
        if self._finished is None:
            self._finished = self._loop.create_future()
        return self._finished


_ENDED: Final[Any] = object()  # `Driven._finished` once the coroutine has ended
_BARE: Final[Any] = object()  # `Driven._waiting` after a bare yield: the next loop turn resumes it


def run_soon(awaitable: Awaitable[Any], done: Callable[[Any], None],
             failed: Callable[[BaseException], None]) -> Driven | None:
    """Run `awaitable` now, up to its first suspension: `done(result)` (or `failed(error)`) at once if it needs
    none, and None is returned; otherwise it is resumed by the future it waits for (`Driven`, returned), calling
    `done`/`failed` when it ends."""
    steps = awaitable.__await__()
    try:
        first = next(steps)
    except StopIteration as stop:
        done(stop.value)
        return None
    except Exception as e:
        failed(e)
        return None
    driven = Driven(cast(Generator[Any, None, Any], steps), done, failed)
    driven._suspend(first)
    return driven


class Peer(asyncio.Protocol):
    """One connection; see the module docstring. Made by `WireServer` for each accepted socket."""

    def __init__(self, server: Listener) -> None:
        self.server = server
        self.options = server.options
        self.transport: asyncio.Transport | None = None
        self.info = ConnectionInfo(0, "?", 0)
        self.last_active_s = time.monotonic()
        self.busy = False  # a request of it is being answered (a parked JoinGroup may wait minutes)
        self.task: Driven | None = None  # the request being answered, if it waits for something
        self._buffer = bytearray()
        self._body_size = -1  # the frame whose body is being read (its memory held); -1: reading a size prefix
        self._frames: collections.deque[bytes | Closing] = collections.deque()
        self._queued_bytes = 0
        self._overflow: bytes | None = None  # one frame read and waiting for room in the queue
        self._memory_wait: Driven | None = None
        self._input_done = False  # no frame is read any more (end of stream, bad framing, socket error)
        self._reading = True
        self._writing_paused = False
        self._processing = False  # `_process` is running (an answer given synchronously must not re-enter it)
        self.closed = False

    # ------------------------------------------------------------------ asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (a stream transport; uvloop's is not a subclass of asyncio.Transport, so no isinstance check)
        self.transport = stream = cast(asyncio.Transport, transport)
        server = self.server
        if not server.accepting:  # accepted just before stop(): serving it now would reach a closed cluster
            self.closed = True
            stream.abort()
            return
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.info = ConnectionInfo(server.next_id(), str(peer[0]), int(peer[1]))
        server.opened(self)
        _log.info("conn %d: open from %s:%d", self.info.connection_id, self.info.client_host, self.info.client_port)

    def data_received(self, data: bytes) -> None:
        self.last_active_s = time.monotonic()
        if self._input_done:
            return
        self._buffer += data
        self._split()
        self._process()

    def eof_received(self) -> bool:
        if not self._input_done:
            if self._body_size >= 0 or self._buffer:
                self._end_input(Closing(f"FrameTruncated: {self._truncation()}"))
            else:
                self._end_input(_PEER_CLOSED)
            self._process()
        return True  # keep the transport open: the answers to the frames already read are still written

    def connection_lost(self, exc: Exception | None) -> None:
        self._writing_paused = False
        if not self._input_done:
            if exc is not None:
                self._end_input(Closing(f"socket error: {exc}"))
            elif self._body_size >= 0 or self._buffer:
                self._end_input(Closing(f"FrameTruncated: {self._truncation()}"))
            else:
                self._end_input(_PEER_CLOSED)
        self._process()

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._process()

    # ------------------------------------------------------------------ reading frames

    def _truncation(self) -> str:
        if self._body_size < 0:
            return f"stream ended after {len(self._buffer)} of 4 size-prefix bytes"
        return f"stream ended after {len(self._buffer)} of {self._body_size} frame bytes"

    def _has_room(self, size: int) -> bool:
        return not self._frames or (len(self._frames) < self.options.max_queued_requests
                                    and self._queued_bytes + size <= self.options.max_queued_bytes)

    def _split(self) -> None:
        """Take every complete frame out of the buffer while the read-ahead has room and memory is given."""
        buffer = self._buffer
        while not self._input_done and self._overflow is None and self._memory_wait is None:
            size = self._body_size
            if size < 0:
                if len(buffer) < SIZE_PREFIX_BYTES:
                    break
                (size,) = _SIZE.unpack_from(buffer, 0)
                try:
                    check_frame_size(size, self.options.max_frame_bytes)
                except WireError as e:
                    self._end_input(Closing(f"{type(e).__name__}: {e}"))
                    break
                del buffer[:SIZE_PREFIX_BYTES]
                if not self.server.memory.try_acquire(size):
                    self._wait_for_memory(size)
                    break
                self._body_size = size
            if len(buffer) < size:
                break
            frame = bytes(buffer[:size])
            del buffer[:size]
            self._body_size = -1
            self.server.stats.frames_received += 1
            if self._has_room(size):
                self._frames.append(frame)
                self._queued_bytes += size
            else:
                self._overflow = frame
        self._set_reading(self._overflow is None and self._memory_wait is None and not self._input_done)

    def _set_reading(self, reading: bool) -> None:
        if reading != self._reading and self.transport is not None and not self.closed:
            self._reading = reading
            if reading:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def _wait_for_memory(self, size: int) -> None:
        """Past the request memory's cap: read nothing more from this socket until `size` bytes may be held."""
        def acquired(_result: object) -> None:
            self._memory_wait = None
            self._body_size = size
            self._split()
            self._process()

        def failed(error: BaseException) -> None:
            self._memory_wait = None
            if not isinstance(error, asyncio.CancelledError):
                _log.error("conn %d: waiting for request memory failed: %r", self.info.connection_id, error)

        self._memory_wait = run_soon(self.server.memory.acquire(size), acquired, failed)

    def _end_input(self, item: Closing) -> None:
        """No frame is read after this: `item` is queued after the frames already read (whatever the bounds)."""
        self._input_done = True
        if self._overflow is not None:
            self._frames.append(self._overflow)
            self._overflow = None
        self._frames.append(item)
        self._release_partial()

    def _release_partial(self) -> None:
        if self._body_size >= 0:
            self.server.memory.release(self._body_size)
            self._body_size = -1
        if self._memory_wait is not None:
            self._memory_wait.cancel()
            self._memory_wait = None
        self._buffer.clear()

    def has_ready_frame(self) -> bool:
        """A frame is read and waits for this connection's next turn (it is not answering another)."""
        return bool(self._frames) and not self.busy and isinstance(self._frames[0], bytes)

    # ------------------------------------------------------------------ answering, one frame at a time

    def _process(self) -> None:
        """Dispatch the queued frames one at a time while each is answered at once. An answer given synchronously
        (inside `run_soon`) calls back here: that call returns at once and this loop takes the next frame, so a long
        pipeline is answered iteratively, not by recursion."""
        if self._processing:
            return
        self._processing = True
        try:
            self._process_frames()
        finally:
            self._processing = False

    def _process_frames(self) -> None:
        frames = self._frames
        while frames and not self.busy and not self._writing_paused and not self.closed:
            item = frames.popleft()
            if isinstance(item, Closing):
                if item.bad_input:
                    self.server.stats.count_close(item.reason)
                self.close(item.reason)
                return
            self._queued_bytes -= len(item)
            if self._overflow is not None and self._has_room(len(self._overflow)):
                frames.append(self._overflow)
                self._queued_bytes += len(self._overflow)
                self._overflow = None
                self._split()
            self.busy = True
            self.task = run_soon(self.server.dispatcher.dispatch(item, self.info),
                                 functools.partial(self._answered, item),
                                 functools.partial(self._dispatch_failed, item))

    def _answered(self, frame: bytes, outcome: Outcome) -> None:
        self.busy = False
        self.task = None
        self.last_active_s = time.monotonic()
        self.server.memory.release(len(frame))
        if self.closed:
            return
        if isinstance(outcome, CloseConnection):
            self.server.stats.count_close(outcome.reason)
            self.close(outcome.reason)
            return
        if not isinstance(outcome, NoReply):
            assert isinstance(outcome, Reply)
            assert self.transport is not None
            payload = outcome.payload
            self.transport.write(_SIZE.pack(len(payload)) + payload)
            self.server.stats.replies_sent += 1
        if self._frames:
            self._process()

    def _dispatch_failed(self, frame: bytes, error: BaseException) -> None:
        if isinstance(error, asyncio.CancelledError):  # the server stops (`abort`)
            self.busy, self.task = False, None
            self.server.memory.release(len(frame))
            return
        # the dispatcher answers every handler failure itself: this is a bug of ours, logged; the peer is closed
        _log.error("conn %d: dispatch failed: %r", self.info.connection_id, error, exc_info=error)
        self._answered(frame, CloseConnection(f"internal error: {type(error).__name__}"))

    # ------------------------------------------------------------------ closing

    def close(self, reason: str) -> None:
        """Close after the answers already written; frames still queued are dropped and their memory given back."""
        if self.closed:
            return
        self.closed = True
        for item in self._frames:
            if isinstance(item, bytes):
                self.server.memory.release(len(item))
        if self._overflow is not None:
            self.server.memory.release(len(self._overflow))
            self._overflow = None
        self._frames.clear()
        self._release_partial()
        self._input_done = True
        if self.transport is not None:
            self.transport.close()
        self.server.closed(self)
        _log.info("conn %d: closed (%s)", self.info.connection_id, reason)

    def close_idle(self, reason: str) -> None:
        """The server closes this idle connection (nothing read or answered for `connections.max.idle.ms`)."""
        self.server.stats.closed_idle += 1
        _log.debug("conn %d: closing, idle", self.info.connection_id)
        self.close(reason)

    def abort(self, reason: str) -> None:
        """The server stops: the request being answered is cancelled, the socket closed now."""
        if self.task is not None:
            self.task.cancel()
        self.close(reason)
        if self.transport is not None:
            self.transport.abort()
