"""Damaged one-line metadata files: each is said in one line naming the file, what is wrong and what to do.

- a partition's own file (`coordinator-epoch`, `leader-epoch-checkpoint`): that partition is not started, as for a
  damaged log (ERROR line; the server serves the others),
- a file that is only bookkeeping (`cleaner-checkpoint`): rebuilt, with a WARN,
- a file that holds an identity the server must not guess (`partition.metadata`: the topic id; `producer-id-blocks`:
  the next producer id): `kcoord serve` does not start (one line, exit 2).
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from kcoord.cmd_serve import _CannotStart, _serve
from kcoord.impl.cluster import Cluster
from kcoord.impl.server.serve import ServeOptions
from kcoord.impl.storage.batch import Record, RecordBatch
from tests.impl.clusters import run, small_cluster
from tests.logs import kcoord_lines

DAMAGES = {"empty": b"", "binary": b"\xff\xfe\x00\x01", "words": b"seven\n"}


def make(data_dir: Path) -> Cluster:
    return small_cluster(data_dir)


@pytest.fixture()
def image(tmp_path: Path) -> Path:
    """A data directory with every kind of metadata file: coordinator partitions loaded twice (coordinator-epoch), a
    topic with a record (partition.metadata, leader-epoch-checkpoint: an empty one of an empty log is a creation cut
    short, accepted), a producer id handed out (producer-id-blocks) and a cleaner checkpoint."""
    data = tmp_path / "data"
    cluster = make(data)
    cluster.create_topics([("t", 1)])
    assert run(cluster, cluster.partitions.produce("t", 0, RecordBatch.of([Record(0, 1, b"k", b"v")]))).error == "NONE"
    assert run(cluster, cluster.nodes[0].txn.init_producer_id("tx", 60_000)).error == "NONE"
    cluster.close()
    (data / "__consumer_offsets-0" / "cleaner-checkpoint").write_text("0\n")
    make(data).close()
    for name in ("__transaction_state-0/coordinator-epoch", "t-0/leader-epoch-checkpoint", "t-0/partition.metadata",
                 "producer-id-blocks", "__consumer_offsets-0/cleaner-checkpoint"):
        assert (data / name).stat().st_size > 0, name
    return data


def one_error(caplog: pytest.LogCaptureFixture) -> str:
    (error,) = kcoord_lines(caplog, logging.ERROR)
    assert "\n" not in error
    return error


@pytest.mark.adversarial
@pytest.mark.parametrize("content", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_damaged_coordinator_epoch_is_one_line_and_only_its_partition_is_not_loaded(
        image: Path, caplog: pytest.LogCaptureFixture, content: bytes) -> None:
    file = image / "__transaction_state-0" / "coordinator-epoch"
    file.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="kcoord"):
        cluster = make(image)
    try:
        error = one_error(caplog)
        assert f"__transaction_state-0 is not loaded: {file}: not a coordinator epoch" in error
        assert "remove it to continue above the log's highest epoch" in error
        assert ("transaction", 0) in cluster.refused and 0 in cluster.nodes[0].groups.runtime.shards
        assert run(cluster, cluster.nodes[0].txn.init_producer_id("tx", 60_000)).error == "NOT_COORDINATOR"
        assert file.read_bytes() == content
    finally:
        cluster.close()


@pytest.mark.adversarial
@pytest.mark.parametrize("content", [*DAMAGES.values(), b"0\n1\n0 x\n"], ids=[*DAMAGES.keys(), "bad-entry"])
def test_a_damaged_leader_epoch_checkpoint_is_one_line_and_only_its_partition_is_offline(
        image: Path, caplog: pytest.LogCaptureFixture, content: bytes) -> None:
    file = image / "t-0" / "leader-epoch-checkpoint"
    file.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="kcoord"):
        cluster = make(image)
    try:
        error = one_error(caplog)
        assert f"partition t-0 is not started: {file}: not a leader epoch checkpoint" in error
        assert "restore it from a copy, or remove it" in error
        assert cluster.partitions.fetch("t", 0, 0).error == "KAFKA_STORAGE_ERROR"
        assert file.read_bytes() == content
    finally:
        cluster.close()


@pytest.mark.adversarial
@pytest.mark.parametrize("content", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_damaged_cleaner_checkpoint_is_rebuilt_with_a_warning(image: Path, caplog: pytest.LogCaptureFixture,
                                                                content: bytes) -> None:
    file = image / "__consumer_offsets-0" / "cleaner-checkpoint"
    file.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="kcoord"):
        cluster = make(image)
    try:
        (warning,) = kcoord_lines(caplog, logging.WARNING)
        assert f"{file}: not a log size" in warning and "rebuilt" in warning
        assert not cluster.refused and file.read_text() == "0\n"
    finally:
        cluster.close()


@pytest.mark.adversarial
@pytest.mark.parametrize("content", DAMAGES.values(), ids=DAMAGES.keys())
@pytest.mark.parametrize(("name", "problem", "remedy"), [
    ("t-0/partition.metadata", "not a partition.metadata file", "copy partition.metadata from another partition of "
                                                                "topic 't'"),
    ("producer-id-blocks", "not a producer id block file", "restore it from a copy"),
])
def test_a_damaged_topic_id_or_next_producer_id_stops_serve_in_one_line(
        image: Path, content: bytes, name: str, problem: str, remedy: str) -> None:
    file = image / name
    file.write_bytes(content)
    with pytest.raises(_CannotStart) as refused:
        asyncio.run(_serve(ServeOptions(data_dir=image, port=0)))
    message = str(refused.value)
    assert message.startswith(f"cannot start serving: {file}: {problem}") and remedy in message, message
    assert "\n" not in message and file.read_bytes() == content


def test_kcoord_serve_says_it_in_one_line_and_exits_2(image: Path) -> None:
    file = image / "producer-id-blocks"
    file.write_bytes(b"garbage")
    kcoord = Path(sys.executable).parent / "kcoord"
    done = subprocess.run([str(kcoord), "serve", "--data-dir", str(image), "--port", "0"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "kcoord: error" in line]
    assert line.startswith(f"kcoord: error: cannot start serving: {file}: not a producer id block file")
    assert "Traceback" not in done.stderr
