"""`kcoord conformance --bootstrap <kcoord serve> --reference <Apache Kafka>` end to end: the command prints both
results and no difference when kcoord answers as Kafka does, and a planted difference — a kcoord serve whose KIP-848
groups take at most two members (`group.consumer.max.size=2`), where Kafka takes three — is reported in the table and
exits 1."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
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


def test_no_difference_where_kcoord_answers_as_kafka(tmp_path: Path, reference_kafka: Any) -> None:
    with ServedCluster(tmp_path, 3, trace=False) as served:
        run = _compare(served.bootstrap, reference_kafka.bootstrap, "describe-unknown-group", "create-topics-answers",
                       "transactions[kafka-python]", "static-membership*")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tested: 4 passed, 0 failed, 0 skipped; reference: 4 passed, 0 failed, 0 skipped" in run.stdout
    assert "no difference in" in run.stdout


def test_a_planted_difference_is_reported(tmp_path: Path, reference_kafka: Any) -> None:
    config = fast_cluster_config()
    config = dataclasses.replace(config, groups=dataclasses.replace(config.groups, consumer_max_size=2))
    with ServedCluster(tmp_path, 1, trace=False, config=config) as served:
        run = _compare(served.bootstrap, reference_kafka.bootstrap, "consumer-protocol*", timeout_s=15)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "tested: 0 passed, 1 failed, 0 skipped; reference: 1 passed, 0 failed, 0 skipped" in run.stdout
    table = run.stdout[run.stdout.index("difference(s)"):]
    rows = {line.split("│")[2].strip(): line for line in table.splitlines() if line.count("│") == 5}
    # the third member was never let in: what Kafka showed once it joined is missing on kcoord's side
    assert "(0, 'Stable', 3)" in rows["c3 joined: ConsumerGroupDescribe"]
    assert "(not observed)" in rows["c3 joined: ConsumerGroupDescribe"]
    assert "FAIL" in rows["result"] and "PASS" in rows["result"]
