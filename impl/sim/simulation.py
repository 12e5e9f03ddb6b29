"""The deterministic simulator: many simulated clients drive the real coordinators (an in-process `Cluster`) on a
manual clock, with faults, writing the trace rows the coordinators emit through a streaming sink.

Owns: `Simulation` (set-up: deterministic topic ids and classic member ids, veteran transactional ids read back from
an older log, the faulty marker network, the materialisation delay; the discrete-event loop; the summary),
`CountingSink` (counts rows per machine, transactions and rebalances on their way to the real sink, so nothing is
kept in memory) and `Summary`.

Determinism: one `random.Random(seed)` drives every choice; events at equal times run in scheduling order; the
clock only moves to the next due event (a client's or a coordinator timer's). The same config gives byte-identical
traces. Memory: rows stream to disk; what grows with the run is only the coordinators' own state (bounded by the
number of clients and keys), never the trace.
Must not import: `kcoord.model`, `kcoord.conformance`.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._generated.classic_group import State as ClassicGroupState
from .._generated.consumer_group import Event as ConsumerGroupEvent
from .._generated.transaction import Event as TxnEvent
from .._generated.transaction import State as TxnState
from ..cluster import Cluster, ClusterConfig
from ..errors import IllegalStateError
from ..group.config import GroupConfig
from ..partition.data_log import create_partition_dir
from ..runtime.clock import ManualClock
from ..runtime.trace import JsonlSink, ParquetSink, Row, TapSink, TraceSink
from ..statemachine import MachineTable
from ..storage.log import PartitionLog, partition_dir_name
from ..storage.partitioning import partition_for
from ..txn.config import TxnConfig
from ..txn.records import RecordCodec, value_version_for
from .config import SimConfig
from .consumers import ClassicConsumer, GroupMember
from .faults import FaultInjector, FaultyMarkerTarget
from .producers import IN_TOPIC, OUT_TOPIC, TxnProducer
from .scheduler import Scheduler
from .world import Client, World

START_MS = 1_700_000_000_000
TRACED_MACHINES = ("transaction", "classic_group", "consumer_group", "consumer_group_member", "partition_producer")
VETERAN_EPOCH = 32_762  # four TV2 transactions from exhaustion
#: rows the Parquet sink buffers, all machines together (about 1 KB each as dicts): most of a run's memory, and a
#: bound on it (a machine that writes slowly no longer holds a row group's worth of rows for the whole run); the
#: largest buffer becomes a row group when the bound is reached, big enough for Spark
PARQUET_ROW_GROUP_ROWS = 30_000


# ---------------------------------------------------------------------------------------------- rows


@dataclass(slots=True)
class Summary:
    seed: int
    rows: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    committed: int = 0
    aborted: int = 0
    rebalances: int = 0
    simulated_ms: int = 0
    steps: int = 0
    clients: dict[str, int] = field(default_factory=dict)
    trace_dir: str | None = None

    @property
    def events(self) -> int:
        return sum(self.rows.values())

    def as_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "events": self.events, "rows": dict(sorted(self.rows.items())),
                "faults": dict(sorted(self.faults.items())), "txns_committed": self.committed,
                "txns_aborted": self.aborted, "rebalances": self.rebalances, "simulated_ms": self.simulated_ms,
                "steps": self.steps, "clients": dict(sorted(self.clients.items())), "trace_dir": self.trace_dir}


class CountingSink(TapSink):
    """Counts what passes to `inner` (which may be None: count only): rows per machine, completed transactions
    (CompleteCommit / CompleteAbort) and rebalances (a classic join phase completing, a KIP-848 target assignment)."""

    watches_loads = True  # (every row is counted)

    def __init__(self, inner: TraceSink | None) -> None:
        super().__init__(inner)
        self.rows: Counter[str] = Counter()
        self.total = 0
        self.committed = 0
        self.aborted = 0
        self.rebalances = 0

    def observe(self, machine: str, row: Row) -> None:
        self.rows[machine] += 1
        self.total += 1
        if row["kind"] == "transition":
            to_state = row["to_state"]
            if machine == "Transaction" and row["event"] == TxnEvent.CompleteTxn:
                if to_state == TxnState.CompleteCommit:
                    self.committed += 1
                else:
                    self.aborted += 1
            elif _is_rebalance(machine, row):
                self.rebalances += 1


def _is_rebalance(machine: str, row: Row) -> bool:
    if machine == "ClassicGroup":
        return bool(row["to_state"] == ClassicGroupState.CompletingRebalance
                    and row["from_state"] == ClassicGroupState.PreparingRebalance)
    return machine == "ConsumerGroup" and row["event"] == ConsumerGroupEvent.TargetAssignmentComputed


def make_sink(out_dir: Path | None, fmt: str) -> TraceSink | None:
    """The trace sink for `--format`: JSON Lines or Parquet (schema from the generated tables); None: no files."""
    if out_dir is None:
        return None
    if fmt == "jsonl":
        return JsonlSink(out_dir)
    if fmt == "parquet":
        columns = {}
        for module in TRACED_MACHINES:
            table = MachineTable.load(module)
            columns[table.name] = table.module.TRACE_COLUMNS
        return ParquetSink(out_dir, columns, batch_rows=PARQUET_ROW_GROUP_ROWS)
    raise ValueError(f"trace format {fmt!r}: expected jsonl or parquet")


# ---------------------------------------------------------------------------------------------- set-up


def default_cluster_config(config: SimConfig) -> ClusterConfig:
    """The cluster a simulation runs: small partition counts so that clients share coordinators."""
    return ClusterConfig(
        nodes=config.nodes,
        txn=TxnConfig(num_partitions=config.txn_partitions, offsets_num_partitions=config.group_partitions,
                      abort_interval_ms=2_000, marker_retry_backoff_ms=50, marker_retry_backoff_max_ms=1_000),
        groups=GroupConfig(num_partitions=config.group_partitions, initial_rebalance_delay_ms=300,
                           consumer_session_timeout_ms=6_000, consumer_heartbeat_interval_ms=1_000))


def _create_topics(data_dir: Path, rng: random.Random, topics: dict[str, int]) -> None:
    """Data topics with topic ids from the seeded random (the cluster opens them on start)."""
    for name, count in sorted(topics.items()):
        topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        for p in range(count):
            create_partition_dir(data_dir / partition_dir_name(name, p), topic_id)


def _write_veterans(data_dir: Path, cluster_config: ClusterConfig, ids: list[str]) -> None:
    """Transactional ids that come from an older log: CompleteAbort at an almost exhausted epoch (TV2), so that a
    short run reaches epoch exhaustion and producer-id rotation. (Not CompleteCommit: that history has no markers in
    the trace, and a loaded CompleteCommit must follow its markers — `commit_after_markers`.)"""
    table = MachineTable.load("transaction")
    codec = RecordCodec(value_version_for(cluster_config.txn.server_txn_version))
    by_partition: dict[int, list[tuple[bytes, bytes | None]]] = {}
    for i, txn_id in enumerate(ids):
        instance = table.fresh({"transactional_id": txn_id})
        instance.update(state=TxnState.CompleteAbort, producer_id=1_000_000_000 + i,
                        previous_producer_id=1_000_000_000 + i,
                        producer_epoch=VETERAN_EPOCH, txn_timeout_ms=10_000, client_txn_version=2,
                        txn_last_update_timestamp_ms=START_MS - 60_000)
        partition = partition_for(txn_id, cluster_config.txn.num_partitions)
        by_partition.setdefault(partition, []).append((codec.key(txn_id), codec.encode(instance)))
    for partition, records in sorted(by_partition.items()):
        log = PartitionLog.open(data_dir / partition_dir_name("__transaction_state", partition),
                                clock_ms=lambda: START_MS)
        log.append(records, timestamp_ms=START_MS - 60_000, partition_leader_epoch=0)
        log.close()


# ---------------------------------------------------------------------------------------------- the simulation


class Simulation:
    def __init__(self, config: SimConfig, data_dir: Path, *, sink: TraceSink | None = None,
                 cluster_config: ClusterConfig | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        if data_dir.exists() and any(data_dir.iterdir()):
            raise ValueError(f"{data_dir} is not empty: a simulation starts from a fresh cluster")
        self.config = config
        self.rng = random.Random(config.seed)
        self.clock = ManualClock(START_MS)
        self.sink = CountingSink(sink)
        self.progress = progress
        self.cluster_config = cluster_config or default_cluster_config(config)
        self.cluster_config = replace(self.cluster_config, nodes=config.nodes)
        topics = {IN_TOPIC: config.topic_partitions, OUT_TOPIC: config.topic_partitions}
        _create_topics(data_dir, self.rng, topics)
        self.veteran_ids = [f"veteran-{i}" for i in range(config.veterans)]
        _write_veterans(data_dir, self.cluster_config, self.veteran_ids)
        self.cluster = Cluster(data_dir, self.clock, config=self.cluster_config, sink=self.sink)
        self.world = World(config, self.cluster, self.clock, Scheduler(self.clock), self.rng, topics=topics)
        self.markers = self._wire_network()
        self.clients = self._clients()
        self.faults = FaultInjector(self.world, self.clients, self.markers)

    def _wire_network(self) -> list[FaultyMarkerTarget]:
        """Per node: marker answers through a faulty network, offsets materialised after a short delay, classic
        member ids from the seeded random."""
        targets = []
        low, high = self.config.materialize_delay_ms
        for node in self.cluster.nodes:
            target = FaultyMarkerTarget(node.markers, self.world, node.node_id)
            node.markers = target  # type: ignore[assignment]
            targets.append(target)
            node.groups.ctx.materialize_hook = (
                lambda step: self.world.scheduler.after(self.rng.randint(low, high), step))
            node.groups.ctx.new_uuid = lambda: str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        return targets

    def _clients(self) -> list[Client]:
        c, world = self.config, self.world
        clients: list[Client] = []
        for i in range(c.producers):
            clients.append(TxnProducer(world, f"producer-{i}", tv2=i % 2 == 0))
        tasks = [TxnProducer(world, txn_id, tv2=True, group_id=f"veteran-app-{i}")
                 for i, txn_id in enumerate(self.veteran_ids)]
        tasks += [TxnProducer(world, f"streams-task-{i}", tv2=True, group_id=f"streams-app-{i % 2}")
                  for i in range(c.streams)]
        for i, task in enumerate(tasks):
            task.input_partition = i % c.topic_partitions
        clients += tasks
        assignors = ("range", "roundrobin", "cooperative-sticky")
        for i in range(c.classic_consumers):
            group = f"classic-{i // 3}"
            clients.append(ClassicConsumer(world, f"classic-consumer-{i}", group, assignors[(i // 3) % 3]))
        for i in range(c.consumers):
            group = f"consumers-{i // 3}"
            # the third member of a group subscribes with a regular expression the coordinator resolves (KIP-848)
            clients.append(GroupMember(world, f"consumer-{i}", group, ("uniform", "range")[(i // 3) % 2],
                                       regex=i % 3 == 2))
        return clients

    # ------------------------------------------------------------ running

    def run(self) -> Summary:
        cluster, scheduler, clock = self.cluster, self.world.scheduler, self.clock
        cluster.start()
        for client in self.clients:
            client.start()
        self.faults.start()
        self._settle()
        steps = 0
        reported = 0
        target, tick = self.config.events, self.config.tick_ms
        try:
            while self.sink.total < target:
                steps += 1
                if steps > self.config.max_steps:
                    raise IllegalStateError(f"{steps} steps without reaching {target} trace rows")
                due = [t for t in (scheduler.next_time_ms(), cluster.next_deadline_ms()) if t is not None]
                if not due:
                    break
                at = -(-min(due) // tick) * tick  # the end of the tick the next event falls in
                if at > clock.now_ms():
                    clock.advance(at - clock.now_ms())
                scheduler.run_due()
                self._settle()
                if self.progress is not None and self.sink.total - reported >= 10_000:
                    reported = self.sink.total
                    self.progress(min(reported, target), target)
        finally:
            self.sink.flush()
            cluster.close()
            self.sink.close()
        if self.progress is not None:
            self.progress(min(self.sink.total, target), target)
        return self._summary(steps)

    def _settle(self) -> None:
        """Let the cluster finish what is due now: polls, group commits, durable writes."""
        for _ in range(10_000):
            if self.cluster.poll() == 0 and self.cluster.flush() == 0:
                return
        raise IllegalStateError("the cluster did not settle after 10000 polls")

    def _summary(self, steps: int) -> Summary:
        s = self.sink
        return Summary(seed=self.config.seed, rows=dict(s.rows), faults=dict(self.world.stats.faults),
                       committed=s.committed, aborted=s.aborted, rebalances=s.rebalances,
                       simulated_ms=self.clock.now_ms() - START_MS, steps=steps,
                       clients=dict(self.world.stats.clients))


def simulate(config: SimConfig, out_dir: Path | None, data_dir: Path, *, fmt: str = "jsonl",
             cluster_config: ClusterConfig | None = None,
             progress: Callable[[int, int], None] | None = None) -> Summary:
    """Run one simulation, writing traces under `out_dir` (None: count only) and coordinator logs under `data_dir`."""
    sink = make_sink(out_dir, fmt)
    summary = Simulation(config, data_dir, sink=sink, cluster_config=cluster_config, progress=progress).run()
    summary.trace_dir = None if out_dir is None else str(out_dir)
    return summary
