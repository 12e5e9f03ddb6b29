"""PartitionLog's durability modes `fsync` (group commit whose fsync runs on another thread: `begin_flush`, the
ticket's `fsync`, `end_flush`) and `os` (acknowledged once written; fsynced at a roll and a close)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kcoord.impl.storage.log import Durability, FlushTicket, PartitionLog

from .conftest import ManualClock, kv


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads every `os.fsync` ran on, in order."""
    calls: list[str] = []
    real: Callable[[int], None] = os.fsync

    def counted(fd: int) -> None:
        calls.append(threading.current_thread().name)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    return calls


def _fsync_on_a_thread(ticket: FlushTicket) -> None:
    thread = threading.Thread(target=ticket.fsync, name="fsync-thread")
    thread.start()
    thread.join(10)


def test_fsync_mode_makes_durable_only_what_the_ticket_covered(log_dir: Path, clock: ManualClock,
                                                               fsyncs: list[str]) -> None:
    with PartitionLog.open(log_dir, durability=Durability.named("fsync"), clock_ms=clock) as log:
        log.append([kv(0)], timestamp_ms=0)
        fsyncs.clear()  # (creating the first segment fsyncs its directory)
        log.append([kv(1)], timestamp_ms=0)
        assert (log.log_end_offset, log.durable_offset) == (2, 0)
        assert not log.flush_due(clock.now_ms + 10**6) and log.next_flush_due_ms is None  # its owner flushes
        ticket = log.begin_flush()
        assert ticket is not None and ticket.end_offset == 2
        log.append([kv(2)], timestamp_ms=0)  # arrives while the fsync is in flight: waits for the next one
        assert fsyncs == []
        _fsync_on_a_thread(ticket)
        assert fsyncs == ["fsync-thread"] and log.durable_offset == 0  # durable once its owner ends the flush
        log.end_flush(ticket)
        assert (log.durable_offset, log.flushed_offset, log.log_end_offset) == (2, 2, 3)
        second = log.begin_flush()
        assert second is not None and second.end_offset == 3
        _fsync_on_a_thread(second)
        log.end_flush(second)
        assert log.durable_offset == log.flushed_offset == 3
        assert log.begin_flush() is None  # nothing pending: no ticket, no fsync
        assert len(fsyncs) == 2


def test_a_ticket_outlives_a_segment_roll_and_a_stale_ticket_moves_nothing_back(log_dir: Path, clock: ManualClock,
                                                                                 fsyncs: list[str]) -> None:
    with PartitionLog.open(log_dir, segment_bytes=1024, durability=Durability.fsync(), clock_ms=clock) as log:
        log.append([kv(0)], timestamp_ms=0)
        ticket = log.begin_flush()
        assert ticket is not None
        while len(log.segment_base_offsets) == 1:  # the roll fsyncs and closes the segment the ticket covers
            log.append([kv(log.log_end_offset)], timestamp_ms=0)
        rolled_at = log.segment_base_offsets[1]
        assert log.flushed_offset == rolled_at
        _fsync_on_a_thread(ticket)  # its own duplicate of the old segment's descriptor is still open
        assert ticket.error is None
        log.end_flush(ticket)  # covers less than the roll already made durable
        assert log.flushed_offset == log.durable_offset == rolled_at


def test_a_failed_ticket_fsync_keeps_the_data_pending_until_a_later_one_succeeds(log_dir: Path,
                                                                                 clock: ManualClock) -> None:
    with PartitionLog.open(log_dir, durability=Durability.fsync(), clock_ms=clock) as log:
        log.append([kv(0)], timestamp_ms=0)
        log.fail_next_flush()
        ticket = log.begin_flush()
        assert ticket is not None
        _fsync_on_a_thread(ticket)
        assert isinstance(ticket.error, OSError)
        with pytest.raises(OSError, match="injected fsync failure"):
            log.end_flush(ticket)
        assert (log.durable_offset, log.log_end_offset) == (0, 1)
        assert log.storage_error is not None
        retry = log.begin_flush()
        assert retry is not None
        _fsync_on_a_thread(retry)
        log.end_flush(retry)
        assert log.durable_offset == 1 and log.storage_error is None


def test_a_ticket_ended_after_close_is_ignored(log_dir: Path, clock: ManualClock) -> None:
    log = PartitionLog.open(log_dir, durability=Durability.fsync(), clock_ms=clock)
    log.append([kv(0)], timestamp_ms=0)
    ticket = log.begin_flush()
    assert ticket is not None
    log.close()  # fsyncs everything itself
    _fsync_on_a_thread(ticket)
    assert ticket.error is None
    log.end_flush(ticket)
    with PartitionLog.open(log_dir, durability=Durability.fsync(), clock_ms=clock) as reopened:
        assert reopened.log_end_offset == 1


def test_os_mode_acknowledges_written_data_and_fsyncs_only_on_sync_and_close(log_dir: Path, clock: ManualClock,
                                                                             fsyncs: list[str]) -> None:
    with PartitionLog.open(log_dir, durability=Durability.named("os"), clock_ms=clock) as log:
        for i in range(3):
            log.append([kv(i)], timestamp_ms=0)
        fsyncs.clear()  # (creating the first segment fsyncs its directory)
        log.append([kv(3)], timestamp_ms=0)
        assert fsyncs == []
        assert (log.durable_offset, log.flushed_offset) == (4, 0)
        log.flush()  # nothing to do: acknowledged data is in the page cache
        assert log.flushed_offset == 0 and fsyncs == []
        log.sync()
        assert log.flushed_offset == 4 and len(fsyncs) == 1
        log.append([kv(4)], timestamp_ms=0)
    assert len(fsyncs) >= 2  # the close fsynced the last append
    with PartitionLog.open(log_dir, durability=Durability.os(), clock_ms=clock) as reopened:
        assert reopened.log_end_offset == 5


def test_durability_names() -> None:
    assert Durability.named("fsync").mode == "fsync"
    assert Durability.named("group").mode == "fsync"  # the old command line's name
    assert Durability.named("os").mode == "os"
    with pytest.raises(ValueError, match="expected fsync or os"):
        Durability.named("none")
