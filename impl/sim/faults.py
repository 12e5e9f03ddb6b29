"""Fault injection: the timed faults (crashes, failovers, disk errors, clock jumps, marker-response trouble) and the
marker target that loses or delays WriteTxnMarkers answers.

Owns: `FaultInjector` (each enabled timed fault fires after exponential gaps drawn from the seeded random, at a mean
of `SimConfig.fault_interval_ms[name]`) and `FaultyMarkerTarget` (wraps a node's marker target: the markers are
written, but the answer is dropped — the channel sees a timeout and retries — or arrives late). Faults that belong
to one request (zombies, duplicated EndTxn, the fence's disk error) live with the clients that suffer them.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..cluster import CoordinatorKind
from ..errors import Errors, KafkaError
from ..interfaces import MarkerTarget, TxnMarker
from ..runtime.completion import Completion
from .world import Client, World

MARKER_REQUEST_TIMEOUT_MS = 1_000


class FaultyMarkerTarget:
    """A node's marker target as the transaction coordinator reaches it over a network that loses or delays
    answers. `lose` / `delay` count the answers still to lose / delay (set by the injector)."""

    def __init__(self, inner: MarkerTarget, world: World, node_id: int) -> None:
        self.inner = inner
        self.world = world
        self.node_id = node_id
        self.lose = 0
        self.delay = 0

    def write_txn_markers(self, markers: Sequence[TxnMarker]) -> Completion[Any]:
        done = self.inner.write_txn_markers(markers)
        if self.lose == 0 and self.delay == 0:
            return done
        out: Completion[Any] = Completion()
        scheduler = self.world.scheduler
        if self.lose > 0:
            self.lose -= 1
            scheduler.after(MARKER_REQUEST_TIMEOUT_MS, lambda: out.fail(KafkaError(
                Errors.REQUEST_TIMED_OUT, "simulated: the WriteTxnMarkers answer was lost")))
            return out
        self.delay -= 1
        wait_ms = self.world.rng.randint(50, 1_500)
        done.then(lambda d: scheduler.after(wait_ms, lambda: _forward(d, out)))
        return out


def _forward(done: Completion[Any], out: Completion[Any]) -> None:
    try:
        out.set(done.result())
    except BaseException as e:  # handed on unchanged
        out.fail(e)


class FaultInjector:
    def __init__(self, world: World, clients: list[Client], markers: list[FaultyMarkerTarget]) -> None:
        self.world = world
        self.clients = clients
        self.markers = markers
        self.actions: dict[str, Callable[[], bool]] = {
            "client_crash": self.crash_client,
            "coordinator_failover": self.failover,
            "marker_response_lost": lambda: self.trouble_markers("lose"),
            "marker_response_delayed": lambda: self.trouble_markers("delay"),
            "disk_append_error": self.disk_error,
            "clock_jump": self.clock_jump,
        }

    def start(self) -> None:
        for name in sorted(self.world.config.faults):
            if name in self.actions and self.world.config.fault_interval_ms.get(name, 0) > 0:
                self._arm(name)

    def _arm(self, name: str) -> None:
        mean_ms = self.world.config.fault_interval_ms[name]
        gap_ms = max(1, int(self.world.rng.expovariate(1.0 / mean_ms)))
        self.world.scheduler.after(gap_ms, lambda: self._fire(name))

    def _fire(self, name: str) -> None:
        if self.actions[name]():
            self.world.stats.faults[name] += 1
        self._arm(name)

    # ------------------------------------------------------------ the faults

    def crash_client(self) -> bool:
        alive = [c for c in self.clients if c.alive]
        if not alive:
            return False
        alive[self.world.rng.randrange(len(alive))].crash()
        return True

    def failover(self) -> bool:
        cluster = self.world.cluster
        if len(cluster.nodes) < 2:
            return False
        rng = self.world.rng
        kind: CoordinatorKind = "transaction" if rng.random() < 0.6 else "group"
        count = cluster.config.txn.num_partitions if kind == "transaction" else cluster.config.groups.num_partitions
        partition = rng.randrange(count)
        current = cluster.owner[(kind, partition)]
        target = rng.choice([n.node_id for n in cluster.nodes if n.node_id != current and n.alive])
        cluster.move(kind, partition, target)
        return True

    def trouble_markers(self, how: str) -> bool:
        target = self.markers[self.world.rng.randrange(len(self.markers))]
        if how == "lose":
            target.lose += 1
        else:
            target.delay += 1
        return True

    def disk_error(self) -> bool:
        """The next append to one loaded coordinator partition's log fails."""
        cluster = self.world.cluster
        rng = self.world.rng
        kind: CoordinatorKind = "transaction" if rng.random() < 0.5 else "group"
        count = cluster.config.txn.num_partitions if kind == "transaction" else cluster.config.groups.num_partitions
        partition = rng.randrange(count)
        node = cluster.nodes[cluster.owner[(kind, partition)]]
        runtime = node.txn.runtime if kind == "transaction" else node.groups.runtime
        shard = runtime.shards.get(partition)
        if shard is None or shard.log is None:
            return False
        shard.log.fail_next_append()
        return True

    def clock_jump(self) -> bool:
        """NTP steps the clock forward by 1-8 s (never beyond the spec's slack for completing a transaction)."""
        self.world.clock.jump(self.world.rng.randint(1_000, 8_000))
        return True
