"""Media damage on restart: a flipped byte, zeroed bytes or a file cut short, at the tail or in the middle of a data
partition's log and of a coordinator log (`__consumer_offsets`), after a clean and an unclean stop.

Below the recovery point (everything after a clean stop; the first run's batches after an unclean one) nothing is cut:
the partition is not started, an ERROR names the file, the offset and the byte, and the file keeps every byte. A data
partition then answers KAFKA_STORAGE_ERROR and Metadata shows it leaderless; a coordinator partition is not loaded
(NOT_COORDINATOR, never older offsets). Above it (the unflushed tail an unclean stop may leave) the bad tail is cut
with a WARN naming the bytes, and everything before it is served.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from kcoord.impl.cluster import Cluster
from kcoord.impl.group.messages import OffsetCommitPartition, OffsetCommitRequest, OffsetFetchRequest
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition import committed_records
from kcoord.impl.storage._files import FileScan, segment_name
from kcoord.impl.storage.batch import Record, RecordBatch
from tests.impl.clusters import run, small_cluster
from tests.logs import kcoord_lines

pytestmark = [pytest.mark.adversarial]

TOPIC, GROUP = "t", "g"
PER_RUN = 10  # batches written before the first stop and again before the second


def make(data_dir: Path) -> Cluster:
    return small_cluster(data_dir, TOPIC)


def write(cluster: Cluster, log: str, i: int) -> None:
    if log == "data":
        batch = RecordBatch.of([Record(0, 1_000 + i, b"k", b"v%d" % i)])
        assert run(cluster, cluster.partitions.produce(TOPIC, 0, batch)).error == "NONE"
    else:
        commit = OffsetCommitRequest(GROUP, ((TOPIC, (OffsetCommitPartition(0, 100 + i),)),))
        answer = run(cluster, cluster.nodes[0].groups.offset_commit(commit))
        assert {e for _, parts in answer.topics for _, e in parts} == {"NONE"}


def committed(cluster: Cluster) -> tuple[str, int]:
    fetched = run(cluster, cluster.nodes[0].groups.offset_fetch(OffsetFetchRequest(GROUP, ((TOPIC, (0,)),))))
    if fetched.error != "NONE":
        return fetched.error, -1
    ((_, (entry,)),) = fetched.topics
    return entry.error, entry.offset


def values(cluster: Cluster) -> tuple[str, list[bytes | None]]:
    fetched = cluster.partitions.fetch(TOPIC, 0, 0, max_bytes=1 << 20)
    return fetched.error, [r.value for r in committed_records(fetched)]


def stopped_image(tmp_path: Path, log: str, stop: str) -> Path:
    """A data directory as a clean stop (close) or an unclean one (a copy of the files while the cluster runs: every
    append is fsynced, the recovery point is where this run's open put it) leaves it, after 2 x PER_RUN writes."""
    live = tmp_path / "live"
    first = make(live)
    for i in range(PER_RUN):
        write(first, log, i)
    first.close()
    second = make(live)
    for i in range(PER_RUN, 2 * PER_RUN):
        write(second, log, i)
    image = tmp_path / "image"
    if stop == "unclean":
        shutil.copytree(live, image)
    second.close()
    if stop == "clean":
        shutil.copytree(live, image)
    return image


def damage(segment: Path, how: str, position: int, size: int) -> None:
    data = bytearray(segment.read_bytes())
    if how == "flip":
        data[position + size - 3] ^= 0x10  # inside the last record: the CRC no longer matches
    elif how == "zero":
        data[position:position + size] = bytes(size)
    else:
        del data[position + size // 2:]  # cut inside the batch: it and everything after it is gone
    segment.write_bytes(bytes(data))


@pytest.mark.parametrize("stop", ["clean", "unclean"])
@pytest.mark.parametrize("log", ["data", "coordinator"])
@pytest.mark.parametrize("where", ["tail", "middle"])
@pytest.mark.parametrize("how", ["flip", "zero", "truncate"])
def test_media_damage_is_refused_below_the_recovery_point_and_cut_with_a_warning_above_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str, where: str, log: str, stop: str) -> None:
    image = stopped_image(tmp_path, log, stop)
    folder = image / (f"{TOPIC}-0" if log == "data" else "__consumer_offsets-0")
    segment = folder / segment_name(0)
    batches = [(position, size, batch.base_offset) for position, size, batch in FileScan(segment).located()]
    recovery_point = int((folder / "recovery-point").read_text())
    position, size, offset = batches[-1] if where == "tail" else batches[len(batches) // 4]
    refused = stop == "clean" or where == "middle"
    assert (offset < recovery_point) == refused  # the case is what it says it is
    damage(segment, how, position, size)
    damaged = segment.read_bytes()

    with caplog.at_level(logging.WARNING, logger="kcoord"):
        cluster = make(image)
    try:
        if refused:
            (error,) = kcoord_lines(caplog, logging.ERROR, exact=True)
            assert str(segment) in error and f"byte {position} (offset {offset})" in error, error
            assert "not started" in error and f"truncate -s {position}" in error, error
            assert segment.read_bytes() == damaged  # nothing was cut
            if log == "data":
                assert values(cluster)[0] == "KAFKA_STORAGE_ERROR"
                batch = RecordBatch.of([Record(0, 1, b"k", b"x")])
                assert run(cluster, cluster.partitions.produce(TOPIC, 0, batch)).error == "KAFKA_STORAGE_ERROR"
                (meta,) = cluster.partitions.describe_topics([TOPIC])
                assert [(p.error, p.leader_id) for p in meta.partitions] == [("LEADER_NOT_AVAILABLE", -1)]
                assert cluster.leader_of(TopicPartition(TOPIC, 0)) is not None  # markers wait for it
            else:
                assert committed(cluster) == ("NOT_COORDINATOR", -1)  # never the older offsets
                assert ("group", 0) in cluster.refused
        else:
            (warning,) = kcoord_lines(caplog, logging.WARNING, exact=True)
            assert not kcoord_lines(caplog, logging.ERROR)
            assert str(segment) in warning and f"cut {len(damaged) - position} bytes at byte {position}" in warning
            assert len(segment.read_bytes()) == position
            if log == "data":
                assert values(cluster) == ("NONE", [b"v%d" % i for i in range(2 * PER_RUN - 1)])
            else:
                assert committed(cluster) == ("NONE", 100 + 2 * PER_RUN - 2)
    finally:
        cluster.close()
