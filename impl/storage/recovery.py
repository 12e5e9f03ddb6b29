"""Recovering a partition's segments on open, and the recovery point that says how far recovery may cut.

Owns: ``Segment`` (the in-memory view of one segment file: size, end offset, sparse index), the scan of every segment
(``recover``: each batch validated, every batch handed to the log's reader), ``RecoveryReport``, the
``recovery-point`` file (``read_recovery_point``, written by ``PartitionLog``) and ``LogCorruptedError``.

What recovery may discard (Kafka's ``LogLoader`` rules, applied to one replica):

- Below the recovery point every batch was fsynced and checked before, and may have been acknowledged: recovery
  never cuts there. A batch that fails its checks below it, or a log that ends before it (a file cut short or gone),
  raises ``LogCorruptedError`` naming the file, the batch's offset and byte position, why, and what the operator may
  do: the partition is not started (its owner refuses it and says so; nothing is deleted or loaded half).
- At or above it (what an unclean stop may have left unflushed) the first bad batch of the last segment and
  everything after it is cut, and the cut is logged as a WARN with the bytes dropped and the first offset lost.
- Damage in a segment before the last is never a torn write (a segment is fsynced before the next one starts):
  refused as above, wherever the recovery point is.

A missing or unreadable recovery point vouches for nothing (offset 0): every batch is checked, and the damage
recovery finds is cut, as Kafka does without its checkpoint. The last-value load (``LastValues``) does not recompute
the CRC of the batches below the recovery point (Kafka's coordinator loader never does): a changed byte there that
still decodes is not seen; one that breaks a batch's structure is refused as above.
Must not import ``kcoord.model``.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ._files import FileScan, SyncLater, fsync_dir, fsync_file, parse_segment_name, segment_name
from .batch import DecodeStop, LastValues, RecordBatch, StopReason, out_of_order

__all__ = ["INDEX_INTERVAL_BYTES", "RECOVERY_POINT_FILE", "LogCorruptedError", "RecoveryReport", "Segment",
           "read_partition_dir", "read_recovery_point", "recover", "segment_files"]

_log = logging.getLogger(__name__)
INDEX_INTERVAL_BYTES: Final = 4096  # Kafka's index.interval.bytes: one sparse index entry per ~4 KiB
RECOVERY_POINT_FILE: Final = "recovery-point"


class LogCorruptedError(Exception):
    """Damage that recovery must not silently discard: a bad batch (or missing bytes) in what was fsynced and
    checked before. The message names the file, the offset and byte position, and what to do."""


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What ``open`` found. ``truncated_bytes`` > 0 means a torn or corrupt tail was cut at ``truncated_position``
    of ``truncated_segment``; the first offset that was lost is ``log_end_offset``. ``recovery_point``: what the
    log's ``recovery-point`` file vouched for when it was opened (nothing below it may be cut)."""

    segments: int
    batches: int
    log_start_offset: int
    log_end_offset: int
    truncated_bytes: int = 0
    truncated_segment: str | None = None
    truncated_position: int | None = None
    truncation_reason: str = ""
    recovery_point: int = 0


@dataclass(slots=True)
class Segment:
    """In-memory view of one segment file: its size, end offset and a sparse offset → position index."""

    base_offset: int
    path: Path
    size: int = 0
    next_offset: int = 0
    index_offsets: list[int] = field(default_factory=list)  # base offsets of indexed batches, ascending
    index_positions: list[int] = field(default_factory=list)

    def note_index(self, base_offset: int, position: int) -> None:
        self.index_offsets.append(base_offset)
        self.index_positions.append(position)

    def note_batch(self, base_offset: int, last_offset: int, position: int, size: int) -> None:
        if not self.index_positions or position - self.index_positions[-1] >= INDEX_INTERVAL_BYTES:
            self.index_offsets.append(base_offset)
            self.index_positions.append(position)
        self.size = position + size
        self.next_offset = last_offset + 1

    def position_for(self, offset: int) -> int:
        """A file position at or before the batch containing ``offset``."""
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[i] if i >= 0 else 0


def read_recovery_point(directory: Path) -> int:
    """The offset the partition's ``recovery-point`` file vouches for; 0 (nothing) if it is missing, and 0 with a
    WARN if it is unreadable (everything is checked again, and damage found is cut)."""
    path = directory / RECOVERY_POINT_FILE
    try:
        text = path.read_bytes().decode("ascii").strip()
    except FileNotFoundError:
        return 0
    except (OSError, UnicodeDecodeError) as e:
        text = f"<{e}>"
    if text.isdigit():
        return int(text)
    _log.warning("%s: not an offset (%r); it vouches for nothing: every batch of the log is checked, and damage "
                 "found is cut as after an unclean stop", path, text[:40])
    return 0


def segment_files(directory: Path) -> list[tuple[int, Path]]:
    found = []
    for entry in directory.iterdir():
        base = parse_segment_name(entry.name)
        if base is not None and entry.is_file():
            found.append((base, entry))
    return sorted(found)


def _scan_segment(segment: Segment, on_batch: Callable[[RecordBatch], None] | None,
                  last_values: LastValues | None) -> tuple[int, int | None, str]:
    """Validate one segment into ``segment``; returns (valid batches, first bad position or None, why)."""
    scan = FileScan(segment.path)
    count = 0
    if last_values is not None:
        last_values.start_segment(segment.next_offset)
        before = last_values.batches
        for _position, _size, batch in scan.last_values(last_values, segment.note_index, INDEX_INTERVAL_BYTES):
            if on_batch is not None:
                on_batch(batch)
        count = last_values.batches - before
        segment.size, segment.next_offset = scan.stop.position, last_values.next_offset
    elif on_batch is None:
        for span in scan.spans():
            if span.base_offset < segment.next_offset:
                return count, span.position, _out_of_order(span.position, span.base_offset, segment.next_offset)
            segment.note_batch(span.base_offset, span.last_offset, span.position, span.size_bytes)
            count += 1
    else:
        for position, size, batch in scan.located():
            if batch.base_offset < segment.next_offset:
                return count, position, _out_of_order(position, batch.base_offset, segment.next_offset)
            segment.note_batch(batch.base_offset, batch.base_offset + batch.last_offset_delta, position, size)
            count += 1
            on_batch(batch)
    if scan.stop.reason is StopReason.END:
        return count, None, ""
    return count, scan.stop.position, f"{scan.stop.reason.value}: {scan.stop.detail}"


def _out_of_order(position: int, base_offset: int, expected: int) -> str:
    stop = out_of_order(position, base_offset, expected)  # as BatchDecoder.last_values stops at the same batch
    return f"{stop.reason.value}: {stop.detail}"


def _refused(path: Path, offset: int, position: int, why: str, recovery_point: int, *, last: bool) -> str:
    """The one-line message of a log recovery refuses: where, why, and what the operator may do."""
    where = (f"{path}: the batch at byte {position} (offset {offset}) is damaged ({why})")
    if offset < recovery_point:
        where += f", below the recovery point {recovery_point} (fsynced and checked before, maybe acknowledged)"
    else:
        where += " in a segment before the last (fsynced before the next segment began)"
    later = "" if last else ", delete the later segments"
    return (f"{where}; the partition is not started and nothing was deleted: restore its folder from a copy, or, to "
            f"give up offset {offset} and everything after it, stop the server, truncate the file to {position} "
            f"bytes (truncate -s {position} '{path}'){later}, delete the partition's {RECOVERY_POINT_FILE} file and "
            "start again")


def _short(path: Path, end_offset: int, size: int, recovery_point: int) -> str:
    return (f"{path}: the log ends at offset {end_offset} (byte {size} of this segment) but its recovery point is "
            f"{recovery_point}: fsynced records are missing (a file cut short or removed); the partition is not "
            "started and nothing was deleted: restore its folder from a copy, or, to accept the loss, stop the "
            f"server, delete the partition's {RECOVERY_POINT_FILE} file and start again")


def recover(directory: Path, on_batch: Callable[[RecordBatch], None] | None, last_values: LastValues | None,
            later: SyncLater | None, recovery_point: int) -> tuple[list[Segment], RecoveryReport]:
    """Scan every segment of ``directory`` (see the module docstring for what is cut and what is refused)."""
    files = segment_files(directory)
    if not files:
        if recovery_point > 0:
            raise LogCorruptedError(_short(directory / segment_name(0), 0, 0, recovery_point))
        path = directory / segment_name(0)
        path.touch()
        fsync_dir(directory, later)
        files = [(0, path)]
    segments: list[Segment] = []
    batches = 0
    truncated: tuple[int, str, int, str] | None = None
    next_offset = files[0][0]
    for i, (base, path) in enumerate(files):
        if base < next_offset:
            raise LogCorruptedError(f"segment {path} starts at offset {base}, before the previous segment's "
                                    f"end offset {next_offset}")
        segment = Segment(base, path, next_offset=base)
        count, stop_position, stop_reason = _scan_segment(segment, on_batch, last_values)
        batches += count
        last = i == len(files) - 1
        if stop_position is not None:
            if not last or segment.next_offset < recovery_point:
                raise LogCorruptedError(_refused(path, segment.next_offset, stop_position, stop_reason,
                                                 recovery_point, last=last))
            truncated = (path.stat().st_size - stop_position, path.name, stop_position, stop_reason)
        segments.append(segment)
        next_offset = segment.next_offset
    last_segment = segments[-1]
    if last_segment.next_offset < recovery_point:
        raise LogCorruptedError(_short(last_segment.path, last_segment.next_offset, last_segment.size,
                                       recovery_point))
    if truncated is not None:
        os.truncate(last_segment.path, last_segment.size)
        _log.warning("%s: cut %d bytes at byte %d, from offset %d on (%s): not vouched for by the recovery point "
                     "%d, so what an unclean stop left unflushed", last_segment.path, truncated[0], truncated[2],
                     last_segment.next_offset, truncated[3], recovery_point)
    # whatever the page cache held before the crash is durable from here on (with `later`: from its sync, which
    # comes before anything of this log is acknowledged)
    fsync_file(last_segment.path, later)
    report = RecoveryReport(
        segments=len(segments), batches=batches, log_start_offset=segments[0].base_offset,
        log_end_offset=last_segment.next_offset,
        truncated_bytes=truncated[0] if truncated else 0,
        truncated_segment=truncated[1] if truncated else None,
        truncated_position=truncated[2] if truncated else None,
        truncation_reason=truncated[3] if truncated else "",
        recovery_point=recovery_point,
    )
    return segments, report


def read_partition_dir(path: str | os.PathLike[str],
                       on_tail: Callable[[Path, DecodeStop], None] | None = None) -> Iterator[RecordBatch]:
    """Read-only iteration over a partition folder, ours or a Kafka broker's, in offset order.

    Only ``<20 digits>.log`` segments are read; ``.index``, ``.timeindex``, ``.txnindex``, ``.snapshot``,
    ``leader-epoch-checkpoint`` and ``partition.metadata`` are ignored. A torn, zero-filled or damaged tail of the
    last segment (a live, preallocated or crashed segment) ends iteration, and ``on_tail(segment, stop)`` hears where
    and why; damage anywhere else raises ``LogCorruptedError``. Compressed batches are decompressed; a codec Kafka
    does not define raises ``UnsupportedCompressionError``. Nothing is modified.
    """
    files = segment_files(Path(path))
    for i, (_base, segment) in enumerate(files):
        scan = FileScan(segment)
        yield from scan
        if scan.stop.reason is StopReason.END:
            continue
        if i != len(files) - 1:
            raise LogCorruptedError(f"segment {segment} is damaged at position {scan.stop.position}: "
                                    f"{scan.stop.reason.value} {scan.stop.detail}")
        if on_tail is not None:
            on_tail(segment, scan.stop)
