"""A group coordinator on a temporary directory with a manual clock, a memory trace sink and deterministic member
ids, plus request shortcuts and readers for what it wrote to `__consumer_offsets`."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kcoord.impl.assignors import Subscription, encode_subscription
from kcoord.impl.assignors.server import TopicMetadata
from kcoord.impl.group import GroupConfig, GroupCoordinator
from kcoord.impl.group.context import MaterializeHook
from kcoord.impl.group.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kcoord.impl.interfaces import TxnVerifier
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.seeded import SeededBug
from kcoord.impl.storage import group_log_schema as schema
from kcoord.impl.storage.batch import decode_end_txn_marker
from kcoord.impl.storage.log import Durability

T1 = uuid.UUID(int=0x1111)
T2 = uuid.UUID(int=0x2222)
TOPICS = {"orders": TopicMetadata(T1, "orders", 6), "payments": TopicMetadata(T2, "payments", 4)}
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(*topics: str) -> bytes:
    return encode_subscription(Subscription.of(topics or ("orders",)))


PROTOCOLS = (("range", subscription("orders")),)


@dataclass
class Harness:
    path: Path
    config: GroupConfig = field(default_factory=lambda: GroupConfig(num_partitions=1))
    clock: ManualClock = field(default_factory=lambda: ManualClock(1_000_000))
    sink: MemorySink = field(default_factory=MemorySink)
    topics: dict[str, TopicMetadata] = field(default_factory=lambda: dict(TOPICS))
    verifier: TxnVerifier | None = None
    seeded_bugs: frozenset[SeededBug] = frozenset()
    materialize_hook: MaterializeHook | None = None
    durability: Durability | None = None
    coordinator: GroupCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self._ids = itertools.count()
        self.coordinator = self.make()
        self.coordinator.load_all()

    def make(self) -> GroupCoordinator:
        return GroupCoordinator(data_dir=self.path, clock=self.clock, topics=self.topics, config=self.config,
                                tracer=Tracer(self.sink), verifier=self.verifier, durability=self.durability,
                                seeded_bugs=self.seeded_bugs, materialize_hook=self.materialize_hook,
                                new_uuid=lambda: f"u{next(self._ids)}")

    @property
    def c(self) -> GroupCoordinator:
        return self.coordinator

    # ------------------------------------------------------------ time

    def advance(self, ms: int) -> None:
        """Move the clock in steps so that timers fire in order, polling after each."""
        step = 100
        while ms > 0:
            self.clock.advance(min(step, ms))
            ms -= step
            self.c.poll()

    # ------------------------------------------------------------ state and log

    def shard(self, group_id: str) -> Any:
        return self.c.runtime.shard_for(group_id)

    def group(self, group_id: str) -> dict[str, Any]:
        inst = self.shard(group_id).get("ClassicGroup", (group_id,))
        assert inst is not None, f"no classic group {group_id}"
        return inst

    def consumer_group(self, group_id: str) -> dict[str, Any]:
        inst = self.shard(group_id).get("ConsumerGroup", (group_id,))
        assert inst is not None, f"no consumer group {group_id}"
        return inst

    def member(self, group_id: str, member_id: str) -> dict[str, Any] | None:
        return self.shard(group_id).get("ConsumerGroupMember", (group_id, member_id))

    def records(self, partition: int = 0) -> list[tuple[Any, Any]]:
        """Every record of the partition, decoded: (key, value) for data, ("MARKER", pid, type) for markers."""
        out: list[tuple[Any, Any]] = []
        for batch in self.c.runtime.shard(partition).log.read():
            for rec in batch.records:
                if batch.is_control:
                    out.append(("MARKER", (batch.producer_id, decode_end_txn_marker(rec).control_type.name)))
                else:
                    out.append(schema.decode_record(rec.key, rec.value))
        return out

    def mark(self, partition: int = 0) -> int:
        return int(self.c.runtime.shard(partition).log.log_end_offset)

    def records_since(self, mark: int, partition: int = 0) -> list[tuple[Any, Any]]:
        out = []
        for batch in self.c.runtime.shard(partition).log.read(mark):
            for rec in batch.records:
                if rec.offset >= mark and not batch.is_control:
                    out.append(schema.decode_record(rec.key, rec.value))
        return out

    def rows(self, machine: str, key: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.sink.rows.get(machine, []) if key is None or r["key"] == key]

    # ------------------------------------------------------------ classic requests

    def join(self, group_id: str = "g", member_id: str = "", *, instance: str | None = None,
             protocols: Any = PROTOCOLS, session_ms: int = SESSION_MS, rebalance_ms: int = REBALANCE_MS,
             version: int = 9, protocol_type: str = "consumer",
             client: str = "client") -> Completion[JoinGroupResponse]:
        return self.c.join_group(JoinGroupRequest(group_id, member_id, instance, protocol_type, protocols, session_ms,
                                                  rebalance_ms, client, "/10.0.0.1", version))

    def join_new(self, group_id: str = "g", **kw: Any) -> tuple[str, Completion[JoinGroupResponse]]:
        """A dynamic member's two-step join (MEMBER_ID_REQUIRED, then with the id); returns (id, parked join)."""
        first = self.join(group_id, **kw).result()
        assert first.error == "MEMBER_ID_REQUIRED", first
        return first.member_id, self.join(group_id, first.member_id, **kw)

    def sync(self, group_id: str, member_id: str, generation: int, assignments: Any = (),
             instance: str | None = None, **kw: Any) -> Completion[SyncGroupResponse]:
        return self.c.sync_group(SyncGroupRequest(group_id, member_id, generation, instance,
                                                  assignments=tuple(assignments), **kw))

    def hb(self, group_id: str, member_id: str, generation: int, instance: str | None = None) -> str:
        return self.c.heartbeat(HeartbeatRequest(group_id, member_id, generation, instance)).result().error

    def leave(self, group_id: str, *identities: tuple[str, str | None]) -> LeaveGroupResponse:
        return self.c.leave_group(LeaveGroupRequest(group_id, tuple(MemberIdentity(m, i) for m, i in identities))
                                  ).result()

    def stable_group(self, group_id: str = "g", n: int = 1, *, statics: tuple[str, ...] = ()) -> list[str]:
        """n dynamic members (and static ones by instance id), Stable at generation 1; returns member ids, leader
        first."""
        ids = []
        joins = []
        for _ in range(n):
            member_id, parked = self.join_new(group_id)
            ids.append(member_id)
            joins.append(parked)
        for instance in statics:
            parked = self.join(group_id, instance=instance)
            joins.append(parked)
        self.advance(self.config.initial_rebalance_delay_ms * (2 + n + len(statics)))
        responses = [j.result() for j in joins]
        assert all(r.error == "NONE" for r in responses), responses
        ids = [r.member_id for r in responses]
        leader = responses[0].leader
        generation = responses[0].generation_id
        others = [m for m in ids if m != leader]
        syncs = [self.sync(group_id, m, generation) for m in others]
        syncs.append(self.sync(group_id, leader, generation, [(m, f"a-{m}".encode()) for m in ids]))
        assert all(s.result().error == "NONE" for s in syncs)
        assert self.group(group_id)["state"] == "Stable"
        return [leader, *others]

    # ------------------------------------------------------------ offsets

    def commit(self, group_id: str, offsets: dict[tuple[str, int], int], *, member_id: str = "",
               generation: int = -1, version: int = 9, metadata: str = "", instance: str | None = None,
               retention_ms: int = -1) -> Any:
        topics: dict[str, list[OffsetCommitPartition]] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append(OffsetCommitPartition(partition, offset, metadata=metadata))
        req = OffsetCommitRequest(group_id, tuple((t, tuple(ps)) for t, ps in topics.items()), member_id, generation,
                                  instance, retention_ms, version)
        return self.c.offset_commit(req).result()

    def fetch(self, group_id: str, *partitions: tuple[str, int], require_stable: bool = False,
              member_id: str | None = None, epoch: int = -1) -> Any:
        topics: dict[str, list[int]] = {}
        for topic, partition in partitions:
            topics.setdefault(topic, []).append(partition)
        wanted = tuple((t, tuple(ps)) for t, ps in topics.items()) if partitions else None
        return self.c.offset_fetch(OffsetFetchRequest(group_id, wanted, require_stable, member_id, epoch)).result()

    def fetched(self, group_id: str, *partitions: tuple[str, int], **kw: Any) -> dict[tuple[str, int], Any]:
        response = self.fetch(group_id, *partitions, **kw)
        assert response.error == "NONE", response
        return {(t, f.partition): (f.offset if f.error == "NONE" else f.error) for t, fs in response.topics for f in fs}

    # ------------------------------------------------------------ KIP-848

    def cg(self, group_id: str, member_id: str, epoch: int, *, owned: Any = (), topics: Any = ("orders",),
           instance: str | None = None, rebalance_ms: int = REBALANCE_MS, **kw: Any) -> ConsumerGroupHeartbeatResponse:
        """A ConsumerGroupHeartbeat: epoch 0 sends the full request; later ones send `owned` (topic id, parts)."""
        if epoch == 0:
            req = ConsumerGroupHeartbeatRequest(group_id, member_id, 0, instance, rebalance_timeout_ms=rebalance_ms,
                                                subscribed_topic_names=tuple(topics), topic_partitions=(), **kw)
        elif epoch < 0:
            req = ConsumerGroupHeartbeatRequest(group_id, member_id, epoch, instance, **kw)
        else:
            req = ConsumerGroupHeartbeatRequest(group_id, member_id, epoch, instance,
                                                topic_partitions=None if owned is None else tuple(owned), **kw)
        return self.c.consumer_group_heartbeat(req).result()


def owned_of(response: ConsumerGroupHeartbeatResponse) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...]:
    assert response.assignment is not None
    return response.assignment


def parts(response: ConsumerGroupHeartbeatResponse) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in (response.assignment or ()) for p in ps}
