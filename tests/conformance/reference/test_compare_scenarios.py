"""Every wire scenario of `kcoord conformance` on `kcoord serve` (three nodes) and on the real Apache Kafka 4.0 (the
shared reference cluster: three brokers and a controller), with the same operator hooks on both (restart the whole
cluster, stop one broker) and the same settings (`fast_cluster_config` / `REFERENCE_SETTINGS`): each must pass on both,
and what each broker showed (`Observations`: error codes, group states, generations and epochs as they progress,
assignment balance and exclusivity, committed offsets, what read_committed readers saw, fencing outcomes) must not
differ. A scenario that fails on Kafka encoded our belief, not Kafka's behaviour. Then the table
`kcoord conformance --bootstrap … --reference …` prints for the whole set, from the same pairs; last, the traces
`kcoord serve` recorded through all of it pass the checker.

The scenarios are real clients' work: kafka-python, aiokafka and confluent-kafka each run a consumer group of 3 that
rebalances as members join and leave (each partition owned by one member at a time, from the clients' own rebalance
callbacks), commits, and resumes from the committed offsets after a broker restart; static membership
(kafka-python); KIP-848 with confluent-kafka; consume-transform-produce transactions (commit and abort,
read_committed sees only committed records) and fencing per client; a restart in the middle of a transactional
workload; a coordinator failover when a node stops. (They ran on a served cluster of their own in
tests/server/test_real_clients.py too, until the run on this one, traced, made that second run a copy.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from kcoord.cmd_wire import print_comparison
from kcoord.conformance.wire.compare import Pair, differences, pair_differences, render_differences
from kcoord.conformance.wire.runner import run_one
from kcoord.conformance.wire.scenarios import SCENARIOS, Scenario
from kcoord.conformance.wire.target import Target
from tests.server.served_cluster import FAST_TUNING, ServedCluster
from tests.server.trace_check import trace_violations

pytestmark = [pytest.mark.wire, pytest.mark.slow, pytest.mark.kafka]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    with ServedCluster(tmp_path_factory.mktemp("served"), 3) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def targets(served: ServedCluster, reference_kafka: Any) -> Iterator[tuple[Target, Target]]:
    tested = served.target(restart=True, stop_node=True)
    reference = Target(reference_kafka.bootstrap, timeout_s=60.0, tuning=FAST_TUNING, restart=reference_kafka.restart,
                       stop_node=reference_kafka.stop_node)
    yield tested, reference
    tested.close()
    reference.close()
    reference_kafka.ensure_running()


@pytest.fixture(scope="module")
def pairs() -> list[Pair]:
    """The pairs of this module's run, for the whole-set table at the end."""
    return []


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario_on_both(scenario: Scenario, targets: tuple[Target, Target], pairs: list[Pair]) -> None:
    tested, reference = targets
    pair = Pair(run_one(scenario, tested), run_one(scenario, reference))
    pairs.append(pair)
    assert pair.reference.status == "pass", f"Apache Kafka: {pair.reference.detail}"
    assert pair.tested.status == "pass", f"kcoord: {pair.tested.detail}"
    assert pair.tested.observations, "the scenario observed nothing to compare"
    found = pair_differences(pair)
    assert not found, "\n" + render_differences(found, "kcoord", "kafka")


def test_the_whole_set_shows_no_difference(pairs: list[Pair], tmp_path: Path) -> None:
    """The table `kcoord conformance --reference` prints, for every scenario run above: no difference."""
    if len(pairs) != len(SCENARIOS):
        pytest.skip(f"only {len(pairs)} of {len(SCENARIOS)} scenarios ran in this session")
    out = Console(record=True, width=200)
    assert print_comparison(out, pairs, "kcoord serve", "Apache Kafka"), render_differences(differences(pairs))
    text = out.export_text()
    assert f"tested: {len(SCENARIOS)} passed, 0 failed, 0 skipped" in text, text
    assert "no difference in" in text


#: every machine the scenarios drive `kcoord serve`'s coordinators through
MACHINES = ("ClassicGroup", "ConsumerGroup", "ConsumerGroupMember", "Transaction", "PartitionProducer")


def test_the_traces_kcoord_recorded_pass_the_checker(served: ServedCluster, pairs: list[Pair]) -> None:
    """Everything the real clients made the server record is well formed and obeys the spec."""
    if len(pairs) != len(SCENARIOS):
        pytest.skip(f"only {len(pairs)} of {len(SCENARIOS)} scenarios ran in this session")
    served.stop()  # flushes and closes the trace files
    check = trace_violations(served.trace_dir)
    for machine in MACHINES:
        assert check.rows.get(machine, 0) > 0, f"no {machine} rows were recorded: {check.rows}"
    assert check.quarantined == [], f"malformed trace rows: {check.quarantined[:10]}"
    assert check.problems == [], "\n".join(check.problems[:20])
