"""Test helpers: a WireServer on a free loopback port in a background thread, and a blocking raw client."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

from kio.index import load_response_schema
from kio.static.protocol import ResponsePayload

from kcoord.impl.server import Request, ServerOptions, WireServer
from kcoord.impl.server.connection import FrameDispatcher
from kcoord.impl.server.frames import FrameSplitter, encode_frame
from kcoord.impl.server.responses import zero_entity


class ThreadedServer:
    """A started WireServer whose event loop runs in a daemon thread; `call` runs a coroutine on it."""

    def __init__(self, server: WireServer, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.server = server
        self.loop = loop
        self.thread = thread

    @property
    def address(self) -> tuple[str, int]:
        return self.server.address

    @property
    def bootstrap(self) -> str:
        host, port = self.address
        return f"{host}:{port}"


@contextlib.contextmanager
def threaded_server(dispatcher: FrameDispatcher, options: ServerOptions | None = None) -> Iterator[ThreadedServer]:
    loop = asyncio.new_event_loop()
    server = WireServer(dispatcher, options or ServerOptions())
    loop.run_until_complete(server.start())
    thread = threading.Thread(target=loop.run_forever, name="wire-server", daemon=True)
    thread.start()
    try:
        yield ThreadedServer(server, loop, thread)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


class RawClient:
    """A blocking socket speaking frames: for exact-bytes tests and the fuzzer."""

    def __init__(self, address: tuple[str, int], timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout_s)
        self.splitter = FrameSplitter()
        self.pending: list[bytes] = []

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(encode_frame(payload))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next response payload, or None once the server closed the connection. A server that closes with
        some of our frames unread (after a frame it cannot answer) makes the kernel reset the connection rather
        than end it: on loopback the answers sent before arrive first, and the reset counts as closed too."""
        while not self.pending:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self.pending.extend(self.splitter.feed(data))
        return self.pending.pop(0)

    def read_until_closed(self) -> bytes:
        """Every byte the server sends until it closes the connection."""
        chunks = []
        while data := self.sock.recv(65536):
            chunks.append(data)
        return b"".join(chunks)

    def half_close(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def api_versions_v0_frame(correlation_id: int) -> bytes:
    """ApiVersions v0 with a null client id (the smallest valid request)."""
    return struct.pack(">hhih", 18, 0, correlation_id, -1)


class RecordingHandler:
    """A handler for any API: records each request, optionally sleeps, answers with a no-error response.

    `no_reply_ids` are correlation ids answered with None (like acks=0 Produce). The recording is appended from the
    server's thread and read by the test after the traffic is done.
    """

    def __init__(self, delays_s: dict[int, float] | None = None, no_reply_ids: frozenset[int] = frozenset()) -> None:
        self.calls: list[Request] = []
        self.delays_s = delays_s or {}
        self.no_reply_ids = no_reply_ids

    async def __call__(self, request: Request) -> ResponsePayload | None:
        self.calls.append(request)
        delay_s = self.delays_s.get(request.correlation_id, 0.0)
        if delay_s:
            await asyncio.sleep(delay_s)
        if request.correlation_id in self.no_reply_ids:
            return None
        return zero_entity(load_response_schema(request.api_key, request.api_version))
