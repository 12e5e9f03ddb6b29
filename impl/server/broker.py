"""What the API handlers of one served node share: the cluster, this node's id, where every node listens, and the
server's loop services (waking the cluster loop, waking Fetch long-polls, metrics).

Owns: `Endpoint`, `Progress` (a broadcast "the logs may have moved" signal for Fetch's max_wait), `ServedCluster`
(one per server: the cluster, the endpoints, the topic-id cache, the pump's wake-up) and `BrokerContext` (one per
node: leadership checks, topic creation that tells the group coordinators, awaiting a `Completion` from a handler).
Every method runs on the server's event loop thread: the cluster is single-threaded by design.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..cluster import Cluster, Node
from ..errors import Errors
from ..interfaces import TopicPartition
from ..runtime.completion import Completion
from .metrics import ServerMetrics  # imported, not only for type checking: mypyc reads the annotations' types at import

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a node listens, as Metadata and FindCoordinator tell clients."""

    node_id: int
    host: str
    port: int


async def wait_for_event(event: asyncio.Event, timeout_s: float) -> None:
    """Return once `event` is set or `timeout_s` passed. Unlike Python 3.11's `asyncio.wait_for`, a cancellation
    that arrives as the event is set is never swallowed (the connection's task must stop when the server stops)."""
    if event.is_set() or timeout_s <= 0:
        return
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((waiter,), timeout=timeout_s)
    finally:
        waiter.cancel()


class Progress:
    """Fetch long-polls wait here; the server notifies after every turn of the cluster loop and every append."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None

    def notify(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None

    async def wait(self, timeout_s: float) -> None:
        """Return after the next notification, or after `timeout_s`."""
        if timeout_s <= 0:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await wait_for_event(self._event, timeout_s)


@dataclass(slots=True)
class ServedCluster:
    """The server-wide part: one per `kcoord serve` process."""

    cluster: Cluster
    cluster_id: str
    kick: Callable[[], None]  # wake the cluster loop: new work was submitted
    metrics: ServerMetrics
    #: the request asking is the only one in progress and none is queued (group commit may flush for it at once)
    alone: Callable[[], bool] = lambda: False
    #: wake the cluster loop only if the cluster now has work due before the loop's planned wake-up (a request
    #: answered at once may still have scheduled an earlier timer or opened a batch)
    nudge: Callable[[], None] = lambda: None
    endpoints: dict[int, Endpoint] = field(default_factory=dict)
    progress: Progress = field(default_factory=Progress)
    stopped_nodes: set[int] = field(default_factory=set)
    _topic_ids: dict[uuid.UUID, str] = field(default_factory=dict)
    _topic_count: int = -1

    def live_endpoints(self) -> list[Endpoint]:
        return [e for node_id, e in sorted(self.endpoints.items())
                if node_id not in self.stopped_nodes and self.cluster.nodes[node_id].alive]

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The data topic with this id (topics are never deleted, so the map only grows)."""
        names = self.cluster.partitions.topic_names()
        if len(names) != self._topic_count:
            self._topic_ids = {m.topic_id: m.name for m in self.cluster.partitions.describe_topics(names)
                               if m.topic_id is not None}
            self._topic_count = len(names)
        return self._topic_ids.get(topic_id)

    def create_topic(self, name: str, num_partitions: int | None) -> str:
        """CreateTopics for one topic; on success every group coordinator refreshes its topic metadata."""
        error = self.cluster.partitions.create_topic(name, num_partitions)
        if error == Errors.NONE:
            self.topics_changed()
        return error

    def topics_changed(self) -> None:
        for node in self.cluster.nodes:
            if node.alive:
                node.groups.topics_changed()


@dataclass(slots=True)
class BrokerContext:
    """One node as its handlers see it."""

    shared: ServedCluster
    node_id: int

    @property
    def cluster(self) -> Cluster:
        return self.shared.cluster

    @property
    def node(self) -> Node:
        return self.shared.cluster.nodes[self.node_id]

    @property
    def metrics(self) -> ServerMetrics:
        return self.shared.metrics

    def leads(self, tp: TopicPartition) -> bool:
        """This node leads the data partition (Produce, Fetch and ListOffsets are answered by leaders only)."""
        return self.cluster.data_leader(tp) == self.node_id

    def shown_leader_epoch(self, tp: TopicPartition, log_epoch: int) -> int:
        """The leader epoch Metadata shows: the log's epoch plus how far leadership moved past the partition's
        first-choice node, so clients see a newer epoch after a failover (which truncates nothing: the log is
        shared)."""
        leader = self.cluster.data_leader(tp)
        return log_epoch + (leader - tp.partition) % len(self.cluster.nodes)

    async def wait(self, completion: Completion[T]) -> T:
        """The completion's value: at once if it is done, else after the cluster loop (kicked now) completes it.
        A request that waits for a group commit while it is the only one in progress and none is queued has nobody
        to share the fsync with: the cluster is polled and flushed for it now, in its own turn (as per-batch
        durability would have), rather than one or more loop turns later."""
        if completion.done:
            self.shared.nudge()
            return completion.result()
        self.shared.kick()
        if self.shared.alone():
            self.cluster.flush()  # (appends the open batches, fsyncs, completes)
            self.shared.progress.notify()
            if completion.done:
                return completion.result()
        return await completion.as_future()

    async def wait_at_most(self, completion: Completion[Any], seconds: float) -> None:
        """Until `completion` is done (its value is not read; a failure is not raised) or `seconds` have passed: one
        future, released by the completion or by a timer, which is then cancelled (not `asyncio.wait`: its
        coroutines, the future `as_future` makes, the callbacks added and removed cost twice as much, in every
        EndTxn of the fsync mode). Completions are set on the loop's thread (the cluster is single-threaded), so
        the release only schedules the waiting request's resumption."""
        if completion.done:
            return
        self.shared.kick()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        completion.then(lambda _c: _release(waiter))
        timer = waiter.get_loop().call_later(seconds, _release, waiter)
        try:
            await waiter
        finally:
            timer.cancel()


def _release(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
