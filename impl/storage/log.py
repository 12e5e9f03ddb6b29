"""A coordinator-log partition on disk: Kafka's directory layout, v2 batches, recovery, durability, compaction.

A ``PartitionLog`` is a directory named like Kafka's (``__transaction_state-7/``) holding segment files
``<20-digit base offset>.log`` of v2 record batches, the same bytes a Kafka broker writes (a Kafka data directory's
partition folder can be read with ``read_partition_dir``).

Durability contract: ``durable_offset`` is the end offset that may be acknowledged; a record at or past it must not
be. ``Durability.per_batch()`` (the default) fsyncs inside every ``append``; ``Durability.group`` leaves appends
pending until ``flush()``/``flush_if_due(now_ms)`` (group commit): with both, ``durable_offset`` is fsynced.
``Durability.os()`` acknowledges what ``write`` handed to the operating system (Kafka's default: its page cache
holds it, a process crash keeps it, a power failure may lose it) and fsyncs only at a segment roll and a clean close,
as Kafka does with ``flush.messages``/``flush.ms`` unset; ``flushed_offset`` is then what is really on disk.
Segments are fsynced before a roll and the directory after a segment is created, renamed or deleted, so only the last
segment can have a torn tail after a crash. An ``append`` that raises leaves no bytes behind.

Recovery point (Kafka's ``recovery-point-offset-checkpoint``, kept per partition in the file ``recovery-point``): an
offset below which every batch is fsynced and was validated — written by this class or checked by a recovery. It is
written when a segment rolls, on a clean ``close``, by an ``open`` that validated more than it vouched for, and, as
Kafka's ``log.flush.offset.checkpoint.interval.ms``, at most once a minute when appends become durable (so after a
kill -9 at most a minute of fsynced data is above it). Recovery on ``open`` (``recovery.py``) cuts a bad tail only
above it, with a WARN, and refuses a log damaged below it (``LogCorruptedError``): see ``recovery.py``.
Not thread-safe: one coordinator shard owns one log. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import bisect
import errno
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

from ._files import FileScan, SyncLater, WriteNotDone, atomic_write, fsync_dir, segment_name
from .batch import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    LastValues,
    RecordBatch,
    StopReason,
    encode_batch,
    encode_new_batch,
)
from .compaction import CompactionPlan, CompactionReport, CompactionTally, compact_batch, plan_compaction
from .durability import Durability, FlushTicket, InjectedFault, LogFailedError, PendingFaults
from .recovery import (
    RECOVERY_POINT_FILE,
    LogCorruptedError,
    RecoveryReport,
    Segment,
    read_partition_dir,
    read_recovery_point,
    recover,
)

__all__ = [
    "DEFAULT_SEGMENT_BYTES",
    "AppendInfo",
    "CompactionReport",
    "Durability",
    "FlushTicket",
    "InjectedFault",
    "LogCorruptedError",
    "LogFailedError",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "RecoveryReport",
    "partition_dir_name",
    "read_partition_dir",
]

_log = logging.getLogger(__name__)
DEFAULT_SEGMENT_BYTES: Final = 100 << 20  # Kafka's default for both coordinator topics
RECOVERY_POINT_INTERVAL_MS: Final = 60_000  # Kafka's log.flush.offset.checkpoint.interval.ms
_COMPACTING_SUFFIX: Final = ".compacting"


def partition_dir_name(topic: str, partition: int) -> str:
    """Kafka's partition directory name, e.g. ``__consumer_offsets-12``."""
    return f"{topic}-{partition}"


class OffsetOutOfRangeError(ValueError):
    """A read below the log start offset or past the log end offset."""


@dataclass(slots=True)
class AppendInfo:
    """Where an append went. Treated as immutable; not `frozen` because the coordinators' group commit builds one
    per plan and a frozen dataclass's constructor costs four times as much."""

    base_offset: int
    last_offset: int
    size_bytes: int


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class PartitionLog:
    """One coordinator-log partition. Open with ``PartitionLog.open(path, ...)``; see the module docstring."""

    def __init__(self, path: Path, segments: list[Segment], *, segment_bytes: int, durability: Durability,
                 clock_ms: Callable[[], int], recovery: RecoveryReport, recovery_point: int) -> None:
        assert segments, "a log always has at least one segment"
        self.path = path
        self.recovery = recovery
        self._recovery_point = recovery_point
        self._segments = segments
        self._segment_bytes = segment_bytes
        self._durability = durability
        self._clock_ms = clock_ms
        self._fd: int | None = os.open(segments[-1].path, os.O_WRONLY | os.O_APPEND)
        self.device = os.fstat(self._fd).st_dev  # its file system (every segment is in `path`)
        self._durable_offset = segments[-1].next_offset
        self._flushed_offset = self._durable_offset  # fsynced (below durable_offset only with os durability)
        self._pending_since_ms: int | None = None
        self._pending_bytes = 0
        self._faults = PendingFaults()
        self._failure: str | None = None
        self._checkpointed_ms = clock_ms()
        self._storage_error: OSError | None = None
        self.write_errors = 0  # appends, fsyncs and compactions that failed, since the log was opened

    # ------------------------------------------------------------------------------------------ open / recovery

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
             durability: Durability | None = None, clock_ms: Callable[[], int] = _wall_clock_ms,
             on_batch: Callable[[RecordBatch], None] | None = None,
             last_values: LastValues | None = None, later: SyncLater | None = None) -> PartitionLog:
        """Open (creating if needed) the log in directory ``path`` and recover it; see ``recovery`` for the report.

        Every batch of every segment is validated (length, magic, CRC, offsets increasing). A bad tail of the last
        segment above the recovery point is truncated (WARN); a bad batch below it or in an earlier segment, or a
        log ending below it, raises ``LogCorruptedError`` (see ``recovery.py``) and leaves the files as they are.
        ``on_batch`` turns recovery into a load: it receives every batch that survives recovery, in offset order,
        decoded once (a coordinator replays them instead of calling ``read()`` after opening). If ``open`` raises,
        discard whatever ``on_batch`` built.

        ``last_values`` makes the load a compacted topic's view, for a reader that keeps only the last value per
        key: the records of plain batches go straight into ``last_values.latest`` (see
        ``BatchDecoder.last_values``; no batch objects are built) and ``on_batch`` receives only the other batches
        (control batches, records without a key or with headers), each in its place in the log. Its scan trusts
        the batches below the log's recovery point (see the module docstring): their CRC is not computed again.

        ``later``: the fsyncs of this open (the directory and first segment it makes, the last segment it
        recovers) wait for ``later.sync()``, for opening many partitions at once; until that sync nothing of this
        log may be acknowledged, though ``durable_offset`` already counts what the sync will make durable.
        """
        if segment_bytes < 1024:
            raise ValueError(f"segment_bytes must be at least 1024, got {segment_bytes}")
        directory = Path(path)
        if not directory.is_dir():
            directory.mkdir(parents=True)
            fsync_dir(directory.parent, later)  # the partition directory itself must survive a crash
        for leftover in directory.glob(f"*{_COMPACTING_SUFFIX}"):
            leftover.unlink()  # a compaction that crashed before its rename: the original is intact
        vouched = read_recovery_point(directory)
        if last_values is not None:
            last_values.trusted_below = vouched
        segments, report = recover(directory, on_batch, last_values, later, vouched)
        log = cls(directory, segments, segment_bytes=segment_bytes, durability=durability or Durability.per_batch(),
                  clock_ms=clock_ms, recovery=report, recovery_point=vouched)
        if later is None:  # (with `later`, the old, lower recovery point stays until a roll or close moves it)
            log._checkpoint_recovery_point()  # everything up to the log end is now validated and fsynced
        return log

    # ------------------------------------------------------------------------------------------ offsets

    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._segments[-1].next_offset

    @property
    def size_bytes(self) -> int:
        """Bytes in all segments (what a log cleaner's dirty ratio is measured against)."""
        return sum(segment.size for segment in self._segments)

    @property
    def durability(self) -> Durability:
        return self._durability

    @property
    def durable_offset(self) -> int:
        """End offset that may be acknowledged: fsynced (every record below it survives a crash), or with os
        durability handed to the operating system (survives a process crash). None at or past it may be acked."""
        return self._durable_offset

    @property
    def flushed_offset(self) -> int:
        """End offset known fsynced (what the recovery point may vouch for)."""
        return self._flushed_offset

    @property
    def segment_base_offsets(self) -> tuple[int, ...]:
        return tuple(s.base_offset for s in self._segments)

    @property
    def next_flush_due_ms(self) -> int | None:
        """When ``flush_if_due`` fires at the latest (group durability with pending appends), else None."""
        if self._pending_since_ms is None or self._durability.mode == "fsync":
            return None
        return self._pending_since_ms + self._durability.max_delay_ms

    # ------------------------------------------------------------------------------------------ append

    def append(self, records: Sequence[tuple[bytes | None, bytes | None]], *, timestamp_ms: int,
               producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
               base_sequence: int = NO_SEQUENCE, transactional: bool = False, control: bool = False,
               partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH, waiting_since_ms: int | None = None
               ) -> AppendInfo:
        """Append ``(key, value)`` records as one batch at the log end offset; roll the segment when full.

        ``partition_leader_epoch`` is written into the batch header (coordinators record their epoch there).
        ``waiting_since_ms``: group commit counts its delay from then (records that lingered before this append)
        instead of from now.

        With per-batch durability the batch is fsynced before this returns. On ``OSError`` nothing of the batch
        remains in the file and the offsets are unchanged.
        """
        base_offset = self.log_end_offset
        data = encode_new_batch(records, base_offset=base_offset, timestamp_ms=timestamp_ms,
                                producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                                transactional=transactional, control=control,
                                partition_leader_epoch=partition_leader_epoch)
        return self.append_encoded(data, base_offset, base_offset + len(records) - 1, waiting_since_ms)

    def append_encoded(self, data: bytes, base_offset: int, last_offset: int,
                       waiting_since_ms: int | None = None) -> AppendInfo:
        """Append one already encoded batch (offsets ``base_offset..last_offset``, which must start at the log end
        offset) with ``append``'s roll, write, fsync and undo discipline. For callers that keep a client's batch
        as it came (the partition side); coordinators use ``append``."""
        self._check_usable()
        if base_offset != self.log_end_offset:
            raise ValueError(f"a batch at offset {base_offset} cannot be appended at the log end {self.log_end_offset}")
        active = self._segments[-1]
        try:
            if active.size > 0 and active.size + len(data) > self._segment_bytes:
                self._roll()
                active = self._segments[-1]
            position = active.size
            try:
                self._write(data)
                if self._durability.mode == "per_batch":
                    self._fsync_active()
            except OSError:
                self._undo_write(position)
                raise
        except OSError as e:
            self._storage_failed(e, "append")
            raise
        if self._storage_error is not None:
            self._storage_recovered()
        active.note_batch(base_offset, last_offset, position, len(data))
        if self._durability.mode == "per_batch":
            self._durable_offset = self._flushed_offset = last_offset + 1
            self._checkpoint_if_due()
        elif self._durability.mode == "os":
            self._durable_offset = last_offset + 1  # in the page cache: acknowledged, not yet on disk
        else:
            if self._pending_since_ms is None:
                self._pending_since_ms = self._clock_ms() if waiting_since_ms is None else waiting_since_ms
            self._pending_bytes += len(data)
        return AppendInfo(base_offset, last_offset, len(data))

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        faults = self._faults
        if faults.append_written_bytes is not None:
            written = min(faults.append_written_bytes, len(data))
            faults.append_written_bytes = None
            os.write(self._fd, data[:written])
            raise InjectedFault(errno.EIO, f"injected append failure after {written} of {len(data)} bytes")
        view = memoryview(data)
        while view:
            # not `view[os.write(...):]`: mypyc 2.4.1 evaluates a call in a slice bound twice (compile_hot.py)
            written = os.write(self._fd, view)
            view = view[written:]

    def _undo_write(self, position: int) -> None:
        """Cut the active segment back to ``position`` after a failed append; if that fails too, the log fails."""
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, position)
        except OSError as e:
            self._failure = f"could not truncate {self._segments[-1].path} to {position} after a failed append: {e}"

    def _roll(self) -> None:
        """Start a new segment at the log end offset; the old one is fsynced first, the directory after."""
        self._fsync_active()
        self._durable_offset = self._flushed_offset = self.log_end_offset
        self._pending_since_ms, self._pending_bytes = None, 0
        base = self.log_end_offset
        segment = Segment(base, self.path / segment_name(base), next_offset=base)
        fd = os.open(segment.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            fsync_dir(self.path)
        except OSError:
            os.close(fd)
            segment.path.unlink(missing_ok=True)
            raise
        assert self._fd is not None
        os.close(self._fd)
        self._fd = fd
        self._segments.append(segment)
        self._checkpoint_recovery_point()

    def _checkpoint_if_due(self) -> None:
        """Move the recovery point up to what is durable at most once per ``RECOVERY_POINT_INTERVAL_MS`` (Kafka
        checkpoints its flushed recovery points on that interval), so an unclean stop leaves at most that much
        fsynced data for recovery to check (and cut, if damaged) above it."""
        now_ms = self._clock_ms()
        if now_ms - self._checkpointed_ms >= RECOVERY_POINT_INTERVAL_MS:
            self._checkpointed_ms = now_ms
            self._checkpoint_recovery_point()

    def _checkpoint_recovery_point(self) -> None:
        """Record ``flushed_offset`` as the recovery point, if it moved. Everything below it was written by this
        object (encoded with its CRC) or validated by ``open``, and is fsynced. A failed write keeps the old file,
        whose lower offset stays true (the log only grows above it), so an error here changes nothing else."""
        flushed = self._flushed_offset
        if flushed == self._recovery_point:
            return
        try:
            atomic_write(self.path / RECOVERY_POINT_FILE, f"{flushed}\n".encode())
        except OSError:
            return
        self._recovery_point = flushed

    # ------------------------------------------------------------------------------------------ durability

    def _fsync_active(self) -> None:
        assert self._fd is not None
        if self._faults.flush:
            self._faults.flush = False
            raise InjectedFault(errno.EIO, "injected fsync failure")
        os.fsync(self._fd)

    def flush(self) -> None:
        """Make pending appends durable: fsync them; afterwards ``durable_offset == log_end_offset``. With os
        durability they are already acknowledged (in the page cache): nothing is done (``sync`` fsyncs them, as a
        segment roll and ``close`` do). On ``OSError`` nothing changes: the data stays pending and ``durable_offset``
        does not move. (After a real fsync error the page cache may have dropped the data: close and reopen the log.)"""
        if self._durability.mode == "os":
            self._check_usable()
            return
        self.sync()

    def sync(self) -> None:
        """Fsync what is not on disk yet (whatever the durability); afterwards ``flushed_offset ==
        log_end_offset``. Errors as ``flush``."""
        self._check_usable()
        end = self.log_end_offset
        if self._flushed_offset == end:
            return
        try:
            self._fsync_active()
        except OSError as e:
            self._storage_failed(e, "fsync")
            raise
        if self._storage_error is not None:
            self._storage_recovered()
        self._durable_offset = self._flushed_offset = end
        self._pending_since_ms, self._pending_bytes = None, 0
        self._checkpoint_if_due()

    def begin_flush(self, syncfs_device: int | None = None) -> FlushTicket | None:
        """The first half of a ``flush`` whose fsync runs elsewhere (a thread, while the owner appends more): what
        is pending now, as a ticket holding a duplicate of the active segment's descriptor (a roll or a close meanwhile
        does not close it; none if the round is a syncfs of `syncfs_device`, this log's file system: ``RoundSync``) and
        the end offset it makes durable; None if nothing is pending. Whoever holds the ticket calls ``ticket.fsync()``
        or ``synced()`` (any thread), then ``end_flush(ticket)`` on the owner's."""
        self._check_usable()
        end = self.log_end_offset
        if self._flushed_offset == end:
            return None
        assert self._fd is not None
        injected = self._faults.flush
        self._faults.flush = False
        fd = None if syncfs_device == self.device else os.dup(self._fd)
        return FlushTicket(self, fd, end, injected)

    def end_flush(self, ticket: FlushTicket) -> None:
        """The second half: what the ticket's fsync covered is durable; its error (if any) is raised here, as
        ``flush`` raises it, the data above the flushed offset staying pending. A closed log ignores it."""
        if self._fd is None or self._failure is not None:
            return
        if ticket.error is not None:
            self._storage_failed(ticket.error, "fsync")
            raise ticket.error
        if not ticket.durable:  # (its round's syncfs failed, `RoundSync`: its appends stay pending for the next round)
            return
        if self._storage_error is not None:
            self._storage_recovered()
        end = ticket.end_offset
        if end > self._flushed_offset:
            self._flushed_offset = end
            if end > self._durable_offset:
                self._durable_offset = end
            if end == self.log_end_offset:
                self._pending_since_ms, self._pending_bytes = None, 0
            self._checkpoint_if_due()

    def flush_due(self, now_ms: int) -> bool:
        """Group commit: the oldest pending append is ``max_delay_ms`` old or ``max_bytes`` are pending (never with
        ``Durability.fsync``: its owner flushes)."""
        since = self._pending_since_ms
        if since is None or self._durability.mode == "fsync":
            return False
        return now_ms - since >= self._durability.max_delay_ms or self._pending_bytes >= self._durability.max_bytes

    def flush_if_due(self, now_ms: int) -> bool:
        """Group commit: ``flush`` when ``flush_due``; returns whether it flushed."""
        if not self.flush_due(now_ms):
            return False
        self.flush()
        return True

    def fail_next_append(self, *, written_bytes: int = 0) -> None:
        """Fault injection: the next ``append`` writes ``written_bytes`` of its batch, then raises ``OSError``."""
        self._faults.append_written_bytes = written_bytes

    def fail_next_flush(self) -> None:
        """Fault injection: the next fsync (``flush``, a per-batch ``append``, a segment roll) raises ``OSError``."""
        self._faults.flush = True

    @property
    def storage_error(self) -> OSError | None:
        """The error of the last write or fsync of this log while they fail; None once one succeeds again."""
        return self._storage_error

    def _storage_failed(self, error: OSError, doing: str) -> None:
        """An ERROR once per failing spell (not once per failed append: a full disk fails them all), with the
        errno; then quiet until a write succeeds again. Injected faults (tests, the simulator) are DEBUG."""
        self.write_errors += 1
        if self._storage_error is None:
            level = logging.DEBUG if isinstance(error, InjectedFault) else logging.ERROR
            name = errno.errorcode.get(error.errno or 0, str(error.errno))
            _log.log(level, "%s: %s failed (%s: %s); its appends fail (Produce answers KAFKA_STORAGE_ERROR, the "
                     "coordinators NOT_COORDINATOR) until it can write again", self.path, doing, name,
                     error.strerror or error)
        self._storage_error = error

    def _storage_recovered(self) -> None:
        assert self._storage_error is not None
        level = logging.DEBUG if isinstance(self._storage_error, InjectedFault) else logging.INFO
        _log.log(level, "%s: writes succeed again (%d failed)", self.path, self.write_errors)
        self._storage_error = None

    def _check_usable(self) -> None:
        if self._fd is None:
            raise ValueError(f"log {self.path} is closed")
        if self._failure is not None:
            raise LogFailedError(errno.EIO, f"log {self.path} failed: {self._failure}")

    # ------------------------------------------------------------------------------------------ read

    def read(self, from_offset: int | None = None, max_bytes: int | None = None) -> Iterator[RecordBatch]:
        """Batches from the one containing ``from_offset`` (default: the log start) up to the log end offset as of
        this call. ``max_bytes`` bounds the total size, but the first batch is always returned (as Kafka does)."""
        start = self.log_start_offset if from_offset is None else from_offset
        if not self.log_start_offset <= start <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start} is outside the log [{self.log_start_offset}, {self.log_end_offset}]")
        first = bisect.bisect_right([s.base_offset for s in self._segments], start) - 1
        plan = [(s.path, s.position_for(start) if i == first else 0, s.size)
                for i, s in enumerate(self._segments) if i >= first]
        return self._read(plan, start, max_bytes)

    def _read(self, plan: list[tuple[Path, int, int]], start: int, max_bytes: int | None) -> Iterator[RecordBatch]:
        total = 0
        for path, position, end in plan:
            scan = FileScan(path, start=position, end=end)
            for _position, size, batch in scan.located():
                if batch.base_offset + batch.last_offset_delta < start:
                    continue
                total += size
                if max_bytes is not None and total > max_bytes and total > size:
                    return
                yield batch
            if scan.stop.reason is not StopReason.END:
                raise LogCorruptedError(f"{path}: {scan.stop.reason.value} batch at position {scan.stop.position} "
                                        f"({scan.stop.detail}); it passed recovery, so the file changed since")

    # ------------------------------------------------------------------------------------------ compaction

    def compact(self, now_ms: int, *, tombstone_retention_ms: int) -> CompactionReport:
        """Rewrite every segment keeping what ``compaction.py``'s rules keep; offsets are preserved.

        Pending appends are fsynced first. Each rewritten segment replaces the old one atomically (write
        ``.compacting``, fsync, rename, fsync the directory), oldest first, so a crash at any point leaves a valid
        log. Segments left empty are deleted, except the first (it fixes the log start offset) and the last.
        """
        self.sync()
        plan = plan_compaction(self.read(), log_end_offset=self.log_end_offset, now_ms=now_ms,
                               tombstone_retention_ms=tombstone_retention_ms)
        tally = CompactionTally()
        last_offset = self.log_end_offset - 1
        kept: list[Segment] = []
        i = 0
        try:
            for i, segment in enumerate(self._segments):
                edge = i == 0 or i == len(self._segments) - 1
                new = self._compact_segment(segment, plan, last_offset, tally, keep_if_empty=edge)
                if new is not None:
                    kept.append(new)
            self._segments = kept
            self._reopen_active()
        except WriteNotDone as e:  # (a full disk) segment i is as it was: the log stays usable, half compacted
            self._segments = kept + self._segments[i:]
            self._storage_failed(e, "compaction")
            raise
        except BaseException as e:
            # The files are consistent (every step was an atomic rename), but this object's view of them is not.
            self._failure = f"compaction stopped midway ({e!r}); reopen the log"
            if isinstance(e, OSError):
                self._storage_failed(e, "compaction")
            raise
        return tally.report(plan.first_unstable_offset)

    def _compact_segment(self, segment: Segment, plan: CompactionPlan, last_offset: int, tally: CompactionTally,
                         *, keep_if_empty: bool) -> Segment | None:
        """Rewrite one segment; returns its new in-memory view, or None if the segment was deleted."""
        new = Segment(segment.base_offset, segment.path, next_offset=segment.base_offset)
        parts: list[bytes] = []
        changed = False
        scan = FileScan(segment.path, end=segment.size)
        with open(segment.path, "rb") as f:
            for position, size, batch in scan.located():
                result = compact_batch(batch, plan, is_last_batch=batch.last_offset == last_offset)
                if result is batch:
                    f.seek(position)
                    data = f.read(size)  # unchanged batches keep their exact bytes and CRC
                else:
                    changed = True
                    data = b"" if result is None else encode_batch(result)
                tally.add(batch, size, result, len(data))
                if result is not None:
                    new.note_batch(result.base_offset, result.last_offset, new.size, len(data))
                    parts.append(data)
        assert scan.stop.reason is StopReason.END, f"segment {segment.path} changed under compaction: {scan.stop}"
        new.next_offset = max(new.next_offset, segment.next_offset)
        if not changed:
            return segment
        if not parts and not keep_if_empty:
            segment.path.unlink()
            fsync_dir(self.path)
            tally.segments_deleted += 1
            return None
        atomic_write(segment.path, b"".join(parts), tmp_suffix=_COMPACTING_SUFFIX)
        tally.segments_rewritten += 1
        return new

    def _reopen_active(self) -> None:
        """The active segment's file may have been replaced by a rename: append to the new inode."""
        if self._fd is not None:
            fd, self._fd = self._fd, None  # (if the open below fails, no later close may close that number again:
            os.close(fd)  # by then it may be another file's, or another library's pipe)
        self._fd = os.open(self._segments[-1].path, os.O_WRONLY | os.O_APPEND)
        self._durable_offset = self._flushed_offset = self.log_end_offset

    # ------------------------------------------------------------------------------------------ close

    def abandon(self, reason: str) -> None:
        """Close without flushing or moving the recovery point: after a failed fsync what is pending may be lost,
        and only a reopen (recovery) may say what is on disk."""
        self._failure = reason
        self.close()

    def close(self) -> None:
        """Flush pending appends and close; the file descriptor is closed even if the flush fails."""
        if self._fd is None:
            return
        try:
            if self._failure is None:
                self.sync()
                self._checkpoint_recovery_point()
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
