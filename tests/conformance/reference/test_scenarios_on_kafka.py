"""Every wire scenario of `kcoord conformance` against the real Apache Kafka 4.0 (the shared reference cluster: three
brokers and a controller), with the same operator hooks as against `kcoord serve` (restart the whole cluster, stop one
broker). A scenario that fails here encoded our belief, not Kafka's behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kcoord.conformance.wire.runner import run_one
from kcoord.conformance.wire.scenarios import SCENARIOS, Scenario
from kcoord.conformance.wire.target import Target, Tuning

pytestmark = [pytest.mark.wire, pytest.mark.slow, pytest.mark.kafka]

#: the clients' settings the served cluster's scenarios use (tests/server/served_cluster.py FAST_TUNING)
TUNING = Tuning(heartbeat_interval_ms=200, session_timeout_ms=6_000, max_poll_interval_ms=20_000,
                request_timeout_ms=10_000)


@pytest.fixture(scope="module")
def target(reference_kafka: Any) -> Iterator[Target]:
    target = Target(reference_kafka.bootstrap, timeout_s=60.0, tuning=TUNING, restart=reference_kafka.restart,
                    stop_node=reference_kafka.stop_node)
    yield target
    target.close()
    reference_kafka.ensure_running()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario, target: Target) -> None:
    result = run_one(scenario, target)
    assert result.status == "pass", f"{scenario.name}: {result.detail}"
