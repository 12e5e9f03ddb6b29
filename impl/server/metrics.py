"""The server's Prometheus metrics, and the HTTP endpoint that serves them from the server's own event loop.

Owns: `ServerMetrics` (one `CollectorRegistry` per server — no module-level registry), fed three ways:
- by the handlers: request latency per API, heartbeats, JoinGroups, committed offsets;
- by the trace rows the coordinators emit (`MetricsTap`, a `TraceSink` that forwards to the real sink if any):
  rebalances and their duration (a classic group from PreparingRebalance to Stable; a consumer group from
  Assigning/Reconciling to Stable), transactions completed per result and timed out;
- by a snapshot of the cluster taken at scrape time on the event loop (`Snapshot`): groups per type and state,
  members, transactions per state (ongoing = Ongoing), marker queues and the marker channel's counters,
  connections, coordinator partitions owned, partitions offline (a damaged log, a failed fsync) and logs whose
  writes fail (a full disk); and the coordinator partition load times (`Cluster.load_listener`).
`MetricsHttpServer` answers `GET /metrics` on the event loop, so a scrape never races the cluster's thread.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString as _untyped_go_string

from .._generated.classic_group import State as ClassicGroupState
from .._generated.consumer_group import State as ConsumerGroupState
from .._generated.transaction import Event as TxnEvent
from .._generated.transaction import State as TxnState
from ..runtime.trace import Row, TapSink, TraceSink
from ..statemachine import Decision

__all__ = ("MetricsHttpServer", "MetricsTap", "ServerMetrics", "Snapshot")

_log = logging.getLogger(__name__)
_LATENCY_BUCKETS_S: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                             30.0)
_go_string: Callable[[float], str] = _untyped_go_string  # a bucket bound as Prometheus writes it ("+Inf")
_REBALANCE_BUCKETS_S: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_LOAD_BUCKETS_S: Final = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)
_ACCEPTED: Final = frozenset({"transition", "stay"})
_COMPLETED: Final = frozenset({TxnState.CompleteCommit, TxnState.CompleteAbort})  # the ends `_transaction` counts
#: per group machine: its group type, the states of a rebalance, the state that ends one, the states that drop one
_REBALANCING: Final = {
    "ClassicGroup": ("classic", frozenset({ClassicGroupState.PreparingRebalance}), ClassicGroupState.Stable,
                     frozenset({ClassicGroupState.Empty, ClassicGroupState.Dead})),
    "ConsumerGroup": ("consumer", frozenset({ConsumerGroupState.Assigning, ConsumerGroupState.Reconciling}),
                      ConsumerGroupState.Stable, frozenset({ConsumerGroupState.Empty, ConsumerGroupState.Dead}))}
H = TypeVar("H", bound=Callable[..., Awaitable[Any]])


@dataclass(slots=True)
class Snapshot:
    """Gauges read from the cluster at scrape time (built by the server on its loop)."""

    groups: dict[tuple[str, str], int] = field(default_factory=dict)  # (group type, state) -> groups
    members: dict[str, int] = field(default_factory=dict)  # group type -> members
    transactions: dict[str, int] = field(default_factory=dict)  # state -> transactional ids
    marker_queue: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, destination) -> partitions
    marker_stats: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, counter) -> value
    connections: dict[str, int] = field(default_factory=dict)  # node -> open connections
    closed_for_bad_input: dict[str, int] = field(default_factory=dict)  # node -> connections closed
    closed_idle: dict[str, int] = field(default_factory=dict)  # node -> connections closed for idleness
    request_bytes: int = 0  # bytes of requests read and not yet answered, all nodes (queued.max.request.bytes)
    waiting_for_memory: int = 0  # connections not read until request memory frees
    owned_partitions: dict[tuple[str, str], int] = field(default_factory=dict)  # (node, coordinator) -> partitions
    offline_partitions: dict[str, int] = field(default_factory=dict)  # data | transaction | group -> not started
    failing_logs: dict[tuple[str, str], int] = field(default_factory=dict)  # (kind, errno name) -> open logs


class _SnapshotCollector(Collector):
    def __init__(self, snapshot: Callable[[], Snapshot]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        yield _gauge("kcoord_groups", "Groups by type and state.", ["group_type", "state"], s.groups)
        yield _gauge("kcoord_group_members", "Members of all groups, by group type.", ["group_type"],
                     {(k,): v for k, v in s.members.items()})
        yield _gauge("kcoord_transactions", "Transactional ids by state.", ["state"],
                     {(k,): v for k, v in s.transactions.items()})
        ongoing = GaugeMetricFamily("kcoord_transactions_ongoing", "Open transactions (state Ongoing).")
        ongoing.add_metric([], s.transactions.get(TxnState.Ongoing, 0))
        yield ongoing
        yield _gauge("kcoord_marker_queue_partitions", "Partitions waiting for a transaction marker, per node and "
                     "destination ('delayed': waiting for a retry back-off).", ["node", "destination"], s.marker_queue)
        counters = CounterMetricFamily("kcoord_marker_channel", "The marker channel's counters per node "
                                       "(requests, markers_sent, partition_retries, complete_retries, gave_up, ...).",
                                       labels=["node", "counter"])
        for (node, name), value in sorted(s.marker_stats.items()):
            counters.add_metric([node, name], value)
        yield counters
        yield _gauge("kcoord_connections_open", "Open client connections per node.", ["node"],
                     {(k,): v for k, v in s.connections.items()})
        yield _gauge("kcoord_connections_closed_for_bad_input", "Connections closed for bad input per node.",
                     ["node"], {(k,): v for k, v in s.closed_for_bad_input.items()})
        yield _gauge("kcoord_connections_closed_idle", "Connections closed after connections.max.idle.ms without "
                     "activity, per node.", ["node"], {(k,): v for k, v in s.closed_idle.items()})
        yield _gauge("kcoord_request_bytes", "Bytes of requests read and not yet answered, all connections "
                     "(bounded by queued.max.request.bytes).", [], {(): s.request_bytes})
        yield _gauge("kcoord_connections_waiting_for_memory", "Connections not read until request memory frees.",
                     [], {(): s.waiting_for_memory})
        yield _gauge("kcoord_coordinator_partitions_owned", "Coordinator partitions loaded per node.",
                     ["node", "coordinator"], s.owned_partitions)
        yield _gauge("kcoord_partitions_offline", "Partitions not started because their log is damaged where "
                     "recovery may not cut it (see the ERROR log), per kind (data | transaction | group).", ["kind"],
                     {(k,): v for k, v in s.offline_partitions.items()})
        yield _gauge("kcoord_logs_failing", "Open logs whose last write or fsync failed (a full disk: errno ENOSPC), "
                     "per kind (data | transaction | group) and errno; each said once in an ERROR line. A coordinator "
                     "partition unloaded after a failed fsync counts in kcoord_partitions_offline.",
                     ["kind", "errno"], s.failing_logs)


def _gauge(name: str, documentation: str, labels: list[str], values: dict[Any, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric(list(key), value)
    return family


class _HandlerCounters(Collector):
    """The counters the handlers bump on every request, kept as plain integers and read at scrape time (a Prometheus
    child's `inc`/`observe` takes a lock and, with labels, a lookup: several µs on a path of ~50)."""

    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {}  # api -> [count per bucket (the last: +Inf)..., sum of seconds]
        self.heartbeats: dict[tuple[str, str], int] = {}  # (protocol, error) -> heartbeats
        self.joins = 0
        self.offset_commits: dict[str, int] = {}  # kind -> partitions committed

    def collect(self) -> Iterator[Metric]:
        latency = HistogramMetricFamily("kcoord_request_duration_seconds", "Time from a decoded request to its "
                                        "answer, per API.", labels=["api"])
        for api, counts in sorted(self.latency.items()):
            cumulative, buckets = 0.0, []
            for bound, count in zip((*_LATENCY_BUCKETS_S, float("inf")), counts, strict=False):
                cumulative += count
                buckets.append((_go_string(bound), cumulative))
            latency.add_metric([api], buckets, counts[-1])
        yield latency
        heartbeats = CounterMetricFamily("kcoord_heartbeats", "Heartbeats answered, per group protocol and error.",
                                         labels=["protocol", "error"])
        for (protocol, error), value in sorted(self.heartbeats.items()):
            heartbeats.add_metric([protocol, error], value)
        yield heartbeats
        yield CounterMetricFamily("kcoord_join_group_requests", "JoinGroup requests received.", value=self.joins)
        commits = CounterMetricFamily("kcoord_offset_commits", "Partition offsets committed (error NONE), per kind "
                                      "(commit | transactional).", labels=["kind"])
        for kind, value in sorted(self.offset_commits.items()):
            commits.add_metric([kind], value)
        yield commits


class ServerMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.counters = _HandlerCounters()
        r.register(self.counters)
        self.rebalances = Counter("kcoord_rebalances", "Rebalances completed, per group type.", ["group_type"],
                                  registry=r)
        self.rebalance_seconds = Histogram("kcoord_rebalance_duration_seconds", "Rebalance duration, from the "
                                           "group leaving a settled state to Stable.", ["group_type"], registry=r,
                                           buckets=_REBALANCE_BUCKETS_S)
        self.transactions = Counter("kcoord_transactions_completed", "Transactions completed, per result "
                                    "(commit | abort).", ["result"], registry=r)
        self.timed_out = Counter("kcoord_transactions_timed_out", "Transactions aborted by the coordinator's "
                                 "timeout.", registry=r)
        self.load_seconds = Histogram("kcoord_partition_load_duration_seconds", "Coordinator partition load time.",
                                      ["coordinator"], registry=r, buckets=_LOAD_BUCKETS_S)
        self._rebalance_started_ms: dict[tuple[str, str], int] = {}
        # each result's labelled child, made at its first completion (as `labels` would: none is shown before it)
        # and kept: `labels` builds and validates the label tuple under a lock at every call
        self._completed: dict[str, Any] = {}

    def attach_snapshot(self, snapshot: Callable[[], Snapshot]) -> None:
        self.registry.register(_SnapshotCollector(snapshot))

    # ------------------------------------------------------------------ from the handlers

    def timed(self, api: str, handler: H) -> H:
        """`handler`, with its latency recorded under `api`."""
        counts = self.counters.latency.setdefault(api, [0.0] * (len(_LATENCY_BUCKETS_S) + 2))
        bounds, total = _LATENCY_BUCKETS_S, len(_LATENCY_BUCKETS_S) + 1
        clock = time.perf_counter

        async def run(*args: Any) -> Any:
            start = clock()
            try:
                return await handler(*args)
            finally:
                seconds = clock() - start
                counts[bisect.bisect_left(bounds, seconds)] += 1
                counts[total] += seconds

        return run  # type: ignore[return-value]

    def count_heartbeat(self, protocol: str, error: str) -> None:
        heartbeats = self.counters.heartbeats
        key = (protocol, error)
        heartbeats[key] = heartbeats.get(key, 0) + 1

    def count_join(self, api_version: int) -> None:
        self.counters.joins += 1

    def count_offset_commits(self, kind: str, partitions: int) -> None:
        if partitions:
            commits = self.counters.offset_commits
            commits[kind] = commits.get(kind, 0) + partitions

    def partition_loaded(self, kind: str, partition: int, node_id: int, seconds: float) -> None:
        self.load_seconds.labels(kind).observe(seconds)

    # ------------------------------------------------------------------ from trace rows

    def observe_row(self, machine: str, row: Row) -> None:
        if row["kind"] not in _ACCEPTED:
            return
        if machine == "Transaction":
            self._transaction(row)
        elif machine in _REBALANCING:
            self._rebalance(machine, row)

    def _transaction(self, row: Row) -> None:
        to_state = row["to_state"]
        if to_state == TxnState.CompleteCommit and row["from_state"] == TxnState.PrepareCommit:
            self._count_completed("commit")
        elif to_state == TxnState.CompleteAbort and row["from_state"] == TxnState.PrepareAbort:
            self._count_completed("abort")
        if row["event"] == TxnEvent.TimeoutExpired:
            self.timed_out.inc()

    def _count_completed(self, result: str) -> None:
        child = self._completed.get(result)
        if child is None:
            child = self._completed[result] = self.transactions.labels(result)
        child.inc()

    def _rebalance(self, machine: str, row: Row) -> None:
        group_type, rebalancing, stable, idle = _REBALANCING[machine]
        key = (group_type, str(row["key"]))
        to_state = row["to_state"]
        if to_state in rebalancing:
            self._rebalance_started_ms.setdefault(key, int(row["ts_ms"]))
        elif to_state == stable:
            started = self._rebalance_started_ms.pop(key, None)
            if started is not None:
                self.rebalances.labels(group_type).inc()
                self.rebalance_seconds.labels(group_type).observe(max(int(row["ts_ms"]) - started, 0) / 1000)
        elif to_state in idle:
            self._rebalance_started_ms.pop(key, None)


class MetricsTap(TapSink):
    """A `TraceSink` that shows every row to the metrics, then hands it to `inner` (the file sink), if any."""

    watches_rejections = False  # (`observe_row` counts transitions and stays only)

    def __init__(self, metrics: ServerMetrics, inner: TraceSink | None) -> None:
        super().__init__(inner)
        self.metrics = metrics

    def observe(self, machine: str, row: Row) -> None:
        self.metrics.observe_row(machine, row)

    def watches(self, machine: str) -> bool:
        return machine == "Transaction" or machine in _REBALANCING

    def watches_decision(self, machine: str, decision: Decision) -> bool:
        """Of a transaction's decisions only those `observe_row` counts (a completion, a timeout): the other ~5 of a
        committed transaction's 6 accepted ones then cost no row, key text or sequence number."""
        if decision.row.kind not in _ACCEPTED:
            return False
        if machine == "Transaction":
            return decision.event == TxnEvent.TimeoutExpired or (
                decision.post is not None and decision.post["state"] in _COMPLETED)
        return machine in _REBALANCING


class MetricsHttpServer:
    """`GET /metrics` (anything else: 404) on the server's event loop."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None and self._server.sockets, "metrics server is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return str(host), int(port)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass  # headers are not needed
            parts = request_line.decode("latin-1").split()
            if len(parts) >= 2 and parts[0] == "GET" and parts[1].split("?")[0] in ("/metrics", "/"):
                body, status, content_type = generate_latest(self.registry), "200 OK", CONTENT_TYPE_LATEST
            else:
                body, status, content_type = b"not found\n", "404 Not Found", "text/plain"
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n")
            writer.write(head.encode("latin-1") + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, OSError) as e:
            _log.debug("metrics request failed: %s", e)
        except Exception:
            _log.exception("metrics request failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
