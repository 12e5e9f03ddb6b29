"""`kcoord serve --durability`: what each mode promises, shown.

- `os` (acknowledged = in the page cache): a server killed with SIGKILL (a process crash: the kernel still holds
  what `write` handed it) restarts with every acknowledged record, committed offset and committed transaction, and
  it issued no fsync while it answered them;
- `fsync` (acknowledged = on disk): nothing is answered before its fsync, a lone writer does not wait for company,
  and the writes of concurrent producers that arrive while an fsync runs share the next one (far fewer fsyncs per
  transaction than one producer alone).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from served_cluster import free_port_block

from kcoord.impl.cluster import ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.server.embedded import ServerThread
from kcoord.impl.server.serve import ServeOptions
from kcoord.impl.storage.log import Durability

pytestmark = [pytest.mark.wire]

KCOORD = str(Path(sys.executable).parent / "kcoord")
RECORDS = 40


def start_serve(data_dir: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    process = subprocess.Popen([KCOORD, "serve", "--data-dir", str(data_dir), "--port", str(port), "--log-level",
                                "warning", "--set", "groups.initial_rebalance_delay_ms=0", *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    while "listening on" not in (line := process.stdout.readline()):
        assert line, f"kcoord serve did not start: {process.stderr.read() if process.stderr else ''}"
    return process


def acknowledged_workload(bootstrap: str) -> tuple[list[bytes], int]:
    """Records produced with acks=all, a committed transaction and a committed offset: what was acknowledged."""
    import kafka
    from kafka.structs import OffsetAndMetadata, TopicPartition

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, request_timeout_ms=30_000,
                                   max_block_ms=30_000)
    values = [b"plain-%d" % i for i in range(RECORDS)]
    for value in values:
        producer.send("durable", value, partition=0).get(timeout=30)
    producer.close()
    txn = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="durable-txn", linger_ms=0,
                              request_timeout_ms=30_000, max_block_ms=30_000)
    txn.init_transactions()
    txn.begin_transaction()
    txn.send("durable", b"in-txn", partition=0)
    txn.commit_transaction()
    txn.close()
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id="durable-group", enable_auto_commit=False)
    tp = TopicPartition("durable", 0)
    consumer.assign([tp])
    consumer.commit({tp: OffsetAndMetadata(RECORDS, "", -1)})
    consumer.close()
    return [*values, b"in-txn"], RECORDS


def found_after_restart(bootstrap: str) -> tuple[list[bytes], int | None]:
    """What a read_committed reader gets from the partition's start to its end as the restarted server gives it
    (ListOffsets: the last stable offset; every record of the log, nothing left after it), and the group's committed
    offset. (Read to that offset, not until 5 s pass without a record: the same records, without the idle wait.)"""
    import kafka
    from kafka.structs import TopicPartition

    tp = TopicPartition("durable", 0)
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id="durable-group", enable_auto_commit=False,
                                   isolation_level="read_committed", auto_offset_reset="earliest")
    consumer.assign([tp])
    committed = consumer.committed(tp)
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while consumer.position(tp) < end:
        assert time.monotonic() < deadline, f"read to offset {consumer.position(tp)} of {end} in 30 s"
        values += [r.value for records in consumer.poll(timeout_ms=500).values() for r in records]
    consumer.close()
    return values, committed


@pytest.mark.parametrize("mode", ["os", "fsync"])
def test_acknowledged_data_survives_sigkill(tmp_path: Path, mode: str) -> None:
    """A process crash (SIGKILL, no clean stop: no flush, no recovery point moved) keeps everything acknowledged,
    in both modes: `os` because the page cache holds what `write` returned, `fsync` because it was on disk."""
    port = free_port_block(1)
    process = start_serve(tmp_path / "data", port, "--durability", mode)
    try:
        acknowledged, committed_offset = acknowledged_workload(f"127.0.0.1:{port}")
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    restarted = start_serve(tmp_path / "data", port, "--durability", mode)
    try:
        values, committed = found_after_restart(f"127.0.0.1:{port}")
    finally:
        restarted.send_signal(signal.SIGTERM)
        _, err = restarted.communicate(timeout=60)
    assert restarted.returncode == 0, err
    assert values == acknowledged
    assert committed == committed_offset


@pytest.mark.parametrize("method", ["fsync", "auto"])
def test_the_fsync_method_option_reaches_the_server(tmp_path: Path, method: str) -> None:
    """`--fsync-method` is the server's: it says at its start how its rounds are synced, and answers acks=all."""
    import kafka

    port = free_port_block(1)
    process = start_serve(tmp_path / "data", port, "--durability", "fsync", "--fsync-method", method,
                          "--log-level", "info")
    try:
        producer = kafka.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all", linger_ms=0,
                                       request_timeout_ms=30_000, max_block_ms=30_000)
        producer.send("method", b"on disk", partition=0).get(timeout=30)
        producer.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    said = {"fsync": "--durability fsync: each log of a round fsynced (--fsync-method fsync)",
            "auto": f"--durability fsync: one syncfs of {tmp_path / 'data'}'s file system per round "
                    "(--fsync-method auto)"}
    assert [line.split(": ", 1)[1] for line in err.splitlines() if "kcoord.impl.storage.round_sync" in line] == \
        [said[method]]
    assert " WARNING " not in err and "Traceback" not in err


def test_an_unknown_fsync_method_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([KCOORD, "serve", "--data-dir", str(tmp_path / "data"), "--port", "0", "--fsync-method",
                           "sometimes"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--fsync-method 'sometimes': expected one of auto, syncfs, fsync" in done.stderr


def served(tmp_path: Path, durability: Durability, fsync_method: str = "auto") -> ServerThread:
    config = ClusterConfig(groups=GroupConfig(initial_rebalance_delay_ms=0), durability=durability)
    return ServerThread(ServeOptions(data_dir=tmp_path, port=0, cluster=config,
                                     fsync_method=fsync_method))  # type: ignore[arg-type]


class FsyncCounter:
    """Every fsync of the process counted (`count`), and those of the data partition `shared-0`'s segments; each
    takes at least `delay_s` (a slow disk: writes that arrive while one runs are bound to find it running)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay_s: float = 0.0) -> None:
        self.count = 0
        self.shared = 0
        self._lock = threading.Lock()
        real = os.fsync

        def counted(fd: int) -> None:
            try:
                path = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                path = ""
            with self._lock:
                self.count += 1
                self.shared += "/shared-0/" in path and path.endswith(".log")
            real(fd)
            time.sleep(delay_s)

        monkeypatch.setattr(os, "fsync", counted)


def transactions(bootstrap: str, name: str, count: int, partition: int, ready: threading.Barrier | None) -> None:
    import kafka

    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=name, linger_ms=0,
                                   request_timeout_ms=60_000, max_block_ms=60_000)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("shared", b"warm-up", partition=partition)
        producer.commit_transaction()
        if ready is not None:
            ready.wait(60)
        for i in range(count):
            producer.begin_transaction()
            producer.send("shared", b"%d" % i, partition=partition).get(timeout=60)
            producer.commit_transaction()
    finally:
        producer.close()


def test_os_durability_answers_without_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`os` acknowledges what is in the page cache: transactions are answered without a single fsync (a segment roll
    and a clean close still fsync)."""
    with served(tmp_path, Durability.os()) as server:
        transactions(server.bootstrap, "warm", 1, 0, None)  # the topic and the coordinators' files are made
        counter = FsyncCounter(monkeypatch)
        transactions(server.bootstrap, "os-txn", 3, 0, None)
        during = counter.count
    assert during == 0
    assert counter.count > 0  # the clean stop fsynced what the page cache held


def test_fsync_rounds_are_one_syncfs_each_and_no_fsync_by_default(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`fsync` with the default `--fsync-method auto` (Linux 5.8 and later): every round of the transactions' writes
    is one syncfs of the data directory's file system (`RoundSync`), and no log is fsynced on its own."""
    with served(tmp_path, Durability.fsync()) as server:
        transactions(server.bootstrap, "warm", 1, 0, None)  # the topic and the coordinators' files are made
        sync = server.server._round_sync
        assert sync is not None and sync.whole_round
        real_syncfs = sync._syncfs
        assert real_syncfs is not None
        synced: list[int] = []

        def counted(fd: int) -> int:
            synced.append(fd)
            return real_syncfs(fd)

        monkeypatch.setattr(sync, "_syncfs", counted)
        counter = FsyncCounter(monkeypatch)
        transactions(server.bootstrap, "syncfs-txn", 3, 0, None)
        fsyncs, syncfs_calls = counter.count, len(synced)
    assert fsyncs == 0
    assert syncfs_calls >= 3 * 2  # (each transaction: its record, then its markers and more, before its answers)


def test_fsync_group_commit_shares_fsyncs_between_producers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fsync`: one producer alone pays its fsyncs itself and does not wait for company; eight producers writing to
    the same partition share its fsyncs (each transaction writes its record and its commit marker there: two fsyncs
    of that log alone, far fewer together), while the fsyncs of different logs run side by side. The disk is made
    slow (20 ms an fsync), as the producers here share the test's interpreter with the server and could otherwise
    not send faster than this machine's fsyncs end. (`--fsync-method fsync`, whose fsyncs count the logs of each
    round; `auto` syncs a round with one syncfs.)"""
    per_producer = 6
    with served(tmp_path, Durability.fsync(), fsync_method="fsync") as server:
        transactions(server.bootstrap, "alone-warm", 1, 0, None)
        counter = FsyncCounter(monkeypatch, delay_s=0.02)
        started = time.monotonic()
        transactions(server.bootstrap, "alone", per_producer, 0, None)
        alone_s = time.monotonic() - started
        alone, alone_shared = counter.count / per_producer, counter.shared / per_producer
        counter.count = counter.shared = 0
        ready = threading.Barrier(8)
        errors: list[BaseException] = []

        def producer(i: int) -> None:
            try:
                transactions(server.bootstrap, f"crowd-{i}", per_producer, 0, ready)
            except BaseException as e:
                errors.append(e)
                ready.abort()

        threads = [threading.Thread(target=producer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        crowd, crowd_shared = counter.count / (8 * per_producer), counter.shared / (8 * per_producer)
    print(f"fsyncs per transaction: alone {alone:.2f} ({alone_shared:.2f} of shared-0; {alone_s:.1f} s for "
          f"{per_producer}), 8 producers {crowd:.2f} ({crowd_shared:.2f} of shared-0)")
    assert alone >= 3  # a lone writer's writes were fsynced: AddPartitions, the record, PrepareCommit, markers...
    assert alone_shared >= 2  # its record and its marker, each fsynced before it was answered
    assert alone_s < per_producer * alone * 0.02 + per_producer * 1.0  # no wait for company, only its fsyncs
    # concurrent writers to one log shared its fsyncs: without sharing each transaction pays at least its record's
    # and its marker's (>= 2, as alone); with it, 0.7-0.9 on an idle machine, 1.04 once at load 10 (the eight
    # producers share the test's interpreter, so a starved machine sends less at once)
    assert crowd_shared < 1.5
