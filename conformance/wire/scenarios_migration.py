"""KIP-848 scenarios of Kafka 4.0 beyond topic-name subscriptions: regular-expression subscriptions resolved by the
broker, (`migration_*`) classic-protocol members and consumer-protocol members in one group, and a static member's
instance id changing hands.

Owns the scenario bodies and `TopicMember`, a confluent-kafka member that reports (topic, partition) ownership (a
regular expression spans several topics; `members.Member` tracks partitions of one topic). Must not import:
`kcoord.impl`.
"""

from __future__ import annotations

import contextlib
import struct
import threading
import time
from typing import Any

from .members import require, require_consumer_protocol
from .target import ScenarioFailed, Target, wait_until

TopicPartition = tuple[str, int]


class TopicMember:
    """A confluent-kafka consumer on its own thread, subscribed to `subscription` (topic names or "^regex"), with
    `group.protocol` consumer or classic; keeps what it owns and what it consumed, by topic and partition."""

    def __init__(self, target: Target, name: str, group: str, subscription: list[str], *,
                 protocol: str = "consumer") -> None:
        self.target, self.name, self.group = target, name, group
        self.subscription, self.protocol = subscription, protocol
        self.owned: set[TopicPartition] = set()
        self.values: dict[bytes, TopicPartition] = {}
        self.errors: list[str] = []
        self.double: list[TopicPartition] = []  # assigned while already owned: a client-side sign of trouble
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._thread, name=name, daemon=True)
        self.thread.start()

    def assignment(self) -> frozenset[TopicPartition]:
        with self._lock:
            return frozenset(self.owned)

    def consumed(self) -> dict[bytes, TopicPartition]:
        with self._lock:
            return dict(self.values)

    def _assigned(self, partitions: Any) -> None:
        with self._lock:
            for p in partitions:
                if (p.topic, p.partition) in self.owned:
                    self.double.append((p.topic, p.partition))
                self.owned.add((p.topic, p.partition))

    def _revoked(self, partitions: Any) -> None:
        with self._lock:
            self.owned -= {(p.topic, p.partition) for p in partitions}

    def _thread(self) -> None:
        import confluent_kafka as ck

        config: dict[str, Any] = {
            "bootstrap.servers": self.target.bootstrap, "client.id": self.name, "group.id": self.group,
            "group.protocol": self.protocol, "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "broker.address.family": "v4", "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500}
        if self.protocol == "classic":
            tuning = self.target.tuning
            config.update({"heartbeat.interval.ms": tuning.heartbeat_interval_ms,
                           "session.timeout.ms": tuning.session_timeout_ms,
                           "max.poll.interval.ms": tuning.max_poll_interval_ms})
        try:
            consumer = ck.Consumer(config)
            consumer.subscribe(self.subscription, on_assign=lambda c, ps: self._assigned(ps),
                               on_revoke=lambda c, ps: self._revoked(ps), on_lost=lambda c, ps: self._revoked(ps))
            try:
                while not self._stop.is_set():
                    for m in consumer.consume(num_messages=500, timeout=0.1):
                        error = m.error()
                        if error is not None:
                            if error.fatal():
                                raise ScenarioFailed(f"fatal consumer error: {error}")
                            continue
                        value, topic, partition = m.value(), m.topic(), m.partition()
                        if value is not None and topic is not None and partition is not None:
                            with self._lock:
                                self.values[value] = (topic, partition)
            finally:
                consumer.close()
        except Exception as e:
            self.errors.append(f"{type(e).__name__}: {e}")

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(self.target.timeout_s)
        if self.thread.is_alive():
            raise ScenarioFailed(f"member {self.name} did not stop")
        if self.errors:
            raise ScenarioFailed(f"member {self.name} failed: {self.errors[0]}")


def _require_kip_848(target: Target) -> None:
    require("confluent-kafka")
    require_consumer_protocol(target)


def _wait_split(members: list[TopicMember], partitions: set[TopicPartition], timeout_s: float) -> None:
    """Until the members own `partitions` between them, each partition once, and each member something."""
    def settled() -> bool:
        sets = [m.assignment() for m in members]
        union: set[TopicPartition] = set().union(*sets)
        return sum(map(len, sets)) == len(union) and union == partitions and all(sets)

    try:
        wait_until(settled, timeout_s, f"{[m.name for m in members]} split {sorted(partitions)}")
    except ScenarioFailed as e:
        raise ScenarioFailed(f"{e}; they own {[sorted(m.assignment()) for m in members]}, errors "
                             f"{[m.errors for m in members if m.errors]}") from None


def regex_subscription(target: Target) -> str:
    """confluent-kafka members with group.protocol=consumer subscribe to a regular expression ("^prefix.*"): the
    broker resolves it (KIP-848, Kafka 4.0), the members split the matching topics' partitions and never get a topic
    the expression does not match; a topic created later that matches is picked up within the broker's 10 s refresh
    interval.

    What Kafka 4.0.2 does (GroupMetadataManager): the expression is resolved asynchronously, after the heartbeat that
    brought it (that heartbeat gets no partitions of it); the resolution bumps the group epoch and the next heartbeat
    computes the assignment. New topics are matched only when a member heartbeats more than 10 s after the previous
    resolution."""
    _require_kip_848(target)
    prefix = target.name("rx")
    first, second, other, later = f"{prefix}-a", f"{prefix}-b", target.name("norx"), f"{prefix}-c"
    for topic, n in ((first, 3), (second, 2), (other, 2)):
        target.create_topic(topic, n)
    target.produce(first, [(i % 3, f"a{i}".encode()) for i in range(9)])
    target.produce(second, [(i % 2, f"b{i}".encode()) for i in range(4)])
    target.produce(other, [(i % 2, f"o{i}".encode()) for i in range(4)])
    group = target.name("rx-group")
    pattern = f"^{prefix}-.*"
    members: list[TopicMember] = []
    try:
        members.append(TopicMember(target, target.name("rx1"), group, [pattern]))
        expected = {(first, p) for p in range(3)} | {(second, p) for p in range(2)}
        _wait_split(members, expected, target.timeout_s)
        obs = target.observations
        obs.exact("one member: the expression's partitions", _suffixes(members[0].assignment(), prefix))
        members.append(TopicMember(target, target.name("rx2"), group, [pattern]))
        _wait_split(members, expected, target.timeout_s)
        obs.exact("two members split the expression's partitions", True)
        wanted = {f"a{i}".encode() for i in range(9)} | {f"b{i}".encode() for i in range(4)}
        wait_until(lambda: wanted <= _all_values(members), target.timeout_s, "the members consumed every record of "
                   "the matching topics")
        target.create_topic(later, 2)
        target.produce(later, [(i % 2, f"c{i}".encode()) for i in range(4)])
        _wait_split(members, expected | {(later, 0), (later, 1)}, target.timeout_s)
        obs.exact("a matching topic created later is assigned", True)
        wait_until(lambda: {f"c{i}".encode() for i in range(4)} <= _all_values(members), target.timeout_s,
                   "the members consumed the topic created later")
        foreign = {v: tp for m in members for v, tp in m.consumed().items() if not tp[0].startswith(prefix + "-")}
        obs.exact("records of a topic the expression does not match consumed", bool(foreign))
        if foreign:
            raise ScenarioFailed(f"records of topics the expression does not match were consumed: {foreign}")
        doubles = [(m.name, m.double) for m in members if m.double]
        if doubles:
            raise ScenarioFailed(f"a partition was assigned twice to one member: {doubles}")
    finally:
        for m in members:
            with contextlib.suppress(ScenarioFailed):
                m.stop()
    return f"{pattern} resolved to 2 topics, then 3 after a matching topic was created; {other} never consumed"


def _suffixes(owned: frozenset[TopicPartition], prefix: str) -> list[str]:
    """Owned partitions without the run's topic prefix (runs on two brokers have different prefixes)."""
    return sorted(f"{topic.removeprefix(prefix)}-{p}" for topic, p in owned)


def _all_values(members: list[TopicMember]) -> set[bytes]:
    return set().union(*(m.consumed().keys() for m in members))


def invalid_regex(target: Target) -> str:
    """A ConsumerGroupHeartbeat whose SubscribedTopicRegex is no RE2/J regular expression is refused with
    INVALID_REGULAR_EXPRESSION (Kafka 4.0's throwIfRegularExpressionIsInvalid), and an empty list of topic names is
    a valid join (a member subscribed to nothing)."""
    _require_kip_848(target)
    from .looks import coordinator
    from .raw import consumer_group_heartbeat

    group = target.name("rx-bad")
    address = target.addresses()[coordinator(target, group, 0)]
    bad = consumer_group_heartbeat(address, group, target.name("m1"), regex="(unclosed")
    if bad.error_code != 128:
        raise ScenarioFailed(f"regex '(unclosed': error {bad.error_code}, expected INVALID_REGULAR_EXPRESSION (128)")
    empty = consumer_group_heartbeat(address, group, target.name("m2"), names=())
    if empty.error_code != 0 or empty.member_epoch < 1:
        raise ScenarioFailed(f"a join with no topic names: error {empty.error_code}, epoch {empty.member_epoch}")
    obs = target.observations
    obs.exact("ConsumerGroupHeartbeat with regex '(unclosed': error", bad.error_code)
    obs.exact("a join with an empty list of topic names: error", empty.error_code)
    obs.progress("a join with an empty list of topic names: member epoch", "epoch", empty.member_epoch)
    left = consumer_group_heartbeat(address, group, target.name("m2"), epoch=-1)
    if left.error_code != 0:
        raise ScenarioFailed(f"leaving: error {left.error_code}")
    return "'(unclosed' refused INVALID_REGULAR_EXPRESSION; an empty subscription joined at epoch " \
           f"{empty.member_epoch}"


def _group_kind(target: Target, group: str) -> str:
    """'classic' when DescribeGroups (v5) describes a live classic group, else 'not classic' (Kafka describes only
    classic groups: a consumer group's id answers Dead, as an unknown one)."""
    from .looks import coordinator
    from .raw import describe_group

    code, _, state = describe_group(target.addresses()[coordinator(target, group, 0)], group, 5)
    return "classic" if code == 0 and state not in ("Dead", "Empty") else "not classic"


def migration(target: Target) -> str:
    """Online upgrade and downgrade (KIP-848 migration, group.consumer.migration.policy=bidirectional, Kafka 4.0's
    default): a kafka-python classic group is converted to a consumer group when a confluent-kafka member with
    group.protocol=consumer joins; the classic member stays, served through JoinGroup/SyncGroup/Heartbeat with its
    assignment from the consumer group's reconciliation (the two split the partitions, never owning one together);
    when the consumer-protocol member leaves, the group becomes a classic group again and the classic member gets
    every partition back.

    What Kafka 4.0.2 does: the converted group keeps the classic generation as its epoch; the classic member is told
    REBALANCE_IN_PROGRESS on its next heartbeat and rejoins; after the downgrade the classic group starts at the
    consumer group's epoch, rebalancing at once."""
    _require_kip_848(target)
    require("kafka-python")
    from .members import MemberFactory, wait_settled
    from .ownership import OwnershipLog

    topic, group = target.name("mig"), target.name("mig-group")
    partitions = set(range(4))
    target.create_topic(topic, len(partitions))
    target.produce(topic, [(i % 4, f"m{i}".encode()) for i in range(8)])
    log = OwnershipLog()
    with MemberFactory("kafka-python", target, log) as factory:
        k1 = factory.make("k1", group, topic)
        wait_settled([k1], partitions, target.timeout_s, log)
        obs = target.observations
        obs.exact("one kafka-python member: the group's type", _group_kind(target, group))
        if _group_kind(target, group) != "classic":
            raise ScenarioFailed("a group of one kafka-python member is not a live classic group")
        c1 = TopicMember(target, target.name("c1"), group, [topic])
        try:
            wait_until(lambda: bool(c1.assignment()) and bool(k1.assignment())
                       and not ({p for _, p in c1.assignment()} & k1.assignment())
                       and {p for _, p in c1.assignment()} | k1.assignment() == partitions,
                       target.timeout_s, "the classic and the consumer-protocol member split the partitions")
            kind = _group_kind(target, group)
            obs.exact("a consumer-protocol member joined: the group's type", kind)
            obs.exact("the two protocols' members split the partitions", True)
            if kind != "not classic":
                raise ScenarioFailed("the group is still a classic group after a consumer-protocol member joined")
            split = (sorted(k1.assignment()), sorted(p for _, p in c1.assignment()))
        finally:
            c1.stop()
        wait_settled([k1], partitions, target.timeout_s, log)
        wait_until(lambda: _group_kind(target, group) == "classic", target.timeout_s,
                   "the group became a classic group again")
        obs.exact("the consumer-protocol member left: the group's type", "classic")
        k1.stop()
    problems = log.violations()
    if problems:
        raise ScenarioFailed(f"a partition was owned by two members at once: {problems[:3]}")
    return (f"upgraded when the consumer-protocol member joined (classic {split[0]}, consumer {split[1]}), "
            "downgraded when it left")


def _subscription(topic: str) -> bytes:
    """A consumer-protocol Subscription v1 (ConsumerProtocolSubscription): one topic, no user data, nothing owned."""
    name = topic.encode()
    return b"".join((struct.pack(">hih", 1, 1, len(name)), name, struct.pack(">ii", -1, 0)))


def _assigned_count(assignment: bytes) -> int:
    """How many partitions a consumer-protocol Assignment (any version) lists."""
    pos, count = 2, 0
    (topics,) = struct.unpack_from(">i", assignment, pos)
    pos += 4
    for _ in range(max(topics, 0)):
        (length,) = struct.unpack_from(">h", assignment, pos)
        pos += 2 + length
        (partitions,) = struct.unpack_from(">i", assignment, pos)
        pos += 4 + 4 * max(partitions, 0)
        count += max(partitions, 0)
    return count


def _settled_epoch(address: tuple[str, int], group: str, member: str, epoch: int, instance: str | None = None) -> int:
    """The member's epoch once two heartbeats in a row keep it: Apache Kafka 4.0.2 may bump a just-joined group's
    epoch when its metadata image of the just-made topic changes (seen in a CI run: JoinGroup answered generation 2
    to a member that had joined at epoch 1); kcoord, with one metadata view, keeps it at once."""
    from .raw import consumer_group_heartbeat

    steady = 0
    for _ in range(20):
        time.sleep(0.2)
        beat = consumer_group_heartbeat(address, group, member, epoch=epoch, instance=instance)
        if beat.error_code != 0:
            raise ScenarioFailed(f"a heartbeat at epoch {epoch}: error {beat.error_code}")
        steady = steady + 1 if beat.member_epoch == epoch else 0
        epoch = beat.member_epoch
        if steady == 2:
            break
    return epoch


def _first_member(target: Target, group: str, member: str, topic: str,
                  instance: str | None = None) -> tuple[tuple[str, int], int]:
    """A consumer-protocol member's join (ConsumerGroupHeartbeat, epoch 0, subscribed to `topic`; static with
    `instance`) making the group: its coordinator's address and the member's settled epoch."""
    from .looks import coordinator
    from .raw import consumer_group_heartbeat

    deadline = time.monotonic() + target.timeout_s
    while True:  # a fresh __consumer_offsets partition may still be loading, or its leader moving
        address = target.addresses()[coordinator(target, group, 0)]
        joined = consumer_group_heartbeat(address, group, member, names=(topic,), instance=instance)
        if joined.error_code not in (14, 15, 16) or time.monotonic() > deadline:  # load, not available, moved
            break
        time.sleep(0.2)
    if joined.error_code != 0 or joined.member_epoch < 1:
        raise ScenarioFailed(f"the consumer-protocol join: error {joined.error_code}, epoch {joined.member_epoch}")
    target.observations.progress("the consumer-protocol member's epoch", "epoch", joined.member_epoch)
    return address, _settled_epoch(address, group, member, joined.member_epoch, instance)


def _join_group(group: str, topic: str, member: str, instance: str | None = None) -> Any:
    """A JoinGroup v6 of a consumer (protocol "range", subscribed to `topic`, owning nothing)."""
    import datetime

    from kio.schema.join_group.v6.request import JoinGroupRequest, JoinGroupRequestProtocol
    from kio.schema.types import GroupId
    from kio.static.primitive import i32Timedelta

    return JoinGroupRequest(
        group_id=GroupId(group), session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)), member_id=member,
        group_instance_id=instance, protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=_subscription(topic)),))


def converted_member(target: Target) -> str:
    """A consumer-protocol member whose member id joins with JoinGroup becomes a classic-protocol member of its
    consumer group (JoinGroup answers its epoch as generation; SyncGroup and Heartbeat accept it), and a
    ConsumerGroupHeartbeat makes it a consumer-protocol member again (Heartbeat no longer knows it).

    What Kafka 4.0.2 does: classicGroupJoinToConsumerGroup finds the member by id with no protocol or epoch check
    (getOrMaybeSubscribeDynamicConsumerGroupMember with useClassicProtocol) and rebuilds it with
    ClassicMemberMetadata; consumerGroupHeartbeat rebuilds it with none; SyncGroup and Heartbeat refuse a member
    without it (throwIfMemberDoesNotUseClassicProtocol: UNKNOWN_MEMBER_ID)."""
    _require_kip_848(target)
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from kio.schema.sync_group.v5.request import SyncGroupRequest
    from kio.schema.types import GroupId

    from .raw import consumer_group_heartbeat, request_once

    topic, group, member = target.name("conv"), target.name("conv-group"), target.name("conv-m1")
    target.create_topic(topic, 3)
    address, epoch = _first_member(target, group, member, topic)

    join = request_once(address, _join_group(group, topic, member))
    obs = target.observations
    obs.exact("JoinGroup with the consumer-protocol member's id: error", int(join.error_code.value))
    obs.exact("JoinGroup: the generation is the member epoch", int(join.generation_id) == epoch)
    obs.exact("JoinGroup: leader, protocol", (join.leader, join.protocol_name))
    if int(join.error_code.value) != 0:
        raise ScenarioFailed(f"JoinGroup with a consumer-protocol member's id: error {join.error_code}")
    sync = request_once(address, SyncGroupRequest(
        group_id=GroupId(group), generation_id=join.generation_id, member_id=member, group_instance_id=None,
        protocol_type="consumer", protocol_name="range", assignments=()))
    obs.exact("SyncGroup of the converted member: error", int(sync.error_code.value))
    obs.exact("SyncGroup: partitions assigned", _assigned_count(sync.assignment) if sync.assignment else -1)
    heartbeat = HeartbeatRequest(group_id=GroupId(group), generation_id=join.generation_id, member_id=member,
                                 group_instance_id=None)
    obs.exact("Heartbeat of the converted member: error", int(request_once(address, heartbeat).error_code.value))
    back = consumer_group_heartbeat(address, group, member, epoch=int(join.generation_id))
    obs.exact("a ConsumerGroupHeartbeat at its epoch: error", back.error_code)
    obs.exact("Heartbeat once it used the consumer protocol again: error",
              int(request_once(address, heartbeat).error_code.value))
    consumer_group_heartbeat(address, group, member, epoch=-1)
    return (f"JoinGroup {join.error_code.name} at generation {join.generation_id}, SyncGroup "
            f"{sync.error_code.name}, back to the consumer protocol: {back.error_code}")


def classic_holder_taken_over(target: Target) -> str:
    """An epoch-0 ConsumerGroupHeartbeat with the group.instance.id of a live classic-protocol static member of a
    consumer group (it joined with JoinGroup and that instance id) takes the instance over under its own member id:
    no error, and the classic member is fenced (its Heartbeat: FENCED_INSTANCE_ID).

    What Kafka 4.0.2 does: getOrMaybeSubscribeStaticConsumerGroupMember checks throwIfInstanceIdIsUnreleased
    (UNRELEASED_INSTANCE_ID) only when the holder uses the consumer protocol too; a classic-protocol holder is
    replaced (replaceMember: its records tombstoned, the new member written at epoch 0 with its assignment)."""
    _require_kip_848(target)
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from kio.schema.sync_group.v5.request import SyncGroupRequest
    from kio.schema.types import GroupId

    from .raw import consumer_group_heartbeat, request_once

    topic, group = target.name("cto"), target.name("cto-group")
    first, taker, instance = target.name("cto-m1"), target.name("cto-m2"), target.name("cto-i1")
    target.create_topic(topic, 3)
    address, _ = _first_member(target, group, first, topic)

    join = request_once(address, _join_group(group, topic, "", instance))
    obs = target.observations
    obs.exact("a static JoinGroup without a member id: error", int(join.error_code.value))
    if int(join.error_code.value) != 0:
        raise ScenarioFailed(f"the static JoinGroup: error {join.error_code}")
    sync = request_once(address, SyncGroupRequest(
        group_id=GroupId(group), generation_id=join.generation_id, member_id=join.member_id,
        group_instance_id=instance, protocol_type="consumer", protocol_name="range", assignments=()))
    obs.exact("SyncGroup of the classic static member: error", int(sync.error_code.value))
    took = consumer_group_heartbeat(address, group, taker, names=(topic,), instance=instance)
    obs.exact("ConsumerGroupHeartbeat (epoch 0) with the classic member's instance id: error", took.error_code)
    if took.error_code != 0:
        raise ScenarioFailed(f"the take-over of the classic member's instance: error {took.error_code}")
    obs.progress("the taker's epoch", "epoch", took.member_epoch)
    fenced = request_once(address, HeartbeatRequest(group_id=GroupId(group), generation_id=join.generation_id,
                                                    member_id=join.member_id, group_instance_id=instance))
    obs.exact("Heartbeat of the replaced classic member: error", int(fenced.error_code.value))
    for member in (taker, first):
        consumer_group_heartbeat(address, group, member, epoch=-1)
    return (f"taken over: error {took.error_code}, epoch {took.member_epoch}; the classic member's Heartbeat "
            f"{fenced.error_code.name}")


def static_rejoin_other_instance(target: Target) -> str:
    """A static consumer-protocol member that left with epoch -2 and sends epoch 0 again under its own member id with
    another group.instance.id is kept (no replacement): NONE at the group's epoch, with no partitions, and its target
    assignment keeps them while no new target is computed.

    What Kafka 4.0.2 does: getOrMaybeSubscribeStaticConsumerGroupMember finds no holder of the new instance, so
    getOrMaybeCreateMember returns the member at -2 itself (no replaceMember, no tombstones); the heartbeat writes its
    metadata with the new instance id and reconciles it towards group.targetAssignment(memberId, instanceId), looked
    up by the new instance id, which no member held yet: EMPTY. The member, at -2 with nothing owned, lands at the
    assignment epoch (previous epoch -2) with no partitions; a later heartbeat finds it reconciled."""
    _require_kip_848(target)
    from .looks import consumer_group
    from .raw import consumer_group_heartbeat, partition_count

    topic, group, member = target.name("sro"), target.name("sro-group"), target.name("sro-m1")
    first, other = target.name("sro-i1"), target.name("sro-i2")
    target.create_topic(topic, 3)
    address, epoch = _first_member(target, group, member, topic, first)
    obs = target.observations
    left = consumer_group_heartbeat(address, group, member, epoch=-2, instance=first)
    obs.exact("the static member leaves with -2: error, epoch", (left.error_code, left.member_epoch))
    back = consumer_group_heartbeat(address, group, member, names=(topic,), instance=other)
    obs.exact("epoch 0 under its member id with another instance id: error", back.error_code)
    if back.error_code != 0:
        raise ScenarioFailed(f"the rejoin with another instance id: error {back.error_code}")
    obs.exact("the rejoin keeps the member id", back.member_id == member)
    obs.exact("the rejoin is at the epoch it left at", back.member_epoch == epoch)
    obs.exact("the rejoin's assignment: partitions", back.assigned)
    again = consumer_group_heartbeat(address, group, member, epoch=back.member_epoch, instance=other)
    obs.exact("a heartbeat at that epoch: error, same epoch, assignment",
              (again.error_code, again.member_epoch == back.member_epoch, again.assigned))
    described = consumer_group(target, group)
    (seen,) = described.members
    obs.exact("ConsumerGroupDescribe: state, group epoch unchanged",
              (described.group_state, int(described.group_epoch) == epoch))
    obs.exact("ConsumerGroupDescribe: the member's instance id is the new one", seen.instance_id == other)
    obs.exact("ConsumerGroupDescribe: the member's partitions, its target's",
              (partition_count(seen.assignment.topic_partitions),
               partition_count(seen.target_assignment.topic_partitions)))
    consumer_group_heartbeat(address, group, member, epoch=-1, instance=other)
    return (f"kept at epoch {back.member_epoch} with {back.assigned} partitions; its target keeps "
            f"{partition_count(seen.target_assignment.topic_partitions)}")
