"""Raw connections to one broker, with requests in flight: what the lockstep engine drives.

Owns: `Channel` (one socket to one node; requests are sent at once and their answers read later, in order, as a
Kafka broker answers one connection's requests in order; a closed connection is reported, never hidden) and
`BrokerSide` (one broker as the fuzzer sees it: its nodes from Metadata, FindCoordinator asked until the coordinator
is there, topics made with CreateTopics and their ids and leaders, and a blocking `call` for the set-up requests).
Must not import: `kcoord.impl` beyond the wire codec.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kio.schema.types import TopicName
from kio.static.primitive import i8, i16, i32

from kcoord.impl.server.codec import decode_response, encode_request
from kcoord.impl.server.frames import FrameSplitter, encode_frame

#: Kafka's retriable coordinator errors: a client finds the coordinator again and resends
COORDINATOR_MOVED = frozenset({14, 15, 16})  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR


class ChannelClosed(ConnectionError):
    """The broker closed the connection (or it could not be made)."""


class Channel:
    def __init__(self, address: tuple[str, int], client_id: str, timeout_s: float = 5.0) -> None:
        try:
            self.sock = socket.create_connection(address, timeout=timeout_s)
        except OSError as e:
            raise ChannelClosed(f"cannot connect to {address[0]}:{address[1]}: {e}") from None
        self.address = address
        self.client_id = client_id
        self.splitter = FrameSplitter()
        self.inflight: deque[tuple[int, Any]] = deque()  # (correlation id, request body), oldest first
        self.correlation_id = 0
        self.closed = False

    @property
    def busy(self) -> bool:
        return bool(self.inflight)

    def send(self, body: Any) -> int:
        if self.closed:
            raise ChannelClosed("the connection is closed")
        self.correlation_id += 1
        frame = encode_frame(encode_request(body, correlation_id=self.correlation_id, client_id=self.client_id))
        try:
            self.sock.sendall(frame)
        except OSError as e:
            self.close()
            raise ChannelClosed(f"send failed: {e}") from None
        self.inflight.append((self.correlation_id, body))
        return self.correlation_id

    def poll(self, timeout_s: float) -> list[tuple[int, Any]]:
        """The answers that arrive within `timeout_s` (in request order); ChannelClosed if the broker hangs up
        while a request is in flight."""
        out: list[tuple[int, Any]] = []
        deadline = time.monotonic() + timeout_s
        while self.inflight and not out:
            left = deadline - time.monotonic()
            # poll, not select: a long run's process (the served cluster's partition files are in it) passes
            # select's 1,024-descriptor limit
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            if not poller.poll(max(0.0, left) * 1000):
                break
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data = b""
            if not data:
                self.close()
                raise ChannelClosed("the broker closed the connection")
            for frame in self.splitter.feed(data):
                correlation_id, body = self.inflight.popleft()
                answered, response = decode_response(body.__api_key__, body.__version__, frame)
                if answered != correlation_id:
                    raise ChannelClosed(f"answer to correlation id {answered}, expected {correlation_id}")
                out.append((correlation_id, response))
        return out

    def call(self, body: Any, timeout_s: float = 10.0) -> Any:
        """Send and wait for the answer (set-up requests only)."""
        correlation_id = self.send(body)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for answered, response in self.poll(deadline - time.monotonic()):
                if answered == correlation_id:
                    return response
        raise ChannelClosed(f"no answer to {type(body).__name__} in {timeout_s:.0f}s")

    def close(self) -> None:
        self.closed = True
        self.inflight.clear()
        with contextlib.suppress(OSError):
            self.sock.close()


def split_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        out.append((host or "127.0.0.1", int(port)))
    return out


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    leaders: dict[int, int]  # partition -> node


@dataclass(slots=True)
class BrokerSide:
    """One broker under comparison, as the fuzzer's clients see it."""

    label: str
    bootstrap: str
    timeout_s: float = 30.0
    nodes: dict[int, tuple[str, int]] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    _admin: Channel | None = None

    def admin(self) -> Channel:
        if self._admin is None or self._admin.closed:
            self._admin = None
            for address in [*self.nodes.values(), *split_bootstrap(self.bootstrap)]:
                with contextlib.suppress(ChannelClosed):
                    self._admin = Channel(address, f"kcoord-fuzz-admin-{self.label}")
                    break
        if self._admin is None:
            raise ChannelClosed(f"no node of {self.label} ({self.bootstrap}) accepts a connection")
        return self._admin

    def call(self, body: Any) -> Any:
        try:
            return self.admin().call(body)
        except ChannelClosed:
            if self._admin is not None:
                self._admin.close()
            return self.admin().call(body)

    def refresh(self, topics: tuple[str, ...] = ()) -> None:
        """Nodes and the named topics' ids and leaders, from Metadata v12."""
        from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

        response = self.call(MetadataRequest(
            topics=tuple(MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in topics),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        self.nodes = {int(b.node_id): (b.host, int(b.port)) for b in response.brokers}
        for topic in response.topics:
            if int(topic.error_code.value) == 0 and topic.name:
                self.topics[topic.name] = TopicInfo(topic.name, topic.topic_id, {
                    int(p.partition_index): int(p.leader_id) for p in topic.partitions})

    def create_topics(self, names: list[str], partitions: int) -> None:
        """Make the topics (one CreateTopics) and return once every node knows them."""
        from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest

        self.call(CreateTopicsRequest(topics=tuple(CreatableTopic(
            name=TopicName(name), num_partitions=i32(partitions), replication_factor=i16(1), assignments=(),
            configs=()) for name in names), timeout=_ms(30_000), validate_only=False))
        deadline = time.monotonic() + self.timeout_s
        while not all(self._known_everywhere(name, partitions) for name in names):
            if time.monotonic() > deadline:
                raise ChannelClosed(f"{self.label}: topics {names} are not known with a leader for every partition "
                                    f"on every node after {self.timeout_s:.0f}s")
            time.sleep(0.05)
        self.refresh(tuple(names))

    def _known_everywhere(self, name: str, partitions: int) -> bool:
        """Every node's Metadata shows the topic with a leader for each partition: in Kafka a node learns of a new
        topic from the metadata log, and a group coordinator that has not yet assigns a new member nothing."""
        from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

        request = MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
                                  allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        for address in self.nodes.values():
            channel = Channel(address, f"kcoord-fuzz-admin-{self.label}")
            try:
                (topic,) = channel.call(request).topics
            finally:
                channel.close()
            leaders = [int(p.leader_id) for p in topic.partitions]
            if int(topic.error_code.value) != 0 or len(leaders) != partitions or min(leaders) < 0:
                return False
        return True

    def coordinator(self, key: str, key_type: int) -> int:
        """The node coordinating `key` (0: group, 1: transaction), asked until it is there."""
        from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

        deadline = time.monotonic() + self.timeout_s
        while True:
            response = self.call(FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=(key,)))
            (entry,) = response.coordinators
            error = int(entry.error_code.value)
            if error == 0:
                if int(entry.node_id) not in self.nodes:
                    self.refresh()
                return int(entry.node_id)
            if error not in COORDINATOR_MOVED or time.monotonic() > deadline:
                raise ChannelClosed(f"{self.label}: FindCoordinator({key_type}, {key}) answered error {error}")
            time.sleep(0.1)

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None


def _ms(value: int) -> Any:
    import datetime

    from kio.static.primitive import i32Timedelta

    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))
