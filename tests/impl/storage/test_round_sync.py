"""`RoundSync` (`kcoord serve --durability fsync --fsync-method`): a round of several logs is made durable by one
syncfs and every ticket completes, with no descriptor duplicated, looked at or closed per log; a failing syncfs leaves
its round's writes pending and falls back to an fsync per log (every later round: the next one covers them), said
once; an injected fault fails its log only; a log on another file system is fsynced on its own; where syncfs reports
no write-back error (Linux < 5.8, not Linux, no syncfs) `auto` fsyncs per log."""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from kcoord.impl.storage import _files
from kcoord.impl.storage.log import Durability, FlushTicket, InjectedFault, PartitionLog
from kcoord.impl.storage.round_sync import RoundSync, syncfs_unavailable

from .conftest import kv

LOGS = 5


class Calls:
    """The syncfs and fsync calls of the test's process, by the path of their descriptor."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, syncfs_result: int = 0) -> None:
        self.syncfs: list[str] = []
        self.fsync: list[str] = []
        real_syncfs = _files._syncfs()
        real_fsync = os.fsync
        assert real_syncfs is not None  # (Linux)

        def syncfs(fd: int) -> int:
            self.syncfs.append(os.readlink(f"/proc/self/fd/{fd}"))
            if syncfs_result != 0:
                ctypes.set_errno(errno.EIO)
                return syncfs_result
            return real_syncfs(fd)

        def fsync(fd: int) -> None:
            self.fsync.append(os.readlink(f"/proc/self/fd/{fd}"))
            real_fsync(fd)

        self.fake_syncfs: Callable[[int], int] = syncfs
        monkeypatch.setattr(os, "fsync", fsync)


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[list[PartitionLog]]:
    with ExitStack() as stack:
        opened = [stack.enter_context(PartitionLog.open(tmp_path / "data" / f"__consumer_offsets-{i}",
                                                        durability=Durability.fsync())) for i in range(LOGS)]
        for log in opened:  # (the first append makes the segment, and fsyncs its directory: not a round's)
            log.append([kv(0)], timestamp_ms=0)
            log.flush()
        yield opened


def _round(logs: list[PartitionLog], sync: RoundSync) -> list[FlushTicket]:
    """An append to each log, and the round's tickets (begun as `Cluster.begin_flush` begins them for `sync`)."""
    tickets = []
    for log in logs:
        log.append([kv(log.log_end_offset)], timestamp_ms=0)
        ticket = log.begin_flush(sync.device)
        assert ticket is not None
        tickets.append(ticket)
    return tickets


def _end(logs: list[PartitionLog], tickets: list[FlushTicket]) -> list[str]:
    """Each ticket ended on its log: "durable", or the error `end_flush` raised."""
    ended = []
    for log, ticket in zip(logs, tickets, strict=True):
        try:
            log.end_flush(ticket)
            ended.append("durable" if log.durable_offset == log.log_end_offset else "pending")
        except OSError as e:
            ended.append(type(e).__name__)
    return ended


def _closed(tickets: list[FlushTicket]) -> bool:
    """Every ticket's descriptor (if it had one) was closed (no other descriptor opened meanwhile took its number)."""
    for ticket in tickets:
        if ticket.fd is None:
            continue
        with pytest.raises(OSError) as raised:
            os.fstat(ticket.fd)
        assert raised.value.errno == errno.EBADF
    return True


def test_a_round_of_several_logs_is_one_syncfs_and_every_ticket_completes(
        tmp_path: Path, logs: list[PartitionLog], monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    sync = RoundSync.open("syncfs", tmp_path / "data", syncfs=calls.fake_syncfs)
    try:
        assert sync.whole_round
        tickets = _round(logs, sync)
        sync.sync(tickets)
        assert _closed(tickets)
        assert (calls.syncfs, calls.fsync) == ([str(tmp_path / "data")], [])  # one syncfs, of the data directory
        assert _end(logs, tickets) == ["durable"] * LOGS
        sync.sync(second := _round(logs, sync))  # the next round: one more
        assert len(calls.syncfs) == 2 and not calls.fsync and _end(logs, second) == ["durable"] * LOGS
    finally:
        sync.close()


def test_a_syncfs_round_duplicates_looks_at_and_closes_no_descriptor_per_log(
        tmp_path: Path, logs: list[PartitionLog], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of those system calls hands the GIL between the syncfs thread and the loop's: none per log, the round
    being one syncfs whatever the descriptors are."""
    calls = Calls(monkeypatch)
    sync = RoundSync.open("syncfs", tmp_path / "data", syncfs=calls.fake_syncfs)
    per_log: list[str] = []
    for name in ("dup", "fstat", "close"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda *a, _real=real, _name=name: (per_log.append(_name), _real(*a))[1])
    try:
        tickets = _round(logs, sync)
        sync.sync(tickets)
        assert per_log == [] and [t.fd for t in tickets] == [None] * LOGS
        assert _end(logs, tickets) == ["durable"] * LOGS and len(calls.syncfs) == 1 and not calls.fsync
    finally:
        monkeypatch.undo()
        sync.close()


def test_a_failing_syncfs_falls_back_to_an_fsync_per_log_from_then_on(
        tmp_path: Path, logs: list[PartitionLog], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    calls = Calls(monkeypatch, syncfs_result=-1)
    sync = RoundSync.open("syncfs", tmp_path / "data", syncfs=calls.fake_syncfs)
    try:
        tickets = _round(logs, sync)
        with caplog.at_level(logging.WARNING, logger="kcoord"):
            sync.sync(tickets)
        assert len(calls.syncfs) == 1 and not calls.fsync
        # (this round's writes are not durable, and no error is any log's: they wait for the next round)
        assert [(t.durable, t.error) for t in tickets] == [(False, None)] * LOGS
        assert _end(logs, tickets) == ["pending"] * LOGS
        assert all(log.storage_error is None for log in logs)
        (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert warning.startswith(f"syncfs of {tmp_path / 'data'} failed (EIO: Input/output error): each log "
                                  "fsynced from the next round on")
        assert not sync.whole_round and sync.device is None  # later rounds: an fsync per log, on the fsync threads
        second = _round(logs, sync)  # the next round: each log through a descriptor of its own, covering both
        assert all(t.fd is not None for t in second)
        for ticket in second:
            ticket.fsync()
        assert sorted(Path(path).parent.name for path in calls.fsync) == sorted(log.path.name for log in logs)
        # (no log claims the error: this fake's EIO was no file's; each log's own fsync says its data is on disk)
        assert _end(logs, second) == ["durable"] * LOGS and len(calls.syncfs) == 1
    finally:
        sync.close()


def test_an_injected_fault_fails_its_log_only(tmp_path: Path, logs: list[PartitionLog],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls = Calls(monkeypatch)
    sync = RoundSync.open("syncfs", tmp_path / "data", syncfs=calls.fake_syncfs)
    try:
        logs[2].fail_next_flush()
        tickets = _round(logs, sync)
        sync.sync(tickets)
        assert _closed(tickets) and len(calls.syncfs) == 1 and not calls.fsync
        assert [type(t.error).__name__ if t.error else None for t in tickets] == [None, None, "InjectedFault", None,
                                                                                   None]
        assert _end(logs, tickets) == ["durable", "durable", InjectedFault.__name__, "durable", "durable"]
        assert logs[2].storage_error is not None and all(log.storage_error is None for log in logs if log != logs[2])
    finally:
        sync.close()


def test_a_log_on_another_file_system_is_fsynced_on_its_own(tmp_path: Path, logs: list[PartitionLog],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the test's folder")
    elsewhere = Path(os.path.realpath(shm)) / f"kcoord-test-{os.getpid()}-{tmp_path.name}"
    with PartitionLog.open(elsewhere / "__x-0", durability=Durability.fsync()) as other:
        other.append([kv(0)], timestamp_ms=0)
        other.flush()
        calls = Calls(monkeypatch)
        sync = RoundSync.open("syncfs", tmp_path / "data", syncfs=calls.fake_syncfs)
        try:
            everyone = [*logs, other]
            tickets = _round(everyone, sync)
            sync.sync(tickets)
            assert _closed(tickets)
            assert len(calls.syncfs) == 1 and len(calls.fsync) == 1 and calls.fsync[0].startswith(str(other.path))
            assert _end(everyone, tickets) == ["durable"] * (LOGS + 1)
        finally:
            sync.close()
            shutil.rmtree(elsewhere)


def test_where_syncfs_reports_no_write_back_error_auto_fsyncs_each_log(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    assert syncfs_unavailable("linux", "6.18.44-fc") is None
    assert syncfs_unavailable("linux", "5.4.0-150-generic") == \
        "Linux 5.4.0-150-generic is older than 5.8, whose syncfs reports no write-back error"
    assert syncfs_unavailable("darwin", "23.1.0") == "darwin is not Linux"
    (tmp_path / "data").mkdir()
    with caplog.at_level(logging.INFO, logger="kcoord"):
        auto = RoundSync.open("auto", tmp_path / "data", unavailable="Linux 5.4.0 is older than 5.8")
        chosen = RoundSync.open("syncfs", tmp_path / "data", unavailable="Linux 5.4.0 is older than 5.8")
        fsync = RoundSync.open("fsync", tmp_path / "data")
        here = RoundSync.open("auto", tmp_path / "data")
    try:
        assert [s.whole_round for s in (auto, chosen, fsync, here)] == [False, False, False, True]
        assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
            ("INFO", "--durability fsync: each log of a round fsynced, not one syncfs of the file system "
                     "(Linux 5.4.0 is older than 5.8)"),
            ("WARNING", "--durability fsync: each log of a round fsynced, not one syncfs of the file system "
                        "(Linux 5.4.0 is older than 5.8)"),
            ("INFO", "--durability fsync: each log of a round fsynced (--fsync-method fsync)"),
            ("INFO", f"--durability fsync: one syncfs of {tmp_path / 'data'}'s file system per round "
                     "(--fsync-method auto)")]
    finally:
        here.close()
