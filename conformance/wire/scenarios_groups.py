"""Consumer-group scenarios: classic groups of each client, static membership, KIP-848's consumer protocol.

Owns the scenario bodies; each takes a `Target`, raises `ScenarioFailed`/`ScenarioSkipped`, and returns one line of
detail for the table. Every scenario checks the client-side ownership log: no partition is ever assigned to a member
while another member still owns it.
Must not import: `kcoord.impl`.
"""

from __future__ import annotations

import time
from collections import defaultdict

from .looks import coordinator, look_classic_group, look_consumer_group
from .members import Member, MemberFactory, require_consumer_protocol, wait_settled
from .ownership import OwnershipLog
from .raw import api_versions, describe_group
from .target import Record, ScenarioFailed, ScenarioSkipped, Target, wait_until

DESCRIBE_GROUPS_KEY = 15
GROUP_ID_NOT_FOUND = 69


def _tag(client: str) -> str:
    return {"kafka-python": "kp", "aiokafka": "ak", "confluent-kafka": "ck"}[client]


def _values(records: list[Record]) -> set[bytes]:
    return {value for _, _, value in records}


def _consumed(members: list[Member]) -> set[bytes]:
    return set().union(*(_values(m.consumed()) for m in members))


def _check_log(log: OwnershipLog) -> None:
    problems = log.violations()
    if problems:
        raise ScenarioFailed(f"a partition was owned by two members at once: {problems[:3]}")


def classic_group(client: str, target: Target) -> str:
    """A group of 3 rebalances as members join and leave, commits, and a restarted member resumes from the
    committed offsets (after a broker restart too, when the target can restart the broker)."""
    tag = _tag(client)
    topic, group = target.name(tag, "cg"), target.name(tag, "cg-group")
    partitions = set(range(6))
    target.create_topic(topic, len(partitions))
    first = [(i % 6, f"a{i}".encode()) for i in range(60)]
    target.produce(topic, first)
    log = OwnershipLog()
    timeout = target.timeout_s
    obs = target.observations

    def settled(label: str, members: list[Member]) -> None:
        wait_settled(members, partitions, timeout, log)
        look_classic_group(obs, target, label, group, members, log)

    with MemberFactory(client, target, log) as factory:
        m1 = factory.make("m1", group, topic)
        settled("m1 joined", [m1])
        m2 = factory.make("m2", group, topic)
        settled("m2 joined", [m1, m2])
        m3 = factory.make("m3", group, topic)
        settled("m3 joined", [m1, m2, m3])
        members = [m1, m2, m3]
        wait_until(lambda: _consumed(members) >= _values([(0, 0, v) for _, v in first]), timeout,
                   "the group consumed all 60 records")
        m1.stop()
        settled("m1 left", [m2, m3])
        m2.stop()
        settled("m2 left", [m3])
        wait_until(lambda: target.committed(group, topic) == dict.fromkeys(partitions, 10), timeout,
                   "the group committed offset 10 on every partition")
        m3.stop()
    _check_log(log)
    committed = target.committed(group, topic)
    obs.exact("committed offsets", committed)
    restarted = ""
    if target.restart is not None:
        target.restart()
        target.reset_admin()
        restarted = " across a broker restart"
    second = [(i % 6, f"b{i}".encode()) for i in range(30)]
    target.produce(topic, second)
    with MemberFactory(client, target, log) as factory:
        m4 = factory.make("m4", group, topic)
        wait_until(lambda: _values(m4.consumed()) >= {v for _, v in second}, timeout,
                   "a restarted member consumed the 30 new records")
        m4.stop()
    obs.exact("the restarted member resumed at the committed offsets", _first_offsets(m4.consumed()) == committed)
    _resumed_at(m4.consumed(), committed)
    _check_log(log)
    return (f"{sum(1 for e in log.events if e.kind == 'assign' and e.partitions)} assignments over 4 members, "
            f"resumed at offset 10 on 6 partitions{restarted}")


def _first_offsets(records: list[Record]) -> dict[int, int]:
    """The first offset read per partition."""
    first: dict[int, int] = defaultdict(lambda: 1 << 62)
    for p, offset, _ in records:
        first[p] = min(first[p], offset)
    return dict(first)


def _resumed_at(records: list[Record], committed: dict[int, int]) -> None:
    first = _first_offsets(records)
    wrong = {p: (first[p], committed.get(p)) for p in first if first[p] != committed.get(p)}
    if wrong:
        raise ScenarioFailed(f"the restarted member did not resume at the committed offsets: (first read, "
                             f"committed) per partition {wrong}")


def static_membership(target: Target) -> str:
    """kafka-python members with `group_instance_id`: a member restarted within the session timeout gets its
    partitions back, and the other member sees no rebalance (no revocation, no new assignment)."""
    # The restart must fall within the session timeout: 6 s (the suite's default) was missed by Apache Kafka once,
    # on a machine at load 10, which then rebalanced the other member as it must. A static member's session is
    # usually long; 20 s keeps the scenario about the restart, not about the machine's speed.
    with target.tuned(session_timeout_ms=20_000, request_timeout_ms=30_000) as tuned:
        return _static_membership(tuned)


def _static_membership(target: Target) -> str:
    client = "kafka-python"
    topic, group = target.name("kp", "static"), target.name("kp", "static-group")
    partitions = set(range(4))
    target.create_topic(topic, len(partitions))
    log = OwnershipLog()
    obs = target.observations
    with MemberFactory(client, target, log) as factory:
        s1 = factory.make("s1", group, topic, instance_id=target.name("i1"))
        wait_settled([s1], partitions, target.timeout_s, log)
        look_classic_group(obs, target, "s1 joined", group, [s1], log)
        s2 = factory.make("s2", group, topic, instance_id=target.name("i2"))
        wait_settled([s1, s2], partitions, target.timeout_s, log)
        look_classic_group(obs, target, "s2 joined", group, [s1, s2], log)
        time.sleep(1.0)  # let the group stay Stable for a few heartbeats
        before, other_events = s1.assignment(), log.count(s2.name)
        s1.stop()  # a static member sends no LeaveGroup
        s1b = factory.make("s1b", group, topic, instance_id=target.name("i1"))
        wait_until(lambda: bool(s1b.assignment()), target.tuning.session_timeout_ms / 1000 + target.timeout_s,
                   "the restarted static member got an assignment")
        time.sleep(1.0)
        look_classic_group(obs, target, "s1 restarted", group, [s1b, s2], log)
        obs.exact("the restarted member got its partitions back", s1b.assignment() == before)
        obs.exact("the other member saw no rebalance", log.count(s2.name) == other_events)
        if s1b.assignment() != before:
            raise ScenarioFailed(f"the restarted static member got {sorted(s1b.assignment())}, not its "
                                 f"partitions {sorted(before)}")
        if log.count(s2.name) != other_events:
            raise ScenarioFailed("the other member was rebalanced when a static member restarted")
    _check_log(log)
    return f"partitions {sorted(before)} returned to instance i1 without a rebalance"


def consumer_protocol(target: Target) -> str:
    """confluent-kafka with group.protocol=consumer (KIP-848): members join, the broker reconciles the assignment
    (revoke before assign), and members leave."""
    require_consumer_protocol(target)
    topic, group = target.name("ck", "848"), target.name("ck", "848-group")
    partitions = set(range(4))
    target.create_topic(topic, len(partitions))
    target.produce(topic, [(i % 4, f"k{i}".encode()) for i in range(20)])
    log = OwnershipLog()

    def settled(label: str, members: list[Member]) -> None:
        wait_settled(members, partitions, target.timeout_s, log)
        look_consumer_group(target.observations, target, label, group, members, log)

    with MemberFactory("confluent-kafka", target, log) as factory:
        c1 = factory.make("c1", group, topic, group_protocol="consumer")
        settled("c1 joined", [c1])
        c2 = factory.make("c2", group, topic, group_protocol="consumer")
        settled("c2 joined", [c1, c2])
        c3 = factory.make("c3", group, topic, group_protocol="consumer")
        settled("c3 joined", [c1, c2, c3])
        wait_until(lambda: len(_consumed([c1, c2, c3])) == 20, target.timeout_s, "the group consumed 20 records")
        c1.stop()
        settled("c1 left", [c2, c3])
        c2.stop()
        settled("c2 left", [c3])
        c3.stop()
    _check_log(log)
    return f"3 members joined and left; {sum(1 for e in log.events if e.partitions)} reconciliation steps"


def describe_unknown_group(target: Target) -> str:
    """DescribeGroups of a group id no one has used: a Dead group without an error up to v5, GROUP_ID_NOT_FOUND
    with a message from v6 on (KIP-1043, Kafka 4.0)."""
    group = target.name("describe", "nobody")
    node = coordinator(target, group, 0)
    address = target.addresses()[node]
    newest = api_versions(address).get(DESCRIBE_GROUPS_KEY, (0, -1))[1]
    if newest < 5:
        raise ScenarioSkipped(f"DescribeGroups is advertised up to v{newest}; this scenario asks at v5 and v6")
    answers = []
    for version in range(5, min(newest, 6) + 1):
        code, message, state = describe_group(address, group, version)
        target.observations.exact(f"DescribeGroups v{version}: error, message given, state", (code, bool(message),
                                                                                               state))
        if version < 6 and (code, state) != (0, "Dead"):
            raise ScenarioFailed(f"DescribeGroups v{version} of an unknown group: error {code}, state {state!r}; "
                                 f"expected no error and state 'Dead'")
        if version >= 6 and (code != GROUP_ID_NOT_FOUND or not message):
            raise ScenarioFailed(f"DescribeGroups v{version} of an unknown group: error {code}, message {message!r}; "
                                 f"expected GROUP_ID_NOT_FOUND ({GROUP_ID_NOT_FOUND}) with a message")
        answers.append(f"v{version}: " + (f"{state}, no error" if code == 0 else f"error {code} ({message})"))
    return "; ".join(answers)
