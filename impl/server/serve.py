"""`kcoord serve`: an in-process cluster behind one Kafka listener per node, on one asyncio event loop.

Owns: `ServeOptions` (what the command line configures), `KcoordServer` (start: open the data directory, reload every
coordinator partition, bind node i to `port + i`, serve metrics; stop: close the listeners, flush and close the
cluster, the traces and the metrics endpoint; `stop_node`: a node crashes — its listener closes and its
coordinator partitions fail over), and the cluster loop ("pump"): poll the cluster until it has no work left, then
sleep until `cluster.next_deadline_ms()` (real `SystemClock` time) or until a handler submits work (`kick`).
Group commit's flush (`Cluster.flush`: every log with pending appends fsynced side by side, so their fsyncs share the
disk's flushes): a request that waits for one while it is the only request in progress and none is read and waiting
flushes at once, in its own turn (`BrokerContext.wait`, `_alone`); otherwise the pump flushes right after each poll
that did work, and after a turn that found none (a produce's append is not the coordinators' work): the writes of
every handler that ran since the last flush (and of the timers and transaction markers) share that fsync, and the
requests that arrive while it runs share the next. So a lone writer never waits the linger for company that is not
coming, and writers that arrive together still share their fsyncs.
`--durability fsync` (`_start_flush`): a round is synced elsewhere (one syncfs of the file system in a helper process,
`SyncfsProcess`, which shares no GIL with the loop; on a thread if it cannot run; or one queue put per log's fsync on
the fsync threads with `--fsync-method fsync`: `RoundSync`, `FsyncWorkers`);
while a round is in flight a request does not wake the pump (its write can only go to disk in the next round), and
the pump's turn that ends the round runs in the round's own callback (`_flush_done`: it starts the next round with
what arrived meanwhile, then completes what became durable while that round's sync runs, and wakes the sleeping pump
only for an earlier deadline or work left after its polls).
Every cluster call happens on the loop's thread; handlers and the pump interleave only at `await` points.
Durability: `ClusterConfig.durability` — fsync of every batch (default: nothing is acknowledged before it is on
disk) or group commit.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import fcntl
import logging
import os
import threading
import time
from collections import Counter as Tally
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

from .._generated.classic_group import State as ClassicGroupState
from ..cluster import Cluster, ClusterConfig
from ..runtime.clock import Clock, SystemClock
from ..runtime.runtime import FSYNC_THREADS
from ..runtime.trace import JsonlSink, ParquetSink, TraceSink, TypedSchema
from ..statemachine import MachineTable
from ..storage.log import FlushTicket
from ..storage.round_sync import FSYNC_METHODS, FsyncMethod, RoundSync
from .apis import node_registry, served_features
from .broker import BrokerContext, Endpoint, ServedCluster, wait_for_event
from .connection import ListenerSettings, ServerOptions, WireServer
from .dispatch import Dispatcher
from .frames import DEFAULT_MAX_FRAME_BYTES
from .fsync_workers import FsyncWorkers
from .metrics import MetricsHttpServer, MetricsTap, ServerMetrics, Snapshot
from .request_memory import RequestMemory
from .syncfs_process import SyncfsProcess

__all__ = ("KcoordServer", "ServeOptions", "TraceFormat", "run_event_loop")

_log = logging.getLogger(__name__)
TraceFormat = Literal["jsonl", "parquet"]
_TRACED_MACHINES: Final = ("transaction", "classic_group", "consumer_group", "consumer_group_member",
                           "partition_producer")
_POLLS_PER_TURN: Final = 64  # cluster polls before the pump yields to the handlers
_IDLE_SLEEP_MAX_S: Final = 1.0
_BUSY_SLEEP_S: Final = 0.001  # a deadline that is due but gives no work: do not spin
#: how often the traces are flushed (what a crash may lose): a Parquet flush seals its files, so one every 10 s
#: keeps the part files few (`ParquetSink`)
_TRACE_FLUSH_INTERVAL_S: Final[Mapping[str, float]] = {"jsonl": 1.0, "parquet": 10.0}
_MAX_PORT: Final = 65535


@dataclass(frozen=True, slots=True)
class ServeOptions:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9092  # node i listens on port + i; 0: every node on a free port
    nodes: int = 1
    advertised_host: str | None = None  # what Metadata names (default: host)
    trace_out: Path | None = None
    trace_format: TraceFormat = "jsonl"
    metrics_port: int | None = None  # None: no metrics endpoint; 0: a free port
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    cluster: ClusterConfig = field(default_factory=ClusterConfig)  # `nodes` above wins over cluster.nodes
    cluster_id: str = "kcoord"
    listener: ListenerSettings = field(default_factory=ListenerSettings)  # idle timeout, request memory
    fsync_method: FsyncMethod = "auto"  # `--durability fsync`'s rounds: syncfs, fsync per log, auto (`RoundSync`)

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError(f"nodes must be >= 1, got {self.nodes}")
        for option, port in (("--port", self.port), ("--metrics-port", self.metrics_port)):
            if port is not None and not 0 <= port <= _MAX_PORT:
                raise ValueError(f"{option} {port}: a port is 0 to {_MAX_PORT} (0: a free one)")
        if self.port and self.port + self.nodes - 1 > _MAX_PORT:
            raise ValueError(f"--port {self.port} with --nodes {self.nodes}: node {self.nodes - 1} would listen on "
                             f"{self.port + self.nodes - 1}")
        if self.port and self.metrics_port and self.port <= self.metrics_port < self.port + self.nodes:
            raise ValueError(f"--metrics-port {self.metrics_port} is node {self.metrics_port - self.port}'s port "
                             f"(--port {self.port}, --nodes {self.nodes}: node i listens on port + i)")
        if self.max_frame_bytes < 1:
            raise ValueError(f"--max-frame-bytes {self.max_frame_bytes}: must be positive")
        if self.fsync_method not in FSYNC_METHODS:
            raise ValueError(f"--fsync-method {self.fsync_method!r}: expected one of {', '.join(FSYNC_METHODS)}")
        if self.trace_format not in ("jsonl", "parquet"):
            raise ValueError(f"trace format {self.trace_format!r}: expected jsonl or parquet")


_T = TypeVar("_T")


def run_event_loop(main: Coroutine[Any, Any, _T], loop: str = "default") -> _T:
    """Run `main` to completion on `kcoord serve`'s event loop (`loop`: "default", "uvloop" or "asyncio")."""
    if loop not in ("default", "asyncio", "uvloop"):
        raise ValueError(f"event loop {loop!r}: expected default, uvloop or asyncio")
    if loop == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(main)
    return asyncio.run(main)


def _trace_sink(options: ServeOptions) -> TraceSink | None:
    if options.trace_out is None:
        return None
    if options.trace_format == "jsonl":
        return JsonlSink(options.trace_out)
    columns = {}
    for module in _TRACED_MACHINES:
        table = MachineTable.load(module)
        columns[table.name] = TypedSchema.of_table(table)
    return ParquetSink(options.trace_out, columns)


class DataDirInUse(Exception):
    """Another server holds the data folder's lock: two would append to the same logs."""


def _lock(data_dir: Path) -> int:
    """Take the data folder's `.lock` (as Kafka's LogManager does for each log directory): an exclusive `flock`,
    held until `_unlock` or the process ends (a killed server leaves no stale lock)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirInUse(f"{data_dir} is in use by another kcoord serve (it holds {data_dir / '.lock'})") from None
    return fd


class KcoordServer:
    """The whole served cluster. `await start()`, then `await stop()`; or `await run(stop_event)`."""

    def __init__(self, options: ServeOptions, clock: Clock | None = None) -> None:
        self.options = options
        self.clock = clock or SystemClock()
        self.metrics = ServerMetrics()
        self.cluster: Cluster | None = None
        self.shared: ServedCluster | None = None
        self.listeners: dict[int, WireServer] = {}
        self.metrics_server: MetricsHttpServer | None = None
        self._sink: MetricsTap | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._wake_at_ms = 0  # when the sleeping cluster loop wakes by itself (0: it is not sleeping)
        self._flushing: list[FlushTicket] | None = None  # the group commit whose fsyncs run now (fsync durability)
        self._flush_waiter: asyncio.Future[None] | None = None  # done once the round's fsyncs all ended
        self._fsync_workers: FsyncWorkers[FlushTicket] = FsyncWorkers(FSYNC_THREADS)  # (threads from the first round)
        self._round_sync: RoundSync | None = None  # how a round is synced: one syncfs, or an fsync per log
        self._syncfs_worker: FsyncWorkers[list[FlushTicket]] = FsyncWorkers(1, "kcoord-syncfs")
        self._syncfs_process: SyncfsProcess | None = None  # where a round's syncfs runs (None: on `_syncfs_worker`)
        self._process_round: tuple[list[FlushTicket], asyncio.Future[None]] | None = None  # the round it runs
        self._serving = False  # the cluster loop runs (`_flush_done` then takes a turn of it)
        self._unfinished = False  # the last turn stopped at `_POLLS_PER_TURN` with work still due (fsync durability)
        self._last_trace_flush_s = 0.0
        self._lock_fd: int | None = None
        self.request_memory: RequestMemory | None = None
        self.metrics.attach_snapshot(self.snapshot)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        options = self.options
        self._lock_fd = _lock(options.data_dir)
        try:
            self._wake = asyncio.Event()
            self._sink = MetricsTap(self.metrics, _trace_sink(options))
            if self._in_background:  # (before any log is opened: syncfs then reports every write-back error since)
                self._round_sync = RoundSync.open(options.fsync_method, options.data_dir)
                self._start_syncfs_process()
            config = dataclasses.replace(options.cluster, nodes=options.nodes)
            cluster = self.cluster = Cluster(options.data_dir, self.clock, config=config, sink=self._sink)
            cluster.load_listener = self.metrics.partition_loaded
            started = time.perf_counter()
            cluster.start()
            _log.info("loaded %d coordinator partitions on %d node(s) in %.2fs from %s", len(cluster.owner),
                      options.nodes, time.perf_counter() - started, options.data_dir)
            self.shared = ServedCluster(cluster, options.cluster_id, self.kick, self.metrics, alone=self._alone,
                                        nudge=self._nudge)
            await self._listen()
        except BaseException:  # a port in use, a damaged log: close what started (listeners, logs, traces, the
            with contextlib.suppress(Exception):  # lock) before raising the cause
                await self.stop()
            self._unlock()
            raise
        self._pump_task = asyncio.create_task(self._pump(), name="kcoord-cluster-loop")
        self._serving = True

    async def _listen(self) -> None:
        """Open each node's listener, and the metrics endpoint if asked for."""
        options = self.options
        assert self.shared is not None
        advertised = options.advertised_host or options.host
        features = served_features(options.cluster.txn.server_txn_version)
        # Kafka's epoch is the metadata offset that finalized the levels; ours only grows across restarts (a client
        # re-reads the levels only from a higher epoch), so a restart with another transaction.version is seen
        features_epoch = int(time.time() * 1000)
        memory = self.request_memory = RequestMemory(options.listener.queued_max_request_bytes)  # one for all nodes
        for node_id in range(options.nodes):
            port = options.port + node_id if options.port else 0
            registry = node_registry(BrokerContext(self.shared, node_id))
            dispatcher = Dispatcher(registry, features, features_epoch=features_epoch)
            server = WireServer(dispatcher, ServerOptions(host=options.host, port=port,
                                                          max_frame_bytes=options.max_frame_bytes,
                                                          settings=options.listener), memory)
            await server.start()
            self.listeners[node_id] = server
            self.shared.endpoints[node_id] = Endpoint(node_id, advertised, server.address[1])
        if options.metrics_port is not None:
            self.metrics_server = MetricsHttpServer(self.metrics.registry, options.host, options.metrics_port)
            await self.metrics_server.start()

    async def stop(self) -> None:
        """Close the listeners, stop the loop, flush and close the cluster, the traces and the metrics endpoint."""
        self._serving = False
        for server in self.listeners.values():
            await server.stop()
        self.listeners.clear()
        if self._pump_task is not None:
            self._pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump_task
            self._pump_task = None
        if self._flush_waiter is not None:  # the fsyncs in flight end before the logs close
            with contextlib.suppress(Exception):
                await self._flush_waiter
        self._drop_syncfs_process()
        self._fsync_workers.close()
        self._syncfs_worker.close()
        if self._round_sync is not None:
            self._round_sync.close()
        if self.metrics_server is not None:
            await self.metrics_server.stop()
            self.metrics_server = None
        if self.cluster is not None:
            self.cluster.flush()
            self.cluster.close()
        if self._sink is not None:
            self._sink.close()
        self._unlock()
        _log.info("stopped; logs and traces flushed")

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # (closing the descriptor releases the flock)
            self._lock_fd = None

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()

    async def stop_node(self, node_id: int) -> None:
        """Node `node_id` goes away: its listener closes (clients see the disconnect) and its coordinator partitions
        fail over to the live nodes (`Cluster.stop_node`); its data partitions are then led by the next live node."""
        assert self.cluster is not None and self.shared is not None, "server is not started"
        self.shared.stopped_nodes.add(node_id)
        server = self.listeners.pop(node_id, None)
        if server is not None:
            await server.stop()
        self.cluster.stop_node(node_id)
        _log.info("node %d stopped; its coordinator partitions moved to the live nodes", node_id)
        self.kick()

    # ------------------------------------------------------------------ addresses

    @property
    def endpoints(self) -> list[Endpoint]:
        assert self.shared is not None, "server is not started"
        return self.shared.live_endpoints()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{e.host}:{e.port}" for e in self.endpoints)

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        return self.metrics_server.address if self.metrics_server is not None else None

    # ------------------------------------------------------------------ the cluster loop

    def _alone(self) -> bool:
        """One request is being answered, by the whole server, and no other is read and waiting. (Never with
        `--durability fsync`: its flushes run on threads as soon as the loop turns, so a lone writer waits one loop
        turn, not a linger, and writers that arrive while its fsync runs share the next.)"""
        if self._in_background:
            return False
        servers = self.listeners.values()
        return sum(server.busy_connections() for server in servers) <= 1 and \
            not any(server.has_ready_frames() for server in servers)

    def kick(self) -> None:
        """New work was submitted: wake the cluster loop. (With `--durability fsync` and a round of fsyncs in
        flight, not at once: every write now waits for the next round, and the turn that ends this one (`_flush_done`)
        appends and flushes what was submitted meanwhile.)"""
        if self._flushing is not None:
            return
        if self._wake is not None:
            self._wake.set()

    def _nudge(self) -> None:
        """Wake the cluster loop if it sleeps past the cluster's next deadline (a timer scheduled or a batch opened
        by a request answered at once); a request that changed nothing due does not cost a loop turn."""
        if self._flushing is not None:
            return  # (fsync mode, a round in flight: the turn that ends it looks at the deadlines, `_flush_done`)
        if self._wake_at_ms and self.cluster is not None and self.cluster.changed:
            self.kick_now()

    def kick_now(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _timer_earlier(self) -> bool:
        """A deadline of the cluster's comes before the sleeping cluster loop wakes by itself."""
        assert self.cluster is not None
        self.cluster.changed = False
        deadline = self.cluster.next_deadline_ms()
        return deadline is not None and deadline < self._wake_at_ms

    async def _pump(self) -> None:
        wake = self._wake
        assert self.cluster is not None and wake is not None and self.shared is not None
        while True:
            wake.clear()
            work = self._turn()
            await self._sleep(wake, work)

    def _turn(self) -> int:
        """One turn of the cluster loop: poll until nothing is due; then flush (fsync mode: start a round on the
        fsync threads; otherwise fsync now what the turn wrote). Returns the work done."""
        cluster = self.cluster
        assert cluster is not None and self.shared is not None
        work = 0
        self._unfinished = False
        try:
            if self._in_background:
                for _ in range(_POLLS_PER_TURN):
                    done = cluster.poll()
                    work += done
                    if done == 0:
                        break
                else:
                    self._unfinished = True  # (work still due after the turn's polls: a long load)
                self._start_flush()  # what this turn's handlers and timers wrote, fsynced on threads
            else:
                for _ in range(_POLLS_PER_TURN):
                    done = cluster.poll()
                    if done:  # what this turn's handlers and timers wrote goes to disk together, now
                        done += cluster.flush()
                    work += done
                    if done == 0:
                        break
                if work == 0:  # a turn with nothing new: what is still pending (a produce's append) goes now
                    work = cluster.flush()
        except Exception:
            _log.exception("cluster poll failed")  # a coordinator bug; the server keeps answering
        self.shared.progress.notify()
        self._maybe_flush_traces()
        return work

    @property
    def _in_background(self) -> bool:
        """Group commit on threads (`--durability fsync`; see `_start_flush`)."""
        durability = self.options.cluster.durability
        return durability is not None and durability.mode == "fsync"

    def _start_flush(self) -> None:
        """Group commit (`--durability fsync`): unless a flush is in flight, begin one for every log holding
        appends not yet fsynced and sync them while the loop goes on (`RoundSync`: one syncfs of the file system on
        one thread, or their fsyncs side by side on the fsync threads); the writes that arrive meanwhile wait for the
        next one. When they are all done the loop is woken once (not once per fsync: each wake-up is a self-pipe
        write, a loop turn and GIL hand-offs) to complete what became durable, and the next flush starts at once if
        anything is pending."""
        assert self.cluster is not None
        if self._flushing is not None:
            return
        sync = self._round_sync
        device = sync.device if sync is not None else None
        tickets = self.cluster.begin_flush(device)
        if not tickets:
            return
        self._flushing = tickets
        loop = asyncio.get_running_loop()
        waiter = self._flush_waiter = loop.create_future()
        process = self._syncfs_process
        if process is not None and sync is not None and sync.native and all(t.fd is None for t in tickets):
            self._process_round = tickets, waiter
            if process.request():
                return  # (its end: `_syncfs_process_done`)
            self._process_round = None
            self._drop_syncfs_process()  # (it died: this round and the later ones on the thread)
        if sync is not None and device is not None:

            def sync_round(tickets: list[FlushTicket]) -> None:  # on the syncfs thread: one syncfs, one wake-up
                try:
                    sync.sync(tickets)
                finally:
                    loop.call_soon_threadsafe(self._flush_done, tickets, waiter)

            self._syncfs_worker.submit(sync_round, tickets)
            return
        left = [len(tickets)]
        lock = threading.Lock()

        def fsync(ticket: FlushTicket) -> None:  # on an fsync thread; the round's last one wakes the loop, once
            try:
                ticket.fsync()
            finally:
                with lock:
                    left[0] -= 1
                    last = left[0] == 0
                if last:
                    loop.call_soon_threadsafe(self._flush_done, tickets, waiter)

        submit = self._fsync_workers.submit
        for ticket in tickets:
            submit(fsync, ticket)

    def _start_syncfs_process(self) -> None:
        """With one syncfs a round (`RoundSync.native`), run it in a helper process, started before any log opens
        (see `syncfs_process.py`); where it cannot start, the rounds run on the syncfs thread, as they would anyway."""
        sync = self._round_sync
        if sync is None or not sync.native:
            return
        try:
            process = SyncfsProcess.start(self.options.data_dir)
        except OSError as e:
            _log.warning("--durability fsync: the syncfs helper process did not start (%s); the rounds' syncfs runs "
                         "on a thread of the server", e)
            return
        self._syncfs_process = process
        asyncio.get_running_loop().add_reader(process.result_fd, self._syncfs_process_done)

    def _drop_syncfs_process(self) -> None:
        process, self._syncfs_process = self._syncfs_process, None
        if process is not None:
            asyncio.get_running_loop().remove_reader(process.result_fd)
            process.close()

    def _syncfs_process_done(self) -> None:
        """The helper's round ended (its descriptor readable): as `_flush_done`, in this callback. A failed syncfs
        fails it as `RoundSync.sync` does (its writes pending, later rounds fsynced per log); a helper that ended
        leaves its round's writes pending for the next round, on the syncfs thread."""
        process = self._syncfs_process
        assert process is not None and self._round_sync is not None
        code = process.result()
        if code is None:
            _log.warning("--durability fsync: the syncfs helper process %d ended; the rounds' syncfs runs on a thread "
                         "of the server from the next round on", process.pid)
            self._drop_syncfs_process()
        ran, self._process_round = self._process_round, None
        if ran is None:
            return
        tickets, waiter = ran
        if code == 0:
            for ticket in tickets:
                ticket.synced()
        elif code is not None:
            self._round_sync.failed(code)
            self._drop_syncfs_process()
        self._flush_done(tickets, waiter)

    def _flush_done(self, tickets: list[FlushTicket], waiter: asyncio.Future[None]) -> None:
        """The round's fsyncs ended: the next round begins at once with what was written meanwhile, and then what
        this one made durable is completed, in this callback (one turn of the cluster loop here, not a wake-up of the
        loop's task and a turn later), while the next one's sync runs — the disk is not left idle while the loop
        answers; what the completions write (an EndTxn's markers) waits for the round after. The sleeping loop is
        woken only if a deadline now comes before its own wake-up."""
        if not waiter.done():
            waiter.set_result(None)
        self._flushing = self._flush_waiter = None
        if self.cluster is None:
            return
        self.cluster.end_flush(tickets)
        if not self._serving:  # (stopping: `stop` flushes and closes)
            return
        self._start_flush()
        self._turn()
        if not self._wake_at_ms:
            return  # the loop is not sleeping: its next turn comes anyway
        if self._unfinished or (self.cluster.changed and self._timer_earlier()):
            self.kick_now()

    async def _sleep(self, wake: asyncio.Event, work: int) -> None:
        assert self.cluster is not None
        if work and self._flushing is None:  # (a round in flight: the turn that ends it comes anyway)
            await asyncio.sleep(0)
            return
        self.cluster.changed = False
        deadline = self.cluster.next_deadline_ms()
        now_ms = self.clock.now_ms()
        delay_s = _IDLE_SLEEP_MAX_S if deadline is None else (deadline - now_ms) / 1000
        delay_s = min(max(delay_s, _BUSY_SLEEP_S), _IDLE_SLEEP_MAX_S)
        self._wake_at_ms = now_ms + int(delay_s * 1000)
        try:
            await wait_for_event(wake, delay_s)
        finally:
            self._wake_at_ms = 0

    def _maybe_flush_traces(self) -> None:
        now = time.monotonic()
        if self._sink is not None and self._sink.inner is not None and \
                now - self._last_trace_flush_s >= _TRACE_FLUSH_INTERVAL_S[self.options.trace_format]:
            self._last_trace_flush_s = now
            self._sink.flush()

    # ------------------------------------------------------------------ metrics snapshot (on the loop)

    def snapshot(self) -> Snapshot:
        s = Snapshot()
        if self.cluster is None:
            return s
        groups: Tally[tuple[str, str]] = Tally()
        members: Tally[str] = Tally()
        txns: Tally[str] = Tally()
        for node in self.cluster.nodes:
            label = str(node.node_id)
            server = self.listeners.get(node.node_id)
            s.connections[label] = server.stats.connections_open if server is not None else 0
            s.closed_for_bad_input[label] = server.stats.closed_for_bad_input if server is not None else 0
            s.closed_idle[label] = server.stats.closed_idle if server is not None else 0
            if not node.alive:
                continue
            for shard in node.groups.runtime.shards.values():
                for inst in shard.instances["ClassicGroup"].values():
                    if inst["exists"] and inst["state"] != ClassicGroupState.Dead:
                        groups["classic", inst["state"]] += 1
                        members["classic"] += len(inst["members"])
                for inst in shard.instances["ConsumerGroup"].values():
                    groups["consumer", inst["state"]] += 1
                    members["consumer"] += len(inst["members"])
            for shard in node.txn.runtime.shards.values():
                for inst in shard.instances["Transaction"].values():
                    txns[inst["state"]] += 1
            for destination, size in node.txn.channel.queue_sizes().items():
                s.marker_queue[label, destination] = size
            for name, value in dataclasses.asdict(node.txn.channel.stats).items():
                s.marker_stats[label, name] = value
            s.owned_partitions[label, "group"] = len(node.groups.runtime.shards)
            s.owned_partitions[label, "transaction"] = len(node.txn.runtime.shards)
        s.groups, s.members, s.transactions = dict(groups), dict(members), dict(txns)
        if self.request_memory is not None:
            s.request_bytes, s.waiting_for_memory = self.request_memory.in_use_bytes, self.request_memory.waiting
        self._storage_health(s)
        return s

    def _storage_health(self, s: Snapshot) -> None:
        """Partitions not started or unloaded after a failed fsync, and open logs whose writes fail."""
        assert self.cluster is not None
        offline: Tally[str] = Tally(kind for kind, _ in self.cluster.refused)
        failing: Tally[tuple[str, str]] = Tally()
        for node in self.cluster.nodes:
            for kind, runtime in (("transaction", node.txn.runtime), ("group", node.groups.runtime)):
                offline[kind] += len(runtime.storage_failed)
                for shard in runtime.shards.values():
                    if node.alive and shard.log.storage_error is not None:
                        failing[kind, _errno_name(shard.log.storage_error)] += 1
        for part in self.cluster.partitions.partitions():
            if part.log.storage_error is not None:
                failing["data", _errno_name(part.log.storage_error)] += 1
        s.offline_partitions = {"data": len(self.cluster.partitions.offline), "transaction": offline["transaction"],
                                "group": offline["group"]}
        s.failing_logs = dict(failing)


def _errno_name(error: OSError) -> str:
    return errno.errorcode.get(error.errno or 0, str(error.errno))
