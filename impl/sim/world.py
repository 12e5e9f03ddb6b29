"""What simulated clients see of the simulation: the cluster, the scheduler, the seeded random, the network.

Owns: `World` (passed to every client; no globals), `Client` (the base of every simulated client: incarnations,
calls whose answers arrive after a simulated network latency, crash and restart), the error classes clients react
to, and `Stats` (what the summary counts beyond trace rows).
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..cluster import Cluster
from ..errors import Errors, KafkaError
from ..runtime.clock import ManualClock
from ..runtime.completion import Completion
from .config import SimConfig
from .scheduler import Scheduler

T = TypeVar("T")

#: answers a client retries after a back-off, unchanged
RETRIABLE = frozenset({
    Errors.CONCURRENT_TRANSACTIONS, Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_ENOUGH_REPLICAS, Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIMED_OUT,
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.KAFKA_STORAGE_ERROR, Errors.UNKNOWN_SERVER_ERROR,
    Errors.REBALANCE_IN_PROGRESS,
})
#: answers after which a producer is dead for good: the application starts a new one (InitProducerId again)
FATAL = frozenset({
    Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH, Errors.INVALID_PRODUCER_ID_MAPPING,
    Errors.UNKNOWN_PRODUCER_ID, Errors.INVALID_TXN_STATE, Errors.TRANSACTIONAL_ID_NOT_FOUND, Errors.FENCED_INSTANCE_ID,
})


@dataclass(slots=True)
class Stats:
    """Counters of the run (faults injected, client outcomes); trace-row counts live in the counting sink."""

    faults: Counter[str] = field(default_factory=Counter)
    clients: Counter[str] = field(default_factory=Counter)


@dataclass(slots=True)
class World:
    config: SimConfig
    cluster: Cluster
    clock: ManualClock
    scheduler: Scheduler
    rng: random.Random
    stats: Stats = field(default_factory=Stats)
    topics: dict[str, int] = field(default_factory=dict)  # data topic -> partitions

    def latency_ms(self) -> int:
        """One network hop (request or response): 1-3 ms, so that an answer and the request it prompts never share a
        millisecond with the work that produced the answer (rows of different keys in one millisecond are unordered
        for the trace checkers)."""
        return self.rng.randint(1, 3)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def fault_on(self, name: str) -> bool:
        return name in self.config.faults


def error_name(completion: Completion[Any]) -> Any:
    """The completion's value, or the Kafka error name it failed with (a request to a partition that moved)."""
    try:
        return completion.result()
    except KafkaError as e:
        return e.name


class Client:
    """A simulated client process. Each (re)start is a new incarnation; answers to an older incarnation's requests
    are dropped (the process that sent them is gone)."""

    kind = "client"

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.name = name
        self.incarnation = 0
        self.alive = False

    def start(self) -> None:
        self.incarnation += 1
        self.alive = True
        self.world.stats.clients[f"{self.kind}_starts"] += 1
        self.on_start()

    def on_start(self) -> None:
        raise NotImplementedError

    def crash(self) -> None:
        """The process dies; a new incarnation starts after a while (a restart by the operator)."""
        if not self.alive:
            return
        self.alive = False
        self.on_crash()
        self.later(self.world.rng.randint(300, 3_000), self.start, any_incarnation=True)

    def on_crash(self) -> None:
        """Hook for subclasses (a producer may leave a zombie)."""

    def later(self, delay_ms: int, step: Callable[[], None], *, any_incarnation: bool = False) -> None:
        """Run `step` after `delay_ms`, unless this incarnation died meanwhile."""
        incarnation = self.incarnation

        def run() -> None:
            if any_incarnation or (self.alive and self.incarnation == incarnation):
                step()

        self.world.scheduler.after(delay_ms, run)

    def call(self, send: Callable[[], Completion[T]], on_answer: Callable[[Any], None]) -> None:
        """Send a request after one network hop; its answer (or the error it failed with) reaches `on_answer` one hop
        after it is ready — if this incarnation is still alive then."""
        incarnation = self.incarnation

        def deliver(done: Completion[T]) -> None:
            if self.alive and self.incarnation == incarnation:
                on_answer(error_name(done))

        def send_now() -> None:
            if not (self.alive and self.incarnation == incarnation):
                return
            send().then(lambda done: self.world.scheduler.after(self.world.latency_ms(), lambda: deliver(done)))

        self.world.scheduler.after(self.world.latency_ms(), send_now)

    def backoff_ms(self) -> int:
        return self.world.rng.randint(20, 200)
