"""What every group-coordinator handler reads besides the shard: configuration, clock, the machine tables, topic
metadata, id generation and the hook that runs the step materialising a transaction's offsets. One `Context` per
coordinator (no module-level state).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..assignors import ServerAssignor, server_assignor
from ..assignors.server import TopicMetadata
from ..interfaces import TxnVerifier
from ..runtime.clock import Clock
from ..statemachine import MachineTable
from .config import GroupConfig
from .state import PartitionNames

TopicDescriber = Callable[[str], TopicMetadata | None]
"""Topic metadata by name (topic id, partition count), None for a topic that does not exist."""

TopicLister = Callable[[], Iterable[str]]
"""The names of every topic of the cluster (what a regular expression is resolved against)."""

MaterializeHook = Callable[[Callable[[], None]], None]
"""Runs (now or later) the step that materialises a transaction's offsets after its marker is durable."""


@dataclass(frozen=True, slots=True)
class Tables:
    classic: MachineTable
    consumer: MachineTable
    member: MachineTable
    producer: MachineTable

    @staticmethod
    def load() -> Tables:
        return Tables(MachineTable.load("classic_group"), MachineTable.load("consumer_group"),
                      MachineTable.load("consumer_group_member"), MachineTable.load("partition_producer"))

    def by_name(self) -> dict[str, MachineTable]:
        return {t.name: t for t in (self.classic, self.consumer, self.member, self.producer)}


def describer_of(topics: TopicDescriber | Mapping[str, TopicMetadata]) -> TopicDescriber:
    if callable(topics):
        return topics
    mapping = topics
    return mapping.get


def lister_of(topics: TopicDescriber | Mapping[str, TopicMetadata], names: TopicLister | None) -> TopicLister:
    """The topic names: given, or the keys of a mapping of topics (read when asked: the mapping may grow)."""
    if names is not None:
        return names
    if callable(topics):
        return tuple
    mapping = topics
    return lambda: tuple(mapping)


@dataclass(frozen=True, slots=True)
class Migration:
    """The conversions between classic and consumer groups (`kcoord.impl.group.migration`), handed to the consumer
    handlers this way because `consumer/` may not import `classic/`. Each takes a `ConsumerTxn` first."""

    online_upgrade: Callable[..., bool]
    upgrade: Callable[..., str]
    downgrade: Callable[..., None]
    downgrade_replacing: Callable[..., None]


@dataclass(slots=True)
class Context:
    config: GroupConfig
    clock: Clock
    tables: Tables
    topics: TopicDescriber
    names: PartitionNames = field(default_factory=PartitionNames)
    new_uuid: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))
    verifier: TxnVerifier | None = None
    materialize_hook: MaterializeHook | None = None
    offsets_topic: str = "__consumer_offsets"
    assignors: dict[str, ServerAssignor] = field(default_factory=dict)
    topic_names: TopicLister = tuple
    # the cluster's topic metadata as Kafka's metadata image versions it: bumped on every change; new_topics_version
    # is the version that last brought new topics (onNewMetadataImage's lastMetadataImageWithNewTopics)
    metadata_version: int = 0
    new_topics_version: int = 0
    migration: Migration | None = None  # set by the coordinator; None: no conversion (consumer-only tests)

    topics_scanned: int = -1  # how many topics the cluster had when `topic_name` last described them all

    def __post_init__(self) -> None:
        if not self.assignors:
            self.assignors = {name: server_assignor(name) for name in self.config.consumer_assignors}
        self.names.resolve = self.topic_name

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the cluster's topic with this id, None if none has it. Topics are never deleted, so the
        topics are described again only when there are more of them."""
        names = tuple(self.topic_names())
        if len(names) != self.topics_scanned:
            self.topics_scanned = len(names)
            for name in names:
                self.describe(name)
        return self.names.known(topic_id)

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def describe(self, name: str) -> TopicMetadata | None:
        metadata = self.topics(name)
        if metadata is not None:
            self.names.learn(metadata.topic_id, metadata.name)
        return metadata
