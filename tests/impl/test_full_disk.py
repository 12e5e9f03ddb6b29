"""A full disk (ENOSPC), on a real tmpfs and at the OS-call seam: every failing log is said once in an ERROR line with
its errno, the answers are Kafka's (Produce KAFKA_STORAGE_ERROR; the coordinators NOT_COORDINATOR, which is what
Kafka's group and transaction coordinators answer for KAFKA_STORAGE_ERROR), nothing is lost or half written, and
everything works again once space returns (said in an INFO line)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcoord.impl.cluster import Cluster, ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.group.messages import OffsetCommitPartition, OffsetCommitRequest, OffsetFetchRequest
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition import committed_records
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.storage.batch import Record, RecordBatch
from kcoord.impl.txn.config import TxnConfig
from tests.impl.clusters import run, small_cluster
from tests.logs import kcoord_lines

from .full_disk import Disk, make_disk

pytestmark = [pytest.mark.adversarial]

TOPIC, GROUP = "t", "g"
TXN = "tx-" + "x" * 4096
PAGE = 4096


@pytest.fixture(params=["tmpfs", "seam"])
def disk(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    with make_disk(request.param, tmp_path / "disk", monkeypatch) as made:
        yield made


def make(data_dir: Path) -> Cluster:
    return small_cluster(data_dir, TOPIC)


def produce(cluster: Cluster, i: int) -> str:
    batch = RecordBatch.of([Record(0, 1_000 + i, b"k", b"%d:" % i + bytes(2 * PAGE))])  # always a new page
    return str(run(cluster, cluster.partitions.produce(TOPIC, 0, batch)).error)


def commit(cluster: Cluster, offset: int) -> str:
    partition = OffsetCommitPartition(0, offset, metadata="m" * (PAGE - 200))  # a page: two never fit a page's rest
    answer = run(cluster, cluster.nodes[0].groups.offset_commit(OffsetCommitRequest(GROUP, ((TOPIC, (partition,)),))))
    ((_, ((_, error),)),) = answer.topics
    return str(error)


def init_producer(cluster: Cluster) -> str:
    """InitProducerId of a transactional id of more than a page: each one writes a record that needs a new page."""
    return str(run(cluster, cluster.nodes[0].txn.init_producer_id(TXN, 60_000)).error)


def test_a_full_disk_is_said_once_per_log_answered_as_kafka_and_recovered_from(
        disk: Disk, caplog: pytest.LogCaptureFixture) -> None:
    cluster = make(disk.path)
    try:
        assert (produce(cluster, 0), commit(cluster, 10), init_producer(cluster)) == ("NONE",) * 3
        disk.fill()
        with caplog.at_level(logging.INFO, logger="kcoord"):
            answers = [(produce(cluster, i), commit(cluster, 10 + i), init_producer(cluster)) for i in (1, 2, 3)]
            assert answers[1:] == [("KAFKA_STORAGE_ERROR", "NOT_COORDINATOR", "NOT_COORDINATOR")] * 2, answers
            errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
            failing = {p.name for p in disk.path.iterdir() if any(e.startswith(f"{p}: ") for e in errors)}
            assert failing == {"t-0", "__consumer_offsets-0", "__transaction_state-0"}, errors
            assert len(errors) == 3 and all("(ENOSPC: No space left on device)" in e for e in errors), errors
            logs = [cluster.partitions.partition(TopicPartition(TOPIC, 0)).log,  # type: ignore[union-attr]
                    cluster.nodes[0].groups.runtime.shards[0].log, cluster.nodes[0].txn.runtime.shards[0].log]
            assert all(log.storage_error is not None for log in logs)
            caplog.clear()

            disk.free()
            assert (produce(cluster, 4), commit(cluster, 20), init_producer(cluster)) == ("NONE",) * 3
            recovered = [r.getMessage() for r in caplog.records if "writes succeed again" in r.getMessage()]
            assert len(recovered) == 3 and all(log.storage_error is None for log in logs)
        fetched = cluster.partitions.fetch(TOPIC, 0, 0, max_bytes=1 << 20)
        kept = [r.value.split(b":")[0] for r in committed_records(fetched) if r.value is not None]
        assert kept[0] == b"0" and kept[-1] == b"4" and b"2" not in kept and b"3" not in kept  # no half batch
    finally:
        cluster.close()
    reopened = make(disk.path)  # and nothing half written stays for the next start
    try:
        assert not reopened.refused and not reopened.partitions.offline
        fetched = run(reopened, reopened.nodes[0].groups.offset_fetch(OffsetFetchRequest(GROUP, ((TOPIC, (0,)),))))
        assert fetched.topics[0][1][0].offset == 20
    finally:
        reopened.close()


def test_a_compaction_that_cannot_write_leaves_the_log_as_it_was(disk: Disk, caplog: pytest.LogCaptureFixture) -> None:
    """The cleaner's rewrite fails on a full disk before its rename: the log keeps every segment and stays usable
    (no '.compacting' file left to hold space); the runtime tries again a minute later instead of unloading it."""
    from kcoord.impl.storage._files import WriteNotDone
    from kcoord.impl.storage.log import PartitionLog

    disk.path.mkdir()
    with PartitionLog.open(disk.path / "__consumer_offsets-0", segment_bytes=64 * PAGE) as log:
        for i in range(40):
            log.append([(b"k%d" % (i % 4), bytes(PAGE))], timestamp_ms=1)
        before = [(b.base_offset, len(b.records)) for b in log.read()]
        disk.fill()
        with caplog.at_level(logging.ERROR, logger="kcoord"), pytest.raises(WriteNotDone):
            log.compact(2, tombstone_retention_ms=0)
        assert [(b.base_offset, len(b.records)) for b in log.read()] == before
        assert not list(log.path.glob("*.compacting")) and log.storage_error is not None
        (error,) = kcoord_lines(caplog, logging.NOTSET)
        assert error.startswith(f"{log.path}: compaction failed (ENOSPC")
        disk.free()
        log.append([(b"k9", b"after")], timestamp_ms=3)
        assert log.compact(4, tombstone_retention_ms=0).records_after == 5 and log.storage_error is None


def test_a_failed_group_commit_fsync_takes_a_data_partition_offline_without_a_traceback(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """After a failed fsync the page cache may have dropped the data: the partition goes offline
    (KAFKA_STORAGE_ERROR, as Kafka takes a failed log directory's partitions offline), said in one WARNING, and the
    next start recovers it."""
    from kcoord.impl.storage.log import Durability

    config = ClusterConfig(txn=TxnConfig(num_partitions=1), groups=GroupConfig(num_partitions=1),
                           durability=Durability.group(5, 1 << 20))
    cluster = Cluster(tmp_path, ManualClock(1_000), config=config)
    cluster.start()
    cluster.create_topics([(TOPIC, 1)])
    part = cluster.partitions.partition(TopicPartition(TOPIC, 0))
    assert part is not None
    part.log.fail_next_flush()
    waiting = cluster.partitions.produce(TOPIC, 0, RecordBatch.of([Record(0, 1, b"k", b"v")]))
    with caplog.at_level(logging.WARNING, logger="kcoord"):
        for _ in range(3):
            cluster.poll()
            cluster.flush()
    assert not waiting.done  # never acknowledged
    (warning,) = kcoord_lines(caplog, logging.NOTSET)
    assert warning.startswith(f"partition {TOPIC}-0: {part.log.path}: fsync failed ([Errno 5] injected fsync failure)")
    assert cluster.partitions.fetch(TOPIC, 0, 0).error == "KAFKA_STORAGE_ERROR"
    cluster.close()
    reopened = Cluster(tmp_path, ManualClock(2_000), config=config)
    try:
        assert cluster.partitions.offline and not reopened.partitions.offline
        assert reopened.partitions.fetch(TOPIC, 0, 0).error == "NONE"
    finally:
        reopened.close()


def test_kcoord_serve_shows_a_full_disk_in_its_metrics_and_to_a_real_producer(disk: Disk) -> None:
    """kafka-python's producer gets KafkaStorageError; the metrics count the failing log with its errno until space
    returns."""
    import kafka
    import kafka.errors
    from prometheus_client import generate_latest

    from kcoord.impl.server.embedded import ServerThread
    from kcoord.impl.server.serve import ServeOptions

    config = ClusterConfig(txn=TxnConfig(num_partitions=1), groups=GroupConfig(num_partitions=1))
    with ServerThread(ServeOptions(data_dir=disk.path, port=0, cluster=config)) as server:
        server.call(lambda: server.server.cluster.create_topics([(TOPIC, 1)]))  # type: ignore[union-attr]

        def metrics() -> str:
            return server.call(lambda: generate_latest(server.server.metrics.registry).decode())

        producer = kafka.KafkaProducer(bootstrap_servers=server.bootstrap, acks="all", retries=0, linger_ms=0,
                                       request_timeout_ms=10_000, max_block_ms=10_000)
        try:
            producer.send(TOPIC, bytes(2 * PAGE), partition=0).get(timeout=10)
            assert "kcoord_logs_failing{" not in metrics()
            disk.fill()
            with pytest.raises(kafka.errors.KafkaStorageError):
                producer.send(TOPIC, bytes(2 * PAGE), partition=0).get(timeout=10)
            assert 'kcoord_logs_failing{errno="ENOSPC",kind="data"} 1.0' in metrics()
            disk.free()
            producer.send(TOPIC, bytes(2 * PAGE), partition=0).get(timeout=10)
            assert "kcoord_logs_failing{" not in metrics()
        finally:
            producer.close()
