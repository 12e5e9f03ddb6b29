"""`CoordinatorRuntime`: the shards of one coordinator (transactions or groups) on one node.

Owns: `partition_for` (Kafka's `Utils.abs(javaStringHash(key)) % partitions`), the partition states (not owned,
loading, active), `load` (open the partition's log, replay it — in steps, so requests meanwhile get
COORDINATOR_LOAD_IN_PROGRESS — with a coordinator epoch above every epoch in the log) and `unload`, and `poll`: the
loop that advances loads, flushes group commits, completes durable writes, fires due timers and cleans (compacts)
logs whose dirty part has grown (`cleaner.py`). The server calls `poll` from its event loop; the simulator calls it
between steps.
Must not import: `kcoord.model`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ..errors import Errors, KafkaError
from ..storage._files import DamagedFileError, WriteNotDone, atomic_write, quoted_content
from ..storage.batch import RecordBatch
from ..storage.codec import SchemaError
from ..storage.log import (
    CompactionReport,
    Durability,
    FlushTicket,
    LogCorruptedError,
    PartitionLog,
    partition_dir_name,
)
from ..storage.partitioning import partition_for
from .cleaner import DEFAULT_CLEANING, Cleaning
from .clock import Clock
from .shard import Shard, ShardSpec
from .trace import Tracer

_log = logging.getLogger(__name__)
LOAD_BATCHES_PER_POLL = 2_000
CLEAN_RETRY_MS = 60_000  # a compaction that could not write (a full disk) is tried again this much later
_NEVER = 1 << 62
BUSY_RECHECK_MS = 1_000  # a shard still busy with nothing due (a compaction to retry) is looked at again this often
FSYNC_THREADS = 8  # fsyncs of different partitions' logs run side by side (the syscall releases the GIL)

_fsync_pool: ThreadPoolExecutor | None = None


def fsync_pool() -> ThreadPoolExecutor:
    """The threads fsyncs run on (the syscall releases the GIL): one per log flushed side by side, up to
    `FSYNC_THREADS`."""
    global _fsync_pool
    if _fsync_pool is None:
        _fsync_pool = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="kcoord-fsync")
    return _fsync_pool


def _flush_all(due: list[tuple[int, Shard]]) -> list[tuple[int, OSError]]:
    """Flush every due log, concurrently when there are several; returns the partitions whose flush failed."""
    global _fsync_pool

    def flush(item: tuple[int, Shard]) -> tuple[int, OSError] | None:
        try:
            item[1].log.flush()
        except OSError as e:
            return item[0], e
        return None

    if len(due) <= 1:
        results = [flush(item) for item in due]
    else:
        if _fsync_pool is None:
            _fsync_pool = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="kcoord-fsync")
        results = list(_fsync_pool.map(flush, due))
    return [r for r in results if r is not None]


def _nothing() -> None:
    pass


def flush_together(logs: list[PartitionLog]) -> None:
    """Fsync these logs side by side (their fsyncs then share the disk's flushes, as the journal commits concurrent
    fsyncs together). A log whose flush fails keeps its pending data: its owner's own flush then meets the error and
    handles it."""
    if len(logs) <= 1:
        return  # (one log: its owner flushes it)

    def flush(log: PartitionLog) -> None:
        with contextlib.suppress(OSError):
            log.flush()

    global _fsync_pool
    if _fsync_pool is None:
        _fsync_pool = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="kcoord-fsync")
    list(_fsync_pool.map(flush, logs))



@dataclass(slots=True)
class _Loading:
    shard: Shard
    batches: Iterator[RecordBatch]
    replay_control: Callable[[Shard, RecordBatch], None] | None


class CoordinatorRuntime:
    def __init__(self, *, topic: str, data_dir: Path, spec_factory: Callable[[int], ShardSpec], clock: Clock,
                 tracer: Tracer | None = None, num_partitions: int = 50, durability: Durability | None = None,
                 node_id: int = 0, segment_bytes: int = 100 * 1024 * 1024,
                 cleaning: Cleaning | None = DEFAULT_CLEANING, check_records: bool = True) -> None:
        self.topic = topic
        self.check_records = check_records  # the shards' record check (`Shard.check_records`)
        self.data_dir = data_dir
        self.spec_factory = spec_factory
        self.clock = clock
        self.tracer = tracer or Tracer(node=node_id)
        self.num_partitions = num_partitions
        self.durability = durability or Durability.per_batch()
        self.node_id = node_id
        self.segment_bytes = segment_bytes
        self.shards: dict[int, Shard] = {}
        self.loading: dict[int, _Loading] = {}
        self.cleaning = cleaning  # None: logs are never compacted while owned
        self._clean_bytes: dict[int, int] = {}  # partition -> log size after its last compaction (persisted)
        self._clean_retry_ms: dict[int, int] = {}  # partition -> no compaction before (one that could not write)
        self._clean_checked: dict[int, int] = {}  # partition -> log end offset when a compaction was last not due
        self.storage_failed: dict[int, OSError] = {}  # partitions unloaded after a write they could not undo
        self.compactions: list[tuple[int, CompactionReport]] = []  # (partition, report), the most recent last
        self._busy: dict[int, Shard] = {}  # shards with writes not yet settled (durable, answered, cleaning checked)
        #: the shards that may hold plans in flight (open or appended, not yet completed): a subset of `_busy` that
        #: `flush`, `write_open` and `logs_to_flush` visit, so a lone request's flush does not look at every shard
        #: written since the last poll (in `os` mode polls are rare: most requests flush alone)
        self._unsettled: dict[int, Shard] = {}
        #: `Durability.fsync`: a log's appends become durable only in its owner's rounds (`begin_flush` ..
        #: `flushed`), so `poll` looks only at the shards written since it last looked and those whose logs the
        #: last round covered (`_looked_at`), not at every busy shard waiting for a round still in flight
        self._rounds = self.durability.mode == "fsync"
        self._looked_at: dict[int, Shard] = {}  # (with `_rounds`) what the next poll looks at
        self._in_round: list[tuple[int, Shard]] = []  # (with `_rounds`) the shards the round begun now covers
        self._timers_due_ms = _NEVER  # no timer of any shard is due before then
        #: told when `next_deadline_ms` may have moved earlier (a write started, an earlier timer): an event loop
        #: sleeping until the old deadline wakes (`Cluster.changed`)
        self.on_change: Callable[[], None] = _nothing

    # ------------------------------------------------------------ routing

    def partition_for(self, key: str) -> int:
        return partition_for(key, self.num_partitions)

    def shard_for(self, key: str) -> Shard:
        """The active shard owning `key`, or the Kafka error a request for it gets."""
        return self.shard(self.partition_for(key))

    def shard(self, partition: int) -> Shard:
        if partition in self.loading:
            raise KafkaError(Errors.COORDINATOR_LOAD_IN_PROGRESS, f"{self.topic}-{partition} is loading")
        shard = self.shards.get(partition)
        if shard is None or shard.failed is not None:
            raise KafkaError(Errors.NOT_COORDINATOR, f"{self.topic}-{partition} is not owned by node {self.node_id}")
        return shard

    def owns(self, partition: int) -> bool:
        return partition in self.shards and partition not in self.loading

    # ------------------------------------------------------------ load / unload

    def load(self, partition: int, *, wait: bool = True) -> Shard:
        """Start owning `partition`: open its log and replay it, while recovery reads it (`wait`), or step by step
        in `poll` (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS). The coordinator epoch is one above every
        epoch in the log."""
        if partition in self.shards or partition in self.loading:
            raise KafkaError(Errors.NOT_COORDINATOR, f"{self.topic}-{partition} is already owned or loading")
        path = self.data_dir / partition_dir_name(self.topic, partition)
        shard = Shard(partition, self.spec_factory(partition), clock=self.clock, tracer=self.tracer,
                      check_records=self.check_records)
        shard.on_write = self._write_started
        shard.timers.on_schedule = self._timer_scheduled
        replay_control = getattr(shard.spec, "replay_control", None)  # optional (ControlReplay)
        last_values = getattr(shard.spec, "last_values", None)  # optional (LastValueReplay)
        top_epoch = -1
        batches: list[RecordBatch] = []

        def on_batch(batch: RecordBatch) -> None:
            nonlocal top_epoch
            top_epoch = max(top_epoch, batch.partition_leader_epoch)
            if not wait and last_values is None:
                batches.append(batch)
            elif not batch.is_control:
                shard.replay_batch(batch)  # with last_values: in log order with the records the scan put there
            elif replay_control is not None:
                replay_control(shard, batch)

        # Replaying while recovery decodes keeps one batch alive at a time: a big log loads in bounded memory.
        # A last-value spec is loaded whole by the scan; `wait=False` then only defers `on_loaded` to the next poll.
        try:
            log = PartitionLog.open(path, segment_bytes=self.segment_bytes, durability=self.durability,
                                    clock_ms=self.clock.now_ms, on_batch=on_batch, last_values=last_values)
        except SchemaError as e:  # a record that passed the log's checks does not decode: Kafka's load fails too
            raise LogCorruptedError(f"{path}: a record does not decode ({e}); the partition is not loaded") from e
        if last_values is not None:
            top_epoch = max(top_epoch, last_values.top_leader_epoch)
        try:
            epoch = _begin_coordinator_epoch(path, top_epoch)
        except DamagedFileError:
            log.close()
            raise
        shard.attach(log, epoch)
        self._clean_bytes[partition] = _read_clean_bytes(path / _CLEANER_CHECKPOINT_FILE)
        self.shards[partition] = shard
        self._busy[partition] = self._looked_at[partition] = shard  # the next poll checks whether its log is due
        # a compaction
        self.storage_failed.pop(partition, None)
        if wait:
            try:
                shard.spec.on_loaded(shard)
            except SchemaError as e:
                self.unload(partition)
                raise LogCorruptedError(f"{path}: a record does not decode ({e}); the partition is not loaded") \
                    from e
        else:
            self.loading[partition] = _Loading(shard, iter(batches), replay_control)
        return shard

    def _advance_load(self, partition: int, budget: int) -> None:
        state = self.loading[partition]
        for _ in range(budget):
            batch = next(state.batches, None)
            if batch is None:
                del self.loading[partition]
                state.shard.spec.on_loaded(state.shard)
                return
            if not batch.is_control:
                state.shard.replay_batch(batch)
            elif state.replay_control is not None:
                state.replay_control(state.shard, batch)

    def unload(self, partition: int) -> None:
        """Stop owning `partition`: pending requests get NOT_COORDINATOR, timers stop, the log is closed."""
        self.loading.pop(partition, None)
        self._clean_bytes.pop(partition, None)
        self._clean_retry_ms.pop(partition, None)
        self._clean_checked.pop(partition, None)
        self._busy.pop(partition, None)
        self._unsettled.pop(partition, None)
        self._looked_at.pop(partition, None)
        shard = self.shards.pop(partition, None)
        if shard is not None:
            shard.close()

    def close(self) -> None:
        for partition in list(self.shards):
            self.unload(partition)
        self.tracer.flush()

    # ------------------------------------------------------------ the loop

    def poll(self) -> int:
        """Advance loads, flush due group commits, complete durable writes, fire due timers. Returns work done.

        Only the shards that wrote since their writes were last settled (`_busy`: told by `Shard.on_write`, and every
        shard once after its load) are looked at, and the timers of all only once the earliest deadline any of them
        may hold has come (`_timers_due_ms`, lowered by every `Timers.schedule`): a poll with nothing to do costs
        the same however many partitions the node owns. With `Durability.fsync` only the busy shards that may have
        progress are looked at (`_looked_at`): those written since the last look and those whose logs the last round
        made durable (`flushed`); a shard waiting for a round still in flight is not."""
        work = 0
        for partition in list(self.loading):
            self._advance_load(partition, LOAD_BATCHES_PER_POLL)
            work += 1
        now = self.clock.now_ms()
        timers_due = now >= self._timers_due_ms
        looked_at = self._looked_at
        if timers_due:
            active = [(p, s) for p, s in self.shards.items() if p not in self.loading]
        elif self._rounds:
            if not looked_at:
                return work
            active = [(p, s) for p, s in looked_at.items() if p not in self.loading]
        elif self._busy:
            active = [(p, s) for p, s in self._busy.items() if p not in self.loading]
        else:
            return work
        if self._rounds:  # (what this poll's completions and timers write is looked at again by the next)
            self._looked_at = {p: s for p, s in looked_at.items() if p in self.loading} if looked_at else {}
        for _, shard in active:
            work += shard.write_open()
        if not self._rounds:  # (with fsync rounds no flush is ever due: `PartitionLog.flush_due`)
            due = [(p, s) for p, s in active if s.in_flight and s.log.flush_due(now)]
            for partition, error in _flush_all(due):
                self._unload_failed(partition, "fsync", error)
        busy = self._busy
        for partition, shard in active:
            if partition not in self.shards:
                continue
            in_flight = shard.in_flight
            if in_flight:
                work += shard.complete_durable()
                in_flight = shard.in_flight
            if timers_due:
                fired = shard.timers.fire_due(now)
                if fired:
                    work += fired
                    in_flight = shard.in_flight  # a timer's callback may have written (a session expiry)
            if not in_flight and self._unsettled.get(partition) is shard:
                del self._unsettled[partition]
            if not in_flight and partition in busy:
                if self.cleaning is not None and self._clean_checked.get(partition) != shard.log.log_end_offset:
                    work += self._clean(partition, shard, now)
                if self.cleaning is None or self._clean_checked.get(partition) == shard.log.log_end_offset:
                    del busy[partition]  # (a compaction to retry later keeps it here)
                elif self._rounds:
                    self._looked_at[partition] = shard  # (and looked at by every poll, as before)
        if timers_due:
            self._timers_due_ms = min((d for s in self.shards.values() if (d := s.timers.next_deadline_ms())
                                       is not None), default=_NEVER)
        return work

    def _write_started(self, shard: Shard) -> None:
        self._busy[shard.partition] = self._unsettled[shard.partition] = self._looked_at[shard.partition] = shard
        self.on_change()

    def _timer_scheduled(self, deadline_ms: int) -> None:
        if deadline_ms < self._timers_due_ms:
            self._timers_due_ms = deadline_ms
            self.on_change()

    def _clean(self, partition: int, shard: Shard, now_ms: int) -> int:
        """Compact the shard's log if its dirty part is due (see `cleaner.py`). A compaction that could not write
        (a full disk) leaves the log as it was and is tried again a minute later; any other failure fails the
        shard."""
        assert self.cleaning is not None
        clean_bytes = self._clean_bytes.get(partition, 0)
        if now_ms < self._clean_retry_ms.get(partition, 0):
            return 0
        if not self.cleaning.due(shard.log.size_bytes, clean_bytes):
            self._clean_checked[partition] = shard.log.log_end_offset  # not again before the log grows
            return 0
        try:
            report = shard.log.compact(now_ms, tombstone_retention_ms=self.cleaning.tombstone_retention_ms)
        except WriteNotDone as e:
            self._clean_retry_ms[partition] = now_ms + CLEAN_RETRY_MS
            _log.warning("%s-%d: compaction could not write (%s); the log is left as it was, tried again in %d s",
                         self.topic, partition, e.strerror or e, CLEAN_RETRY_MS // 1000)
            return 1
        except OSError as e:
            self._unload_failed(partition, "compaction", e)
            return 1
        self._clean_retry_ms.pop(partition, None)
        self._clean_bytes[partition] = clean_bytes = shard.log.size_bytes
        try:
            atomic_write(shard.log.path / _CLEANER_CHECKPOINT_FILE, f"{clean_bytes}\n".encode())
        except OSError as e:  # bookkeeping only: the next load may compact again
            _log.warning("%s: not written (%s)", shard.log.path / _CLEANER_CHECKPOINT_FILE, e.strerror or e)
        self.compactions.append((partition, report))
        del self.compactions[:-100]
        return 1

    def begin_flush(self, syncfs_device: int | None = None) -> list[FlushTicket]:
        """Group commit with the fsyncs on other threads (`PartitionLog.begin_flush`): the open batches appended,
        a ticket for every log holding appends not yet fsynced; a failed fsync unloads its shard (`end_flush`).
        Once the tickets have ended, `flushed` tells the next poll to look at their shards. `syncfs_device`: the
        file system one syncfs syncs for the round (its logs' tickets then hold no descriptor)."""
        out = []
        for partition, shard in list(self._busy.items()):
            if not shard.in_flight or self.shards.get(partition) is not shard or partition in self.loading:
                continue
            shard.write_open()
            log = shard.log
            if self.shards.get(partition) is not shard:
                continue
            if log.flushed_offset == log.log_end_offset:
                self._looked_at[partition] = shard  # (made durable meanwhile, by a segment roll: the next poll
                continue  # completes it)
            try:
                ticket = log.begin_flush(syncfs_device)
            except OSError as e:
                self._unload_failed(partition, "fsync", e)
                continue
            if ticket is not None:
                ticket.on_error = functools.partial(self._fsync_failed, partition, shard)
                out.append(ticket)
                self._in_round.append((partition, shard))
        return out

    def flushed(self) -> None:
        """The tickets of `begin_flush` have ended (`PartitionLog.end_flush`): the next poll looks at the shards whose
        logs they covered (and only at those, of the shards that waited for them), to complete what became durable."""
        for partition, shard in self._in_round:
            if self.shards.get(partition) is shard:
                self._looked_at[partition] = shard
        self._in_round = []

    def _fsync_failed(self, partition: int, shard: Shard, error: OSError) -> None:
        if self.shards.get(partition) is shard:
            self._unload_failed(partition, "fsync", error)

    def logs_to_flush(self) -> list[PartitionLog]:
        """Group commit: the open batches appended, the logs holding appends not yet fsynced."""
        out = []
        for shard in self._unsettled.values():
            if shard.in_flight:
                shard.write_open()
                if shard.log.durable_offset < shard.log.log_end_offset:
                    out.append(shard.log)
        return out

    def flush(self) -> int:
        """Force every group commit to disk now and complete what became durable."""
        done = 0
        unsettled = self._unsettled
        for partition, shard in list(unsettled.items()):
            if shard.in_flight and partition in self.shards:
                shard.write_open()
                try:
                    shard.log.flush()
                except OSError as e:
                    self._unload_failed(partition, "fsync", e)
                    continue
                done += shard.complete_durable()
            if not shard.in_flight and unsettled.get(partition) is shard:
                del unsettled[partition]  # (`_busy` keeps it until a poll has checked its cleaning)
        return done

    def write_open(self) -> int:
        """Append every shard's open batch now, without an fsync (what must be fsynced waits for the next flush), and
        complete what that made visible (a `visible_when_written` plan; with os durability every append). Returns
        the plans completed."""
        done = 0
        for partition, shard in list(self._unsettled.items()):
            if shard.has_open and partition in self.shards and partition not in self.loading:
                shard.write_open()
                done += shard.complete_durable()
        return done

    def _unload_failed(self, partition: int, doing: str, error: OSError) -> None:
        """A write the log cannot undo failed (an fsync: the page cache may have dropped the data; a compaction
        midway): the shard is unloaded (requests get NOT_COORDINATOR, Kafka's answer to KAFKA_STORAGE_ERROR) until it
        is loaded again, which reopens and recovers its log. Kept in `storage_failed` (the metrics) until then."""
        shard = self.shards[partition]
        shard.failed = error
        shard.log.abandon(f"{doing} failed: {error}")
        self.storage_failed[partition] = error
        _log.warning("%s-%d is unloaded: %s failed (%s); requests for it get NOT_COORDINATOR until it is loaded "
                     "again", self.topic, partition, doing, error)
        self.unload(partition)

    def next_deadline_ms(self) -> int | None:
        """The earliest moment `poll` has timer or group-commit work (for an event loop's sleep)."""
        busy = self._busy.values()
        if any(s.has_open for s in busy):
            return self.clock.now_ms()  # the open batches are appended at the next poll
        deadlines = [d for s in busy if (d := s.log.next_flush_due_ms) is not None]
        if self._busy:
            deadlines.append(self.clock.now_ms() + BUSY_RECHECK_MS)  # a compaction to retry, writes to settle
        if self._timers_due_ms != _NEVER:
            deadlines.append(self._timers_due_ms)
        return min(deadlines) if deadlines else None


_COORDINATOR_EPOCH_FILE = "coordinator-epoch"
# The log's size right after its last compaction, next to the log (Kafka keeps a cleaner-offset-checkpoint): a load
# knows how much of the log is dirty, so failovers do not each start with a compaction of an already clean log.
_CLEANER_CHECKPOINT_FILE = "cleaner-checkpoint"


def _read_number(file: Path) -> tuple[int | None, str | None]:
    """(the integer a one-line file holds, None) or (None, what is wrong with it); (None, None) when it is missing."""
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"cannot be read ({e.strerror or e})"
    try:
        return int(data.decode("ascii").strip()), None
    except (UnicodeDecodeError, ValueError):
        return None, f"found {quoted_content(data)}"


def _read_clean_bytes(file: Path) -> int:
    """The log size after its last compaction (0: never compacted). Only bookkeeping: an unreadable one is rebuilt
    as 0, with a WARN (the log is then compacted when next due, which writes the real size again)."""
    value, problem = _read_number(file)
    if value is not None and value >= 0:
        return value
    if value is None and problem is None:
        return 0
    _log.warning("%s: not a log size (%s); rebuilt as 0: the log counts as never compacted and is compacted when "
                 "next due", file, problem or f"found {value}")
    atomic_write(file, b"0\n")
    return 0


def _begin_coordinator_epoch(path: Path, top_log_epoch: int) -> int:
    """The epoch of a new load: above every epoch in the log and above the last load's (persisted next to the log).
    Like Kafka's leader epoch, it grows with every load even when a load writes nothing, so two loads never share
    an epoch (their trace rows would share (coordinator_epoch, seq)). A damaged file is refused
    (`DamagedFileError`): guessing could give this load an epoch an earlier load used."""
    file = path / _COORDINATOR_EPOCH_FILE
    last, problem = _read_number(file)
    if problem is not None or (last is not None and last < -1):
        raise DamagedFileError(file, f"not a coordinator epoch ({problem or f'found {last}'}; expected one integer)",
                               f"remove it to continue above the log's highest epoch ({top_log_epoch}), or write "
                               "the last epoch this partition used")
    epoch = max(top_log_epoch, -1 if last is None else last) + 1
    atomic_write(file, f"{epoch}\n".encode())
    return epoch
