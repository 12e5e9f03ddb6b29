"""An in-process Kafka cluster of N nodes: what `kcoord serve` and the simulator run.

Owns the wiring between the parts:
- `Node`: one broker — its transaction coordinator and group coordinator (each loads only the coordinator partitions
  this node owns) and its marker target (data partitions it leads, plus `__consumer_offsets` handed to its group
  coordinator, which answers only after materialising — KAFKA-17507),
- `Cluster`: the nodes, the data partitions (one shared `PartitionManager`; each partition has a leader node), the
  producer-id block store (the controller's part: one store, so ids are unique across nodes), the ownership of the
  coordinator partitions (partition p of `__transaction_state` / `__consumer_offsets` on node p % N at start) and
  failover (`move`, `stop_node`): unload on one node, load the same log on another — coordinator logs live in one
  data directory, standing in for replicated storage, and only one node opens a partition at a time,
- routing: `leader_of` (the transaction coordinator's marker channel), `verify_partition` and `add_partition`
  (partition leaders and the group coordinator ask the node owning the transactional id), `node_for_coordinator`
  (FindCoordinator).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .assignors.server import TopicMetadata as AssignorTopic
from .errors import Errors, KafkaError
from .group.config import GroupConfig
from .group.coordinator import GroupCoordinator
from .interfaces import MarkerTarget, TopicPartition
from .partition.manager import PartitionManager
from .partition.markers import BrokerMarkerTarget
from .partition.types import PartitionConfig
from .runtime.cleaner import DEFAULT_CLEANING, Cleaning
from .runtime.clock import Clock
from .runtime.completion import Completion
from .runtime.runtime import flush_together
from .runtime.trace import Tracer, TraceSink
from .seeded import NO_BUGS, SeededBug
from .storage._files import DamagedFileError
from .storage.log import Durability, FlushTicket, LogCorruptedError
from .storage.partitioning import partition_for
from .storage.producer_ids import ProducerIdBlockStore, ProducerIdManager, store_requester
from .txn.config import TxnConfig
from .txn.coordinator import TransactionCoordinator

OFFSETS_TOPIC = "__consumer_offsets"
TXN_TOPIC = "__transaction_state"
CoordinatorKind = Literal["transaction", "group"]
_TOPICS: dict[CoordinatorKind, str] = {"transaction": TXN_TOPIC, "group": OFFSETS_TOPIC}
_log = logging.getLogger(__name__)
#: told of every coordinator partition load: (kind, partition, node id, seconds it took) — the server's metrics
LoadListener = Callable[[CoordinatorKind, int, int, float], None]


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    nodes: int = 1
    txn: TxnConfig = field(default_factory=TxnConfig)
    groups: GroupConfig = field(default_factory=GroupConfig)
    partitions: PartitionConfig = field(default_factory=PartitionConfig)
    durability: Durability | None = None  # None: fsync every batch (nothing acknowledged before it is on disk)
    cleaning: Cleaning | None = DEFAULT_CLEANING  # None: coordinator logs are never compacted
    seeded_bugs: frozenset[SeededBug] = NO_BUGS  # re-introduced Kafka bugs (kcoord.conformance.bugs); none by default
    #: every coordinator record written is decoded again and compared with the state it describes before that state
    #: is installed (`Shard.check_records`): on for every in-process use (tests, simulator, conformance); `kcoord
    #: serve` turns it off unless `--check-records` (its served tests turn it on)
    check_records: bool = True


class Node:
    def __init__(self, node_id: int, cluster: Cluster) -> None:
        self.node_id = node_id
        self.cluster = cluster
        self.alive = True
        config = cluster.config
        tracer = Tracer(cluster.sink, node=node_id)
        self.txn = TransactionCoordinator(
            data_dir=cluster.data_dir, clock=cluster.clock, router=cluster, node_id=node_id, tracer=tracer,
            producer_ids=ProducerIdManager(store_requester(cluster.block_store), clock_ms=cluster.clock.now_ms),
            config=config.txn, topic_exists=cluster.topic_exists, durability=config.durability,
            cleaning=config.cleaning, seeded_bugs=config.seeded_bugs, check_records=config.check_records)
        self.groups = GroupCoordinator(
            data_dir=cluster.data_dir, clock=cluster.clock, topics=cluster.describe_for_assignors,
            config=config.groups, tracer=tracer, node_id=node_id, durability=config.durability, verifier=cluster,
            seeded_bugs=config.seeded_bugs, cleaning=config.cleaning, check_records=config.check_records,
            topic_names=lambda: cluster.partitions.topic_names())
        self.markers = BrokerMarkerTarget(cluster.partitions, {OFFSETS_TOPIC: self.groups})
        self.txn.runtime.on_change = self.groups.runtime.on_change = cluster.note_change

    def coordinator(self, kind: CoordinatorKind) -> TransactionCoordinator | GroupCoordinator:
        return self.txn if kind == "transaction" else self.groups

    def poll(self) -> int:
        return self.txn.poll() + self.groups.poll() if self.alive else 0

    def flush(self) -> int:
        return self.txn.flush() + self.groups.flush() if self.alive else 0


class Cluster:
    """N nodes in one process; `Cluster(..., config=ClusterConfig(nodes=1))` is a single broker."""

    def __init__(self, data_dir: Path, clock: Clock, *, config: ClusterConfig | None = None,
                 sink: TraceSink | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.clock = clock
        self.config = config or ClusterConfig()
        self.sink = sink
        if self.config.nodes < 1:
            raise ValueError(f"a cluster needs at least one node, not {self.config.nodes}")
        self.block_store = ProducerIdBlockStore(self.data_dir / "producer-id-blocks")
        self.partitions = PartitionManager(self.data_dir, clock=clock, tracer=Tracer(sink, node=0), verifier=self,
                                           config=self.config.partitions, durability=self.config.durability)
        self.nodes = [Node(i, self) for i in range(self.config.nodes)]
        n_txn = self.config.txn.num_partitions
        n_groups = self.config.groups.num_partitions
        self.owner: dict[tuple[CoordinatorKind, int], int] = {
            **{("transaction", p): p % self.config.nodes for p in range(n_txn)},
            **{("group", p): p % self.config.nodes for p in range(n_groups)},
        }
        #: `next_deadline_ms` may have moved earlier since this was last set False (a coordinator write started or an
        #: earlier timer was scheduled): an event loop that sleeps until a deadline clears it before it asks, and is
        #: woken when a request sets it (`kcoord serve`'s pump)
        self.changed = False
        self.load_listener: LoadListener | None = None
        self.refused: dict[tuple[CoordinatorKind, int], str] = {}  # coordinator partitions whose load was refused

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Every node loads the coordinator partitions it owns."""
        for (kind, p), node_id in sorted(self.owner.items()):
            self._load(kind, p, node_id)

    def note_change(self) -> None:
        self.changed = True

    def poll(self) -> int:
        """One turn of every node's loop; returns the coordinators' work done (0: nothing was due)."""
        self.partitions.poll()
        return sum(node.poll() for node in self.nodes)

    def flush(self) -> int:
        """Every group commit to disk now: the logs with pending appends (data partitions and coordinator partitions
        of every node) are fsynced side by side first, so they share the disk's flushes; then each component
        completes what became durable (and meets any error)."""
        if not self._acknowledged_when_written:
            pending = self.partitions.pending_logs()
            for node in self.nodes:
                if node.alive:
                    pending += node.txn.runtime.logs_to_flush() + node.groups.runtime.logs_to_flush()
            flush_together(pending)
        self.partitions.flush()
        return sum(node.flush() for node in self.nodes)

    @property
    def _acknowledged_when_written(self) -> bool:
        """`os` durability: an append is durable once written, so no log ever has appends to fsync and `flush` has
        nothing to put side by side (each coordinator's own flush appends its open batches, as the pre-pass would)."""
        durability = self.config.durability
        return durability is not None and durability.mode == "os"

    def begin_flush(self, syncfs_device: int | None = None) -> list[FlushTicket]:
        """Group commit with the fsyncs on other threads: the open batches appended, and a ticket for every log
        holding appends not yet fsynced (data partitions, coordinator partitions of every live node). The caller
        runs each ticket's `fsync()` (side by side, on threads, while the loop goes on), then `end_flush`.
        `syncfs_device`: the round is one syncfs of that file system (`RoundSync`): its logs' tickets hold no
        descriptor and are ended with `synced()`."""
        tickets = self.partitions.begin_flush(syncfs_device)
        for node in self.nodes:
            if node.alive:
                tickets += node.txn.runtime.begin_flush(syncfs_device) + node.groups.runtime.begin_flush(syncfs_device)
        return tickets

    def end_flush(self, tickets: list[FlushTicket]) -> None:
        """What the tickets' fsyncs made durable is durable (the next `poll` completes it: of the coordinator shards
        and data partitions waiting for durability, it looks only at those whose logs the tickets covered); a failed
        fsync unloads its coordinator partition or takes its data partition offline, as `flush` does."""
        for ticket in tickets:
            try:
                ticket.log.end_flush(ticket)
            except OSError as e:
                if ticket.on_error is not None:
                    ticket.on_error(e)
        self.partitions.flushed()
        for node in self.nodes:
            if node.alive:
                node.txn.runtime.flushed()
                node.groups.runtime.flushed()

    def run_until(self, done: Callable[[], bool], max_polls: int = 10_000) -> None:
        """Poll until `done()` (in-process callers: the completions they wait for), flushing group commits."""
        for _ in range(max_polls):
            if done():
                return
            if self.poll() == 0:
                self.flush()
        if not done():
            raise TimeoutError(f"not done after {max_polls} polls")

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for d in (self.partitions.next_deadline_ms(),
                                 *(n.txn.next_deadline_ms() for n in self.nodes if n.alive),
                                 *(n.groups.runtime.next_deadline_ms() for n in self.nodes if n.alive))
                     if d is not None]
        return min(deadlines) if deadlines else None

    def close(self) -> None:
        for node in self.nodes:
            node.txn.shutdown()
            for p in list(node.groups.runtime.shards):
                node.groups.unload(p)
        self.partitions.close()

    # ------------------------------------------------------------ ownership and failover

    def coordinator_partition(self, kind: CoordinatorKind, key: str) -> int:
        n = self.config.txn.num_partitions if kind == "transaction" else self.config.groups.num_partitions
        return partition_for(key, n)

    def node_for_coordinator(self, kind: CoordinatorKind, key: str) -> Node:
        """The node FindCoordinator names for `key` (the owner of its partition)."""
        return self.nodes[self.owner[(kind, self.coordinator_partition(kind, key))]]

    def move(self, kind: CoordinatorKind, partition: int, to_node: int) -> None:
        """Failover of one coordinator partition: unload it where it is, load the same log on `to_node`."""
        current = self.owner[(kind, partition)]
        if current == to_node:
            return
        if self.nodes[current].alive:
            self.nodes[current].coordinator(kind).unload(partition)
        self.owner[(kind, partition)] = to_node
        self._load(kind, partition, to_node)

    def stop_node(self, node_id: int) -> None:
        """A node crashes or stops: its coordinator partitions fail over to the next live nodes."""
        node = self.nodes[node_id]
        live = [n.node_id for n in self.nodes if n.alive and n.node_id != node_id]
        if not live:
            raise KafkaError(Errors.COORDINATOR_NOT_AVAILABLE, "no other live node to take the coordinator partitions")
        for (kind, p), owner in sorted(self.owner.items()):
            if owner == node_id:
                node.coordinator(kind).unload(p)
        node.alive = False
        moved = [(kind, p) for (kind, p), owner in sorted(self.owner.items()) if owner == node_id]
        for i, (kind, p) in enumerate(moved):
            target = live[i % len(live)]
            self.owner[(kind, p)] = target
            self._load(kind, p, target)

    def _load(self, kind: CoordinatorKind, partition: int, node_id: int) -> None:
        """Load one coordinator partition on `node_id`. A log damaged where recovery may not cut it
        (`LogCorruptedError`), or a damaged coordinator-epoch file (`DamagedFileError`), is not loaded: the
        partition stays unowned (requests for its keys get NOT_COORDINATOR, as Kafka answers for a coordinator
        whose load failed), the cause is logged as an ERROR and kept in `refused` until a later load succeeds."""
        started = time.perf_counter()
        try:
            self.nodes[node_id].coordinator(kind).load(partition)
        except (LogCorruptedError, DamagedFileError) as e:
            self.refused[(kind, partition)] = str(e)
            _log.error("node %d: %s-%d is not loaded: %s", node_id, _TOPICS[kind], partition, e)
            return
        self.refused.pop((kind, partition), None)
        if self.load_listener is not None:
            self.load_listener(kind, partition, node_id, time.perf_counter() - started)

    # ------------------------------------------------------------ routing (PartitionRouter, TxnVerifier)

    def data_leader(self, tp: TopicPartition) -> int:
        """The node leading a data partition: node `partition % N`, or the next live node after it when that node
        is stopped (the partition's log is shared, so leadership moves without moving data)."""
        n = len(self.nodes)
        for step in range(n):
            node_id = (tp.partition + step) % n
            if self.nodes[node_id].alive:
                return node_id
        return tp.partition % n

    def leader_of(self, partition: TopicPartition) -> MarkerTarget | None:
        if partition.topic == OFFSETS_TOPIC:
            node = self.nodes[self.owner[("group", partition.partition)]]
        else:
            if self.partitions.partition(partition) is None and partition not in self.partitions.offline:
                return None  # (an offline partition keeps its markers waiting: they are retried until it is back)
            node = self.nodes[self.data_leader(partition)]
        return node.markers if node.alive else None

    def _txn_coordinator(self, transactional_id: str) -> TransactionCoordinator | None:
        """The transaction coordinator a leader's verification or add for `transactional_id` goes to, or None if its
        node is down (the leader is answered NOT_COORDINATOR, as Kafka's AddPartitionsToTxnManager would be)."""
        node = self.node_for_coordinator("transaction", transactional_id)
        return node.txn if node.alive else None

    def verify_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                         partition: TopicPartition) -> Completion[str]:
        txn = self._txn_coordinator(transactional_id)
        if txn is None:
            return Completion.of(Errors.NOT_COORDINATOR)
        return txn.verify_partition(transactional_id, producer_id, producer_epoch, partition)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[Mapping[TopicPartition, str]]:
        txn = self._txn_coordinator(transactional_id)
        if txn is None:
            return Completion.of(dict.fromkeys(partitions, Errors.NOT_COORDINATOR))
        return txn.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)

    def add_partition(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      partition: TopicPartition) -> Completion[str]:
        txn = self._txn_coordinator(transactional_id)
        if txn is None:
            return Completion.of(Errors.NOT_COORDINATOR)
        return txn.add_partition(transactional_id, producer_id, producer_epoch, partition)

    def add_partitions_v2(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Sequence[TopicPartition]) -> Completion[Mapping[TopicPartition, str]]:
        txn = self._txn_coordinator(transactional_id)
        if txn is None:
            return Completion.of(dict.fromkeys(partitions, Errors.NOT_COORDINATOR))
        return txn.add_partitions_v2(transactional_id, producer_id, producer_epoch, partitions)

    # ------------------------------------------------------------ topics

    def topic_exists(self, topic: str) -> bool:
        return topic in (OFFSETS_TOPIC, TXN_TOPIC) or topic in self.partitions.topic_names()

    def describe_for_assignors(self, topic: str) -> AssignorTopic | None:
        (meta,) = self.partitions.describe_topics([topic])
        if meta.error != Errors.NONE or meta.topic_id is None:
            return None
        return AssignorTopic(meta.topic_id, meta.name, len(meta.partitions))

    def create_topics(self, topics: Sequence[tuple[str, int]]) -> None:
        for name, partitions in topics:
            self.partitions.create_topic(name, partitions)
        for node in self.nodes:
            node.groups.topics_changed()
