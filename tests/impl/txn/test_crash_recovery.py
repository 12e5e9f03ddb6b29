"""Crash recovery: SIGKILL a child process running a transactional workload (`crash_workload.py`, real logs,
per-batch fsync or group commit) at random moments, sometimes add a torn batch to a log's tail, reopen, and check:

- every state change the child saw applied (hence acknowledged) is in the log, in order — those acknowledged before
  the child's last compaction started are checked by the cycles before it (a compaction keeps only the last value
  per key);
- torn tails are truncated, exactly;
- every replayed instance is legal: a persisted state, every invariant of the spec true, every step between
  consecutive records an edge of the table (the load checks that) and no step property violated;
- the producer-id manager never handed out an id twice, across all runs.

The seed is printed first; a failing run replays with the same seed (the kill timing still varies).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.statemachine import MachineTable
from kcoord.impl.storage.log import partition_dir_name
from kcoord.impl.storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from kcoord.impl.txn import TRANSACTION_STATE_TOPIC
from kcoord.impl.txn.records import decode_instance, decode_txn_key

from .crash_workload import COMPACTION_MARK, NUM_PARTITIONS, open_coordinator

TX = MachineTable.load("transaction")
ROOT = Path(__file__).resolve().parents[3]


def run_child_and_kill(directory: Path, seed: int, rng: random.Random, durability: str) -> None:
    child = subprocess.Popen([sys.executable, "-m", "tests.impl.txn.crash_workload", str(directory), str(seed),
                              durability],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == b"ready\n", (line, child.stderr.read() if child.stderr else b"")
        time.sleep(rng.uniform(0.02, 0.4))
        assert child.poll() is None, child.stderr.read() if child.stderr else b""
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def tear_a_tail(directory: Path, rng: random.Random) -> tuple[Path, int] | None:
    """Append the first bytes of a copy of the last batch to one log: a write cut short by a power loss."""
    partition = rng.randrange(NUM_PARTITIONS)
    folder = directory / "logs" / partition_dir_name(TRANSACTION_STATE_TOPIC, partition)
    segments = sorted(folder.glob("*.log"))
    if not segments or segments[-1].stat().st_size < 80:
        return None
    data = segments[-1].read_bytes()
    torn = data[-rng.randint(20, 60):][: rng.randint(5, 19)]
    with open(segments[-1], "ab") as f:
        f.write(torn)
    return folder, len(torn)


def log_history(folder: Path) -> dict[str, list[tuple[str, int, int]]]:
    from kcoord.impl.storage.log import read_partition_dir

    history: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for batch in read_partition_dir(folder):
        for record in batch.records:
            assert record.key is not None and record.value is not None  # no expiration in this workload
            txn_id = decode_txn_key(record.key)
            inst = decode_instance(txn_id, record.value)
            history[txn_id].append((inst["state"], inst["producer_id"], inst["producer_epoch"]))
    return history


def is_subsequence(needle: list[tuple[str, int, int]], haystack: list[tuple[str, int, int]]) -> bool:
    it = iter(haystack)
    return all(any(item == h for h in it) for item in needle)


def check_recovered(directory: Path, torn: tuple[Path, int] | None) -> tuple[int, int]:
    """Check one recovery; return the records in the logs and the compactions the children started so far."""
    clock = ManualClock(0)
    store = ProducerIdBlockStore(directory / "producer-ids")
    coordinator = open_coordinator(directory, clock, ProducerIdManager(store_requester(store), clock_ms=clock.now_ms),
                                   random.Random(0))
    try:
        shards = coordinator.runtime.shards
        if torn is not None:
            folder, size = torn
            partition = int(folder.name.rsplit("-", 1)[1])
            assert shards[partition].log.recovery.truncated_bytes == size
        history: dict[str, list[tuple[str, int, int]]] = {}
        for shard in shards.values():
            history.update(log_history(shard.log.path))
            for (txn_id,), inst in shard.instances["Transaction"].items():
                assert inst["state"] not in TX.pending_states
                assert TX.violated_invariants(inst) == [], (txn_id, inst)
                assert history[txn_id][-1] == (inst["state"], inst["producer_id"], inst["producer_epoch"])
        for txn_id, records in history.items():
            for before, after in itertools.pairwise(records):
                pre = {"producer_id": before[1], "producer_epoch": before[2]}
                post = {"producer_id": after[1], "producer_epoch": after[2]}
                assert not (pre["producer_id"] == post["producer_id"] and post["producer_epoch"] <
                            pre["producer_epoch"]), (txn_id, before, after)  # epoch_never_decreases
        acked: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
        compactions = 0
        for line in (directory / "acks.jsonl").read_text().splitlines():
            if json.loads(line) == [COMPACTION_MARK]:  # what was acknowledged before may be superseded and gone
                acked.clear()
                compactions += 1
                continue
            txn_id, state, pid, epoch = json.loads(line)
            if not acked[txn_id] or acked[txn_id][-1] != (state, pid, epoch):  # a restart logs the loaded state again
                acked[txn_id].append((state, pid, epoch))
        for txn_id, seen in acked.items():
            assert is_subsequence(seen, history.get(txn_id, [])), (txn_id, seen, history.get(txn_id))
        pids = [int(x) for x in (directory / "pids.txt").read_text().split()]
        assert len(pids) == len(set(pids)), "a producer id was handed out twice"
        assert not pids or store.next_first_id > max(pids)
        return sum(len(r) for r in history.values()), compactions
    finally:
        coordinator.shutdown()


def crash_cycles(directory: Path, cycles: int, seed: int, durability: str = "per_batch") -> int:
    """Run the cycles; return how many compactions the children started."""
    print(f"crash-recovery seed={seed} durability={durability}")
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    records = compactions = 0
    for cycle in range(cycles):
        run_child_and_kill(directory, seed * 1_000 + cycle, rng, durability)
        torn = tear_a_tail(directory, rng) if rng.random() < 0.5 else None
        records, compactions = check_recovered(directory, torn)
    print(f"{records} records in the logs, {compactions} compactions")
    assert records > 0
    return compactions


@pytest.mark.parametrize("durability", ["per_batch", "group"])
def test_crash_recovery_fast(tmp_path: Path, durability: str) -> None:
    crash_cycles(tmp_path, cycles=3, seed=int(os.environ.get("KCOORD_SEED", "7")), durability=durability)


@pytest.mark.slow
@pytest.mark.parametrize(("durability", "cycles"), [("per_batch", 50), ("group", 25)])
def test_crash_recovery_many_cycles(tmp_path: Path, durability: str, cycles: int) -> None:
    compactions = crash_cycles(tmp_path, cycles=cycles, seed=int(os.environ.get("KCOORD_SEED", "11")),
                               durability=durability)
    assert compactions > 0, "the logs never grew enough to be compacted: the workload did not exercise the cleaner"
