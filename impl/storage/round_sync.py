"""How a group-commit round's ``FlushTicket``s reach the disk (`kcoord serve --durability fsync --fsync-method`):
``RoundSync`` — one syncfs(2) of the data directory's file system for the whole round, or one fsync per log.

Both promise the same: a ticket without an error is on disk (acknowledged = on disk). syncfs writes back every dirty
file of the file system and commits its journal once (with one disk flush) where the fsyncs of N logs commit it N
times side by side: ~4× less CPU for a round of 9 logs on ext4. Its cost: it also writes back the other dirty files
of that file system (another process's), so on a disk busy with other writers a round may take longer.

Errors stay per log. Since Linux 5.8 syncfs reports a write-back error of any file of its file system (once for
each open file description: it is sampled when the description is opened). ``RoundSync`` calls it through one
descriptor of the data directory opened before any log (``open``), so every write-back error of that file system
since the server started is reported to it once. When syncfs fails, the round's logs are fsynced one by one: each
fsync reports its own file's error (the authority: an error no log claims was another file's, and the logs are on
disk). And every later round is fsynced per log too (said once, with the reason): the error syncfs reported is
consumed, and it may be a log's that is not in this round (written meanwhile); only that log's own fsync, in a later
round, can still report it. A log on another file system than the data directory's is fsynced on its own.
A round's tickets for the data directory's file system are begun with no descriptor (``device``: the log's own
``PartitionLog.device`` says which, read once when it opened), so a round costs no descriptor duplicated, looked at
or closed per log; and when its syncfs fails they are left pending (no error, not durable) and the next round, fsynced
per log through each log's own descriptor (which reports its file's write-back error: the description is the one
the log opened), covers them.
Where syncfs cannot stand for the fsyncs (not Linux; Linux before 5.8, whose syncfs reports no write-back error; no
syncfs in the C library) every round is fsynced per log, said once. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, Literal

from ._files import _syncfs
from .durability import FlushTicket

__all__ = ("FSYNC_METHODS", "FsyncMethod", "RoundSync", "syncfs_unavailable")

_log = logging.getLogger(__name__)
FsyncMethod = Literal["auto", "syncfs", "fsync"]
FSYNC_METHODS: Final[tuple[FsyncMethod, ...]] = ("auto", "syncfs", "fsync")
_SYNCFS_REPORTS_ERRORS: Final = (5, 8)  # Linux 5.8: syncfs returns the file system's write-back errors


def syncfs_unavailable(platform: str = sys.platform, release: str | None = None,
                       syncfs: Callable[[int], int] | None = None) -> str | None:
    """Why syncfs(2) cannot stand for a round's fsyncs here, or None if it can (`release`: the kernel's, by default
    this one's; `syncfs`: the C library's, by default looked up)."""
    if platform != "linux":
        return f"{platform} is not Linux"
    release = os.uname().release if release is None else release
    try:
        version = tuple(int(part) for part in release.split("-")[0].split(".")[:2])
    except ValueError:
        return f"Linux {release}: its version is not readable"
    if version < _SYNCFS_REPORTS_ERRORS:
        return f"Linux {release} is older than 5.8, whose syncfs reports no write-back error"
    if syncfs is None and _syncfs() is None:
        return "the C library has no syncfs"
    return None


class RoundSync:
    """A round's tickets made durable: ``sync(tickets)`` on one fsync thread when ``whole_round`` (one syncfs),
    else each ticket's ``fsync()`` on its own thread as before. ``open`` before any log is opened; ``close`` at the
    end."""

    __slots__ = ("_anchor", "_device", "_fd", "_syncfs")

    def __init__(self, anchor: Path, fd: int | None, syncfs: Callable[[int], int] | None) -> None:
        self._anchor = anchor
        self._fd = fd  # the data directory, opened before any log: syncfs's error cursor (None: fsync per log)
        self._device = os.fstat(fd).st_dev if fd is not None else -1
        self._syncfs = syncfs

    @staticmethod
    def open(method: FsyncMethod, data_dir: Path, syncfs: Callable[[int], int] | None = None,
             unavailable: str | None = None) -> RoundSync:
        """`method`: syncfs or fsync; auto is syncfs where ``syncfs_unavailable()`` is None. `syncfs` and
        `unavailable`: for tests (by default the C library's and this machine's)."""
        assert method in FSYNC_METHODS, method
        if method == "fsync":
            _log.info("--durability fsync: each log of a round fsynced (--fsync-method fsync)")
            return RoundSync(data_dir, None, None)
        found = syncfs or _syncfs()
        why = unavailable if unavailable is not None else syncfs_unavailable(syncfs=found)
        if why is not None or found is None:
            why = why or "the C library has no syncfs"
            (_log.warning if method == "syncfs" else _log.info)(
                "--durability fsync: each log of a round fsynced, not one syncfs of the file system (%s)", why)
            return RoundSync(data_dir, None, None)
        _log.info("--durability fsync: one syncfs of %s's file system per round (--fsync-method %s)", data_dir, method)
        return RoundSync(data_dir, os.open(data_dir, os.O_RDONLY | os.O_DIRECTORY), found)

    @property
    def whole_round(self) -> bool:
        """One job syncs the whole round (syncfs); False: one job per ticket (fsync)."""
        return self._fd is not None

    @property
    def native(self) -> bool:
        """One syncfs a round, the C library's (not one a test gave or put in): a helper process may run it
        (`SyncfsProcess`) instead of ``sync`` on a thread of this one."""
        return self._fd is not None and self._syncfs is _syncfs()

    @property
    def device(self) -> int | None:
        """The file system one syncfs syncs (`Cluster.begin_flush`'s `syncfs_device`: its logs' tickets hold no
        descriptor); None once the rounds are fsynced per log."""
        return self._device if self._fd is not None else None

    def sync(self, tickets: Sequence[FlushTicket]) -> None:
        """On an fsync thread: one syncfs for the tickets begun for it (no descriptor: their logs are on the data
        directory's file system), an fsync for any other (a log elsewhere: it holds a descriptor); every ticket's
        outcome set. On a syncfs error the tickets begun for it are left pending and every later round is fsynced
        per log (see the module). No system call per ticket but the fsyncs of logs elsewhere: each would hand the
        GIL back and forth with the loop's thread."""
        assert self._fd is not None and self._syncfs is not None, "sync of a RoundSync that fsyncs per log"
        here = []
        for ticket in tickets:
            if ticket.fd is None:
                here.append(ticket)
            else:
                ticket.fsync()
        if not here:
            return
        if self._syncfs(self._fd) == 0:
            for ticket in here:
                ticket.synced()
            return
        self.failed(ctypes.get_errno())

    def failed(self, code: int) -> None:
        """A round's syncfs failed with errno `code` (here, or in the helper process that ran it): said once, and
        every later round is fsynced per log (see the module); the round's tickets stay pending."""
        _log.warning("syncfs of %s failed (%s: %s): each log fsynced from the next round on, so that each reports its "
                     "own write-back error (this round's writes wait for it)", self._anchor,
                     errno.errorcode.get(code, code), os.strerror(code))
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
