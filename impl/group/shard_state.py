"""One `__consumer_offsets` partition's group-coordinator state, and how it is read back from the log.

Owns: `GroupShardState`, the runtime's `ShardSpec` for `__consumer_offsets`: the side data of classic and KIP-848
groups (`kcoord.impl.group.state`), the offsets (`OffsetStore`), the load path (`replay`, `replay_control`,
`on_loaded`: every record type 0-8, 16 (a regular expression's resolution) and the transaction markers, §2.10 — a
GroupMetadata value loads as Stable with members, else Empty) and `check_record`, which cross-checks each record
written on the live path against the decision it describes (when the shard's `check_records` is on: every in-process
use; `kcoord serve` with `--check-records`).
Spec instances are installed on load with `Shard.install`, which installs a snapshot: a log read back may jump between
states that are no edge of the table (Empty straight to Stable).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._generated.classic_group import State as ClassicGroupState
from .._generated.consumer_group import State as ConsumerGroupState
from .._generated.consumer_group_member import State as MemberState
from .._generated.partition_producer import State as PartitionProducerState
from ..assignors.server import TopicMetadata
from ..errors import IllegalStateError
from ..runtime.completion import Completion
from ..runtime.shard import Change, RecordBytes, Shard
from ..statemachine import Instance, MachineTable
from ..storage import group_log_schema as schema
from ..storage.batch import ControlType, RecordBatch, decode_end_txn_marker
from .classic.protocol import subscribed_topics
from .context import Context
from .offsets.store import OffsetEntry, OffsetStore
from .records import MEMBER_STATE_BYTES, from_topic_partitions
from .state import Assignment, ClassicGroupData, ClassicMember, ConsumerGroupData, ConsumerMember, ResolvedRegex

MEMBER_STATES = {v: k for k, v in MEMBER_STATE_BYTES.items()}
STATIC_LEAVE_EPOCH = -2


@dataclass(slots=True)
class LoadedMember:
    metadata: ConsumerMember | None = None
    current: schema.ConsumerGroupCurrentMemberAssignmentValue | None = None


@dataclass(slots=True)
class LoadedConsumerGroup:
    """A KIP-848 group as its records so far say (the load's working form; `consumer_group_instances` turns it into
    the spec's instances)."""

    epoch: int = 0
    assignment_epoch: int = 0
    metadata: tuple[schema.TopicMetadata, ...] = ()
    members: dict[str, LoadedMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    resolved: dict[str, ResolvedRegex] = field(default_factory=dict)


class GroupShardState:
    def __init__(self, ctx: Context, partition: int,
                 on_loaded: Callable[[Shard, GroupShardState], None] | None = None) -> None:
        self.ctx = ctx
        self.partition = partition
        self.topic_partition = f"{ctx.offsets_topic}-{partition}"
        self.tables: Mapping[str, MachineTable] = ctx.tables.by_name()
        self.classic: dict[str, ClassicGroupData] = {}
        self.consumer: dict[str, ConsumerGroupData] = {}
        self.offsets = OffsetStore()
        self.materializing: dict[int, Completion[str]] = {}  # producer id -> done when its offsets are settled
        self.regex_refreshing: set[str] = set()  # consumer groups whose regular expressions are being resolved
        self._on_loaded = on_loaded
        self._classic_loaded: dict[str, Instance] = {}
        self._consumer_loaded: dict[str, LoadedConsumerGroup] = {}
        self._producers_loaded: dict[int, Instance] = {}

    # ------------------------------------------------------------ load: records

    def replay(self, shard: Shard, batch: RecordBatch, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key is None:
            raise IllegalStateError(f"{self.topic_partition}@{offset}: a record without a key")
        rtype = schema.record_type(key)
        if rtype <= 1:
            self._replay_offset(batch, key, value, offset)
        elif rtype == 2:
            self._replay_group_metadata(key, value)
        elif rtype <= 8 or rtype == 16:
            self._replay_consumer_group(rtype, key, value)
        # share/streams group records (9-15, 17+) are not ours: skipped, as a coordinator without them would

    def _replay_offset(self, batch: RecordBatch, key: bytes, value: bytes | None, offset: int) -> None:
        decoded = fast_offset_commit(key, value, offset)
        if decoded is None:  # a version the fast path does not read: the schema's decoder
            k = schema.decode_key(key)
            assert isinstance(k, schema.OffsetCommitKey)
            v = schema.decode_value(0, value)
            entry = OffsetEntry.of(v, offset) if isinstance(v, schema.OffsetCommitValue) else None
            group, topic, partition = k.group, k.topic, k.partition
        else:
            group, topic, partition, entry = decoded
        if entry is None:
            self.offsets.remove(group, topic, partition)
            return
        if not batch.is_transactional:
            self.offsets.put(group, topic, partition, entry)
            return
        self.offsets.put_pending(batch.producer_id, group, topic, partition, entry)
        producer = self._producer(batch.producer_id)
        if producer["state"] != PartitionProducerState.Ongoing:
            producer["current_txn_first_offset"] = batch.base_offset
        producer.update(state=PartitionProducerState.Ongoing, producer_epoch=batch.producer_epoch, last_sequence=-1,
                        last_timestamp_ms=batch.max_timestamp_ms)

    def replay_control(self, shard: Shard, batch: RecordBatch) -> None:
        """A COMMIT/ABORT marker of a producer: its pending offsets here are settled (replayEndTransactionMarker)."""
        for rec in batch.records:
            marker = decode_end_txn_marker(rec)
            self.offsets.complete(batch.producer_id, marker.control_type == ControlType.COMMIT,
                                  before_offset=rec.offset)
            producer = self._producer(batch.producer_id)
            same_epoch = producer["producer_epoch"] == batch.producer_epoch
            producer.update(state=PartitionProducerState.Known, producer_epoch=batch.producer_epoch,
                            txn_coordinator_epoch=marker.coordinator_epoch, current_txn_first_offset=-1,
                            last_sequence=producer["last_sequence"] if same_epoch else -1,
                            last_timestamp_ms=batch.max_timestamp_ms)

    def _producer(self, producer_id: int) -> Instance:
        found = self._producers_loaded.get(producer_id)
        if found is None:
            table = self.tables["PartitionProducer"]
            found = self._producers_loaded[producer_id] = table.fresh(
                {"partition": self.topic_partition, "producer_id": producer_id})
        return found

    def _replay_group_metadata(self, key: bytes, value: bytes | None) -> None:
        k = schema.decode_key(key)
        assert isinstance(k, schema.GroupMetadataKey)
        v = schema.decode_value(2, value)
        if v is None:
            self._classic_loaded.pop(k.group, None)
            self.classic.pop(k.group, None)
            return
        assert isinstance(v, schema.GroupMetadataValue)
        self._consumer_loaded.pop(k.group, None)  # an empty consumer group replaced by a classic one
        instance, data = classic_from_record(self.tables["ClassicGroup"], k.group, v)
        self._classic_loaded[k.group] = instance
        self.classic[k.group] = data

    def _replay_consumer_group(self, rtype: int, key: bytes, value: bytes | None) -> None:
        k, v = schema.decode_record(key, value)
        group_id = replay_consumer_group_record(self._consumer_loaded, rtype, k, v)
        if group_id in self._consumer_loaded:  # a simple/empty classic group is replaced
            self._classic_loaded.pop(group_id, None)
            self.classic.pop(group_id, None)

    # ------------------------------------------------------------ load: end

    def on_loaded(self, shard: Shard) -> None:
        for group_id, instance in self._classic_loaded.items():
            shard.install(self.tables["ClassicGroup"], (group_id,), instance)
        for group_id in self.offsets.groups():
            if group_id not in self.classic and group_id not in self._consumer_loaded:
                self._install_simple_group(shard, group_id)
        for group_id, loaded in self._consumer_loaded.items():
            self._install_consumer_group(shard, group_id, loaded)
        producer_table = self.tables["PartitionProducer"]
        for producer_id, instance in self._producers_loaded.items():
            shard.install(producer_table, (self.topic_partition, producer_id), instance)
        self._classic_loaded, self._consumer_loaded, self._producers_loaded = {}, {}, {}
        if self._on_loaded is not None:
            self._on_loaded(shard, self)

    def _install_simple_group(self, shard: Shard, group_id: str) -> None:
        """Offsets without a group record: Kafka's simple classic group (Empty, no protocol type)."""
        table = self.tables["ClassicGroup"]
        shard.install(table, (group_id,), {**table.fresh({"group_id": group_id}), "exists": True})
        self.classic[group_id] = ClassicGroupData()

    def _install_consumer_group(self, shard: Shard, group_id: str, loaded: LoadedConsumerGroup) -> None:
        group, members, data = consumer_group_instances(self.tables, self.ctx.names, group_id, loaded)
        for member_id, instance in members.items():
            shard.install(self.tables["ConsumerGroupMember"], (group_id, member_id), instance)
        shard.install(self.tables["ConsumerGroup"], (group_id,), group)
        self.consumer[group_id] = data

    # ------------------------------------------------------------ live path: records describe decisions

    def check_record(self, change: Change, record: RecordBytes) -> None:
        post = change.decision.post
        assert post is not None
        raw_key, raw_value = record
        assert raw_key is not None, "every __consumer_offsets record has a key"
        key, value = schema.decode_record(raw_key, raw_value)
        name = change.table.name
        if name in ("ClassicGroup", "ConsumerGroup") and isinstance(key, schema.OffsetCommitKey):
            _check_offset_tombstone(change, key, value)
        elif name == "ClassicGroup":
            _check_classic(post, key, value)
        elif name == "ConsumerGroup":
            _check_consumer_group(post, key, value)
        elif name == "ConsumerGroupMember":
            _check_member(self.ctx, post, key, value)
        elif name == "PartitionProducer" and not isinstance(key, schema.OffsetCommitKey):
            raise IllegalStateError(f"a PartitionProducer change described by {key!r}")


# ---------------------------------------------------------------------------------------------- KIP-848 loads


def replay_consumer_group_record(loaded_groups: dict[str, LoadedConsumerGroup], rtype: int, k: Any, v: Any) -> str:
    """One ConsumerGroup* record (types 3-8 and 16) into the groups loaded so far (GroupMetadataManager.replay); returns
    the group id."""
    group_id: str = k.group_id
    loaded = loaded_groups.get(group_id)
    if loaded is None:
        if v is None:
            return group_id  # a tombstone for a group that is gone
        loaded = loaded_groups[group_id] = LoadedConsumerGroup()
    member_id = getattr(k, "member_id", None)
    if rtype == 3:
        if v is None:
            del loaded_groups[group_id]
        else:
            loaded.epoch = v.epoch
    elif rtype == 4:
        loaded.metadata = v.topics if v is not None else ()
    elif rtype == 6:
        loaded.assignment_epoch = v.assignment_epoch if v is not None else -1
    elif rtype == 16:
        assert isinstance(k, schema.ConsumerGroupRegularExpressionKey)
        if v is None:
            loaded.resolved.pop(k.regular_expression, None)
        else:
            assert isinstance(v, schema.ConsumerGroupRegularExpressionValue)
            loaded.resolved[k.regular_expression] = ResolvedRegex(frozenset(v.topics), v.version, v.timestamp)
    elif rtype == 7:
        if v is None:
            loaded.target.pop(str(member_id), None)
        else:
            loaded.target[str(member_id)] = from_topic_partitions(v.topic_partitions)
    else:
        _replay_consumer_member(loaded, rtype, str(member_id), v)
    return group_id


def _replay_consumer_member(loaded: LoadedConsumerGroup, rtype: int, member_id: str, v: Any) -> None:
    member = loaded.members.setdefault(member_id, LoadedMember())
    if rtype == 5:
        if v is None:
            loaded.members.pop(member_id, None)
            return
        classic = v.classic_member_metadata
        member.metadata = ConsumerMember(
            member_id=member_id, instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
            client_host=v.client_host, subscribed_topic_names=tuple(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex, server_assignor=v.server_assignor,
            rebalance_timeout_ms=v.rebalance_timeout_ms,
            classic_session_timeout_ms=None if classic is None else classic.session_timeout_ms,
            classic_protocols=None if classic is None else tuple(
                (p.name, p.metadata) for p in classic.supported_protocols))
    else:
        member.current = v


def consumer_group_instances(tables: Mapping[str, MachineTable], names: Any, group_id: str,
                             loaded: LoadedConsumerGroup) -> tuple[Instance, dict[str, Instance], ConsumerGroupData]:
    """The ConsumerGroup instance and its ConsumerGroupMember instances a load of `loaded` installs (and the group's
    side data): what a load up to this point of the log builds."""
    data = ConsumerGroupData()
    for topic in loaded.metadata:
        names.learn(topic.topic_id, topic.topic_name)
        data.subscription_metadata[topic.topic_name] = _server_topic(topic)
    member_table, group_table = tables["ConsumerGroupMember"], tables["ConsumerGroup"]
    unreconciled, static_instances, static_left = set(), set(), set()
    members: dict[str, Instance] = {}
    for member_id, member in loaded.members.items():
        metadata = member.metadata or ConsumerMember(member_id)
        data.members[member_id] = metadata
        instance = members[member_id] = consumer_member_from_record(member_table, group_id, member_id, metadata,
                                                                    member.current, names)
        for p in instance["held"]:
            data.owners[p] = member_id
        if metadata.instance_id:
            static_instances.add(metadata.instance_id)
            if instance["state"] == MemberState.StaticLeft:
                static_left.add(metadata.instance_id)
        if instance["state"] == MemberState.StaticLeft and member.current is not None:
            data.left_states[member_id] = member.current.state
        if not (instance["state"] == MemberState.Stable and instance["member_epoch"] == loaded.assignment_epoch):
            unreconciled.add(member_id)
    data.target = {m: t for m, t in loaded.target.items() if t}
    regexes = frozenset(data.regex_counts())
    data.resolved = {r: v for r, v in loaded.resolved.items() if r in regexes}
    classic_members = frozenset(m for m, meta in data.members.items() if meta.classic)
    group = {**group_table.fresh({"group_id": group_id}), "group_epoch": loaded.epoch,
             "assignment_epoch": max(loaded.assignment_epoch, 0), "members": frozenset(data.members),
             "unreconciled": frozenset(unreconciled), "static_instances": frozenset(static_instances),
             "static_left": frozenset(static_left), "regexes": regexes,
             "resolved": frozenset(data.resolved), "classic_members": classic_members}
    group["state"] = derived_consumer_state(group)
    return group, members, data


# ---------------------------------------------------------------------------------------------- helpers

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_V3 = struct.Struct(">hqi")  # version, offset, leader epoch


def fast_offset_commit(key: bytes, value: bytes | None, offset: int
                       ) -> tuple[str, str, int, OffsetEntry | None] | None:
    """The OffsetCommit key (type 0/1) and value (v1, v3: what Kafka writes) read with struct alone, the load's hot
    path; None for anything else (the caller falls back to the schema's decoder, which also validates)."""
    try:
        glen = _H.unpack_from(key, 2)[0]
        group = key[4:4 + glen].decode()
        pos = 4 + glen
        tlen = _H.unpack_from(key, pos)[0]
        topic = key[pos + 2:pos + 2 + tlen].decode()
        pos += 2 + tlen
        partition = _I.unpack_from(key, pos)[0]
        if pos + 4 != len(key) or glen < 0 or tlen < 0:
            return None
        if value is None:
            return group, topic, partition, None
        version = _H.unpack_from(value)[0]
        if version == 3:
            _, committed, leader_epoch = _V3.unpack_from(value)
            pos = 14
        elif version == 1:
            committed, leader_epoch, pos = _Q.unpack_from(value, 2)[0], -1, 10
        else:
            return None
        mlen = _H.unpack_from(value, pos)[0]
        if mlen < 0:
            return None
        metadata = value[pos + 2:pos + 2 + mlen].decode()
        pos += 2 + mlen
        commit_ts = _Q.unpack_from(value, pos)[0]
        pos += 8
        expire_ts = -1
        if version == 1:
            expire_ts = _Q.unpack_from(value, pos)[0]
            pos += 8
        if pos != len(value):
            return None
    except (struct.error, UnicodeDecodeError):
        return None
    return group, topic, partition, OffsetEntry(committed, leader_epoch, metadata, commit_ts, expire_ts, offset)



def classic_from_record(table: MachineTable, group_id: str,
                        value: schema.GroupMetadataValue) -> tuple[Instance, ClassicGroupData]:
    """ClassicGroup as GroupMetadataManager.replay rebuilds it: Stable with members, else Empty."""
    protocol = value.protocol or ""
    data = ClassicGroupData(state_timestamp_ms=value.current_state_timestamp
                            if value.current_state_timestamp != -1 else None)
    for m in value.members:
        rebalance_timeout = m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
        data.members[m.member_id] = ClassicMember(
            member_id=m.member_id, instance_id=m.group_instance_id, client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout_ms=rebalance_timeout, session_timeout_ms=m.session_timeout,
            protocol_type=value.protocol_type, protocols=((protocol, m.subscription),), assignment=m.assignment)
    data.subscribed_topics = subscribed_topics(value.protocol_type, protocol, data)
    members = frozenset(data.members)
    instance = {**table.fresh({"group_id": group_id}), "exists": True, "generation": value.generation,
                "protocol_type": value.protocol_type, "protocol": protocol, "leader": value.leader or "",
                "members": members,
                "static_members": frozenset(m for m, d in data.members.items() if d.instance_id),
                "rebalance_timeout_ms": data.rebalance_timeout_ms(),
                "state": ClassicGroupState.Stable if members else ClassicGroupState.Empty}
    return instance, data


def consumer_member_from_record(table: MachineTable, group_id: str, member_id: str, metadata: ConsumerMember,
                                current: schema.ConsumerGroupCurrentMemberAssignmentValue | None,
                                names: Any) -> Instance:
    instance = table.fresh({"group_id": group_id, "member_id": member_id})
    instance.update(instance_id=metadata.instance_id or "", rebalance_timeout_ms=metadata.rebalance_timeout_ms,
                    classic=metadata.classic)
    if current is None:
        return instance
    assigned = names.to_set(from_topic_partitions(current.assigned_partitions))
    pending = names.to_set(from_topic_partitions(current.partitions_pending_revocation))
    state = MEMBER_STATES.get(current.state, MemberState.Unknown)
    if current.member_epoch == STATIC_LEAVE_EPOCH:
        state = MemberState.StaticLeft
    instance.update(state=state, member_epoch=current.member_epoch,
                    previous_member_epoch=current.previous_member_epoch, assigned=assigned,
                    pending_revocation=pending, held=assigned | pending)
    return instance


def derived_consumer_state(group: Instance) -> str:
    """ConsumerGroup.maybeUpdateGroupState (the spec's invariant `derived_state`)."""
    if not group["members"]:
        return ConsumerGroupState.Empty
    if group["group_epoch"] > group["assignment_epoch"]:
        return ConsumerGroupState.Assigning
    return ConsumerGroupState.Reconciling if group["unreconciled"] else ConsumerGroupState.Stable


def _server_topic(topic: schema.TopicMetadata) -> TopicMetadata:
    return TopicMetadata(topic.topic_id, topic.topic_name, topic.num_partitions)


def _check_classic(post: Instance, key: schema.GroupKey, value: schema.GroupValue | None) -> None:
    if not isinstance(key, schema.GroupMetadataKey) or key.group != post["group_id"]:
        raise IllegalStateError(f"ClassicGroup {post['group_id']} described by {key!r}")
    if post["state"] == ClassicGroupState.Dead:
        if value is not None:
            raise IllegalStateError(f"ClassicGroup {key.group} is Dead but its record is no tombstone")
        return
    if not isinstance(value, schema.GroupMetadataValue):
        raise IllegalStateError(f"ClassicGroup {key.group} is {post['state']} but its record is a tombstone")
    seen = (value.generation, value.protocol or "", value.leader or "", frozenset(m.member_id for m in value.members))
    expected = (post["generation"], post["protocol"], post["leader"], post["members"])
    if seen != expected:
        raise IllegalStateError(f"ClassicGroup {key.group}: record says {seen}, the decision {expected}")


def _check_offset_tombstone(change: Change, key: schema.OffsetCommitKey, value: schema.GroupValue | None) -> None:
    """A group decision described by an offset record (OffsetDeletePartition, ExpireOffset): the tombstone of the
    partition the decision was about, and the group itself unchanged."""
    d = change.decision
    args = change.args
    seen = (key.group, key.topic, key.partition, value)
    expected = (d.pre["group_id"], args.get("topic"), args.get("partition"), None)
    if seen != expected or d.post != d.pre:
        raise IllegalStateError(f"{d.machine}.{d.event} {dict(args)} described by {key!r} = {value!r}")


def _check_consumer_group(post: Instance, key: schema.GroupKey, value: schema.GroupValue | None) -> None:
    if isinstance(key, schema.ConsumerGroupMetadataKey) and isinstance(value, schema.ConsumerGroupMetadataValue):
        ok = value.epoch == post["group_epoch"]
    elif isinstance(key, schema.ConsumerGroupTargetAssignmentMetadataKey) and value is not None:
        ok = value.assignment_epoch == post["assignment_epoch"]  # type: ignore[union-attr]
    elif isinstance(key, schema.ConsumerGroupRegularExpressionKey):
        ok = (key.regular_expression in post["resolved"]) == (value is not None)
    else:
        ok = value is None and post["state"] == ConsumerGroupState.Dead
    if not ok or getattr(key, "group_id", None) != post["group_id"]:
        raise IllegalStateError(f"ConsumerGroup {post['group_id']} ({post['state']}, epoch {post['group_epoch']}, "
                                f"assignment epoch {post['assignment_epoch']}) described by {key!r} = {value!r}")


def _check_member(ctx: Context, post: Instance, key: schema.GroupKey, value: schema.GroupValue | None) -> None:
    if not isinstance(key, schema.ConsumerGroupCurrentMemberAssignmentKey) or key.member_id != post["member_id"]:
        raise IllegalStateError(f"member {post['member_id']} described by {key!r}")
    if post["state"] == MemberState.Removed:
        ok = value is None
    elif not isinstance(value, schema.ConsumerGroupCurrentMemberAssignmentValue):
        ok = False
    else:
        assigned = ctx.names.to_set(from_topic_partitions(value.assigned_partitions))
        pending = ctx.names.to_set(from_topic_partitions(value.partitions_pending_revocation))
        ok = (value.member_epoch, value.previous_member_epoch, assigned, pending) == \
            (post["member_epoch"], post["previous_member_epoch"], post["assigned"], post["pending_revocation"])
    if not ok:
        raise IllegalStateError(f"member {post['member_id']} ({post['state']}) described by {value!r}")
