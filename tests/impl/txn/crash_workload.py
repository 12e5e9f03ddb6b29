"""The child process of the crash-recovery test: a transactional workload through a real `TransactionCoordinator`
(per-batch fsync, or group commit: several producers' writes coalesced into one batch and one fsync) that runs until
it is killed.

Run as ``python -m tests.impl.txn.crash_workload DIR SEED [per_batch|group]``. It loads every `__transaction_state`
partition under ``DIR/logs`` (recovering whatever the previous, killed, run left), prints ``ready``, and loops: one to
four producers at a time send a request (initialise, add partitions, commit or abort with TV1 or TV2), then the
coordinator is polled until every answer is in; producers get fenced and leave transactions open to time out. Two
append-only files
record what was acknowledged, each line written with one ``os.write`` before anything depends on it, so it survives a
SIGKILL (the page cache outlives the process):

- ``DIR/acks.jsonl``: one line per durable state change (``[txn_id, state, producer_id, epoch]``), observed after
  the change was applied — the runtime applies only what is fsynced;
- ``DIR/pids.txt``: every producer id the ProducerIdManager handed out, before it was used.

The logs are compacted as they grow (the runtime's cleaner, with a small ``min_bytes`` so that it runs several times
in the slow test): a compaction removes superseded values, so ``acks.jsonl`` gets a line ``["#compaction"]`` just
before each one starts — what was acknowledged before it may be gone from the log, superseded by a later value.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcoord.impl.interfaces import MarkerResult, TopicPartition, TxnMarker
from kcoord.impl.runtime.cleaner import Cleaning
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


COMPACTION_MARK = "#compaction"


@dataclass(frozen=True)
class _MarkedCleaning(Cleaning):
    """The runtime's cleaner, writing a mark to the acknowledgement file before each compaction starts."""

    acks_fd: int = -1

    def due(self, size_bytes: int, clean_bytes: int) -> bool:
        due = super().due(size_bytes, clean_bytes)
        if due and self.acks_fd >= 0:
            os.write(self.acks_fd, (json.dumps([COMPACTION_MARK]) + "\n").encode())
        return due


DURABILITY = {"per_batch": Durability.per_batch(), "group": Durability.group(max_delay_ms=5, max_bytes=1 << 20)}


def open_coordinator(directory: Path, clock: ManualClock, producer_ids: ProducerIdManager,
                     rng: random.Random, durability: str = "per_batch", acks_fd: int = -1) -> TransactionCoordinator:
    coordinator = TransactionCoordinator(
        data_dir=directory / "logs", clock=clock, router=_Router(_Broker(rng)), producer_ids=producer_ids,
        config=CONFIG, durability=DURABILITY[durability], segment_bytes=64 * 1024,
        cleaning=_MarkedCleaning(min_bytes=128 * 1024, acks_fd=acks_fd))
    coordinator.load_all()
    return coordinator


class _Workload:
    def __init__(self, directory: Path, seed: int, durability: str) -> None:
        self.rng = random.Random(seed)
        self.clock = ManualClock(1_000_000 + seed * 1_000)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        self.acks = os.open(directory / "acks.jsonl", flags, 0o644)
        pids = os.open(directory / "pids.txt", flags, 0o644)
        store = ProducerIdBlockStore(directory / "producer-ids")
        self.coordinator = open_coordinator(directory, self.clock, _LoggingIds(store, self.clock, pids), self.rng,
                                            durability, self.acks)
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

    def send(self, txn_id: str) -> tuple[Completion[Any], Callable[[Any], None]] | None:
        """Send one request for `txn_id`: its answer to come and what to do with it (None: nothing sent)."""
        session = self.session[txn_id]
        c = self.coordinator
        roll = self.rng.random()
        if session is None or roll < 0.05:
            def on_init(r: Any) -> None:
                self.session[txn_id] = (r.producer_id, r.producer_epoch) if r.error == "NONE" else None
            return c.init_producer_id(txn_id, 2_000), on_init
        if roll < 0.55:
            def on_add(r: Any) -> None:
                if set(r.values()) & {"PRODUCER_FENCED", "INVALID_PRODUCER_ID_MAPPING"}:
                    self.session[txn_id] = None
            return c.add_partitions(txn_id, *session, self.rng.sample(TOPIC_PARTITIONS, self.rng.randint(1, 3))), on_add
        if roll < 0.95:
            version = self.rng.choice((3, 5))

            def on_end(r: Any) -> None:
                if r.error == "NONE" and version == 5:
                    self.session[txn_id] = (r.producer_id, r.producer_epoch)
                elif r.error in ("PRODUCER_FENCED", "INVALID_PRODUCER_ID_MAPPING"):
                    self.session[txn_id] = None
            return c.end_txn(txn_id, *session, self.rng.choice(("COMMIT", "ABORT")), version), on_end
        return None  # this producer idles (its open transaction may time out)

    def step(self) -> None:
        sent = [s for txn_id in self.rng.sample(PRODUCERS, self.rng.randint(1, 4)) if (s := self.send(txn_id))]
        while True:  # with group commit the answers come once the coalesced batch is durable
            self.clock.advance(self.rng.randint(1, 20))
            self.coordinator.poll()
            self.observe()
            if all(done.done for done, _ in sent):
                break
        for done, handle in sent:
            handle(done.result())


def main() -> None:
    directory, seed = Path(sys.argv[1]), int(sys.argv[2])
    workload = _Workload(directory, seed, sys.argv[3] if len(sys.argv) > 3 else "per_batch")
    print("ready", flush=True)
    while True:
        workload.step()


if __name__ == "__main__":
    main()
