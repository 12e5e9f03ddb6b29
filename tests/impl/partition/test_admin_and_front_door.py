"""Topic administration (CreateTopics, Metadata with auto-creation, DescribeProducers) and the Produce front door
(the request and batch checks that come before any producer state: `validation.py`, `manager.py`)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
from pathlib import Path

import cramjam
import crc32c
import pytest

from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition import ActiveProducer, AppendOrigin, PartitionConfig, PartitionProducers, topic_name_problem
from kcoord.impl.partition.data_log import read_leader_epochs, read_partition_metadata
from kcoord.impl.storage._files import DamagedFileError, SyncLater
from kcoord.impl.storage.batch import BATCH_OVERHEAD, Record, RecordBatch, encode_batch
from kcoord.impl.storage.log import read_partition_dir

from .helpers import T0_MS, TOPIC, TP, Env, batch, make_env


def test_create_topic_answers(env: Env) -> None:
    create = env.manager.create_topic
    assert [create("events", 3), create("events", 1), create("bad name", 1), create("a" * 250, 1), create("..", 1),
            create("zero", 0), create("__consumer_offsets", 1), create("__transaction_state", 1)] == [
        "NONE", "TOPIC_ALREADY_EXISTS", "INVALID_TOPIC_EXCEPTION", "INVALID_TOPIC_EXCEPTION",
        "INVALID_TOPIC_EXCEPTION", "INVALID_PARTITIONS", "TOPIC_ALREADY_EXISTS", "TOPIC_ALREADY_EXISTS"]
    assert env.manager.topic_names() == ["events", TOPIC]
    assert sorted(p.name for p in env.path.iterdir()) == ["events-0", "events-1", "events-2", f"{TOPIC}-0"]
    assert topic_name_problem("ok.name_1-x") is None


def test_creation_problems_in_kafka_s_words(env: Env) -> None:
    assert env.manager.create_topic("a.b", 1) == "NONE"
    problem = env.manager.creation_problem
    assert [problem(name, n) for name, n in [
        ("a_b", 1), ("a.b", 1), ("ab", 1), ("x", 0), ("x", -2), ("x", -1), ("", 1), ("..", 1), ("a" * 250, 1),
        ("bad name", 1), ("__cluster_metadata", 1), ("__transaction_state", 1)]] == [
        ("INVALID_TOPIC_EXCEPTION", "Topic 'a_b' collides with existing topic: a.b"),
        ("TOPIC_ALREADY_EXISTS", "Topic 'a.b' already exists."),
        None,
        ("INVALID_PARTITIONS", "Number of partitions was set to an invalid non-positive value."),
        ("INVALID_PARTITIONS", "Number of partitions was set to an invalid non-positive value."),
        None,  # -1: the broker's default
        ("INVALID_TOPIC_EXCEPTION", "Topic name is invalid: the empty string is not allowed"),
        ("INVALID_TOPIC_EXCEPTION", "Topic name is invalid: '..' is not allowed"),
        ("INVALID_TOPIC_EXCEPTION", f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max "
                                    "allowed length 249"),
        ("INVALID_TOPIC_EXCEPTION", "Topic name is invalid: 'bad name' contains one or more characters other than "
                                    "ASCII alphanumerics, '.', '_' and '-'"),
        ("INVALID_REQUEST", "Creation of internal topic __cluster_metadata is prohibited."),
        # Kafka 4.0 answers this once its transaction coordinator made the topic; kcoord's coordinators hold theirs
        # from the first start
        ("TOPIC_ALREADY_EXISTS", "Topic '__transaction_state' already exists.")]
    assert env.manager.create_topic("a_b", 1) == "INVALID_TOPIC_EXCEPTION" and "a_b" not in env.manager.topic_names()


def test_a_creation_the_disk_fails_part_way_leaves_nothing(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of file descriptors (or disk) at the third partition: the partitions opened are closed, their
    directories removed, the error raised; the same creation then succeeds."""
    from kcoord.impl.partition import manager as manager_module

    real_open, opened, closed = manager_module.DataPartition.open, [], []

    def failing_open(*args: object, **kw: object) -> object:
        if len(opened) == 2:
            raise OSError(24, "Too many open files")
        part = real_open(*args, **kw)  # type: ignore[arg-type]
        opened.append(part)
        real_close = part.close
        part.close = lambda: (closed.append(part), real_close())  # type: ignore[method-assign]
        return part

    before = sorted(p.name for p in env.path.iterdir())
    monkeypatch.setattr(manager_module.DataPartition, "open", failing_open)
    with pytest.raises(OSError, match="Too many open files"):
        env.manager.create_topic("wide", 5)
    assert closed == opened and len(opened) == 2
    assert sorted(p.name for p in env.path.iterdir()) == before and "wide" not in env.manager.topic_names()
    monkeypatch.setattr(manager_module.DataPartition, "open", real_open)
    assert env.manager.create_topic("wide", 5) == "NONE"
    assert [p.tp.partition for p in env.manager.partitions() if p.tp.topic == "wide"] == [0, 1, 2, 3, 4]


def test_a_creation_the_final_sync_fails_leaves_nothing(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from kcoord.impl.partition import manager as manager_module

    before = sorted(p.name for p in env.path.iterdir())

    def failing_sync(self: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(manager_module.SyncLater, "sync", failing_sync)
    with pytest.raises(OSError, match="Input/output error"):
        env.manager.create_topic("wide", 3)
    assert sorted(p.name for p in env.path.iterdir()) == before and "wide" not in env.manager.topic_names()


def _crash_before_the_sync(env: Env, monkeypatch: pytest.MonkeyPatch, name: str, partitions: int,
                           crash_at_open: int | None = None) -> set[str]:
    """Create topic `name` and let the process die just before the creation's sync (or when partition
    `crash_at_open` is being opened): nothing after that runs, nothing is cleaned up. Returns the directories of
    the files that were waiting for the sync."""
    waiting: set[str] = set()
    from kcoord.impl.partition import manager as manager_module

    real_open = manager_module.DataPartition.open

    def dying_open(tp: TopicPartition, *args: object, **kw: object) -> object:
        if tp.partition == crash_at_open:
            raise SystemExit("crash")  # a BaseException stands for the process dying
        return real_open(tp, *args, **kw)  # type: ignore[arg-type]

    def dying_sync(self: SyncLater) -> None:
        waiting.update(path.parent.name for path in self._files)
        raise SystemExit("crash")

    monkeypatch.setattr(manager_module.DataPartition, "open", dying_open)
    monkeypatch.setattr(manager_module.SyncLater, "sync", dying_sync)
    monkeypatch.setattr(manager_module.shutil, "rmtree", lambda *a, **k: None)
    with pytest.raises(SystemExit):
        env.manager.create_topic(name, partitions)
    monkeypatch.undo()
    env.manager.close()
    return waiting


def test_a_creation_cut_short_by_a_crash_is_completed_at_the_next_start(env: Env,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The last partition is made durable first; the others wait for one sync, and a crash before it may lose any
    of their files or leave them empty (the disk got the directory entry, not the data). Every such loss is
    repaired at the next start: the topic has all its partitions, one topic id, and each takes records."""
    assert _crash_before_the_sync(env, monkeypatch, "wide", 6) == {f"wide-{i}" for i in range(5)}
    lost = {  # what the page cache held and the disk did not, partition by partition (5 was durable)
        0: lambda d: shutil.rmtree(d),
        1: lambda d: (d / "partition.metadata").write_bytes(b""),
        2: lambda d: (d / "leader-epoch-checkpoint").write_bytes(b""),
        3: lambda d: (d / "00000000000000000000.log").unlink(),
        4: lambda d: [(d / f).write_bytes(b"") for f in ("partition.metadata", "leader-epoch-checkpoint")],
    }
    for index, lose in lost.items():
        lose(env.path / f"wide-{index}")
    reopened = env.reopen()
    [meta] = reopened.describe_topics(["wide"])
    assert meta.error == "NONE" and [p.partition for p in meta.partitions] == list(range(6))
    assert {read_partition_metadata(env.path / f"wide-{i}") for i in range(6)} == {meta.topic_id}
    for index in range(6):
        assert reopened.produce("wide", index, batch()).result().error == "NONE"
        assert read_leader_epochs(env.path / f"wide-{index}")[-1][1] == 0
    assert [len(list(read_partition_dir(env.path / f"wide-{i}"))) for i in range(6)] == [1] * 6


def test_a_crash_while_the_partitions_are_made_is_completed_at_the_next_start(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Partitions are made last first: a crash after the first is made leaves the topic's size on disk."""
    _crash_before_the_sync(env, monkeypatch, "wide", 4, crash_at_open=1)
    assert sorted(p.name for p in env.path.iterdir() if p.name.startswith("wide")) == ["wide-1", "wide-2", "wide-3"]
    [meta] = env.reopen().describe_topics(["wide"])
    assert meta.error == "NONE" and [p.partition for p in meta.partitions] == [0, 1, 2, 3]
    assert len({(env.path / f"wide-{i}" / "partition.metadata").read_text() for i in range(4)}) == 1


def test_an_empty_partition_metadata_is_repaired_only_below_a_partition_that_has_one(env: Env) -> None:
    """An empty `partition.metadata` in a topic's highest partition is not a creation cut short (that one is made
    durable first): the start is refused rather than the topic shrunk or its id guessed."""
    assert env.manager.create_topic("wide", 3) == "NONE"
    env.manager.close()
    (env.path / "wide-2" / "partition.metadata").write_bytes(b"")
    with pytest.raises(DamagedFileError, match=r"wide-2/partition.metadata: not a partition.metadata file \(empty\) "
                                               r"and no higher partition of topic 'wide' has one"):
        env.reopen()
    (env.path / "lone-0").mkdir()
    (env.path / "lone-0" / "partition.metadata").write_bytes(b"")
    (env.path / "wide-2" / "partition.metadata").write_bytes(b"")
    with pytest.raises(DamagedFileError, match=r"\(empty\) and no higher partition"):
        env.reopen()


def test_an_empty_leader_epoch_checkpoint_is_refused_for_a_log_with_records(env: Env) -> None:
    """Refused for that partition only: it is not started (KAFKA_STORAGE_ERROR) and the file is left as it is."""
    assert env.produce(batch(), txn_id=None).error == "NONE"
    env.manager.close()
    (env.path / str(TP) / "leader-epoch-checkpoint").write_bytes(b"")
    manager = env.reopen()
    assert "leader-epoch-checkpoint: not a leader epoch checkpoint (empty" in manager.offline[TP]
    assert manager.fetch(TP.topic, TP.partition, 0).error == "KAFKA_STORAGE_ERROR"
    assert (env.path / str(TP) / "leader-epoch-checkpoint").read_bytes() == b""


def test_creating_and_reopening_many_partitions_takes_few_fsyncs(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """One disk flush for a topic's partitions, not several each: the last partition's own fsyncs and one syncfs
    at creation; at a start, one fsync a partition (the leader epoch checkpoint's new content, before its rename)
    and one syncfs."""
    from kcoord.impl.storage import _files

    fsyncs: list[int] = []
    syncfs_calls: list[int] = []
    real_fsync, real_syncfs = os.fsync, _files._syncfs()
    assert real_syncfs is not None  # Linux
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    monkeypatch.setattr(_files, "_syncfs", lambda: lambda fd: (syncfs_calls.append(fd), real_syncfs(fd))[1])
    assert env.manager.create_topic("wide", 50) == "NONE"
    assert len(fsyncs) <= 7 and len(syncfs_calls) == 1
    env.manager.close()
    fsyncs.clear()
    syncfs_calls.clear()
    env.reopen()
    assert len(fsyncs) == 51 and len(syncfs_calls) == 2  # (`orders` and `wide`: one sync a topic)


def test_describe_topics_with_and_without_auto_creation(env: Env) -> None:
    [known] = env.manager.describe_topics([TOPIC])
    assert (known.error, known.is_internal, len(known.partitions)) == ("NONE", False, 1)
    p = known.partitions[0]
    assert (p.error, p.partition, p.leader_id, p.replica_ids, p.isr_ids) == ("NONE", 0, 0, (0,), (0,))
    assert env.manager.describe_topics(["new"])[0].error == "UNKNOWN_TOPIC_OR_PARTITION"
    [created] = env.manager.describe_topics(["new"], allow_auto_creation=True)
    assert created.error == "NONE" and len(created.partitions) == env.config.num_partitions
    assert env.manager.describe_topics(["bad/name"], allow_auto_creation=True)[0].error == "INVALID_TOPIC_EXCEPTION"
    internal = env.manager.describe_topics(["__consumer_offsets"], allow_auto_creation=True)[0]
    assert internal.error == "UNKNOWN_TOPIC_OR_PARTITION"  # the coordinators own their topics
    assert [t.name for t in env.manager.describe_topics()] == ["new", TOPIC]


def test_a_closed_manager_creates_no_topic(env: Env) -> None:
    """A request handled after the server closed its cluster must not write partition directories: a restarted
    server owns the data directory by then (a late auto-creation once gave a topic's partitions two ids)."""
    before = sorted(p.name for p in env.path.iterdir())
    env.manager.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.manager.create_topic("late", 2)
    with pytest.raises(RuntimeError, match="closed"):
        env.manager.describe_topics(["late"], allow_auto_creation=True)
    assert sorted(p.name for p in env.path.iterdir()) == before
    env.reopen()
    assert env.manager.topic_names() == [TOPIC]


def test_auto_creation_off_by_broker_config(tmp_path: Path) -> None:
    for env in make_env(tmp_path, PartitionConfig(auto_create_topics_enable=False, num_partitions=4)):
        assert env.manager.describe_topics(["x"], allow_auto_creation=True)[0].error == "UNKNOWN_TOPIC_OR_PARTITION"
        assert env.manager.create_topic("x") == "NONE"
        assert len(env.manager.describe_topics(["x"])[0].partitions) == 4


def corrupt(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1:]


@pytest.mark.parametrize(("name", "data", "error"), [
    ("crc", corrupt(encode_batch(batch(1, 0, 0)), 70), "CORRUPT_MESSAGE"),
    ("torn", encode_batch(batch(1, 0, 0))[:-3], "CORRUPT_MESSAGE"),
    ("trailing bytes", encode_batch(batch(1, 0, 0)) + b"\x00\x01", "CORRUPT_MESSAGE"),
    ("two batches", encode_batch(batch(1, 0, 0)) * 2, "INVALID_RECORD"),
    ("magic 1", encode_batch(batch(1, 0, 0))[:16] + b"\x01" + encode_batch(batch(1, 0, 0))[17:], "INVALID_RECORD"),
    ("base offset 5", encode_batch(RecordBatch.of([Record(5, 1, None, b"v")], producer_id=1, producer_epoch=0,
                                                  base_sequence=0)), "INVALID_RECORD"),
    ("offset gap", encode_batch(RecordBatch.of([Record(0, 1, None, b"v"), Record(2, 1, None, b"w")])),
     "INVALID_RECORD"),
    ("control", encode_batch(RecordBatch.of([Record(0, 1, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
                                            producer_id=1, producer_epoch=0, is_control=True,
                                            is_transactional=True)), "INVALID_RECORD"),
    ("no sequence", encode_batch(batch(1, 0, -1)), "INVALID_RECORD"),
    ("negative epoch", encode_batch(RecordBatch.of([Record(0, 1, None, b"v")], producer_id=1, producer_epoch=-1,
                                                   base_sequence=0)), "INVALID_RECORD"),
    ("bad timestamp", encode_batch(RecordBatch.of([Record(0, -5, None, b"v")])), "INVALID_TIMESTAMP"),
    ("gzip", encode_batch(batch(1, 0, 0))[:21] + struct.pack(">h", 1) + encode_batch(batch(1, 0, 0))[23:],
     "CORRUPT_MESSAGE"),  # the attributes are covered by the CRC: a flipped codec bit is corruption
])
def test_front_door_rejects_malformed_batches(env: Env, name: str, data: bytes, error: str) -> None:
    result = env.produce(data)
    assert result.error == error, (name, result)
    assert (result.base_offset, env.on_disk(), env.rows()) == (-1, [], [])


def test_a_codec_kafka_does_not_define_is_unsupported_compression_type(env: Env) -> None:
    raw = bytearray(encode_batch(batch(1, 0, 0)))
    struct.pack_into(">h", raw, 21, 5)  # codec 5, with a correct CRC
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    assert env.produce(bytes(raw)).error == "UNSUPPORTED_COMPRESSION_TYPE"
    assert env.on_disk() == []


def test_request_level_answers(env: Env) -> None:
    m = env.manager
    assert m.produce(TOPIC, 0, batch(), acks=2).result().error == "INVALID_REQUIRED_ACKS"
    assert m.produce(TOPIC, 1, batch()).result().error == "UNKNOWN_TOPIC_OR_PARTITION"
    assert m.produce("nope", 0, batch()).result().error == "UNKNOWN_TOPIC_OR_PARTITION"  # produce never creates
    assert env.produce(batch(1, 0, 0, txn=True), txn_id=None).error == "INVALID_REQUEST"
    small = PartitionConfig(max_message_bytes=100)
    env.manager.close()
    env.reopen(config=small)
    assert env.produce(batch(n=10)).error == "MESSAGE_TOO_LARGE"
    assert env.produce(batch(1, 0, 0), origin=AppendOrigin.CLIENT).error == "NONE"
    assert env.verifier.calls == []


def test_describe_producers_shows_what_the_partition_keeps_per_producer(env: Env) -> None:
    """DescribeProducers (KIP-664, `UnifiedLog.activeProducers`): epoch, last sequence, latest timestamp, coordinator
    epoch and open transaction's first offset of each producer, by producer id; -1 where there is none."""
    assert env.manager.describe_producers(TOPIC, 0) == PartitionProducers("NONE")
    assert env.produce(batch(8, 0, seq=0, n=1, txn=True, ts_ms=T0_MS + 50)).error == "INVALID_TXN_STATE"  # unverified
    env.verifier.add(8)
    assert env.produce(batch(8, 0, seq=0, n=2, txn=True, ts_ms=T0_MS + 50)).base_offset == 0
    assert env.produce(batch(7, 2, seq=0, n=3)).base_offset == 2
    assert env.manager.describe_producers(TOPIC, 0) == PartitionProducers("NONE", (
        ActiveProducer(7, 2, 2, T0_MS + 2, -1, -1),
        ActiveProducer(8, 0, 1, T0_MS + 51, -1, 0)))
    assert env.marker(8, 0, "COMMIT", coordinator_epoch=4) == {TP: "NONE"}
    marker_ts = env.clock.now_ms()
    assert env.manager.describe_producers(TOPIC, 0).producers[1] == ActiveProducer(8, 0, 1, marker_ts, 4, -1)
    env.reopen()  # rebuilt from the log
    assert [p.producer_id for p in env.manager.describe_producers(TOPIC, 0).producers] == [7, 8]
    assert env.manager.describe_producers(TOPIC, 0).producers[1].coordinator_epoch == 4


@pytest.mark.parametrize(("topic", "partition", "error"), [
    (TOPIC, 1, "UNKNOWN_TOPIC_OR_PARTITION"), ("nope", 0, "UNKNOWN_TOPIC_OR_PARTITION"),
    ("__consumer_offsets", 0, "UNKNOWN_TOPIC_OR_PARTITION"), ("bad name", 0, "INVALID_TOPIC_EXCEPTION")])
def test_describe_producers_of_a_partition_not_here(env: Env, topic: str, partition: int, error: str) -> None:
    answer = env.manager.describe_producers(topic, partition)
    assert (answer.error, answer.producers) == (error, ())
    assert (answer.error_message is not None) == (error == "INVALID_TOPIC_EXCEPTION")


def _zstd(b: RecordBatch) -> bytes:
    """`b` as a producer compressing with zstd sends it."""
    plain = encode_batch(b)
    payload = bytes(cramjam.zstd.compress(plain[BATCH_OVERHEAD:]))
    return encode_batch(dataclasses.replace(b, compression=4, compressed_records=payload))


def test_a_compressed_batch_is_appended_with_the_producers_bytes_and_fetched_as_written(env: Env) -> None:
    """As Kafka with `compression.type=producer`: the records are decompressed to validate them, and the batch is
    stored and fetched compressed, only its base offset and leader epoch rewritten (neither is under the CRC)."""
    assert env.produce(batch(n=2)).base_offset == 0
    sent = _zstd(batch(7, 0, seq=0, n=30, names=[f"v{i}" * 40 for i in range(30)]))
    result = env.produce(sent)
    assert (result.error, result.base_offset) == ("NONE", 2)
    stored = env.on_disk()[-1]
    assert (stored.compression, stored.base_offset, stored.compressed_records) == (4, 2, sent[BATCH_OVERHEAD:])
    fetched = env.manager.fetch(TOPIC, 0, 2)
    assert fetched.records.endswith(sent[BATCH_OVERHEAD:]) and len(fetched.records) == len(sent)
    assert [r.value for r in fetched.batches[0].records] == [(f"v{i}" * 40).encode() for i in range(30)]
    assert env.state(7)["last_sequence"] == 29  # type: ignore[index]
    env.reopen()  # producer state rebuilt from the compressed batch's header
    assert env.state(7)["last_sequence"] == 29  # type: ignore[index]
    assert env.produce(_zstd(batch(7, 0, seq=30, n=2))).base_offset == 32


def test_a_compressed_batch_that_does_not_decompress_is_corrupt_message(env: Env) -> None:
    sent = bytearray(_zstd(batch(7, 0, seq=0, n=30)))
    del sent[-5:]
    struct.pack_into(">i", sent, 8, len(sent) - 12)
    struct.pack_into(">I", sent, 17, crc32c.crc32c(bytes(sent[21:])))
    result = env.produce(bytes(sent))
    assert result.error == "CORRUPT_MESSAGE" and "compressed batch" in (result.error_message or "")
    assert env.on_disk() == [] and env.state(7) is None
