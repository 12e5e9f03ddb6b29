"""When a coordinator log's appends reach the disk: ``Durability`` (the modes), ``FlushTicket`` (a flush whose fsync
runs on another thread) and the log's failures (``LogFailedError``, ``InjectedFault``).

Durability contract (``PartitionLog``): ``durable_offset`` is the end offset that may be acknowledged; a record at or
past it must not be. ``Durability.per_batch()`` fsyncs inside every ``append``; ``Durability.group`` and
``Durability.fsync`` leave appends pending until the owner flushes (group commit): with these, ``durable_offset`` is
fsynced. ``Durability.os()`` acknowledges what ``write`` handed to the operating system (Kafka's default: its page
cache holds it, a process crash keeps it, a power failure may lose it) and fsyncs only at a segment roll and a clean
close. ``PartitionLog`` (``log.py``) re-exports these names. Must not import ``kcoord.model``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["Durability", "FlushTicket", "InjectedFault", "LogFailedError"]


class LogFailedError(OSError):
    """An I/O error left the log in a state it could not repair in place; close it and reopen to recover."""


class InjectedFault(OSError):
    """A failure injected by ``fail_next_append``/``fail_next_flush`` (tests and the simulator)."""


@dataclass(frozen=True, slots=True)
class Durability:
    """When appended data is fsynced. Build with ``per_batch()``, ``group(max_delay_ms, max_bytes)``, ``os()`` or
    ``named(mode)`` (`kcoord serve --durability`)."""

    mode: Literal["per_batch", "group", "fsync", "os"]
    max_delay_ms: int = 0
    max_bytes: int = 0

    @staticmethod
    def per_batch() -> Durability:
        """Every append is fsynced before ``append`` returns."""
        return Durability("per_batch")

    @staticmethod
    def group(max_delay_ms: int, max_bytes: int) -> Durability:
        """Group commit: a flush is due once the oldest unflushed append is ``max_delay_ms`` old or
        ``max_bytes`` are pending; the owner calls ``flush_if_due(now_ms)``."""
        if max_delay_ms < 0 or max_bytes <= 0:
            raise ValueError(f"group durability needs max_delay_ms >= 0 and max_bytes > 0, "
                             f"got {max_delay_ms} and {max_bytes}")
        return Durability("group", max_delay_ms, max_bytes)

    @staticmethod
    def fsync() -> Durability:
        """Group commit without a linger: appends wait for their owner's next ``flush`` (or ``begin_flush`` /
        ``end_flush``, an fsync on another thread), which every append made before it shares; ``flush_due`` never
        says one is due. `kcoord serve --durability fsync`: the server flushes as soon as writes are pending and no
        flush is in flight, so the writes that arrive while an fsync runs share the next one."""
        return Durability("fsync")

    @staticmethod
    def os() -> Durability:
        """An append is acknowledged once ``write`` returned (the page cache holds it); fsynced at a segment roll and
        a clean close only. Lost on power failure, kept on a process crash."""
        return Durability("os")

    @staticmethod
    def named(name: str) -> Durability:
        """`kcoord serve --durability NAME`: ``fsync`` (acknowledged = on disk; group commit without a linger: the
        writes that arrive while an fsync is in flight share the next one; ``group`` is an alias kept for old
        command lines) or ``os`` (acknowledged = in the page cache)."""
        if name in ("fsync", "group"):
            return Durability.fsync()
        if name == "os":
            return Durability.os()
        raise ValueError(f"durability {name!r}: expected fsync or os")

    @property
    def coalesces(self) -> bool:
        """Appends wait for a flush (or a poll) and may share one batch: group commit and os."""
        return self.mode != "per_batch"


class FlushOwner(Protocol):
    """What a ticket's log offers its holder (``PartitionLog``): the second half of the flush."""

    def end_flush(self, ticket: FlushTicket) -> None: ...


class FlushTicket:
    """A flush begun by ``PartitionLog.begin_flush``: ``fsync()`` it on any thread (or ``synced()`` once a syncfs of
    its file system returned: ``RoundSync``), then ``end_flush`` it. A ticket begun for a round's syncfs holds no
    descriptor (``fd`` None: the syncfs needs none, and no duplicate is made, closed or looked at per round); if
    that syncfs fails it is left as it was (``durable`` False, no error): its appends stay pending for the next
    round, which fsyncs each log through a descriptor of its own."""

    __slots__ = ("_fd", "_injected", "durable", "end_offset", "error", "log", "on_error")

    def __init__(self, log: FlushOwner, fd: int | None, end_offset: int, injected: bool) -> None:
        self.log = log
        self._fd = fd
        self.end_offset = end_offset
        self._injected = injected
        self.error: OSError | None = None
        self.durable = False  # what it covers is on disk (set by ``fsync`` or ``synced``)
        #: what the log's owner does when the fsync failed (unload the shard, take the partition offline)
        self.on_error: Callable[[OSError], None] | None = None

    def fsync(self) -> None:
        """Fsync the descriptor and close it; an error is kept for ``end_flush``. Releases the GIL while it waits."""
        assert self._fd is not None, "fsync of a ticket begun for a syncfs (it holds no descriptor)"
        try:
            if self._injected:
                raise InjectedFault(errno.EIO, "injected fsync failure")
            os.fsync(self._fd)
            self.durable = True
        except OSError as e:
            self.error = e
        finally:
            os.close(self._fd)

    @property
    def fd(self) -> int | None:
        """The descriptor ``fsync`` syncs (a duplicate of the log's; open until ``fsync`` or ``synced``); None: begun
        for a syncfs of the round's file system."""
        return self._fd

    def synced(self) -> None:
        """Its file system was synced (one syncfs for the round, ``RoundSync``) without an error: what it covers is
        on disk, unless a fault was injected; closes the descriptor, if it has one, as ``fsync`` does."""
        if self._injected:
            self.error = InjectedFault(errno.EIO, "injected fsync failure")
        else:
            self.durable = True
        if self._fd is not None:
            os.close(self._fd)


@dataclass(slots=True)
class PendingFaults:
    """Injected failures (tests and the simulator): each fires once, raising ``OSError(EIO)``."""

    append_written_bytes: int | None = None  # fail the next append after writing this many of its bytes
    flush: bool = False
