"""A mixed coordinator workload against any Kafka-protocol endpoint, with real clients (confluent-kafka): what it takes
to fill a cluster's `__transaction_state` and `__consumer_offsets` with every kind of record the coordinators write.

Owns: `run_workload(bootstrap)` — transactions committed (with their consumer offsets: TxnOffsetCommit), aborted,
fenced by a newer producer of the same transactional id, and timed out by the coordinator; a classic group and a
KIP-848 consumer group (`group.protocol=consumer`) that rebalance as members join and leave, committing offsets;
manual offset commits. `WORKLOAD_SETTINGS`: broker settings that let it run in seconds (fast transaction timeouts and
group timers, few coordinator partitions). The workload returns what it did (`Done`), so a caller can say so.
Used by the real-Kafka round trip of the log checker and by `make demo`.
Must not import: `kcoord.impl` (Kafka is reached through its sockets only).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: broker settings for the workload: timeouts short enough to see a timed-out transaction and KIP-848 rebalances
WORKLOAD_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
    "transaction.state.log.num.partitions": "4",
    "offsets.topic.num.partitions": "4",
}

TOPICS = {"orders": 3, "payments": 2}


@dataclass(slots=True)
class Done:
    """What the workload did, by kind (for messages and assertions)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n


def _producer(bootstrap: str, txn_id: str | None, **extra: Any) -> Any:
    from confluent_kafka import Producer

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 0}
    if txn_id is not None:
        config |= {"transactional.id": txn_id, "enable.idempotence": True}
    return Producer(config | extra)


def _consumer(bootstrap: str, group: str, protocol: str, **extra: Any) -> Any:
    from confluent_kafka import Consumer

    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                              "enable.auto.commit": False, "group.protocol": protocol}
    if protocol == "classic":
        config |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    return Consumer(config | extra)


def create_topics(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # (no re-export)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
    for future in futures.values():
        try:
            future.result(30)
        except Exception as e:  # already there (a second run): fine
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise


def _poll_until(consumer: Any, enough: Callable[[list[Any]], bool], timeout_s: float = 30.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not enough(got):
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append(msg)
    return got


def transactions(bootstrap: str, done: Done) -> None:
    """Committed (with TxnOffsetCommit), aborted, fenced and timed-out transactions."""
    from confluent_kafka import KafkaException, TopicPartition

    group = "txn-copier"
    consumer = _consumer(bootstrap, group, "classic")
    p = _producer(bootstrap, "txn-commit")
    p.init_transactions(30)
    for i in range(3):
        p.begin_transaction()
        for k in range(3):
            p.produce("orders", key=f"k{k}", value=f"commit-{i}-{k}", partition=k % 3)
        offsets = [TopicPartition("payments", 0, 10 * (i + 1)), TopicPartition("payments", 1, 5 * (i + 1))]
        p.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        done.add("transactions committed with offsets")
    p.begin_transaction()
    p.produce("orders", value="aborted", partition=0)
    p.abort_transaction(30)
    done.add("transactions aborted")
    # fenced: a newer producer of the same id aborts the open transaction of the older one
    old = _producer(bootstrap, "txn-fenced")
    old.init_transactions(30)
    old.begin_transaction()
    old.produce("payments", value="zombie", partition=0)
    old.flush(10)
    new = _producer(bootstrap, "txn-fenced")
    new.init_transactions(30)
    try:
        old.commit_transaction(10)
    except KafkaException:
        done.add("producers fenced")
    new.begin_transaction()
    new.produce("payments", value="after the fence", partition=1)
    new.commit_transaction(30)
    # timed out: the coordinator aborts a transaction open longer than its timeout
    slow = _producer(bootstrap, "txn-timeout", **{"transaction.timeout.ms": 1500})
    slow.init_transactions(30)
    slow.begin_transaction()
    slow.produce("orders", value="too slow", partition=1)
    slow.flush(10)
    time.sleep(4)
    try:
        slow.commit_transaction(10)
    except KafkaException:
        done.add("transactions timed out")
    consumer.close()


def groups(bootstrap: str, protocol: str, group: str, done: Done) -> None:
    """Two members join (a rebalance), consume and commit, one leaves (another rebalance), the other commits."""
    first = _consumer(bootstrap, group, protocol)
    first.subscribe(list(TOPICS))
    _poll_until(first, lambda got: len(got) >= 1, 20)
    first.commit(asynchronous=False)
    second = _consumer(bootstrap, group, protocol)
    second.subscribe(list(TOPICS))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (first.assignment() and second.assignment()):
        first.poll(0.2)
        second.poll(0.2)
    for c in (first, second):
        if c.assignment():
            with_offsets = c.position(c.assignment())
            c.commit(offsets=[tp for tp in with_offsets if tp.offset >= 0] or None, asynchronous=False) \
                if any(tp.offset >= 0 for tp in with_offsets) else None
    done.add(f"{protocol} groups rebalanced with two members")
    second.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(first.assignment()) < sum(TOPICS.values()):
        first.poll(0.2)
    _poll_until(first, lambda got: False, 1.0)
    positions = [tp for tp in first.position(first.assignment()) if tp.offset >= 0]
    if positions:
        first.commit(offsets=positions, asynchronous=False)
        done.add("offsets committed")
    first.close()


def manual_offsets(bootstrap: str, done: Done) -> None:
    """Offsets committed by a client outside any group membership (an admin-style commit of a simple group)."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(bootstrap, "manual-offsets", "classic")
    consumer.commit(offsets=[TopicPartition("orders", 0, 1), TopicPartition("orders", 1, 2)], asynchronous=False)
    done.add("manual offset commits")
    consumer.close()


def produce_some(bootstrap: str) -> None:
    p = _producer(bootstrap, None)
    for topic, n in TOPICS.items():
        for partition in range(n):
            for i in range(3):
                p.produce(topic, value=f"{topic}-{partition}-{i}-{uuid.uuid4()}", partition=partition)
    p.flush(30)


def run_workload(bootstrap: str) -> Done:
    done = Done()
    create_topics(bootstrap)
    produce_some(bootstrap)
    transactions(bootstrap, done)
    manual_offsets(bootstrap, done)
    groups(bootstrap, "classic", "classic-group", done)
    groups(bootstrap, "consumer", "kip848-group", done)
    return done
