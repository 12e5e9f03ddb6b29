"""Real state on a served node, made by a real client (kafka-python): what tests that poke a node with odd requests
start from, so that the requests meet a group with offsets, transactions and records rather than an empty node."""

from __future__ import annotations

import time
from typing import Any

from kcoord.conformance.wire.members import await_topic_metadata


def make_state(bootstrap: str, topic: str, group: str, txn_id: str) -> Any:
    """A classic group with committed offsets, one committed and one open transaction, records; returns the producer
    whose transaction is open (the caller closes it once the tests are done)."""
    import kafka
    from kafka.structs import OffsetAndMetadata, TopicPartition

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    for i in range(20):
        producer.send(topic, b"v%d" % i, partition=0)
    producer.flush()
    producer.close()
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                   auto_offset_reset="earliest", session_timeout_ms=30_000)
    await_topic_metadata(consumer, topic, 30)  # before the first poll: a kafka-python 3.0.12 bug (see there)
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 20 and time.monotonic() < deadline:
        seen += sum(len(rs) for rs in consumer.poll(200).values())
    assert seen == 20
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(20, "", -1)})
    consumer.close(autocommit=False)  # the group stays with its offsets
    txn = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id, transaction_timeout_ms=600_000)
    txn.init_transactions()
    txn.begin_transaction()
    txn.send(topic, b"committed", partition=0).get(10)
    txn.commit_transaction()
    txn.begin_transaction()
    txn.send(topic, b"open", partition=0).get(10)  # left open: the server must not end it because of garbage
    return txn
