"""`kcoord conformance --bootstrap <kcoord serve> --reference <Apache Kafka>` end to end: the command prints both
results and no difference when kcoord answers as Kafka does, and a planted difference — a kcoord serve whose KIP-848
groups take at most two members (`group.consumer.max.size=2`), where Kafka takes three — is reported in the table and
exits 1."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.server.served_cluster import ServedCluster, fast_cluster_config

pytestmark = [pytest.mark.wire, pytest.mark.slow, pytest.mark.kafka]

KCOORD = [str(Path(sys.executable).parent / "kcoord")]


def _compare(bootstrap: str, reference: str, *scenarios: str, timeout_s: int = 60) -> subprocess.CompletedProcess[str]:
    selected = [arg for name in scenarios for arg in ("-s", name)]
    return subprocess.run([*KCOORD, "conformance", "--bootstrap", bootstrap, "--reference", reference,
                           "--timeout-s", str(timeout_s), *selected],
                          capture_output=True, text=True, timeout=900, env={**os.environ, "COLUMNS": "250"})


def _no_difference(root: Path, reference: str) -> subprocess.CompletedProcess[str]:
    with ServedCluster(root, 3, trace=False) as served:
        return _compare(served.bootstrap, reference, "describe-unknown-group", "create-topics-answers",
                        "transactions[kafka-python]", "static-membership*")


def _planted_difference(root: Path, reference: str) -> subprocess.CompletedProcess[str]:
    config = fast_cluster_config()
    config = dataclasses.replace(config, groups=dataclasses.replace(config.groups, consumer_max_size=2))
    with ServedCluster(root, 1, trace=False, config=config) as served:
        return _compare(served.bootstrap, reference, "consumer-protocol*", timeout_s=15)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, reference_kafka: Any) -> Iterator[dict[str, Future[Any]]]:
    """Both commands at once, each on a served cluster of its own, against the shared Kafka (the scenarios' names are
    their run's own): most of each run is waiting, for a group to settle or, planted, for a member that never joins
    (15 s). Each test waits for its own."""
    with ThreadPoolExecutor(2, thread_name_prefix="compare-cli") as pool:
        yield {name: pool.submit(fn, tmp_path_factory.mktemp(name), reference_kafka.bootstrap)
               for name, fn in (("same", _no_difference), ("planted", _planted_difference))}


def test_no_difference_where_kcoord_answers_as_kafka(runs: dict[str, Future[Any]]) -> None:
    run = runs["same"].result()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tested: 4 passed, 0 failed, 0 skipped; reference: 4 passed, 0 failed, 0 skipped" in run.stdout
    assert "no difference in" in run.stdout


def test_a_planted_difference_is_reported(runs: dict[str, Future[Any]]) -> None:
    run = runs["planted"].result()
    assert run.returncode == 1, run.stdout + run.stderr
    assert "tested: 0 passed, 1 failed, 0 skipped; reference: 1 passed, 0 failed, 0 skipped" in run.stdout
    table = run.stdout[run.stdout.index("difference(s)"):]
    rows = {line.split("│")[2].strip(): line for line in table.splitlines() if line.count("│") == 5}
    # the third member was never let in: what Kafka showed once it joined is missing on kcoord's side
    assert "(0, 'Stable', 3)" in rows["c3 joined: ConsumerGroupDescribe"]
    assert "(not observed)" in rows["c3 joined: ConsumerGroupDescribe"]
    assert "FAIL" in rows["result"] and "PASS" in rows["result"]
