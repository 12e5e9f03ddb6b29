"""Cluster and wire scenarios: the APIs the clients need are advertised, FindCoordinator spreads coordinators over
the brokers, a coordinator's broker stops and the clients carry on, compressed batches are taken and read back,
and bad bytes on the wire are answered with an error or a closed connection while the broker keeps serving.

Owns the scenario bodies (see `scenarios_groups` for the conventions).
Must not import: `kcoord.impl` beyond the wire codec.
"""

from __future__ import annotations

import functools
import struct
import time
from typing import Any

from kio.schema.metadata.v9 import MetadataRequest

from .looks import coordinator, look_classic_group
from .members import MemberFactory, require, wait_settled
from .ownership import OwnershipLog
from .producers import make_txn_client
from .raw import RawConnection, api_versions, split_bootstrap, unknown_api_frame
from .scenarios_txn import _commit_one, _committed_values
from .target import ScenarioFailed, ScenarioSkipped, Target, wait_until

#: what kafka-python, aiokafka and confluent-kafka need for groups, offsets and transactions
CLIENT_APIS = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit", 9: "OffsetFetch",
               10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
               15: "DescribeGroups", 16: "ListGroups", 18: "ApiVersions", 22: "InitProducerId",
               24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit"}


def advertised_apis(target: Target) -> str:
    """ApiVersions lists every API the three clients use for groups, offsets and transactions."""
    address = split_bootstrap(target.bootstrap)[0]
    advertised = api_versions(address)
    for key, name in CLIENT_APIS.items():
        target.observations.exact(f"{name} ({key}) advertised", key in advertised)
    missing = [f"{name} ({key})" for key, name in CLIENT_APIS.items() if key not in advertised]
    if missing:
        raise ScenarioFailed(f"not advertised: {', '.join(missing)}")
    return f"{len(advertised)} APIs advertised, all {len(CLIENT_APIS)} the clients need among them"


def coordinator_spread(target: Target) -> str:
    """FindCoordinator names more than one broker for 30 group ids and 30 transactional ids.

    What Kafka 4.0 really does: the first FindCoordinator of each key type on a new cluster makes the controller
    create `__consumer_offsets` (or `__transaction_state`) and is answered COORDINATOR_NOT_AVAILABLE (15), and so is
    every one that follows until the broker leading the key's partition has loaded it; a client asks again. So the
    scenario asks again on COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS, as the clients do, and what it
    compares is the answer once the coordinator is there (kcoord's coordinator partitions exist from its first start,
    so it answers at once: DEVIATIONS.md)."""
    addresses = target.addresses()
    if len(addresses) < 2:
        raise ScenarioSkipped("one broker: nothing to spread over")
    address = next(iter(addresses.values()))
    nodes: dict[int, set[int]] = {0: set(), 1: set()}
    for key_type in (0, 1):
        for i in range(30):
            node = coordinator(target, target.name("spread", str(i)), key_type, via=address)
            if node not in addresses:
                raise ScenarioFailed(f"FindCoordinator named node {node}, not one of the brokers {sorted(addresses)}")
            nodes[key_type].add(node)
    for key_type, kind in ((0, "groups"), (1, "transactions")):
        target.observations.exact(f"{kind} spread over more than one broker", len(nodes[key_type]) > 1)
    if len(nodes[0]) < 2 or len(nodes[1]) < 2:
        raise ScenarioFailed(f"coordinators are not spread: groups on {sorted(nodes[0])}, transactions on "
                             f"{sorted(nodes[1])}")
    return f"groups on nodes {sorted(nodes[0])}, transactions on nodes {sorted(nodes[1])}"


def coordinator_failover(target: Target) -> str:
    """The broker coordinating a live group stops: members and a transactional producer rediscover their
    coordinators (NOT_COORDINATOR or a disconnect, then FindCoordinator) and carry on.

    What Kafka 4.0 really does: a stopped broker's partitions stay available only where another broker holds a
    replica in sync. The internal topics have a replica on each of the three brokers; a data topic made with one
    replica goes offline with its broker (its partitions have no leader, and producing to them times out). So the
    scenario makes its topics with as many replicas as there are brokers (up to 3), as a deployment that must
    survive a broker's loss does; kcoord accepts that replication factor and moves a stopped node's partitions to
    another node (it keeps one copy on a shared disk: DEVIATIONS.md)."""
    if target.stop_node is None:
        raise ScenarioSkipped("needs --stop-node-command (a way to stop one broker)")
    addresses = target.addresses()
    if len(addresses) < 2:
        raise ScenarioSkipped("one broker: no failover possible")
    obs = target.observations
    topic, sink = target.name("kp", "fo"), target.name("kp", "fo-out")
    group, txn_id = target.name("kp", "fo-group"), target.name("kp", "fo-txn")
    partitions = set(range(6))
    replicas = min(len(addresses), 3)
    target.create_topic(topic, len(partitions), replicas)
    target.create_topic(sink, 1, replicas)
    target.produce(topic, [(i % 6, f"f{i}".encode()) for i in range(30)])
    log = OwnershipLog()
    committed: list[bytes] = []
    maybe: list[bytes] = []
    with MemberFactory("kafka-python", target, log) as factory:
        members = [factory.make("m1", group, topic), factory.make("m2", group, topic)]
        wait_settled(members, partitions, target.timeout_s, log)
        look_classic_group(obs, target, "before the stop", group, members, log)
        producer = make_txn_client("kafka-python", target, txn_id)
        try:
            producer.init()
            producer = _commit_one(target, producer, txn_id, sink, b"t0", committed, maybe)
            stopped = coordinator(target, group, 0, via=next(iter(addresses.values())))
            target.stop_node(stopped)
            target.reset_admin()
            target.produce(topic, [(i % 6, f"g{i}".encode()) for i in range(30)])
            everything = {f"{c}{i}".encode() for c in "fg" for i in range(30)}
            wait_until(lambda: set().union(*({v for _, _, v in m.consumed()} for m in members)) >= everything,
                       target.timeout_s, "the members consumed the records written after the failover")
            wait_settled(members, partitions, target.timeout_s, log)
            look_classic_group(obs, target, "after the stop", group, members, log)
            producer = _commit_one(target, producer, txn_id, sink, b"t1", committed, maybe)
        finally:
            producer.close()
    live = {n: a for n, a in target.addresses().items() if n != stopped}
    now = coordinator(target, group, 0, via=next(iter(live.values())))
    obs.exact("the group's coordinator moved to a live broker", now != stopped and now in live)
    if now == stopped or now not in live:
        raise ScenarioFailed(f"after node {stopped} stopped, FindCoordinator names node {now}")
    seen = _committed_values(target, sink)
    obs.exact("read_committed saw t0, t1", [v for v in seen if v in (b"t0", b"t1")] == [b"t0", b"t1"])
    if [v for v in seen if v in (b"t0", b"t1")] != [b"t0", b"t1"]:
        raise ScenarioFailed(f"read_committed saw {seen}, expected t0 then t1")
    if log.violations():
        raise ScenarioFailed(f"ownership violated: {log.violations()[:3]}")
    return f"group coordinator moved from node {stopped} to node {now}; members and producer carried on"


def bad_input(target: Target) -> str:
    """Unknown api keys, malformed bodies, lying size prefixes and mid-request disconnects get an error response
    or a closed connection, and the broker keeps answering."""
    address = split_bootstrap(target.bootstrap)[0]
    outcomes = []
    with RawConnection(address) as conn:
        conn.send_raw(unknown_api_frame(7))
        outcomes.append(("unknown api key", _answered_or_closed(conn, 7)))
    with RawConnection(address) as conn:
        # a Metadata v9 header (client id "kcbd", no tags), then a body whose topic array length overflows
        header = struct.pack(">hhih", 3, 9, 8, 4) + b"kcbd" + b"\x00"
        body = b"\xff\xff\xff\xff\x0f"
        conn.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
        outcomes.append(("malformed body", _answered_or_closed(conn, 8)))
    for name, prefix in (("negative size", -5), ("oversize", 2**31 - 1)):
        with RawConnection(address) as conn:
            conn.send_raw(struct.pack(">i", prefix) + b"\x00" * 16)
            if not conn.closed_by_peer():
                raise ScenarioFailed(f"{name} prefix: the broker kept the connection open")
            outcomes.append((name, "closed"))
    for name, outcome in outcomes:
        target.observations.exact(f"{name}: answered or closed", outcome)
    with RawConnection(address) as conn:
        conn.send_raw(struct.pack(">i", 100) + b"\x00\x03\x00\x09")  # 4 of 100 bytes, then gone
    with RawConnection(address) as conn:
        response = conn.request(MetadataRequest(topics=(), allow_auto_topic_creation=False,
                                                include_cluster_authorized_operations=False,
                                                include_topic_authorized_operations=False))
        if not response.brokers:
            raise ScenarioFailed("after bad input, Metadata lists no brokers")
    advertised_apis(target)
    return "; ".join(f"{name}: {outcome}" for name, outcome in outcomes) + "; the broker still answers"


def _answered_or_closed(conn: RawConnection, correlation_id: int) -> str:
    frame = conn.read_frame()
    if frame is None:
        return "closed"
    (got,) = struct.unpack_from(">i", frame, 0)
    if got != correlation_id:
        raise ScenarioFailed(f"answered correlation id {got}, expected {correlation_id}")
    return "error response"


_CODECS = ("gzip", "snappy", "lz4", "zstd")


def compression(target: Target) -> str:
    """Batches confluent-kafka compressed with gzip, snappy, lz4 and zstd are accepted and read back intact, and a
    read_committed reader sees a compressed transaction's records once it commits and never an aborted one's."""
    require("confluent-kafka")
    import confluent_kafka

    topics = {codec: target.name("ck", "compressed", codec) for codec in (*_CODECS, "txn")}
    for topic in topics.values():
        target.create_topic(topic, 1)
    expected: dict[str, list[bytes]] = {}
    failures: dict[str, list[object]] = {codec: [] for codec in _CODECS}
    for codec in _CODECS:
        producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap, "compression.type": codec,
                                             "linger.ms": 20, "enable.idempotence": True})
        expected[codec] = [f"{codec}-{i}-".encode() * 20 for i in range(40)]
        for value in expected[codec]:
            producer.produce(topics[codec], value, partition=0, on_delivery=functools.partial(_delivered,
                                                                                              failures[codec]))
        if producer.flush(target.timeout_s) or failures[codec]:
            raise ScenarioFailed(f"{codec}: {len(failures[codec])} deliveries failed, first {failures[codec][:1]}")
    txn = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap, "compression.type": "zstd",
                                    "transactional.id": target.name("ck", "compressed-txn"), "linger.ms": 20})
    txn.init_transactions(target.timeout_s)
    for outcome in ("committed", "aborted"):
        txn.begin_transaction()
        for i in range(20):
            txn.produce(topics["txn"], f"{outcome}-{i}".encode(), partition=0)
        (txn.commit_transaction if outcome == "committed" else txn.abort_transaction)(target.timeout_s)
    expected["txn"] = [f"committed-{i}".encode() for i in range(20)]
    for name, topic in topics.items():
        seen = _read_with_confluent(target, topic, len(expected[name]))
        target.observations.exact(f"{name}: read back as written", seen == expected[name])
        if seen != expected[name]:
            raise ScenarioFailed(f"{name}: read back {len(seen)} records, first {seen[:2]}; expected "
                                 f"{len(expected[name])}, first {expected[name][:2]}")
    return "gzip, snappy, lz4 and zstd batches read back intact; a zstd transaction committed, another aborted"


def _delivered(failures: list[object], error: object, _message: object) -> None:
    if error is not None:
        failures.append(error)


def _read_with_confluent(target: Target, topic: str, count: int) -> list[bytes]:
    """The values of partition 0 from the start under read_committed: `count` of them, then a little more time to
    show there are no more."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": target.bootstrap, "group.id": target.name("reader"),
                                         "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + target.timeout_s
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
            elif len(values) >= count:
                break
        return values
    finally:
        consumer.close()


def create_topics_answers(target: Target) -> str:
    """CreateTopics answers each refusal with its Kafka error code and a message: a topic that exists, an illegal
    name, one that collides with an existing topic's ('.' and '_' are one to Kafka), zero partitions, replication
    factors of 0 and of more than the brokers, a null config value, a coordinator's internal topic, a name given
    twice in one request (refused once, and not created), and a request that would write more than the 10,000
    metadata records Kafka's controller allows (POLICY_VIOLATION for all its topics; 9,999 partitions are fine),
    validated only.

    What Kafka 4.0 really does with the internal topics: `__consumer_offsets` and `__transaction_state` are ordinary
    names to its controller, answered TOPIC_ALREADY_EXISTS once the coordinators have made them (on a cluster where a
    coordinator was never asked for, a user could create them, with the wrong partition count: the scenario first
    asks for a group and a transaction coordinator, as any client does, so both exist); only the KRaft log's
    `__cluster_metadata` is refused, INVALID_REQUEST "Creation of internal topic __cluster_metadata is prohibited."."""
    from kafka.admin import NewTopic
    from kafka.errors import for_code

    coordinator(target, target.name("ct", "group"), 0)
    coordinator(target, target.name("ct", "txn"), 1)

    existing, dotted, twice = target.name("ct", "exists"), target.name("ct", "a.b"), target.name("ct", "twice")
    target.create_topic(existing, 1)
    target.create_topic(dotted, 1)
    one = {"num_partitions": 1, "replication_factor": 1}
    cases: list[tuple[list[Any], bool, dict[str, set[str]]]] = [
        ([NewTopic(existing, **one)], False, {existing: {"TopicAlreadyExistsError"}}),
        ([NewTopic("bad name!", **one)], False, {"bad name!": {"InvalidTopicError"}}),
        ([NewTopic(dotted.replace(".", "_"), **one)], False, {dotted.replace(".", "_"): {"InvalidTopicError"}}),
        ([NewTopic(target.name("ct", "zero"), 0, 1)], False, {target.name("ct", "zero"): {"InvalidPartitionsError"}}),
        ([NewTopic(target.name("ct", "rf0"), 1, 0)], False,
         {target.name("ct", "rf0"): {"InvalidReplicationFactorError"}}),
        ([NewTopic(target.name("ct", "rf"), 1, 1000)], False,
         {target.name("ct", "rf"): {"InvalidReplicationFactorError"}}),
        ([NewTopic(target.name("ct", "null"), **one, topic_configs={"retention.ms": None})], False,
         {target.name("ct", "null"): {"InvalidConfigurationError"}}),
        ([NewTopic("__consumer_offsets", **one)], False, {"__consumer_offsets": {"TopicAlreadyExistsError"}}),
        ([NewTopic("__transaction_state", **one)], False, {"__transaction_state": {"TopicAlreadyExistsError"}}),
        ([NewTopic("__cluster_metadata", **one)], False, {"__cluster_metadata": {"InvalidRequestError"}}),
        ([NewTopic(twice, **one), NewTopic(twice, **one)], False, {twice: {"InvalidRequestError"}}),
        ([NewTopic(target.name("ct", "big"), 9_999, 1)], True, {target.name("ct", "big"): {"NoError"}}),
        ([NewTopic(target.name("ct", "bigger"), 10_000, 1), NewTopic(target.name("ct", "small"), **one)], True,
         {target.name("ct", "bigger"): {"PolicyViolationError"}, target.name("ct", "small"): {"PolicyViolationError"}}),
    ]
    seen = []
    for number, (topics, validate_only, expected) in enumerate(cases, 1):
        results = target.admin().create_topics(topics, raise_errors=False, validate_only=validate_only)["topics"]
        answered = {r["name"]: (for_code(r["error_code"]).__name__, r["error_message"]) for r in results}
        target.observations.exact(f"case {number}: error, message given",
                                  sorted((e, bool(m)) for e, m in answered.values()))
        if len(results) != len(expected) or set(answered) != set(expected):
            raise ScenarioFailed(f"CreateTopics({[t.name for t in topics]}) answered {results}; expected one result "
                                 f"for each of {sorted(expected)}")
        for name, (error, message) in answered.items():
            if error not in expected[name] or (error != "NoError") != bool(message):
                raise ScenarioFailed(f"CreateTopics({name!r}) answered {error} ({message!r}); expected "
                                     f"{' or '.join(sorted(expected[name]))}"
                                     f"{'' if 'NoError' in expected[name] else ' with a message'}")
            seen.append(f"{name}: {error}")
    made = [name for name in (twice, target.name("ct", "big"), target.name("ct", "bigger"))
            if target.partitions_of(name)]
    target.observations.exact("topics refused or only validated that exist", len(made))
    if made:
        raise ScenarioFailed(f"topics refused or only validated were created: {made}")
    return "; ".join(seen)
