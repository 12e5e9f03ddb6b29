"""A transaction coordinator on real logs with in-process marker targets, for the tests of `kcoord.impl.txn`.

`Harness` owns a ManualClock, a durable producer-id block store, a `TransactionCoordinator` with per-batch durability
(unless told otherwise), a `RecordingTarget` (a broker that answers WriteTxnMarkers as told and records every
request) and a router. `seed` writes an instance into the log in the coordinator's own format and reloads, so any
pre-state can be set up honestly (through a load); `records_since` decodes what the coordinator wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kcoord.impl.interfaces import MarkerResult, TopicPartition, TxnMarker
from kcoord.impl.runtime.clock import ManualClock
from kcoord.impl.runtime.completion import Completion
from kcoord.impl.runtime.shard import Shard
from kcoord.impl.runtime.trace import MemorySink, Tracer
from kcoord.impl.statemachine import Instance, MachineTable
from kcoord.impl.storage.log import Durability, PartitionLog, partition_dir_name
from kcoord.impl.storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from kcoord.impl.txn import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TxnConfig
from kcoord.impl.txn.records import decode_instance, decode_txn_key, encode_instance, encode_txn_key

TX = MachineTable.load("transaction")
START_MS = 1_000_000
TIMEOUT_MS = 60_000
PARTS = (TopicPartition("orders", 0), TopicPartition("orders", 1), TopicPartition("payments", 0))


class RecordingTarget:
    """A broker leading some partitions: records every WriteTxnMarkers and answers per partition with `answer`
    (default NONE). With `hold`, answers wait until `release` (a slow or lost response)."""

    def __init__(self, node_id: int = 1, answer: Callable[[TxnMarker, TopicPartition], str] | None = None) -> None:
        self.node_id = node_id
        self.answer = answer or (lambda marker, tp: "NONE")
        self.requests: list[list[TxnMarker]] = []
        self.hold = False
        self.held: list[tuple[list[TxnMarker], Completion[list[MarkerResult]]]] = []

    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[list[MarkerResult]]:
        batch = list(markers)
        self.requests.append(batch)
        if self.hold:
            pending: Completion[list[MarkerResult]] = Completion()
            self.held.append((batch, pending))
            return pending
        return Completion.of([{tp: self.answer(m, tp) for tp in m.partitions} for m in batch])

    def release(self, *, disconnect: bool = False) -> None:
        held, self.held = self.held, []
        for batch, pending in held:
            if disconnect:
                pending.fail(ConnectionError("disconnected"))
            else:
                pending.set([{tp: self.answer(m, tp) for tp in m.partitions} for m in batch])

    def markers(self) -> list[TxnMarker]:
        return [m for batch in self.requests for m in batch]


class Router:
    def __init__(self, default: RecordingTarget | None) -> None:
        self.default = default
        self.leaders: dict[TopicPartition, RecordingTarget | None] = {}

    def leader_of(self, tp: TopicPartition) -> RecordingTarget | None:
        return self.leaders.get(tp, self.default)


class Harness:
    def __init__(self, data_dir: Path, *, config: TxnConfig | None = None, durability: Durability | None = None,
                 sink: MemorySink | None = None, topic_exists: Callable[[str], bool] | None = None,
                 clock: ManualClock | None = None, node_id: int = 0, block_store: ProducerIdBlockStore | None = None,
                 target: RecordingTarget | None = None) -> None:
        self.data_dir = data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.clock = clock or ManualClock(START_MS)
        self.sink = sink
        self.store = block_store or ProducerIdBlockStore(data_dir / "producer-ids")
        if block_store is None:
            self.store.allocate()  # ids 0-999 belong to "an earlier node": seeded instances use them
        self.producer_ids = ProducerIdManager(store_requester(self.store), clock_ms=self.clock.now_ms)
        self.target = target or RecordingTarget()
        self.router = Router(self.target)
        self.coordinator = TransactionCoordinator(
            data_dir=data_dir / "logs", clock=self.clock, router=self.router, producer_ids=self.producer_ids,
            config=config, topic_exists=topic_exists, tracer=Tracer(sink, node=node_id), durability=durability,
            node_id=node_id, segment_bytes=1 << 20)

    # ------------------------------------------------------------ partitions and logs

    def partition(self, transactional_id: str) -> int:
        return self.coordinator.runtime.partition_for(transactional_id)

    def shard(self, transactional_id: str) -> Shard:
        partition = self.partition(transactional_id)
        if not self.coordinator.runtime.owns(partition):
            self.coordinator.load(partition)
        return self.coordinator.runtime.shards[partition]

    def log_dir(self, partition: int) -> Path:
        return self.data_dir / "logs" / partition_dir_name(TRANSACTION_STATE_TOPIC, partition)

    def end_offset(self, transactional_id: str) -> int:
        return self.shard(transactional_id).log.log_end_offset

    def records_since(self, transactional_id: str, offset: int) -> list[tuple[str, Instance | None]]:
        """Decoded records of the partition owning `transactional_id`, from `offset` on."""
        shard = self.shard(transactional_id)
        shard.log.flush()
        out: list[tuple[str, Instance | None]] = []
        for batch in shard.log.read(offset):
            for record in batch.records:
                if record.offset >= offset and record.key is not None:
                    txn_id = decode_txn_key(record.key)
                    out.append((txn_id, None if record.value is None else decode_instance(txn_id, record.value)))
        return out

    def seed(self, transactional_id: str, state: str, **variables: Any) -> Instance:
        """Write `transactional_id` in `state` with `variables` into its log, then (re)load the partition."""
        instance = TX.fresh({"transactional_id": transactional_id})
        instance.update(state=state, txn_timeout_ms=TIMEOUT_MS, txn_last_update_timestamp_ms=self.clock.now_ms())
        if state not in ("Empty", "CompleteCommit", "CompleteAbort"):
            instance["txn_start_timestamp_ms"] = self.clock.now_ms()
        instance.update(variables)
        assert not TX.violated_invariants(instance), TX.violated_invariants(instance)
        partition = self.partition(transactional_id)
        if partition in self.coordinator.runtime.shards:
            self.coordinator.unload(partition)
        # A history of legal moves ending in `state` (a load checks each record against the table's edges).
        path = _SEED_PATHS[state]
        with PartitionLog.open(self.log_dir(partition)) as log:
            for step in path:
                record = {**instance, "state": step}
                if step == "Ongoing" and not record["partitions"]:
                    record["partitions"] = frozenset({"seed-0"})
                log.append([(encode_txn_key(transactional_id),
                             encode_instance(record, self.coordinator.value_version))],
                           timestamp_ms=self.clock.now_ms())
        self.coordinator.load(partition)
        return instance

    def get(self, transactional_id: str) -> Instance | None:
        return self.shard(transactional_id).get("Transaction", (transactional_id,))

    # ------------------------------------------------------------ driving

    def run(self, done: Completion[Any], max_polls: int = 1_000) -> Any:
        for _ in range(max_polls):
            if done.done:
                return done.result()
            self.coordinator.poll()
            self.coordinator.flush()
        raise AssertionError("the request did not complete")

    def settle(self, rounds: int = 20) -> None:
        """Poll until the coordinator has nothing more to do now (markers sent, completions written)."""
        for _ in range(rounds):
            self.coordinator.flush()
            if not self.coordinator.poll():
                return

    def init(self, transactional_id: str, timeout_ms: int = TIMEOUT_MS, pid: int = -1, epoch: int = -1,
             **kw: Any) -> Any:
        self.shard(transactional_id)
        return self.run(self.coordinator.init_producer_id(transactional_id, timeout_ms, pid, epoch, **kw))

    def add(self, transactional_id: str, pid: int, epoch: int, parts: Iterable[TopicPartition] = PARTS,
            txn_version: int = 0, **kw: Any) -> Mapping[TopicPartition, str]:
        self.shard(transactional_id)
        return self.run(self.coordinator.add_partitions(transactional_id, pid, epoch, parts, txn_version, **kw))

    def end(self, transactional_id: str, pid: int, epoch: int, result: str, version: int) -> Any:
        self.shard(transactional_id)
        return self.run(self.coordinator.end_txn(transactional_id, pid, epoch, result, version))  # type: ignore[arg-type]

    def describe(self, transactional_id: str) -> Any:
        self.shard(transactional_id)
        (d,) = self.run(self.coordinator.describe_transactions([transactional_id]))
        return d


_SEED_PATHS = {
    "Empty": ("Empty",),
    "Ongoing": ("Ongoing",),
    "PrepareCommit": ("Ongoing", "PrepareCommit"),
    "PrepareAbort": ("Ongoing", "PrepareAbort"),
    "CompleteCommit": ("Ongoing", "PrepareCommit", "CompleteCommit"),
    "CompleteAbort": ("Ongoing", "PrepareAbort", "CompleteAbort"),
}


def states(records: list[tuple[str, Instance | None]]) -> list[str | None]:
    return [None if inst is None else inst["state"] for _, inst in records]
