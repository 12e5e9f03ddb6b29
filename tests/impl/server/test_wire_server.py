"""The TCP server on a loopback port: ordering, bad framing, disconnects, shutdown."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4 import HeartbeatRequest as HeartbeatRequestV4
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload
from wire_testkit import RawClient, RecordingHandler, api_versions_v0_frame, threaded_server

from kcoord.impl.server import (
    Dispatcher,
    HandlerRegistry,
    Request,
    ServerOptions,
    VersionRange,
    WireServer,
    encode_request,
    error_response,
)
from kcoord.impl.server.codec import decode_response

pytestmark = pytest.mark.wire


def heartbeat(correlation_id: int) -> bytes:
    body = HeartbeatRequestV4(group_id="g", generation_id=i32(1), member_id="m", group_instance_id=None)
    return encode_request(body, correlation_id=correlation_id, client_id="t")


def make_dispatcher(handler: RecordingHandler) -> Dispatcher:
    registry = HandlerRegistry()
    registry.register(12, handler, VersionRange(0, 4))
    return Dispatcher(registry)


def wait_for(condition: object, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_pipelined_requests_are_processed_and_answered_in_order() -> None:
    # Earlier requests sleep longer: any concurrency inside a connection would reorder calls or answers.
    count = 40
    handler = RecordingHandler(delays_s={cid: 0.002 * (count - cid) for cid in range(count)})
    with threaded_server(make_dispatcher(handler)) as server, RawClient(server.address) as client:
        client.send_raw(b"".join(struct.pack(">i", len(f)) + f for f in (heartbeat(cid) for cid in range(count))))
        answers = [decode_response(12, 4, client.read_frame() or b"") for _ in range(count)]
    assert [cid for cid, _ in answers] == list(range(count))
    assert all(body.error_code == ErrorCode.none for _, body in answers)  # type: ignore[attr-defined]
    assert [r.correlation_id for r in handler.calls] == list(range(count))


def test_no_reply_requests_keep_the_order_of_the_rest() -> None:
    handler = RecordingHandler(no_reply_ids=frozenset({1, 2}))
    with threaded_server(make_dispatcher(handler)) as server, RawClient(server.address) as client:
        for cid in range(4):
            client.send_frame(heartbeat(cid))
        assert [decode_response(12, 4, client.read_frame() or b"")[0] for _ in range(2)] == [0, 3]


@pytest.mark.parametrize(
    ("prefix", "reason"),
    [(struct.pack(">i", 1001), "FrameTooLarge"), (struct.pack(">i", -5), "InvalidFrameLength")],
)
def test_bad_size_prefix_closes_only_that_connection(prefix: bytes, reason: str) -> None:
    handler = RecordingHandler()
    options = ServerOptions(max_frame_bytes=1000)
    with threaded_server(make_dispatcher(handler), options) as server:
        with RawClient(server.address) as good, RawClient(server.address) as bad:
            good.send_frame(heartbeat(1))
            assert good.read_frame() is not None
            bad.send_raw(prefix + b"\x00" * 64)
            assert bad.read_frame() is None  # closed by the server, nothing sent
            good.send_frame(heartbeat(2))
            assert decode_response(12, 4, good.read_frame() or b"")[0] == 2
        assert server.server.stats.close_reasons.get(reason) == 1
    assert [r.correlation_id for r in handler.calls] == [1, 2]


def test_unanswerable_frame_closes_after_answering_the_earlier_ones() -> None:
    handler = RecordingHandler()
    with threaded_server(make_dispatcher(handler)) as server, RawClient(server.address) as client:
        unknown_api = struct.pack(">hhih", 999, 0, 77, -1)
        for frame in (heartbeat(1), heartbeat(2), unknown_api, heartbeat(3)):
            client.send_frame(frame)
        assert [decode_response(12, 4, client.read_frame() or b"")[0] for _ in range(2)] == [1, 2]
        assert client.read_frame() is None
    assert [r.correlation_id for r in handler.calls] == [1, 2]


def test_disconnect_mid_frame_never_reaches_a_handler() -> None:
    handler = RecordingHandler()
    with threaded_server(make_dispatcher(handler)) as server:
        frame = heartbeat(5)
        for cut in (2, 4, 4 + len(frame) // 2, 4 + len(frame) - 1):
            with RawClient(server.address) as client:
                client.send_raw((struct.pack(">i", len(frame)) + frame)[:cut])
        wait_for(lambda: server.server.stats.connections_open == 0)
        with RawClient(server.address) as client:
            client.send_frame(api_versions_v0_frame(9))
            assert decode_response(18, 0, client.read_frame() or b"")[0] == 9
    assert handler.calls == []


def test_stop_closes_idle_connections_cleanly(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    handler = RecordingHandler()
    with threaded_server(make_dispatcher(handler)) as server:
        client = RawClient(server.address)
        client.send_frame(api_versions_v0_frame(1))
        assert client.read_frame() is not None
    assert client.read_frame() is None
    client.close()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_connection_accepted_as_the_server_stops_is_closed_unserved() -> None:
    """asyncio makes a connection's protocol one loop step after the accept; when `stop` comes in between, the
    connection starts after the server stopped (and the cluster behind it closed). It must close the connection
    without reading a request: one served then could write to closed logs (an auto-created topic once got a second
    id)."""
    handler = RecordingHandler()

    async def scenario() -> tuple[bytes, list[Request]]:
        server = WireServer(make_dispatcher(handler), ServerOptions(port=0))
        await server.start()
        await server.stop()
        ours, theirs = socket.socketpair()
        theirs.sendall(struct.pack(">i", len(frame := heartbeat(1))) + frame)
        theirs.shutdown(socket.SHUT_WR)  # so that a server serving it anyway ends at the end of the stream
        # the late start of a connection accepted before stop: the listener's protocol made for it
        await asyncio.get_running_loop().connect_accepted_socket(server.new_peer, ours)
        await asyncio.sleep(0.1)
        theirs.settimeout(5)
        try:
            received = theirs.recv(1 << 16)  # b"" once the server closed its end
        except ConnectionResetError:  # closed with our request unread: the kernel resets
            received = b""
        theirs.close()
        return received, handler.calls

    received, calls = asyncio.run(scenario())
    assert received == b""
    assert calls == []


def test_server_binds_loopback_by_default() -> None:
    with threaded_server(make_dispatcher(RecordingHandler())) as server:
        host, port = server.address
        assert host == "127.0.0.1" and port > 0


class GatedHandler:
    """Answers nothing until the test opens the gate: lets the test look at the read-ahead."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.calls = 0

    async def __call__(self, request: Request) -> ResponsePayload:
        self.calls += 1
        await self.gate.wait()
        return error_response(request.api_key, request.api_version, ErrorCode.none)


@pytest.mark.parametrize(("max_requests", "max_bytes"), [(3, 1 << 20), (100, 200)])
def test_read_ahead_is_bounded(max_requests: int, max_bytes: int) -> None:
    handler = GatedHandler()
    registry = HandlerRegistry()
    registry.register(12, handler, VersionRange(0, 4))
    options = ServerOptions(max_queued_requests=max_requests, max_queued_bytes=max_bytes)
    frames = [heartbeat(cid) for cid in range(30)]
    frame_bytes = len(frames[0])
    with threaded_server(Dispatcher(registry), options) as server, RawClient(server.address) as client:
        client.send_raw(b"".join(struct.pack(">i", len(f)) + f for f in frames))
        wait_for(lambda: handler.calls == 1)
        time.sleep(0.2)  # let the reader run as far ahead as it may
        queued = min(max_requests, max(1, max_bytes // frame_bytes))
        # one frame in the handler, `queued` in the queue, one read and waiting for room
        assert server.server.stats.frames_received == 1 + queued + 1
        server.loop.call_soon_threadsafe(handler.gate.set)
        assert [decode_response(12, 4, client.read_frame() or b"")[0] for _ in range(30)] == list(range(30))


def test_a_long_pipeline_answered_in_the_data_callback_is_answered_in_order() -> None:
    # Requests answered without suspending are answered inside the socket's data callback (impl/server/peer.py): a
    # pipeline of many of them, read in one chunk, must be answered one after the other in a loop, not by each
    # answer recursing into the next (2,000 frames would pass Python's recursion limit).
    count = 2000
    handler = RecordingHandler()
    options = ServerOptions(max_queued_requests=count, max_queued_bytes=1 << 24)
    with threaded_server(make_dispatcher(handler), options) as server, RawClient(server.address) as client:
        client.send_raw(b"".join(struct.pack(">i", len(f)) + f for f in (heartbeat(cid) for cid in range(count))))
        answers = [decode_response(12, 4, client.read_frame() or b"")[0] for _ in range(count)]
    assert answers == list(range(count))
    assert [r.correlation_id for r in handler.calls] == list(range(count))


def test_the_server_answers_on_uvloop() -> None:
    # `bench_server.py --loop uvloop` and `run_event_loop(..., "uvloop")`: uvloop's transports are not subclasses of
    # asyncio.Transport (an isinstance check in connection_made refused every connection before)
    pytest.importorskip("uvloop")
    from kcoord.impl.server.serve import run_event_loop

    handler = RecordingHandler()

    async def main() -> list[int]:
        server = WireServer(make_dispatcher(handler), ServerOptions())
        await server.start()
        try:
            host, port = server.address
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"".join(struct.pack(">i", len(f)) + f for f in (heartbeat(cid) for cid in range(3))))
            ids = []
            for _ in range(3):
                (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))
                ids.append(decode_response(12, 4, await asyncio.wait_for(reader.readexactly(size), 10))[0])
            writer.close()
            return ids
        finally:
            await server.stop()

    assert run_event_loop(main(), "uvloop") == [0, 1, 2]
