"""Per-group data the specs cannot hold (there are no maps in the spec language): members' protocols, metadata
bytes, timeouts, instance ids, assignments and parked requests of classic groups; member metadata, target
assignments, subscription metadata and partition owners of KIP-848 groups.

Owns: the data classes and their copy-on-write staging. A handler never changes what a shard holds: it `stage`s a
copy, changes the copy, and the plan's `after_apply` installs it once the records are durable (the same discipline
as the spec instances). Must not import: `kcoord.model`.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..assignors.server import TopicMetadata
from ..runtime.completion import Completion
from .messages import JoinGroupResponse, Protocols, SyncGroupResponse

Assignment = dict[uuid.UUID, frozenset[int]]


def _static_member_id(members: Iterable[ClassicMember | ConsumerMember], instance_id: str | None) -> str:
    """The id of the member holding group instance id `instance_id`, "" if none (or no instance id)."""
    if not instance_id:
        return ""
    return next((m.member_id for m in members if m.instance_id == instance_id), "")


# ---------------------------------------------------------------------------------------------- classic groups


@dataclass(slots=True)
class ClassicMember:
    """Kafka's ClassicGroupMember, minus what the spec instance holds (awaiting join/sync, new, pending sync)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_waiter: Completion[JoinGroupResponse] | None = None
    sync_waiter: Completion[SyncGroupResponse] | None = None

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def vote(self, candidates: frozenset[str]) -> str:
        """The first of the member's protocols that every member supports (ClassicGroupMember.vote)."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise AssertionError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(slots=True)
class ClassicGroupData:
    """Members in insertion order (the first is the first joiner: Kafka's leader choice), and the group's clocks."""

    members: dict[str, ClassicMember] = field(default_factory=dict)
    state_timestamp_ms: int | None = None  # currentStateTimestamp: when the group last changed state
    subscribed_topics: frozenset[str] | None = None  # computeSubscribedTopics at the last join completion

    def stage(self) -> ClassicGroupData:
        return ClassicGroupData(dict(self.members), self.state_timestamp_ms, self.subscribed_topics)

    def member(self, member_id: str) -> ClassicMember:
        """The member, copied for changing (copy on write: the shard's version stays as it is until applied)."""
        copied = copy.copy(self.members[member_id])
        self.members[member_id] = copied
        return copied

    def static_member_id(self, instance_id: str | None) -> str:
        """The member id a group instance id maps to, "" if none (the spec's `mapped_member`)."""
        return _static_member_id(self.members.values(), instance_id)

    def candidate_protocols(self, members: Iterable[str] | None = None) -> frozenset[str]:
        """Protocols every given member (default: all) supports."""
        chosen = [self.members[m] for m in members] if members is not None else list(self.members.values())
        if not chosen:
            return frozenset()
        common = {name for name, _ in chosen[0].protocols}
        for member in chosen[1:]:
            common &= {name for name, _ in member.protocols}
        return frozenset(common)

    def rebalance_timeout_ms(self, members: Iterable[str] | None = None) -> int:
        """The group's rebalance timeout: the largest of its members' (0 without members)."""
        chosen = self.members if members is None else {m: self.members[m] for m in members}
        return max((m.rebalance_timeout_ms for m in chosen.values()), default=0)


# ---------------------------------------------------------------------------------------------- KIP-848 groups


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """ConsumerGroupMemberMetadataValue: what a member subscribes with (its epochs and partitions are the spec's).

    As Kafka's ConsumerGroupMember.Builder: the topic names are a set (written sorted), and a member without a
    regular expression has "" (a record read back may have None: both mean none)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = ""
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    # ClassicMemberMetadata of a member that uses the classic protocol: its session timeout and its JoinGroup's
    # protocols (name, metadata) in the request's order; None for a consumer-protocol member
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] | None = None

    @property
    def classic(self) -> bool:
        return self.classic_protocols is not None

    @property
    def regex(self) -> str:
        """The regular expression the member subscribes to, "" for none."""
        return self.subscribed_topic_regex or ""


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """ResolvedRegularExpression: the topics a regular expression matched, the metadata version it was resolved
    against and when (ConsumerGroupRegularExpressionValue)."""

    topics: frozenset[str]
    version: int
    timestamp_ms: int


@dataclass(slots=True)
class ConsumerGroupData:
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # ConsumerGroupTargetAssignmentMember
    subscription_metadata: dict[str, TopicMetadata] = field(default_factory=dict)  # topic name -> metadata
    owners: dict[str, str] = field(default_factory=dict)  # partition -> member id (partition epoch != -1)
    metadata_refresh_deadline_ms: int = 0
    resolved: dict[str, ResolvedRegex] = field(default_factory=dict)  # ConsumerGroupRegularExpression records
    #: member id -> the MemberState byte a member at -2 had when it left (Kafka keeps it in its record; a classic
    #: take-over copies it)
    left_states: dict[str, int] = field(default_factory=dict)

    def stage(self) -> ConsumerGroupData:
        return ConsumerGroupData(dict(self.members), dict(self.target), dict(self.subscription_metadata),
                                 dict(self.owners), self.metadata_refresh_deadline_ms, dict(self.resolved),
                                 dict(self.left_states))

    def static_member_id(self, instance_id: str | None) -> str:
        """The member id a group instance id maps to, "" if none (the spec's `mapped_member`)."""
        return _static_member_id(self.members.values(), instance_id)

    def member_topics(self, member: ConsumerMember) -> frozenset[str]:
        """The member's subscription: its topic names and the topics its regular expression resolved to
        (ConsumerTargetAssignmentBuilder.newMemberSubscriptionAndAssignment's union)."""
        names = frozenset(member.subscribed_topic_names)
        resolved = self.resolved.get(member.regex) if member.regex else None
        return names | resolved.topics if resolved is not None else names

    def subscribed_topic_names(self) -> set[str]:
        """ModernGroup.subscribedTopicNames: every topic a member subscribes to by name, and every topic of a
        resolved regular expression some member subscribes to."""
        names: set[str] = set()
        for member in self.members.values():
            names.update(member.subscribed_topic_names)
        for regex in self.regex_counts():
            resolved = self.resolved.get(regex)
            if resolved is not None:
                names.update(resolved.topics)
        return names

    def regex_counts(self) -> dict[str, int]:
        """ConsumerGroup.subscribedRegularExpressions: regular expression -> how many members subscribe to it."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.regex:
                counts[member.regex] = counts.get(member.regex, 0) + 1
        return counts

    def preferred_assignor(self, default: str) -> str:
        """The server assignor named by most members (ties: Java HashMap order is not modelled; the first seen
        wins), else the default (ConsumerGroup.computePreferredServerAssignor)."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            if member.server_assignor:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        if not counts:
            return default
        return max(counts.items(), key=lambda kv: kv[1])[0]


# ---------------------------------------------------------------------------------------------- partition names


_SETS_KEPT = 65_536  # targets whose partition sets `PartitionNames.target_set` remembers (then it starts again)


class PartitionNames:
    """How KIP-848 partitions appear in the spec's `set[partition]` variables: `<topic name>-<partition>`.

    Kafka keys assignments by topic id; names are what a reader of a trace wants. A partition's string must depend on
    its topic id alone, never on what the node happened to learn first: a live node and one that loaded its log hold
    the same partitions under the same strings. So an id met before its name (a heartbeat's owned partitions name
    topics by id) is looked up in the cluster (`resolve`: kcoord deletes no topic and an id names one topic for
    ever); only an id no topic has is written as the id itself (no topic can take it later).
    """

    def __init__(self, resolve: Callable[[uuid.UUID], str | None] | None = None) -> None:
        self.resolve = resolve
        self._names: dict[uuid.UUID, str] = {}
        self._parsed: dict[str, tuple[uuid.UUID, int]] = {}
        self._strings: dict[uuid.UUID, dict[int, str]] = {}  # topic id -> partition -> its string (hot path)
        # id(assignment) -> (that assignment, its set): `target_set`'s memory (an assignment is never changed in
        # place, and the entry holds it, so its id is not reused while the entry lives)
        self._sets: dict[int, tuple[Mapping[uuid.UUID, Iterable[int]], frozenset[str]]] = {}

    def learn(self, topic_id: uuid.UUID, name: str) -> None:
        """Name a topic id (the cluster's name of it: the same whoever tells it)."""
        self._names.setdefault(topic_id, name)

    def known(self, topic_id: uuid.UUID) -> str | None:
        return self._names.get(topic_id)

    def name(self, topic_id: uuid.UUID) -> str:
        name = self._names.get(topic_id)
        if name is None:
            name = self.resolve(topic_id) if self.resolve is not None else None
            name = self._names[topic_id] = name if name is not None else str(topic_id)
        return name

    def partition(self, topic_id: uuid.UUID, partition: int) -> str:
        by_partition = self._strings.get(topic_id)
        if by_partition is None:
            by_partition = self._strings[topic_id] = {}
        text = by_partition.get(partition)
        if text is None:
            text = by_partition[partition] = f"{self.name(topic_id)}-{partition}"
            self._parsed[text] = (topic_id, partition)
        return text

    def to_set(self, assignment: Mapping[uuid.UUID, Iterable[int]]) -> frozenset[str]:
        out: list[str] = []
        for topic_id, partitions in assignment.items():
            by_partition = self._strings.get(topic_id)
            for p in partitions:
                text = by_partition.get(p) if by_partition is not None else None
                out.append(text if text is not None else self.partition(topic_id, p))
                by_partition = self._strings.get(topic_id)
        return frozenset(out)

    def target_set(self, assignment: Mapping[uuid.UUID, Iterable[int]]) -> frozenset[str]:
        """`to_set` of an assignment held in a group (a target: never changed in place, replaced when it changes),
        remembered by identity: a steady member's every heartbeat reads the same target."""
        entry = self._sets.get(id(assignment))
        if entry is not None and entry[0] is assignment:
            return entry[1]
        if len(self._sets) >= _SETS_KEPT:
            self._sets.clear()
        partitions = self.to_set(assignment)
        self._sets[id(assignment)] = (assignment, partitions)
        return partitions

    def to_assignment(self, partitions: Iterable[str]) -> Assignment:
        out: dict[uuid.UUID, set[int]] = {}
        for text in partitions:
            topic_id, p = self._parsed[text]
            out.setdefault(topic_id, set()).add(p)
        return {t: frozenset(ps) for t, ps in out.items()}
