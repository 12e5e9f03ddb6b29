"""A power cut at any moment of committing transactions (`--durability fsync`) leaves no transaction open and loses
no commit that was answered.

A power cut keeps what was fsynced and, of each log's tail written since, any part the kernel happened to write back:
here each snapshot of the data folder, taken between two turns of the loop, has the unfsynced tail of the coordinator
logs, of the data logs, of both or of neither cut off (`durable`: the size of each file at its last fsync, recorded by
wrapping `os.fsync`). What this shows, for every snapshot and every cut, once a new cluster has loaded it and run
until the transaction timeout has passed:

- no data partition keeps a transaction open (last stable offset = high watermark): a Complete* record that reached
  the disk while a marker it vouches for did not would leave that partition's transaction open for ever (the
  coordinator would not re-send markers for a complete transaction), so the markers must be durable before the
  Complete* is written — it need not be durable itself before it is applied (`TxnConfig.complete_when_written`):
  losing it is repaired by the load (the PrepareCommit re-sends the markers, which the partitions take again);
- every transaction whose EndTxn was answered NONE before the snapshot is committed: its records are read by a
  read_committed fetch, and every other record is not.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kcoord.impl.cluster import Cluster, ClusterConfig
from kcoord.impl.group.config import GroupConfig
from kcoord.impl.interfaces import TopicPartition
from kcoord.impl.partition import IsolationLevel, committed_records
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.storage.batch import Record, RecordBatch
from kcoord.impl.storage.log import Durability
from kcoord.impl.txn.config import TxnConfig

TOPIC = "cut"
PRODUCERS = 3
TRANSACTIONS = 3
TIMEOUT_MS = 60_000
CUTS = {"nothing": (), "coordinator logs": ("__",), "data logs": (TOPIC,), "all": ("__", TOPIC)}


def config() -> ClusterConfig:
    return ClusterConfig(txn=TxnConfig(num_partitions=1, abort_interval_ms=1_000), groups=GroupConfig(num_partitions=1),
                         durability=Durability.fsync())


def batch(pid: int, epoch: int, seq: int, value: str) -> RecordBatch:
    return RecordBatch.of([Record(0, 1_000, b"k", value.encode())], producer_id=pid, producer_epoch=epoch,
                          base_sequence=seq, is_transactional=True)


class Producer:
    """One transactional producer's requests, one at a time: init, then per transaction add two partitions, write
    one record to each, commit."""

    def __init__(self, cluster: Cluster, index: int) -> None:
        self.cluster = cluster
        self.txn_id = f"cut-{index}"
        self.parts = (TopicPartition(TOPIC, 2 * index), TopicPartition(TOPIC, 2 * index + 1))
        self.steps = self._steps()
        self.waiting: Completion[Any] | None = None
        self.answers: list[Any] = []
        self.committed: list[str] = []  # values of transactions whose EndTxn was answered NONE

    def _steps(self) -> Any:
        coordinator = self.cluster.node_for_coordinator("transaction", self.txn_id).txn
        yield coordinator.init_producer_id(self.txn_id, TIMEOUT_MS)
        pid, epoch = self.answers[-1].producer_id, self.answers[-1].producer_epoch
        for t in range(TRANSACTIONS):
            while True:
                yield coordinator.add_partitions(self.txn_id, pid, epoch, list(self.parts))
                if set(self.answers[-1].values()) == {"NONE"}:
                    break
                assert set(self.answers[-1].values()) == {"CONCURRENT_TRANSACTIONS"}
            values = [f"{self.txn_id}-{t}-{tp.partition}" for tp in self.parts]
            for tp, value in zip(self.parts, values, strict=True):
                yield self.cluster.partitions.produce(TOPIC, tp.partition, batch(pid, epoch, t, value),
                                                      transactional_id=self.txn_id)
                assert self.answers[-1].error == "NONE"
            yield coordinator.end_txn(self.txn_id, pid, epoch, "COMMIT", 3)
            assert self.answers[-1].error == "NONE"
            self.committed += values

    def step(self) -> bool:
        """Send the next request if the last one is answered; False once done."""
        if self.waiting is not None:
            if not self.waiting.done:
                return True
            self.answers.append(self.waiting.result())
        self.waiting = next(self.steps, None)
        return self.waiting is not None


def fsync_round(cluster: Cluster) -> None:
    """What `kcoord serve --durability fsync` does on its threads, here in line: every log with unfsynced appends."""
    tickets = cluster.begin_flush()
    for ticket in tickets:
        ticket.fsync()
    cluster.end_flush(tickets)


def cut(snapshot: Path, durable: dict[str, int], source: Path, losing: tuple[str, ...], into: Path) -> None:
    """A copy of `snapshot` whose segment files of the logs named by `losing` (prefixes of the partition folder)
    keep only what was fsynced."""
    shutil.copytree(snapshot, into)
    for path in into.rglob("*.log"):
        if path.parent.name.startswith(losing):
            original = str(source / path.relative_to(into))
            os.truncate(path, min(durable.get(original, 0), path.stat().st_size))


def settle(cluster: Cluster, clock: ManualClock) -> None:
    """Load, re-send markers, time out what was left Ongoing and abort it; everything flushed."""
    for _ in range(40):
        for _ in range(20):
            if cluster.poll() == 0:
                break
        cluster.flush()
        clock.advance(5_000)


@pytest.mark.parametrize("what", list(CUTS))
def test_a_power_cut_leaves_no_transaction_open_and_keeps_every_answered_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    durable: dict[str, int] = {}
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        real_fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.endswith(".log"):
            durable[path] = max(durable.get(path, 0), os.fstat(fd).st_size)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    source = tmp_path / "live"
    clock = ManualClock(1_000)
    cluster = Cluster(source, clock, config=config())
    cluster.start()
    cluster.create_topics([(TOPIC, 2 * PRODUCERS)])
    fsync_round(cluster)
    producers = [Producer(cluster, i) for i in range(PRODUCERS)]
    snapshots: list[tuple[Path, dict[str, int], list[str]]] = []
    turn = 0
    while any([p.step() for p in producers]):
        cluster.poll()
        if turn % 3 != 2:  # (now and then two turns' writes share a round)
            snap = tmp_path / f"snap-{turn}"
            shutil.copytree(source, snap)
            snapshots.append((snap, dict(durable), [v for p in producers for v in p.committed]))
            fsync_round(cluster)
            cluster.poll()
        turn += 1
        assert turn < 500, "the workload does not finish"
    assert all(len(p.committed) == 2 * TRANSACTIONS for p in producers)
    cluster.close()
    monkeypatch.setattr(os, "fsync", real_fsync)
    for i, (snap, fsynced, committed) in enumerate(snapshots):
        recovered = tmp_path / f"cut-{i}"
        cut(snap, fsynced, source, CUTS[what], recovered)
        clock = ManualClock(1_000 + 1_000 * i)
        again = Cluster(recovered, clock, config=config())
        again.start()
        settle(again, clock)
        for p in range(2 * PRODUCERS):
            part = again.partitions.partition(TopicPartition(TOPIC, p))
            assert part is not None
            assert part.last_stable_offset == part.high_watermark == part.log_end_offset, \
                f"snapshot {i} ({what} cut): {TOPIC}-{p} keeps a transaction open"
        read = {r.value.decode() for p in range(2 * PRODUCERS)
                for r in committed_records(again.partitions.fetch(TOPIC, p, 0,
                                                                  isolation_level=IsolationLevel.READ_COMMITTED))
                if r.value is not None}
        assert set(committed) <= read, f"snapshot {i} ({what} cut): answered commits lost: {set(committed) - read}"
        again.close()
