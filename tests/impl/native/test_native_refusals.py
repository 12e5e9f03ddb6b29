"""The compiled server closes the connection of a request it does not answer — an API or version it does not serve,
a body kcoord-wire cannot read — and answers the next connection as before; bytes after a body it ignores, as
kcoord serve does."""

from __future__ import annotations

import socket
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.find_coordinator.v3 import FindCoordinatorRequest
from kio.schema.list_groups.v4 import ListGroupsRequest
from kio.static.primitive import i8

from kcoord.impl.server.codec import decode_response, encode_request


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _find_coordinator() -> bytes:
    payload: bytes = encode_request(FindCoordinatorRequest(key="g", key_type=i8(0)), correlation_id=7, client_id="test")
    return payload


def _answer(address: tuple[str, int], frame: bytes) -> bytes | None:
    """The answer's payload to `frame` on a fresh connection, or None if the server closed it without one."""
    with socket.create_connection(address, timeout=10) as conn:
        conn.sendall(frame)
        head = conn.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            return None
        (size,) = struct.unpack(">i", head)
        return conn.recv(size, socket.MSG_WAITALL)


@pytest.fixture
def address(native_release: Path, tmp_path: Path) -> Iterator[tuple[str, int]]:
    server = subprocess.Popen([str(native_release / "kcoord-native"), str(tmp_path), "os"], stdout=subprocess.PIPE,
                              text=True)
    assert server.stdout is not None
    host, _, port = server.stdout.readline().strip().rpartition(":")
    try:
        yield host, int(port)
    finally:
        server.terminate()
        server.wait()
        server.stdout.close()


@pytest.mark.wire
@pytest.mark.parametrize("payload", [
    pytest.param(encode_request(ListGroupsRequest(states_filter=()), correlation_id=1, client_id="test"),
                 id="an API not served (ListGroups v4)"),
    pytest.param(struct.pack(">hhih", 10, 2, 1, -1) + b"\x00\x01g\x00", id="a version not served (FindCoordinator v2)"),
    pytest.param(_find_coordinator()[:-3], id="a body cut short"),
    pytest.param(b"\x00\x0a\x00", id="a frame shorter than an api key and version"),
])
def test_a_request_not_answered_closes_its_connection(address: tuple[str, int], payload: bytes) -> None:
    assert _answer(address, _frame(payload)) is None
    answer = _answer(address, _frame(_find_coordinator()))
    assert answer is not None
    correlation_id, body = decode_response(10, 3, answer)
    assert correlation_id == 7
    assert body.error_code == 0


#: librdkafka 2.16's Metadata v13 for every topic: its body (null topics, no auto-creation, no authorized operations,
#: no tagged fields) followed by 3 bytes more
_RDKAFKA_METADATA = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")


@pytest.mark.wire
def test_bytes_after_the_body_are_ignored_as_kcoord_serve_ignores_them(address: tuple[str, int]) -> None:
    """As kcoord serve's codec (impl/server/codec.py), the compiled server answers a request followed by bytes it
    does not read as it answers the request alone: librdkafka sends such a Metadata request at bootstrap."""
    alone = _answer(address, _frame(_find_coordinator()))
    assert alone is not None
    assert _answer(address, _frame(_find_coordinator() + b"\x00")) == alone
    answer = _answer(address, _frame(_RDKAFKA_METADATA))
    assert answer is not None, "librdkafka's Metadata request not answered"
    correlation_id, body = decode_response(3, 13, answer)
    assert (correlation_id, body.error_code, body.topics) == (3, 0, ())
