"""The child process of the crash-recovery test: a transactional workload through a real `TransactionCoordinator`
(per-batch fsync) that runs until it is killed.

Run as ``python -m tests.impl.txn.crash_workload DIR SEED``. It loads every `__transaction_state` partition under
``DIR/logs`` (recovering whatever the previous, killed, run left), prints ``ready``, and loops: producers initialise,
add partitions, commit or abort (TV1 and TV2), get fenced, leave transactions open to time out. Two append-only files
record what was acknowledged, each line written with one ``os.write`` before anything depends on it, so it survives a
SIGKILL (the page cache outlives the process):

- ``DIR/acks.jsonl``: one line per durable state change (``[txn_id, state, producer_id, epoch]``), observed after
  the change was applied — the runtime applies only what is fsynced;
- ``DIR/pids.txt``: every producer id the ProducerIdManager handed out, before it was used.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

from kcoord.impl.interfaces import MarkerResult, TopicPartition, TxnMarker
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.storage.log import Durability
from kcoord.impl.storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from kcoord.impl.txn import TransactionCoordinator, TxnConfig

NUM_PARTITIONS = 4
PRODUCERS = tuple(f"crash-{i}" for i in range(12))
TOPIC_PARTITIONS = tuple(TopicPartition(t, p) for t in ("orders", "payments") for p in range(3))
CONFIG = TxnConfig(num_partitions=NUM_PARTITIONS, abort_interval_ms=200, marker_retry_backoff_ms=10,
                   marker_retry_backoff_max_ms=40)


class _Broker:
    """Acknowledges markers at once, sometimes with a retriable error."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def write_txn_markers(self, markers: list[TxnMarker]) -> Completion[list[MarkerResult]]:
        return Completion.of([{tp: "NOT_LEADER_OR_FOLLOWER" if self.rng.random() < 0.1 else "NONE"
                               for tp in m.partitions} for m in markers])


class _Router:
    def __init__(self, broker: _Broker) -> None:
        self.broker = broker

    def leader_of(self, tp: TopicPartition) -> _Broker:
        return self.broker


class _LoggingIds(ProducerIdManager):
    def __init__(self, store: ProducerIdBlockStore, clock: ManualClock, fd: int) -> None:
        super().__init__(store_requester(store), clock_ms=clock.now_ms)
        self._fd = fd

    def generate_producer_id(self) -> int:
        producer_id = super().generate_producer_id()
        os.write(self._fd, f"{producer_id}\n".encode())
        return producer_id


def open_coordinator(directory: Path, clock: ManualClock, producer_ids: ProducerIdManager,
                     rng: random.Random) -> TransactionCoordinator:
    coordinator = TransactionCoordinator(
        data_dir=directory / "logs", clock=clock, router=_Router(_Broker(rng)), producer_ids=producer_ids,
        config=CONFIG, durability=Durability.per_batch(), segment_bytes=64 * 1024)
    coordinator.load_all()
    return coordinator


class _Workload:
    def __init__(self, directory: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = ManualClock(1_000_000 + seed * 1_000)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        self.acks = os.open(directory / "acks.jsonl", flags, 0o644)
        pids = os.open(directory / "pids.txt", flags, 0o644)
        store = ProducerIdBlockStore(directory / "producer-ids")
        self.coordinator = open_coordinator(directory, self.clock, _LoggingIds(store, self.clock, pids), self.rng)
        self.session: dict[str, tuple[int, int] | None] = dict.fromkeys(PRODUCERS)
        self.seen: dict[str, tuple[Any, ...] | None] = {}
        self.observe()

    def observe(self) -> None:
        """Log every state change that is now applied (and therefore durable)."""
        for shard in self.coordinator.runtime.shards.values():
            for (txn_id,), inst in shard.instances["Transaction"].items():
                now = (inst["state"], inst["producer_id"], inst["producer_epoch"])
                if self.seen.get(txn_id) != now:
                    self.seen[txn_id] = now
                    os.write(self.acks, (json.dumps([txn_id, *now]) + "\n").encode())

    def step(self) -> None:
        txn_id = self.rng.choice(PRODUCERS)
        session = self.session[txn_id]
        c = self.coordinator
        roll = self.rng.random()
        if session is None or roll < 0.05:
            r = c.init_producer_id(txn_id, 2_000).result()
            self.session[txn_id] = (r.producer_id, r.producer_epoch) if r.error == "NONE" else None
        elif roll < 0.55:
            parts = self.rng.sample(TOPIC_PARTITIONS, self.rng.randint(1, 3))
            errors = set(c.add_partitions(txn_id, *session, parts).result().values())
            if errors & {"PRODUCER_FENCED", "INVALID_PRODUCER_ID_MAPPING"}:
                self.session[txn_id] = None
        elif roll < 0.95:
            version = self.rng.choice((3, 5))
            r = c.end_txn(txn_id, *session, self.rng.choice(("COMMIT", "ABORT")), version).result()
            if r.error == "NONE" and version == 5:
                self.session[txn_id] = (r.producer_id, r.producer_epoch)
            elif r.error in ("PRODUCER_FENCED", "INVALID_PRODUCER_ID_MAPPING"):
                self.session[txn_id] = None
        self.clock.advance(self.rng.randint(1, 20))
        c.poll()
        self.observe()


def main() -> None:
    directory, seed = Path(sys.argv[1]), int(sys.argv[2])
    workload = _Workload(directory, seed)
    print("ready", flush=True)
    while True:
        workload.step()


if __name__ == "__main__":
    main()
