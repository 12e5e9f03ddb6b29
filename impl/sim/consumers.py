"""Simulated consumers: members of classic groups (client-side assignors) and of KIP-848 consumer groups (server-side
assignors, revoke-before-assign reconciliation).

Owns: `ClassicConsumer` (JoinGroup with MEMBER_ID_REQUIRED, SyncGroup — the leader runs a classic assignor from
`impl/assignors` over the members' subscription bytes —, Heartbeat, OffsetCommit, LeaveGroup, and rejoining on
REBALANCE_IN_PROGRESS / UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION) and `GroupMember` (ConsumerGroupHeartbeat: it joins
at epoch 0 with a member id of its own, reports what it owns, takes the assignment it is given — releasing revoked
partitions at once —, commits offsets at its member epoch, and leaves with epoch -1).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from ..assignors import Subscription, classic_assignor, decode_assignment, decode_subscription
from ..assignors.classic import Assignment
from ..assignors.consumer_protocol import encode_assignment, encode_subscription
from ..errors import Errors
from ..group.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitPartition,
    OffsetCommitRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from .producers import IN_TOPIC
from .world import Client, World

SESSION_TIMEOUT_MS = 6_000
REBALANCE_TIMEOUT_MS = 10_000
HEARTBEAT_MS = 1_000


def _commit_offsets(world: World, group_id: str, partitions: list[int], member_id: str, generation: int
                    ) -> OffsetCommitRequest:
    parts = tuple(OffsetCommitPartition(p, world.rng.randint(0, 1_000)) for p in sorted(partitions))
    return OffsetCommitRequest(group_id, ((IN_TOPIC, parts),), member_id, generation)


class ClassicConsumer(Client):
    kind = "classic_consumer"

    def __init__(self, world: World, name: str, group_id: str, assignor: str, *, regex: bool = False) -> None:
        super().__init__(world, name)
        self.group_id = group_id
        self.assignor = assignor
        self.regex = regex  # subscribe with a regular expression matching the input topic, not by its name
        self.member_id = ""
        self.generation = -1
        self.owned: list[int] = []
        self.beats = 0

    @property
    def coordinator(self) -> Any:
        return self.world.cluster.node_for_coordinator("group", self.group_id).groups

    def on_start(self) -> None:
        self.member_id, self.generation, self.owned = "", -1, []
        self.later(self.world.rng.randint(0, 100), self.join)

    def join(self) -> None:
        subscription = encode_subscription(Subscription.of([IN_TOPIC], generation_id=self.generation,
                                                           owned_partitions=[(IN_TOPIC, p) for p in self.owned]))
        request = JoinGroupRequest(self.group_id, self.member_id, protocols=((self.assignor, subscription),),
                                   session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                                   client_id=self.name)
        self.call(lambda: self.coordinator.join_group(request), self.on_joined)

    def on_joined(self, answer: JoinGroupResponse | str) -> None:
        if isinstance(answer, str):
            self.later(self.backoff_ms(), self.join)
            return
        if answer.error == Errors.MEMBER_ID_REQUIRED:
            self.member_id = answer.member_id
            self.join()
        elif answer.error == Errors.NONE:
            self.generation = answer.generation_id
            self.member_id = answer.member_id
            self.sync(answer)
        else:
            self.world.stats.clients[f"join_{answer.error}"] += 1
            if answer.error in (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID):
                self.member_id = ""
            self.later(self.backoff_ms(), self.join)

    def sync(self, joined: JoinGroupResponse) -> None:
        assignments: tuple[tuple[str, bytes], ...] = ()
        if joined.leader == self.member_id:
            subscriptions = {m.member_id: decode_subscription(m.metadata, m.group_instance_id)
                             for m in joined.members}
            chosen = classic_assignor(joined.protocol_name or self.assignor)
            result = chosen.assign({IN_TOPIC: self.world.topics[IN_TOPIC]}, subscriptions)
            assignments = tuple((m, encode_assignment(result.get(m, Assignment(())))) for m in sorted(subscriptions))
        request = SyncGroupRequest(self.group_id, self.member_id, self.generation, protocol_type="consumer",
                                   protocol_name=joined.protocol_name, assignments=assignments)
        self.call(lambda: self.coordinator.sync_group(request), self.on_synced)

    def on_synced(self, answer: SyncGroupResponse | str) -> None:
        error = answer if isinstance(answer, str) else answer.error
        if error == Errors.NONE and isinstance(answer, SyncGroupResponse):
            self.owned = [tp.partition for tp in decode_assignment(answer.assignment).partitions] \
                if answer.assignment else []
            self.later(HEARTBEAT_MS, self.heartbeat)
        else:
            self.rejoin(error)

    def rejoin(self, error: str) -> None:
        self.world.stats.clients[f"classic_rejoin_{error}"] += 1
        if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION, Errors.FENCED_INSTANCE_ID):
            self.member_id, self.generation = "", -1
        self.later(self.backoff_ms(), self.join)

    def heartbeat(self) -> None:
        self.beats += 1
        rng = self.world.rng
        if rng.random() < 0.04:
            self.leave()
            return
        if self.owned and rng.random() < 0.3:
            request = _commit_offsets(self.world, self.group_id, self.owned, self.member_id, self.generation)
            self.call(lambda: self.coordinator.offset_commit(request), lambda _: None)
        hb = HeartbeatRequest(self.group_id, self.member_id, self.generation)
        self.call(lambda: self.coordinator.heartbeat(hb), self.on_heartbeat)

    def on_heartbeat(self, answer: Any) -> None:
        error = answer if isinstance(answer, str) else answer.error
        if error == Errors.NONE:
            self.later(HEARTBEAT_MS, self.heartbeat)
        elif error in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE):
            self.later(self.backoff_ms(), self.heartbeat)
        else:
            self.rejoin(error)

    def leave(self) -> None:
        self.world.stats.clients["classic_leaves"] += 1
        request = LeaveGroupRequest(self.group_id, (MemberIdentity(self.member_id),))
        self.call(lambda: self.coordinator.leave_group(request), lambda _: None)
        self.member_id, self.generation, self.owned = "", -1, []
        self.later(self.world.rng.randint(500, 4_000), self.join)


class GroupMember(Client):
    kind = "consumer"

    def __init__(self, world: World, name: str, group_id: str, assignor: str, *, regex: bool = False) -> None:
        super().__init__(world, name)
        self.group_id = group_id
        self.assignor = assignor
        self.regex = regex  # subscribe with a regular expression matching the input topic, not by its name
        self.member_id = ""
        self.epoch = 0
        self.owned: tuple[tuple[uuid.UUID, tuple[int, ...]], ...] = ()

    @property
    def coordinator(self) -> Any:
        return self.world.cluster.node_for_coordinator("group", self.group_id).groups

    def on_start(self) -> None:
        self.new_member()
        self.later(self.world.rng.randint(0, 100), self.heartbeat)

    def new_member(self) -> None:
        self.member_id = str(uuid.UUID(int=self.world.rng.getrandbits(128), version=4))
        self.epoch, self.owned = 0, ()

    def heartbeat(self) -> None:
        rng = self.world.rng
        if self.epoch > 0 and rng.random() < 0.03:
            self.leave()
            return
        if self.epoch == 0:
            names, regex = (None, f"^{re.escape(IN_TOPIC)}$") if self.regex else ((IN_TOPIC,), None)
            request = ConsumerGroupHeartbeatRequest(
                self.group_id, self.member_id, 0, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                subscribed_topic_names=names, subscribed_topic_regex=regex, server_assignor=self.assignor,
                topic_partitions=(), client_id=self.name)
        else:
            request = ConsumerGroupHeartbeatRequest(self.group_id, self.member_id, self.epoch,
                                                    topic_partitions=self.owned, client_id=self.name)
        if self.epoch > 0 and self.owned and rng.random() < 0.3:
            owned = [p for _, ps in self.owned for p in ps]
            commit = _commit_offsets(self.world, self.group_id, owned, self.member_id, self.epoch)
            self.call(lambda: self.coordinator.offset_commit(commit), lambda _: None)
        self.call(lambda: self.coordinator.consumer_group_heartbeat(request), self.on_heartbeat)

    def on_heartbeat(self, answer: ConsumerGroupHeartbeatResponse | str) -> None:
        error = answer if isinstance(answer, str) else answer.error
        if error == Errors.NONE and isinstance(answer, ConsumerGroupHeartbeatResponse):
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.owned = answer.assignment  # revoked partitions are released at once, new ones taken
            self.later(min(answer.heartbeat_interval_ms or HEARTBEAT_MS, HEARTBEAT_MS), self.heartbeat)
            return
        self.world.stats.clients[f"consumer_{error}"] += 1
        if error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.epoch, self.owned = 0, ()  # rejoin with the same member id (Kafka's consumer does)
        elif error not in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                           Errors.COORDINATOR_NOT_AVAILABLE):
            self.new_member()
        self.later(self.backoff_ms(), self.heartbeat)

    def leave(self) -> None:
        self.world.stats.clients["consumer_leaves"] += 1
        request = ConsumerGroupHeartbeatRequest(self.group_id, self.member_id, -1)
        self.call(lambda: self.coordinator.consumer_group_heartbeat(request), lambda _: None)
        self.new_member()
        self.later(self.world.rng.randint(500, 4_000), self.heartbeat)
