"""The fuzzer's clients on one broker: how a step becomes a request, and what its answer changes in the client.

Owns: `Names` (the group ids, transactional ids, topic and instance ids of one program: the same on both brokers),
`SideState` (one broker's clients: classic members, KIP-848 members and producers, with their channels per node) and
`request_for`/`absorb` (per step kind: the node and request body to send, built from the client's state on that
broker; and the client's state after the answer, plus a follow-up request when a real client would send one at
once: JoinGroup again with the member id the broker asked for).
Must not import: `kcoord.impl` beyond the wire codec and the record batch encoder.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import struct
import time
from dataclasses import dataclass, field

from kio.static.primitive import i32Timedelta

from kcoord.impl.storage.batch import Record, RecordBatch, encode_batch

from .channel import BrokerSide, Channel
from .normalize import Canon
from .steps import Step

SESSION_TIMEOUT_MS = 6_000  # Kafka's group.min.session.timeout.ms: the shortest a broker takes
REBALANCE_TIMEOUT_MS = 6_000
TRANSACTION_TIMEOUT_MS = 8_000
PARTITIONS = 2


def _ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


@dataclass(frozen=True, slots=True)
class Names:
    prefix: str
    topic: str

    @property
    def group(self) -> str:
        return f"{self.prefix}-g"

    @property
    def consumer_group(self) -> str:
        return f"{self.prefix}-cg"

    def group_of(self, value: int) -> str:
        return self.group if value % 2 == 0 else self.consumer_group

    def txn(self, index: int) -> str | None:
        return f"{self.prefix}-t{index}" if index < 2 else None

    def consumer_member_id(self, actor: int) -> str:
        """A client-generated member id (KIP-1082), Kafka's Uuid text form, the same on both brokers."""
        digest = hashlib.sha256(f"{self.prefix}/{actor}".encode()).digest()[:16]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass(slots=True)
class ClassicMember:
    member_id: str = ""
    generation: int = -1
    leader: str = ""
    members: list[str] = field(default_factory=list)
    instance_id: str | None = None


@dataclass(slots=True)
class ConsumerMember:
    epoch: int = 0
    owned: dict[str, tuple[int, ...]] = field(default_factory=dict)
    instance_id: str | None = None
    configured: bool = False  # static or not was decided by the member's first join


@dataclass(slots=True)
class Producer:
    transactional_id: str | None = None
    producer_id: int = -1
    epoch: int = -1
    next_sequence: dict[int, int] = field(default_factory=dict)
    last_sequence: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class SideState:
    side: BrokerSide
    names: Names
    canon: Canon = field(default_factory=Canon)
    classic: list[ClassicMember] = field(default_factory=lambda: [ClassicMember() for _ in range(3)])
    consumers: list[ConsumerMember] = field(default_factory=lambda: [ConsumerMember() for _ in range(2)])
    producers: list[Producer] = field(default_factory=lambda: [Producer() for _ in range(3)])
    channels: dict[tuple[str, int], Channel] = field(default_factory=dict)
    coordinators: dict[tuple[str, int], int] = field(default_factory=dict)

    def channel(self, actor: str, node: int) -> Channel:
        found = self.channels.get((actor, node))
        if found is None or found.closed:
            found = Channel(self.side.nodes[node], f"kcoord-fuzz-{actor}")
            self.channels[(actor, node)] = found
        return found

    def coordinator(self, key: str, key_type: int) -> int:
        if (key, key_type) not in self.coordinators:
            self.coordinators[(key, key_type)] = self.side.coordinator(key, key_type)
        return self.coordinators[(key, key_type)]

    def forget_coordinators(self) -> None:
        self.coordinators.clear()

    def restart(self, actor: str) -> None:
        for (owner, node), channel in list(self.channels.items()):
            if owner == actor:
                channel.close()
                del self.channels[(owner, node)]

    def leader(self, partition: int) -> int:
        return self.side.topics[self.names.topic].leaders[partition]

    def close(self) -> None:
        for channel in self.channels.values():
            channel.close()
        self.channels.clear()


def actor_key(step: Step) -> str:
    """Whose connection a step uses: its actor within its kind's family."""
    family = ("member" if step.kind in {"join", "sync", "heartbeat", "leave", "commit", "restart_member"}
              else "consumer" if step.kind.startswith("cg_")
              else "producer" if step.kind in {"init_pid", "add_partitions", "produce", "add_offsets",
                                               "txn_commit_offsets", "end_txn", "restart_producer"}
              else "observer")
    return f"{family}{step.actor}" if family != "observer" else "observer"


# ---------------------------------------------------------------------------------------------- encodings


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: the topic, no user data."""
    return struct.pack(">h", 0) + struct.pack(">i", 1) + _string(topic) + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    body = struct.pack(">h", 0) + struct.pack(">i", 1) + _string(topic) + struct.pack(">i", len(partitions))
    return body + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1)


def record_batch(producer: Producer, base_sequence: int, transactional: bool, value: bytes) -> bytes:
    now_ms = int(time.time() * 1000)
    idempotent = producer.producer_id >= 0
    return encode_batch(RecordBatch.of(
        [Record(0, now_ms, None, value)], is_transactional=transactional,
        producer_id=producer.producer_id if idempotent else -1, producer_epoch=producer.epoch if idempotent else -1,
        base_sequence=base_sequence if idempotent else -1))
