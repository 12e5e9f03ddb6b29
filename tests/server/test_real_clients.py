"""Real clients against `kcoord serve`: every wire conformance scenario, on one 3-node served cluster.

kafka-python, aiokafka and confluent-kafka each run a consumer group of 3 that rebalances as members join and leave
(each partition owned by one member at a time, from the clients' own rebalance callbacks), commits, and resumes from
the committed offsets after a broker restart; static membership (kafka-python); KIP-848 with confluent-kafka;
consume-transform-produce transactions (commit and abort, read_committed sees only committed records) and fencing per
client; a restart in the middle of a transactional workload; a coordinator failover when a node stops. The scenarios
are the ones `kcoord conformance --bootstrap` runs against any broker (conformance/wire); here the server's operator
hooks (restart, stop a node) are wired in. Last, the traces the server recorded through all of it pass the checker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from served_cluster import ServedCluster
from trace_check import trace_violations

from kcoord.conformance.wire.runner import run_one
from kcoord.conformance.wire.scenarios import SCENARIOS, Scenario
from kcoord.conformance.wire.target import Target

pytestmark = [pytest.mark.wire, pytest.mark.slow]

NODES = 3


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    with ServedCluster(tmp_path_factory.mktemp("served"), NODES) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def target(served: ServedCluster) -> Iterator[Target]:
    target = served.target(restart=True, stop_node=True)
    yield target
    target.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario, target: Target) -> None:
    result = run_one(scenario, target)
    assert result.status == "pass", f"{scenario.name}: {result.detail}"


MACHINES = ("ClassicGroup", "ConsumerGroup", "ConsumerGroupMember", "Transaction", "PartitionProducer")


def test_traces_pass_the_checker(served: ServedCluster) -> None:
    """Everything the real clients made the server record is well formed and obeys the spec."""
    served.stop()  # flushes and closes the trace files
    check = trace_violations(served.trace_dir)
    for machine in MACHINES:
        assert check.rows.get(machine, 0) > 0, f"no {machine} rows were recorded: {check.rows}"
    assert check.quarantined == [], f"malformed trace rows: {check.quarantined[:10]}"
    assert check.problems == [], "\n".join(check.problems[:20])
