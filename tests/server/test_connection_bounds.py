"""`kcoord serve` under peers that never finish their requests: memory stays bounded across connections
(`server.queued_max_request_bytes`), idle connections are closed (`server.connections_max_idle_ms`), and a normal
client is served throughout. The server runs as its own process, so its RSS is measured alone."""

from __future__ import annotations

import errno
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from served_cluster import free_port_block

pytestmark = [pytest.mark.wire, pytest.mark.adversarial]

KCOORD = str(Path(sys.executable).parent / "kcoord")
MiB = 1 << 20


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.fixture()
def serve(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port_block(1)
    settings: list[str] = request.param
    process = subprocess.Popen([KCOORD, "serve", "--data-dir", str(tmp_path / "data"), "--port", str(port),
                                "--log-level", "warning", *settings], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None
    while "listening on" not in (line := process.stdout.readline()):
        assert line, f"kcoord serve did not start: {process.stderr.read() if process.stderr else ''}"
    yield process, port
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err, err


def normal_client_round_trip(port: int) -> float:
    """A kafka-python producer and consumer group: produce, commit an offset and read it back; seconds taken."""
    import kafka
    from kafka.structs import OffsetAndMetadata, TopicPartition

    started = time.monotonic()
    producer = kafka.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all", request_timeout_ms=15_000,
                                   max_block_ms=15_000)
    producer.send("normal", b"hello", partition=0).get(timeout=15)
    producer.close()
    consumer = kafka.KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", group_id="normal", enable_auto_commit=False,
                                   request_timeout_ms=15_000)
    tp = TopicPartition("normal", 0)
    consumer.commit({tp: OffsetAndMetadata(1, "", -1)})
    assert consumer.committed(tp) == 1
    consumer.close()
    return time.monotonic() - started


def attack(port: int, connections: int, frame_bytes: int, send_bytes: int, seconds: float) -> list[socket.socket]:
    """`connections` sockets, each declaring a `frame_bytes` frame (a Produce header) and pushing up to `send_bytes`
    of it as fast as the server takes it, for `seconds`; the sockets are returned open (the frames unfinished)."""
    header = struct.pack(">ihhi", frame_bytes, 0, 9, 1)  # size, api key 0 (Produce), v9, correlation id
    sockets = []
    for _ in range(connections):
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        sockets.append(s)
    sent = dict.fromkeys(range(connections), 0)
    chunk = bytes(256 * 1024)
    deadline = time.monotonic() + seconds
    for s in sockets:
        s.send(header)
    while time.monotonic() < deadline and any(n < send_bytes for n in sent.values()):
        progressed = False
        for i, s in enumerate(sockets):
            if sent[i] >= send_bytes:
                continue
            try:
                sent[i] += s.send(chunk[:send_bytes - sent[i]])
                progressed = True
            except BlockingIOError:
                pass
        if not progressed:
            time.sleep(0.01)
    return sockets


@pytest.mark.parametrize("serve", [["--max-frame-bytes", str(8 * MiB), "--set",
                                    f"server.queued_max_request_bytes={16 * MiB}"]], indirect=True)
def test_fifty_peers_with_unfinished_large_requests_do_not_grow_memory_and_a_client_is_still_served(
        serve: tuple[subprocess.Popen[str], int]) -> None:
    process, port = serve
    normal_client_round_trip(port)  # warmed up: topic made, group coordinator used
    before = rss_bytes(process.pid)
    peak = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_bytes(process.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        sockets = attack(port, 50, 8 * MiB - 1, 7 * MiB, seconds=5)  # 350 MiB offered
        seconds = normal_client_round_trip(port)
        time.sleep(0.5)
    finally:
        stop.set()
        sampler.join()
    grown = peak[0] - before
    print(f"RSS {before / MiB:.0f} MiB before, peak {peak[0] / MiB:.0f} MiB with 50 unfinished requests; "
          f"client {seconds:.1f} s")
    # the cap (16 MiB of large requests) + 16 MiB of small ones + asyncio's 128 KiB read-ahead per socket + slack
    assert grown < 64 * MiB, f"RSS grew {grown / MiB:.0f} MiB with 50 unfinished 8 MiB requests"
    assert seconds < 30
    for s in sockets:
        s.close()


@pytest.mark.parametrize("serve", [["--set", "server.connections_max_idle_ms=1000"]], indirect=True)
def test_idle_connections_are_closed_after_connections_max_idle_ms(serve: tuple[subprocess.Popen[str], int]) -> None:
    """A peer that stops in the middle of a frame, and one that never sends anything, are both closed; a client
    that keeps talking is not."""
    _process, port = serve
    stalled = socket.create_connection(("127.0.0.1", port))
    stalled.sendall(struct.pack(">ihhi", 1000, 3, 12, 1) + b"partial")
    silent = socket.create_connection(("127.0.0.1", port))
    started = time.monotonic()
    for s in (stalled, silent):
        s.settimeout(10)
        try:
            assert s.recv(1) == b""  # closed by the server
        except OSError as e:
            assert e.errno == errno.ECONNRESET
    waited = time.monotonic() - started
    assert 0.9 < waited < 5, waited
    for _ in range(3):  # a client that keeps talking (each round trip is activity) stays connected
        normal_client_round_trip(port)
