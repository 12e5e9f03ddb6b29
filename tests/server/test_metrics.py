"""`--metrics-port`: scrape the Prometheus endpoint during a real-client workload; the numbers move as they should.

Workload (kafka-python): a consumer group that joins, heartbeats and commits; one committed and one aborted
transaction; a transaction left open and then timed out by the coordinator.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from served_cluster import ServedCluster, fast_cluster_config

from kcoord.conformance.wire.members import await_topic_metadata

pytestmark = [pytest.mark.wire, pytest.mark.slow]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    config = fast_cluster_config(abort_interval_ms=200)
    with ServedCluster(tmp_path_factory.mktemp("metrics"), 1, metrics=True, trace=False, config=config) as s:
        yield s


def scrape(served: ServedCluster) -> Samples:
    host, port = served.server.metrics_address
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over samples of `name` whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


def test_metrics_move_with_the_workload(served: ServedCluster) -> None:
    import kafka
    from kafka.errors import KafkaError

    before = scrape(served)
    assert value(before, "kcoord_partition_load_duration_seconds_count") == 100  # 50 + 50 coordinator partitions
    assert value(before, "kcoord_groups") == 0 and value(before, "kcoord_transactions_completed_total") == 0

    topic, group = "metrics-t", "metrics-g"
    producer = kafka.KafkaProducer(bootstrap_servers=served.bootstrap, acks="all")
    for i in range(10):
        producer.send(topic, b"%d" % i)
    producer.flush()
    producer.close()
    consumer = kafka.KafkaConsumer(topic, bootstrap_servers=served.bootstrap, group_id=group,
                                   enable_auto_commit=False, auto_offset_reset="earliest", heartbeat_interval_ms=100,
                                   session_timeout_ms=6000)
    await_topic_metadata(consumer, topic, 30)  # before the first poll: a kafka-python 3.0.12 bug (see there)
    got = 0
    deadline = time.monotonic() + 30
    while got < 10 and time.monotonic() < deadline:
        got += sum(len(rs) for rs in consumer.poll(100).values())
    consumer.commit()
    time.sleep(0.5)  # a few heartbeats
    during = scrape(served)
    assert value(during, "kcoord_groups", group_type="classic", state="Stable") == 1
    assert value(during, "kcoord_group_members", group_type="classic") == 1
    assert value(during, "kcoord_heartbeats_total", protocol="classic", error="NONE") >= 2
    assert value(during, "kcoord_offset_commits_total", kind="commit") >= 1
    assert value(during, "kcoord_rebalances_total", group_type="classic") >= 1
    assert value(during, "kcoord_rebalance_duration_seconds_count", group_type="classic") >= 1
    assert value(during, "kcoord_request_duration_seconds_count", api="join_group") >= 2
    assert value(during, "kcoord_request_duration_seconds_count", api="sync_group") >= 1
    assert value(during, "kcoord_connections_open", node="0") >= 1
    consumer.close()

    txn = kafka.KafkaProducer(bootstrap_servers=served.bootstrap, transactional_id="metrics-tx",
                              transaction_timeout_ms=1000)
    txn.init_transactions()
    for commit in (True, False):
        txn.begin_transaction()
        txn.send(topic, b"x").get(10)
        txn.commit_transaction() if commit else txn.abort_transaction()
    txn.begin_transaction()
    txn.send(topic, b"left open").get(10)
    assert value(scrape(served), "kcoord_transactions_ongoing") == 1
    deadline = time.monotonic() + 20
    while value(scrape(served), "kcoord_transactions_timed_out_total") < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    after = scrape(served)
    with contextlib.suppress(KafkaError):  # the producer was fenced by the timeout's epoch bump
        txn.close(timeout=2)
    assert value(after, "kcoord_transactions_timed_out_total") == 1
    assert value(after, "kcoord_transactions_completed_total", result="commit") == 1
    assert value(after, "kcoord_transactions_completed_total", result="abort") == 2  # the abort and the timeout
    assert value(after, "kcoord_transactions_ongoing") == 0
    assert value(after, "kcoord_marker_channel_total", counter="markers_sent") >= 3
    assert value(after, "kcoord_marker_channel_total", counter="completed") >= 3
    assert value(after, "kcoord_marker_queue_partitions") == 0
    assert value(after, "kcoord_request_duration_seconds_count", api="end_txn") == 2
