"""Loading and failover (reference §1.13): what a load restores, markers re-sent for Prepare* transactions, and a
partition moved mid-transaction to another node (same data dir, and a copy of it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kcoord.impl.errors import KafkaError
from kcoord.impl.runtime.cleaner import Cleaning
from kcoord.impl.storage.log import Durability, LogCorruptedError, PartitionLog
from kcoord.impl.txn import TxnConfig
from kcoord.impl.txn.records import encode_instance, persisted_view

from .harness import PARTS, Harness, RecordingTarget, states

T = "txn-load"
PID, E = 5, 4


def test_a_load_restores_what_was_written_and_resets_the_unpersisted_variables(h: Harness) -> None:
    r = h.init(T)
    h.add(T, r.producer_id, r.producer_epoch)
    h.target.hold = True
    assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", 5).error == "NONE"
    live = dict(h.get(T))
    assert live["last_producer_epoch"] == 0
    h.coordinator.unload(h.partition(T))
    h.coordinator.load(h.partition(T))
    loaded = h.get(T)
    assert persisted_view(loaded, 1) == persisted_view(live, 1)
    assert (loaded["last_producer_epoch"], loaded["has_failed_epoch_fence"]) == (-1, False)
    assert encode_instance(loaded, 1) == encode_instance(live, 1)


@pytest.mark.parametrize(("state", "result"), [("PrepareCommit", "COMMIT"), ("PrepareAbort", "ABORT")])
def test_markers_are_resent_after_a_load(h: Harness, state: str, result: str) -> None:
    h.seed(T, state, producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset(str(tp) for tp in PARTS))
    epoch = h.shard(T).coordinator_epoch
    mark = h.end_offset(T)
    h.settle()
    (marker,) = h.target.markers()
    assert (marker.producer_id, marker.producer_epoch, marker.result, marker.coordinator_epoch,
            marker.partitions) == (PID, E, result, epoch, tuple(sorted(PARTS)))
    assert states(h.records_since(T, mark)) == ["Complete" + state[len("Prepare"):]]


def test_a_failed_fence_is_forgotten_by_a_load(tmp_path: Path) -> None:
    """has_failed_epoch_fence is not persisted: after a reload the next fence bumps from the written epoch. (Below
    transaction.version 2: a failed TV2 fence keeps nothing in memory to forget.)"""
    h = Harness(tmp_path, config=TxnConfig(server_txn_version=0))
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset({"orders-0"}))
    h.shard(T).log.fail_next_append()
    assert h.init(T).error == "NOT_COORDINATOR"
    assert h.get(T)["has_failed_epoch_fence"] is True and h.get(T)["producer_epoch"] == E + 1
    h.coordinator.unload(h.partition(T))
    h.coordinator.load(h.partition(T))
    assert (h.get(T)["producer_epoch"], h.get(T)["has_failed_epoch_fence"]) == (E, False)
    h.coordinator.shutdown()


def test_a_compacted_log_loads(h: Harness) -> None:
    """Compaction keeps the last value per key and drops tombstones: the load installs those snapshots."""
    r = h.init(T)
    h.add(T, r.producer_id, r.producer_epoch)
    assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", 3).error == "NONE"
    gone = "txn-load-gone"
    h.seed(gone, "CompleteAbort", producer_id=PID, previous_producer_id=PID, producer_epoch=E)
    h.settle()
    h.clock.advance(8 * 24 * 3600 * 1000)
    h.init(T)  # T stays fresh; `gone` expires
    assert [d.result() for d in h.coordinator.expire_ids(h.shard(gone))] == ["NONE"]
    partition = h.partition(T)
    for p in {partition, h.partition(gone)}:
        h.coordinator.unload(p)
        with PartitionLog.open(h.log_dir(p)) as log:
            log.compact(h.clock.now_ms(), tombstone_retention_ms=0)
        h.coordinator.load(p)
    assert (h.get(T)["state"], h.get(T)["producer_epoch"]) == ("Empty", 1) and h.get(gone) is None
    assert len(h.records_since(T, 0)) <= 2


def test_the_last_value_wins_after_a_tombstone(h: Harness) -> None:
    h.seed(T, "CompleteCommit", producer_id=PID, previous_producer_id=PID, producer_epoch=E)
    h.clock.advance(8 * 24 * 3600 * 1000)
    assert [d.result() for d in h.coordinator.expire_ids(h.shard(T))] == ["NONE"]
    r = h.init(T)  # the id starts over
    h.coordinator.unload(h.partition(T))
    h.coordinator.load(h.partition(T))
    assert states(h.records_since(T, 0))[-2:] == [None, "Empty"]
    assert (h.get(T)["producer_id"], h.get(T)["producer_epoch"]) == (r.producer_id, 0)


def test_unload_stops_markers_and_fails_writes_in_flight(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=50, max_bytes=1 << 20))
    h.seed(T, "Ongoing", producer_id=PID, previous_producer_id=PID, producer_epoch=E,
           partitions=frozenset({"orders-0"}))
    ending = h.coordinator.end_txn(T, PID, E, "COMMIT", 3)
    assert not ending.done
    h.coordinator.unload(h.partition(T))
    assert ending.result().error == "NOT_COORDINATOR"
    assert h.coordinator.channel.pending_transactions == 0


@pytest.mark.parametrize("copy", [False, True])
def test_failover_mid_transaction_completes_on_the_new_node(tmp_path: Path, copy: bool) -> None:
    node_a = Harness(tmp_path / "a", node_id=1)
    committing, aborting, open_txn = "fo-commit", "fo-abort", "fo-open"
    ids = {}
    for txn_id in (committing, aborting, open_txn):
        r = node_a.init(txn_id)
        assert node_a.add(txn_id, r.producer_id, r.producer_epoch) == dict.fromkeys(PARTS, "NONE")
        ids[txn_id] = (r.producer_id, r.producer_epoch)
    node_a.target.hold = True  # the brokers are slow: no marker is acknowledged before the failover
    assert node_a.end(committing, *ids[committing], "COMMIT", 5).error == "NONE"
    assert node_a.end(aborting, *ids[aborting], "ABORT", 3).error == "NONE"
    node_a.coordinator.poll()
    assert len(node_a.target.held) >= 1
    partitions = {node_a.partition(t) for t in ids}
    for p in partitions:
        node_a.coordinator.unload(p)
    node_a.target.hold = False
    node_a.target.release()  # late answers to the old owner are ignored
    assert node_a.coordinator.channel.stats.completed == 0

    if copy:  # "another node": its own data dir holding a copy of the partitions
        (tmp_path / "b" / "logs").mkdir(parents=True)
        for p in partitions:
            shutil.copytree(node_a.log_dir(p), tmp_path / "b" / "logs" / node_a.log_dir(p).name)
    node_b = Harness(tmp_path / ("b" if copy else "a"), node_id=2, block_store=node_a.store,
                     target=RecordingTarget(node_id=9))
    for p in partitions:
        node_b.coordinator.load(p)
        assert node_b.coordinator.runtime.shards[p].coordinator_epoch == 1  # above the old owner's epoch 0
    node_b.settle()
    assert node_b.get(committing)["state"] == "CompleteCommit"
    assert node_b.get(aborting)["state"] == "CompleteAbort"
    assert node_b.get(open_txn)["state"] == "Ongoing"
    assert {(m.result, m.coordinator_epoch) for m in node_b.target.markers()} == {("COMMIT", 1), ("ABORT", 1)}
    # the producers go on against the new coordinator; ids from the shared block store never collide
    pid, epoch = node_b.get(committing)["producer_id"], node_b.get(committing)["producer_epoch"]
    assert node_b.end(committing, pid, epoch - 1, "COMMIT", 5).error == "NONE"  # retry of the commit
    assert node_b.end(open_txn, *ids[open_txn], "COMMIT", 3).error == "NONE"
    node_b.settle()
    assert node_b.get(open_txn)["state"] == "CompleteCommit"
    fresh = node_b.run(node_b.coordinator.init_producer_id(None, 0))
    assert fresh.producer_id >= 2_000 and fresh.producer_id not in {p for p, _ in ids.values()}


def test_a_record_without_a_key_fails_the_load_with_its_offset(h: Harness) -> None:
    """The log's last-value scan hands a keyless record to the spec, which refuses it (no state is installed)."""
    h.init(T)
    partition = h.partition(T)
    h.coordinator.unload(partition)
    with PartitionLog.open(h.log_dir(partition)) as log:
        bad = log.log_end_offset
        log.append([(None, b"\x00\x01")], timestamp_ms=1)
    with pytest.raises(LogCorruptedError, match=f"a record does not decode \\(__transaction_state-{partition} offset "
                                                f"{bad}: a record without a key\\); the partition is not loaded"):
        h.coordinator.load(partition)
    assert partition not in h.coordinator.runtime.shards


@pytest.mark.parametrize("batch_records", [1, 3])
@pytest.mark.parametrize("wait", [True, False])
def test_loads_of_one_and_many_record_batches_install_the_same(tmp_path: Path, batch_records: int,
                                                                 wait: bool) -> None:
    """However the log's batches are shaped (one record each: the last-value scan takes them; several: the spec
    replays them), a load — waiting or step by step in `poll` — installs the last value of every id."""
    h = Harness(tmp_path)
    live = {}
    for i in range(9):
        txn_id = f"shape-{i}"
        r = h.init(txn_id)
        h.add(txn_id, r.producer_id, r.producer_epoch)
        live[txn_id] = dict(h.get(txn_id))
    by_partition = {h.partition(t) for t in live}
    for p in by_partition:
        h.coordinator.unload(p)
        folder = h.log_dir(p)
        with PartitionLog.open(folder) as log:
            records = [(r.key, r.value) for b in log.read() for r in b.records]
        shutil.rmtree(folder)
        with PartitionLog.open(folder) as log:  # the same records, re-batched
            for start in range(0, len(records), batch_records):
                log.append(records[start:start + batch_records], timestamp_ms=1)
        shard = h.coordinator.runtime.load(p, wait=wait)
        spec = shard.spec
        if not wait:
            with pytest.raises(KafkaError, match="COORDINATOR_LOAD_IN_PROGRESS"):
                h.coordinator.runtime.shard(p)
            h.coordinator.poll()
        assert spec.replayed_records == len(records)
    for txn_id, instance in live.items():
        assert persisted_view(h.get(txn_id), 1) == persisted_view(instance, 1)
        assert h.get(txn_id)["state"] == "Ongoing"


def test_the_cleaner_keeps_a_busy_log_small_and_a_load_restores_the_same(h: Harness) -> None:
    """The runtime compacts a log whose dirty half has grown (Kafka's log cleaner); what a load then installs is
    what the coordinator held, and the log stays near the size of the live state."""
    cleaning = Cleaning(min_bytes=16 * 1024)
    h.coordinator.runtime.cleaning = cleaning
    ids = [f"clean-{i}" for i in range(4)]
    producers = {t: h.init(t) for t in ids}
    for round_ in range(150):
        for t in ids:
            pid, epoch = producers[t].producer_id, producers[t].producer_epoch
            h.add(t, pid, epoch)
            assert h.end(t, pid, epoch, "COMMIT" if round_ % 3 else "ABORT", 3).error == "NONE"
        h.settle()
    partitions = {h.partition(t) for t in ids}
    compacted = {p for p, _ in h.coordinator.runtime.compactions}
    assert compacted & partitions
    for p in partitions:
        log = h.coordinator.runtime.shards[p].log
        assert log.size_bytes < 2 * cleaning.min_bytes + 4096
    live = {t: persisted_view(h.get(t), 1) for t in ids}
    for p in partitions:
        h.coordinator.unload(p)
        h.coordinator.load(p)
    assert {t: persisted_view(h.get(t), 1) for t in ids} == live
    assert all(h.get(t)["state"] in ("CompleteCommit", "CompleteAbort") for t in ids)


def test_the_cleaner_waits_for_writes_in_flight(tmp_path: Path) -> None:
    h = Harness(tmp_path, durability=Durability.group(max_delay_ms=50, max_bytes=1 << 20))
    h.coordinator.runtime.cleaning = Cleaning(min_bytes=1)  # any log with a record in it is due
    h.coordinator.load(h.partition(T))
    h.coordinator.poll()
    assert h.coordinator.runtime.compactions == []  # an empty log is left alone
    ending = h.coordinator.init_producer_id(T, 60_000)
    shard = h.coordinator.runtime.shards[h.partition(T)]
    h.coordinator.poll()  # appended, not yet durable: no compaction now
    assert shard.in_flight and h.coordinator.runtime.compactions == []
    h.clock.advance(60)
    h.coordinator.poll()
    assert ending.result().error == "NONE"
    assert [p for p, _ in h.coordinator.runtime.compactions] == [h.partition(T)]


def test_a_load_remembers_how_much_of_the_log_is_clean(h: Harness) -> None:
    """The cleaner's checkpoint (the log's size after its last compaction) survives a failover: the new owner does
    not compact a log that is as clean as the last owner left it, and compacts once half of it is dirty again."""
    runtime = h.coordinator.runtime
    runtime.cleaning = cleaning = Cleaning(min_bytes=1)
    r = h.init(T)
    partition = h.partition(T)
    for _ in range(3):
        h.add(T, r.producer_id, r.producer_epoch)
        assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", 3).error == "NONE"
        h.settle()
    log = runtime.shards[partition].log
    clean = int((log.path / "cleaner-checkpoint").read_text())
    assert runtime.compactions and not cleaning.due(log.size_bytes, clean)
    done = len(runtime.compactions)
    h.coordinator.unload(partition)
    h.coordinator.load(partition)
    h.coordinator.poll()
    assert len(runtime.compactions) == done  # as clean as the last owner left it: nothing to do
    h.add(T, r.producer_id, r.producer_epoch)
    assert h.end(T, r.producer_id, r.producer_epoch, "COMMIT", 3).error == "NONE"
    h.settle()
    assert len(runtime.compactions) > done  # a transaction's records are more than half of a compacted log
