"""Shared fixtures: one local SparkSession for the whole test session (starting one costs 5–10 s), one reference
Apache Kafka 4.0 cluster for the whole session (three brokers and a controller, ~10 s to start); logging errors of
background threads after a test are not reported."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kcoord.conformance.traces.session import local_session

    session = local_session("local[2]", shuffle_partitions=2, rows=0)  # (small inputs only: the JIT's C1 suffices)
    yield session
    session.stop()


#: Kafka 4.0's defaults with the waits that only slow tests down made short: the same as `kcoord serve`'s in the
#: tests (tests/server/served_cluster.py `fast_cluster_config`), so both brokers are driven alike
REFERENCE_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Apache Kafka 4.0 (the jars `make` fetched), three brokers, started once for the whole run; a test that stops a
    broker leaves the cluster to `ensure_running` for the next one."""
    from kcoord.conformance.reference.broker import ReferenceKafka, ReferenceOptions

    options = ReferenceOptions(tmp_path_factory.mktemp("kafka-reference"), port=0, nodes=3,
                               settings=REFERENCE_SETTINGS)
    with ReferenceKafka(options) as cluster:
        yield cluster


def pytest_configure(config: pytest.Config) -> None:
    """Background threads of the clients and of py4j log after pytest has closed the streams it captured for a test
    (a reconnect attempt once a test's server stopped, py4j closing its connections at interpreter exit); logging
    then prints "--- Logging error ---" with a traceback for each. Those are not the tests' findings: drop them."""
    logging.raiseExceptions = False
