"""Apache Kafka 4.0.2's own coordinator logs, checked against the spec: a dedicated one-node broker (stopped before
its log directory is read) runs a mixed workload with real clients — transactions committed with their offsets,
aborted, fenced and timed out; a classic and a KIP-848 group rebalancing; manual commits — and then:

- both engines read every record of its log directory (nothing quarantined, no unread bytes), derive rows of every
  machine the records describe, check every persisted step, and find 0 violations;
- a copy damaged four ways (a record dropped, two values swapped, one field of one value changed, an old value
  appended again) is caught by both engines, with the same violations, each damage on its own key.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces.damage import NothingToDamage, damage
from kcoord.conformance.traces.job import Config, run
from kcoord.conformance.traces.logs import convert, find_log_dirs
from kcoord.conformance.traces.output import read_violations
from kcoord.model.loader import bundled_machines

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


@pytest.fixture(scope="module")
def kafka_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, int]]]:
    from kcoord.conformance.reference.broker import ReferenceKafka, ReferenceOptions
    from kcoord.conformance.reference.workload import WORKLOAD_SETTINGS, run_workload

    data = tmp_path_factory.mktemp("kafka-logs")
    with ReferenceKafka(ReferenceOptions(data, port=0, nodes=1, settings=WORKLOAD_SETTINGS)) as kafka:
        done = run_workload(kafka.bootstrap)
    yield data / "node-0", done.counts


def _check(logs: Path, out: Path, engine: str, spark: Any = None) -> Any:
    return run(Config([str(logs)], str(out), engine=engine), dict(bundled_machines()), spark=spark)


def _violations(out: Path) -> set[tuple[str, str, str, str, str, str]]:
    return {(v.machine, v.key, v.check, v.name, v.location, v.message)
            for v in read_violations(str(out / "violations"))}


def test_the_workload_did_everything(kafka_logs: tuple[Path, dict[str, int]]) -> None:
    _, counts = kafka_logs
    for what in ("transactions committed with offsets", "transactions aborted", "producers fenced",
                 "transactions timed out", "classic groups rebalanced with two members",
                 "consumer groups rebalanced with two members", "manual offset commits"):
        assert counts.get(what, 0) >= 1, (what, counts)


def test_kafkas_logs_are_clean_on_both_engines(kafka_logs: tuple[Path, dict[str, int]], spark: Any,
                                                tmp_path: Path) -> None:
    logs, _ = kafka_logs
    converted = convert(find_log_dirs([logs]), bundled_machines(), str(tmp_path / "rows"), str(tmp_path / "q"))
    assert converted.bad == {}
    assert not any("not read" in what for what in converted.skipped)
    assert converted.checks.checked["Transaction"] == converted.rows["Transaction"]  # every value is a step
    assert {"Transaction", "ClassicGroup", "ConsumerGroup", "ConsumerGroupMember", "PartitionProducer"} \
        <= set(converted.rows)
    for engine in ("python", "spark"):
        outcome = _check(logs, tmp_path / engine, engine, spark)
        assert outcome.summary.violations_total == 0, outcome.report
        assert outcome.summary.quarantined_total == 0
        assert outcome.summary.rows_read == converted.rows
        assert not [n for n in outcome.summary.not_checked if "commit_after_markers" in n]


#: (damage, key, n-th place) — each on a key of its own, so that each is seen on its own
DAMAGES = (("swap", "txn-commit", 2), ("drop", "txn-commit", 0), ("field", "txn-fenced", 0),
           ("reappend", "txn-timeout", 0))


def test_a_damaged_copy_is_caught_by_both_engines(kafka_logs: tuple[Path, dict[str, int]], spark: Any,
                                                  tmp_path: Path) -> None:
    logs, _ = kafka_logs
    copy = tmp_path / "damaged"
    shutil.copytree(logs, copy)
    done = []
    for kind, key, nth in DAMAGES:
        for folder in sorted(copy.glob("__transaction_state-*")):
            try:
                done.append((kind, key, damage(folder, kind, key, nth)))
                break
            except NothingToDamage:
                continue
        else:
            pytest.fail(f"no place for {kind} on {key}")
    found = {}
    for engine in ("python", "spark"):
        outcome = _check(copy, tmp_path / f"out-{engine}", engine, spark)
        assert outcome.summary.quarantined_total == 0
        found[engine] = _violations(tmp_path / f"out-{engine}")
    assert found["python"] == found["spark"]
    steps = {(key, name) for _, key, check, name, _, _ in found["python"] if check == "persisted_step"}
    for kind, key, what in done:
        assert any(k == key for k, _ in steps), (kind, key, what, sorted(steps))
