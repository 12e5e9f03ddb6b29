"""Hand-built wire requests: what the client libraries cannot be made to send (or not precisely enough).

Owns: `RawConnection` (a blocking socket speaking length-prefixed frames, with kio request encoding and response
decoding from the wire codec) and the few requests the scenarios need: ApiVersions, FindCoordinator, DescribeGroups,
ConsumerGroupHeartbeat.
Must not import: `kcoord.impl` beyond the wire codec (`kcoord.impl.server.codec` / `frames`), which is plain Kafka.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.frames import FrameSplitter, encode_frame


def split_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        out.append((host or "127.0.0.1", int(port)))
    return out


class RawConnection:
    def __init__(self, address: tuple[str, int], timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout_s)
        self.splitter = FrameSplitter()
        self.pending: list[bytes] = []
        self.correlation_id = 0

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next response payload, or None once the broker closed the connection."""
        while not self.pending:
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, TimeoutError):
                return None
            if not data:
                return None
            self.pending.extend(self.splitter.feed(data))
        return self.pending.pop(0)

    def request(self, body: Any, client_id: str = "kcoord-conformance") -> Any:
        """Send one kio request body and return the decoded response body."""
        self.correlation_id += 1
        self.sock.sendall(encode_frame(encode_request(body, correlation_id=self.correlation_id, client_id=client_id)))
        frame = self.read_frame()
        if frame is None:
            raise ConnectionError(f"the broker closed the connection instead of answering {type(body).__name__}")
        correlation_id, response = decode_response(body.__api_key__, body.__version__, frame)
        if correlation_id != self.correlation_id:
            raise ConnectionError(f"answer to correlation id {correlation_id}, expected {self.correlation_id}")
        return response

    def closed_by_peer(self) -> bool:
        """True once the broker closed the connection (reads end of stream)."""
        return self.read_frame() is None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def request_once(address: tuple[str, int], body: Any) -> Any:
    """`body` sent on a connection of its own (as a client that reconnects per request would); its decoded answer."""
    with RawConnection(address) as conn:
        return conn.request(body)


def api_versions(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    """api key -> (min, max) as the broker advertises them (ApiVersions v3)."""
    from kio.schema.api_versions.v3 import ApiVersionsRequest

    with RawConnection(address) as conn:
        response = conn.request(ApiVersionsRequest(client_software_name="kcoord-conformance",
                                                   client_software_version="1"))
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


def find_coordinator(address: tuple[str, int], key: str, key_type: int) -> tuple[int, int]:
    """(error code, node id) of FindCoordinator v1 for `key` (key type 0: group, 1: transaction)."""
    from kio.schema.find_coordinator.v1 import FindCoordinatorRequest
    from kio.static.primitive import i8

    with RawConnection(address) as conn:
        response = conn.request(FindCoordinatorRequest(key=key, key_type=i8(key_type)))
    return int(response.error_code.value), int(response.node_id)


def describe_group(address: tuple[str, int], group: str, version: int) -> tuple[int, str | None, str]:
    """(error code, error message, state) of DescribeGroups at `version` (5 or 6) for one group."""
    import importlib

    module = importlib.import_module(f"kio.schema.describe_groups.v{version}.request")
    with RawConnection(address) as conn:
        response = conn.request(module.DescribeGroupsRequest(groups=(group,), include_authorized_operations=False))
    (described,) = response.groups
    return int(described.error_code.value), getattr(described, "error_message", None), described.group_state


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    error_code: int
    member_id: str | None
    member_epoch: int
    assigned: int | None = None  # how many partitions the answer's assignment lists; None: no assignment in it


def consumer_group_heartbeat(address: tuple[str, int], group: str, member_id: str, *, epoch: int = 0,
                             names: tuple[str, ...] | None = None, regex: str | None = None,
                             instance: str | None = None) -> HeartbeatAnswer:
    """One ConsumerGroupHeartbeat v1: with epoch 0 a full join (rebalance timeout, no owned partitions) with the
    given subscription; otherwise a leave (-1, -2) or a heartbeat without fields. `instance`: the group.instance.id
    of a static member."""
    import datetime

    from kio.schema.consumer_group_heartbeat.v1 import ConsumerGroupHeartbeatRequest
    from kio.schema.types import GroupId
    from kio.static.primitive import i32

    fields: dict[str, Any] = {"topic_partitions": None, "instance_id": instance}
    if epoch == 0:
        fields.update(rebalance_timeout=datetime.timedelta(seconds=30), topic_partitions=(),
                      subscribed_topic_names=names, subscribed_topic_regex=regex)
    with RawConnection(address) as conn:
        response = conn.request(ConsumerGroupHeartbeatRequest(group_id=GroupId(group), member_id=member_id,
                                                              member_epoch=i32(epoch), **fields))
    assignment = response.assignment
    assigned = None if assignment is None else partition_count(assignment.topic_partitions)
    return HeartbeatAnswer(int(response.error_code.value), response.member_id, int(response.member_epoch), assigned)


def partition_count(topic_partitions: Iterable[Any]) -> int:
    """How many partitions a KIP-848 assignment lists (its `topic_partitions`: a topic id and partition numbers each;
    the heartbeat's answer and ConsumerGroupDescribe's assignment and target assignment alike)."""
    return sum(len(t.partitions) for t in topic_partitions)


def unknown_api_frame(correlation_id: int) -> bytes:
    """A request header naming api key 32767, which no broker has."""
    return encode_frame(struct.pack(">hhih", 32_767, 0, correlation_id, -1))
