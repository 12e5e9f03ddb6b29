"""Traces the real coordinators write — JSON Lines from the runtime's sink, and their coordinator logs read back as
`load` rows — are clean under the reference checker; a bad record in a log is quarantined, and a value that breaks a
trace property is caught."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kcoord.conformance.traces.job import Config, run
from kcoord.conformance.traces.logs import find_log_dirs, log_rows
from kcoord.conformance.traces.output import read_violations
from kcoord.impl.cluster import Cluster
from kcoord.impl.runtime.trace import JsonlSink
from kcoord.impl.storage.log import PartitionLog
from kcoord.impl.storage.txn_log_schema import TransactionLogValue, TransactionStatus, TxnPartitions, encode_value
from kcoord.impl.txn.records import encode_txn_key
from kcoord.model.loader import bundled_machines
from tests.impl.test_cluster import GROUP, TOPIC, init, make, read_committed, records, transaction
from tests.impl.test_cluster import run as run_until_done


def _workload(tmp_path: Path) -> tuple[Path, Path]:
    """A committed and an aborted consume-transform-produce transaction, then a commit and a failover of the
    transaction partition; returns (trace folder, data directory)."""
    traces, data = tmp_path / "traces", tmp_path / "data"
    sink = JsonlSink(traces)
    cluster = make(data, 3, sink)  # type: ignore[arg-type]
    ids = init(cluster, "t1")
    transaction(cluster, "t1", ids, 0, ("a", "b"), 10, commit=True)
    transaction(cluster, "t1", ids, 2, ("c",), 20, commit=False)
    _failover_mid_commit(cluster, "moving")
    cluster.run_until(lambda: read_committed(cluster) == ["a", "b", "x"])
    sink.close()
    return traces, data


def _failover_mid_commit(cluster: Cluster, txn_id: str) -> None:
    from kcoord.impl.interfaces import TopicPartition

    p = cluster.coordinator_partition("transaction", txn_id)
    first = cluster.owner[("transaction", p)]
    coordinator = cluster.nodes[first].txn
    pid = run_until_done(cluster, coordinator.init_producer_id(txn_id, 60_000)).producer_id
    run_until_done(cluster, coordinator.add_partitions(txn_id, pid, 0, [TopicPartition(TOPIC, 0)]))
    run_until_done(cluster, cluster.partitions.produce(TOPIC, 0, records(pid, 0, 0, "x"), transactional_id=txn_id))
    coordinator.end_txn(txn_id, pid, 0, "COMMIT", 3)
    coordinator.flush()  # PrepareCommit is durable, the markers are not delivered yet
    cluster.stop_node(first)  # another node loads the partition (a `load` row) and completes the commit


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _workload(tmp_path_factory.mktemp("runtime"))


def _check(paths: list[Path], out: Path) -> Any:
    return run(Config([str(p) for p in paths], str(out), engine="python"), dict(bundled_machines()))


def test_the_runtime_traces_are_clean(workload: tuple[Path, Path], tmp_path: Path) -> None:
    traces, _ = workload
    outcome = _check([traces], tmp_path / "out")
    assert outcome.summary.violations_total == 0, outcome.report
    assert outcome.summary.quarantined_total == 0
    loads = [json.loads(line) for f in (traces / "Transaction").glob("*.jsonl") for line in f.read_text().splitlines()]
    # the failover: the new node knew nothing of the key, so its snapshot starts from the fresh instance
    assert any(r["kind"] == "load" and r["from_state"] == "Empty" and r["to_state"] != "Empty" for r in loads)
    assert {"Transaction", "PartitionProducer"} <= set(outcome.summary.rows_read)


def test_the_coordinator_logs_read_back_as_clean_rows(workload: tuple[Path, Path], tmp_path: Path) -> None:
    _, data = workload
    dirs = find_log_dirs([data])
    assert any(Path(d).name.startswith("__transaction_state-") for d in dirs)
    assert any(Path(d).name.startswith("__consumer_offsets-") for d in dirs)
    rows = [r for d in dirs for r in log_rows(d, bundled_machines(), [], {})]
    t1 = [r for r in rows if r["key"] == "t1"]
    assert [r["seq"] for r in t1] == list(range(len(t1)))
    assert [r["to_state"] for r in t1][-2:] == ["PrepareAbort", "CompleteAbort"]
    assert all(r["from_state"] == p["to_state"] for p, r in itertools.pairwise(t1))
    outcome = _check([data], tmp_path / "out")
    assert outcome.summary.violations_total == 0, outcome.report
    assert outcome.summary.rows_read["Transaction"] == sum(1 for r in rows if r["machine"] == "Transaction")
    assert any(n.split(" ", 1)[1].startswith("offset commits") for n in outcome.summary.not_checked)
    assert outcome.summary.rows_read.get("PartitionProducer", 0) >= 2  # the transactional offsets and their marker


def _append_value(log_dir: Path, key: bytes, value: bytes | None, ts: int) -> None:
    with PartitionLog.open(log_dir) as log:
        log.append([(key, value)], timestamp_ms=ts)


def test_a_bad_record_is_quarantined_and_an_epoch_going_back_is_caught(workload: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    _, data = workload
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    t1 = [r for d in find_log_dirs([copy]) for r in log_rows(d, bundled_machines(), [], {}) if r["key"] == "t1"]
    last = t1[-1]
    log_dir = next(Path(d) for d in find_log_dirs([copy]) if any(
        r["key"] == "t1" for r in log_rows(d, bundled_machines(), [], {})))
    older = TransactionLogValue(
        producer_id=last["producer_id"], producer_epoch=last["producer_epoch"] - 1, transaction_timeout_ms=60_000,
        transaction_status=TransactionStatus.ONGOING, transaction_partitions=(TxnPartitions(TOPIC, (1,)),),
        transaction_last_update_timestamp_ms=9_000, transaction_start_timestamp_ms=9_000)
    _append_value(log_dir, encode_txn_key("t1"), encode_value(older, 0), 9_000)
    _append_value(log_dir, encode_txn_key("t1"), b"\x00\x07garbage", 9_001)
    segment = max(log_dir.glob("*.log"))
    with segment.open("ab") as f:  # a crash mid-append: half a batch at the end of the last segment
        f.write(segment.read_bytes()[:20])  # (a batch header claiming more bytes than follow)
    outcome = _check([copy], tmp_path / "out")
    assert outcome.summary.quarantined == {"malformed": 1}
    (tail,) = [n for n in outcome.summary.not_checked if "not read" in n]
    assert tail.startswith(f"20 bytes at the end of {segment} not read (torn from position ")
    lines = (tmp_path / "out" / "quarantine" / "part-logs.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["reason"].startswith("malformed:")
    found = {(v.check, v.name, v.key) for v in read_violations(str(tmp_path / "out" / "violations"))}
    assert ("monotonic", "epochs_monotonic", "t1") in found
    assert outcome.exit_code == 1


def test_the_group_is_known_to_the_logs(workload: tuple[Path, Path]) -> None:
    _, data = workload
    skipped: dict[str, int] = {}
    rows = [r for d in find_log_dirs([data]) for r in log_rows(d, bundled_machines(), [], skipped)]
    assert sum(n for what, n in skipped.items() if what.startswith("offset commits")) >= 1  # GROUP's offsets
    assert not any(r["key"] == GROUP for r in rows)  # a simple group has no GroupMetadata record


#: a trace property the bundled specs do not declare yet (the lead decides; see the report of issue 6): written in the
#: spec language and loaded with the bundled specs, so the checker is shown to take it as it would be declared.
#: (KAFKA-17507's `commit_after_markers` / `abort_after_markers` are declared in transaction.sm already.)
PROPOSED = {
    "partition_producer.sm": '''
  trace no_fenced_writes "no data batch is accepted from an epoch the transaction coordinator has already fenced":
    fenced PartitionProducer.Append.epoch by Transaction.producer_epoch on producer_id
''',
}


def proposed_machines() -> dict[str, Any]:
    from kcoord.model.diagnostics import SourceFile
    from kcoord.model.loader import bundled_spec_files, load_sources

    sources = [SourceFile(str(p), p.read_text().rstrip("\n") + "\n" + PROPOSED.get(p.name, ""))
               for p in bundled_spec_files()]
    machines, diags = load_sources(sources)
    assert not diags.has_errors, diags.render()
    return {m.name: m for m in machines}


def _rewrite(folder: Path, machine: str, change: Any) -> None:
    for f in (folder / machine).glob("*.jsonl"):
        rows = [change(json.loads(line)) for line in f.read_text().splitlines()]
        f.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_proposed_fencing_and_kafka_17507_properties(workload: tuple[Path, Path], tmp_path: Path) -> None:
    traces, _ = workload
    ms = proposed_machines()
    clean = run(Config([str(traces)], str(tmp_path / "clean"), engine="python"), ms)
    assert clean.summary.violations_total == 0 and clean.summary.not_checked == [], clean.report
    late = tmp_path / "late"
    shutil.copytree(traces, late)
    # the group coordinator's marker materialised after the transaction completed (KAFKA-17507's order)
    _rewrite(late, "PartitionProducer", lambda r: r | {"ts_ms": 5_000} if r["event"] == "WriteMarker" else r)
    # and one data batch accepted from an epoch below the coordinator's, after the coordinator had it
    first_append = [True]

    def stale(r: dict[str, Any]) -> dict[str, Any]:
        if r["event"] == "Append" and r["kind"] == "transition" and first_append[0]:
            first_append[0] = False
            return r | {"arg_epoch": -1, "ts_ms": 2_000}
        return r

    _rewrite(late, "PartitionProducer", stale)
    outcome = run(Config([str(late)], str(tmp_path / "out"), engine="python"), ms)
    found = {(v.machine, v.check, v.name, v.key) for v in read_violations(str(tmp_path / "out" / "violations"))}
    assert ("Transaction", "before", "commit_after_markers", "t1") in found
    assert any(c == "fenced" and n == "no_fenced_writes" for _, c, n, _ in found)
    assert outcome.exit_code == 1
